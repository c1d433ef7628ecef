"""Benchmark of the TLA+ side: model checking, and what a trace costs through TLC against the
streaming checker of ``rmkit check`` on the same trace, measured in the same run.

Printed:

- small / handover / live: TLC's wall time, distinct and generated states, depth (``--deep``
  adds the slow configurations: seven validators, two of them Byzantine);
- agreement, model -> reference: TLC behaviours drawn per second and steps replayed per second;
- trace validation: for walks of the reference machines of about ``--receipts`` receipts (five
  validators, eight messages), the wall time of TLC validating the trace (JVM start-up included)
  and of ``RempLogChecker`` judging the same receipts as a JSONL log, each the best of
  ``--repeat``; the ratio TLC / checker says what each path costs.

Usage: python bench/bench_tla.py [--receipts 100] [--traces 5] [--repeat 3] [--deep]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import orjson

from rmkit.conformance.remp.agreement import replay, tracecheck
from rmkit.conformance.remp.agreement.explore import explore
from rmkit.conformance.remp.agreement.harness import ROTATING, Harness, Scenario
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.reference_impl.remp.wire import renderer
from rmkit.tlc import run_tlc
from rmkit.tlc.manifest import load_manifest


def best(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def model_checking(deep: bool) -> None:
    model = load_manifest().model("remp")
    for cfg in model.configs:
        if cfg.slow and not deep:
            continue
        r = run_tlc(model.dir, cfg.module, cfg.cfg, workers=cfg.workers, deadlock_check=cfg.deadlock)
        print(f"{cfg.name:9} {r.verdict:5} {r.seconds:7.1f} s  {r.distinct_states:>10,} distinct  "
              f"{r.total_states:>11,} generated  depth {r.depth}  ({cfg.workers} workers)")


def agreement(traces: int) -> None:
    t = time.perf_counter()
    behaviours = replay.simulate(ROTATING, traces=traces, depth=40, seed=5)
    drawn = time.perf_counter() - t
    steps = sum(len(b) - 1 for b in behaviours)
    t = time.perf_counter()
    bad = sum(replay.replay_behaviour(ROTATING, b) is not None for b in behaviours)
    replayed = time.perf_counter() - t
    print(f"model -> reference: {len(behaviours)} behaviours ({steps} steps) drawn by TLC in {drawn:.1f} s, "
          f"replayed in {replayed:.2f} s ({steps / replayed:,.0f} steps/s), {bad} disagreements")


# The rotating scenario with enough messages for a walk of about a hundred receipts.
BUSY = Scenario(ROTATING.validators, ROTATING.faulty, tuple(f"m{i}" for i in range(1, 9)), ROTATING.members,
                ROTATING.min_fanout)


def trace_costs(receipts: int, traces: int, repeat: int) -> None:
    render = renderer("spec")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(traces):
            h = Harness(BUSY)
            steps = explore(BUSY, 700 + k, max_steps=10_000, max_receipts=receipts, harness=h)
            log = Path(tmp) / f"trace{k}.jsonl"
            log.write_bytes(b"".join(orjson.dumps(render(r, role)) + b"\n" for r, role in h.log))
            t_tlc, verdict = best(lambda: tracecheck.check_trace(BUSY, steps), repeat)
            t_chk, report = best(lambda: RempLogChecker().run([str(log)]), repeat)
            ratios.append(t_tlc / t_chk)
            print(f"trace {k}: {len(steps):3} steps, {h.receipts:3} receipts: TLC {verdict.verdict} in {t_tlc:.2f} s, "
                  f"checker {t_chk * 1000:.1f} ms -> ratio {t_tlc / t_chk:,.0f}")
    ratios.sort()
    print(f"trace validation / streaming check: median ratio {ratios[len(ratios) // 2]:,.0f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--receipts", type=int, default=100)
    p.add_argument("--traces", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--deep", action="store_true")
    a = p.parse_args()
    model_checking(a.deep)
    agreement(200)
    trace_costs(a.receipts, a.traces, a.repeat)


if __name__ == "__main__":
    main()
