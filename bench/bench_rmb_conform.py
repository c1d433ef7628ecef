"""Benchmark of ``rmkit conform --protocol rmb`` against a real daemon (real redis-server + HTTP).

Figures (machines here are noisy: 2 shared cores, so rates come with a baseline of the same run):

- baseline: bare exchanges/s: the kit pushes a request to the reference daemon's local queue and
  waits for the kit twin to receive its POST, one at a time, with no judging (the floor of the
  daemon + Redis + HTTP round trip the scenarios are made of)
- catalogue: the named scenarios against the reference daemon, scenarios/s
- generated: Hypothesis scenarios against the reference daemon, scenarios/s, and the ratio of
  scenarios/s to the bare exchanges/s
- per faulty example: the time until the generator's first failing scenario, the time to shrink
  it, the shrink runs, the acts left, and the rules that caught it (the catalogue is skipped, so
  this measures the search alone)

Usage: python bench/bench_rmb_conform.py [--examples N] [--faulty NAME ...] [--profile P] [--no-faulty]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

REFERENCE = "{python} -m rmkit.reference_impl.rmb.cli serve --twin {twin} --directory {directory} --seed {seed} " \
            "--redis {redis} --listen {listen} --profile {profile}"
VARIANT = "{python} -m rmkit.conformance.rmb.examples NAME serve --twin {twin} --directory {directory} --seed {seed} " \
          "--redis {redis} --listen {listen} --profile {profile}"


def _open(cmd: str, profile: str):
    from rmkit.conformance.rmb.driven.harness import Harness

    loop = asyncio.new_event_loop()
    h = Harness(cmd, profile)
    loop.run_until_complete(h.start())
    return h, loop


def _close(h, loop) -> None:
    loop.run_until_complete(h.stop())
    loop.close()


async def _bare(h, n: int) -> float:
    from rmkit.conformance.rmb.driven.acts import client_message
    from rmkit.conformance.rmb.driven.harness import PEER_ED

    start = time.monotonic()
    for i in range(n):
        cmd = f"bench.bare{i}"
        await h.push(h.b["local_queue"], client_message(cmd, [PEER_ED], 30, 1, f"bench.ret{i}", "x"))
        await h.twins.wait(lambda: any(e.cmd == cmd for e in h.twins.exchanges), 10)
    return n / (time.monotonic() - start)


def main(argv=None) -> int:
    from rmkit.conformance.rmb.driven.judge import Rules
    from rmkit.conformance.rmb.driven.scenario import catalogue
    from rmkit.conformance.rmb.driven.suite import run_scenario, search
    from rmkit.conformance.rmb.examples.variants import FAULTY

    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=30, help="generated scenarios against the reference (default 30)")
    ap.add_argument("--profile", default="spec")
    ap.add_argument("--faulty", nargs="*", help="faulty examples to find and shrink (default: all)")
    ap.add_argument("--no-faulty", action="store_true")
    a = ap.parse_args(argv)

    h, loop = _open(REFERENCE, a.profile)
    try:
        bare = loop.run_until_complete(_bare(h, 20))
        cat = catalogue(a.profile, h.b["retry_delay_s"] >= 1)
        t = time.monotonic()
        for sc in cat:
            loop.run_until_complete(run_scenario(h, sc))
        cat_rate = len(cat) / (time.monotonic() - t)
        g = search(h, loop, Rules(a.profile), max_examples=a.examples, derandomize=True, seed=None, time_budget=None,
                   slow_retries=h.b["retry_delay_s"] >= 1)
        gen_rate = g.examples / g.seconds
    finally:
        _close(h, loop)
    print(f"reference daemon, profile {a.profile} (real redis-server + HTTP):")
    print(f"  baseline: bare exchanges (push -> POST at the kit twin, one at a time): {bare:.1f}/s")
    print(f"  catalogue: {len(cat)} scenarios one at a time: {cat_rate:.2f} scenarios/s")
    print(f"  generated: {g.examples} scenarios in {g.seconds:.1f} s: {gen_rate:.2f} scenarios/s "
          f"({gen_rate / bare:.3f} of the bare exchange rate){'  FAILED' if g.failing else ''}")
    if a.no_faulty:
        return 1 if g.failing else 0
    names = a.faulty or list(FAULTY)
    print("faulty examples (generated scenarios only, derandomized):")
    print(f"  {'example':<20} {'profile':<10} {'found':>8} {'shrunk':>8} {'runs':>5} {'acts':>4}  rules")
    bad = 0
    for name in names:
        cls, profile, expect = FAULTY[name]
        h, loop = _open(VARIANT.replace("NAME", name), profile)
        try:
            rules = Rules(profile)
            g = search(h, loop, rules, max_examples=200, derandomize=True, seed=None, time_budget=None,
                       slow_retries=h.b["retry_delay_s"] >= 1)
        finally:
            _close(h, loop)
        if g.failing is None:
            bad += 1
            print(f"  {name:<20} {profile:<10} NOT FOUND in {g.examples} scenarios ({g.seconds:.1f} s)")
            continue
        caught = sorted({c.rule for _, c in g.failing.failures(rules)})
        print(f"  {name:<20} {profile:<10} {g.found_after_s:7.1f}s {g.seconds - g.found_after_s:7.1f}s {g.shrink_runs:>5} "
              f"{len(g.failing.scenario.acts):>4}  {', '.join(caught)}{'' if set(caught) & expect else '  (not the expected rule)'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
