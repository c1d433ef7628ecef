"""``python -m rmkit.conformance.remp.agreement``: check the model and the reference machines
against each other, both directions, and save any disagreement as a regression fixture.

Exit codes as ``rmkit check``: 0 agreement, 1 a disagreement or a rejected trace, 2 usage or TLC
error (no verdict).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from . import receipts, replay, tracecheck
from .explore import explore
from .harness import SCENARIOS


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rmkit.conformance.remp.agreement", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="rotating")
    p.add_argument("--profile", choices=("spec", "ever-node"), default="spec",
                   help="the machines' profile and the model's tables and choices (default spec)")
    p.add_argument("--traces", type=int, default=50, help="model behaviours replayed into the reference (default 50)")
    p.add_argument("--depth", type=int, default=40, help="steps per model behaviour (default 40)")
    p.add_argument("--walks", type=int, default=5, help="reference traces validated by TLC (default 5)")
    p.add_argument("--walk-steps", type=int, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--regressions", type=Path, default=Path("agreement-regressions"),
                   help="folder for disagreements (JSON fixtures that replay without TLC)")
    a = p.parse_args(argv)
    sc = SCENARIOS[a.scenario]
    failed = 0
    start = time.perf_counter()
    try:
        behaviours = replay.simulate(sc, traces=a.traces, depth=a.depth, seed=a.seed, profile=a.profile)
    except replay.SimulationFailed as e:
        print(f"error: TLC gave no behaviours: {e}", file=sys.stderr)
        return 2
    compared = sum(len(r["rc"]) + len(r["fr"]) for states in behaviours for s in states[1:]
                   for r in [receipts.from_tlc(s.values.get("out"))])
    for n, states in enumerate(behaviours, 1):
        d = replay.replay_behaviour(sc, states, a.profile)
        if d is not None:
            failed += 1
            a.regressions.mkdir(parents=True, exist_ok=True)
            path = a.regressions / f"{a.profile}-{a.scenario}-seed{a.seed}-behaviour{n}.json"
            path.write_text(json.dumps(d.fixture(sc, a.profile), indent=1) + "\n")
            print(f"model -> reference: behaviour {n} disagrees (saved {path})\n{d.render()}")
    print(f"model -> reference ({a.profile}): {len(behaviours)} behaviours, {sum(len(b) - 1 for b in behaviours)} steps, "
          f"{compared} model receipts compared, {failed} disagreements ({time.perf_counter() - start:.1f} s)")
    errors = 0
    walked = Counter()
    for k in range(a.walks):
        steps = explore(sc, a.seed * 1000 + k, a.walk_steps, profile=a.profile)
        v = tracecheck.check_trace(sc, steps, profile=a.profile)
        sent = sum(len(s.receipts["rc"]) + len(s.receipts["fr"]) for s in steps)
        refused = sum(not s.taken for s in steps)
        print(f"reference -> model ({a.profile}): walk {k + 1} ({len(steps)} events, {refused} refused by the reference, "
              f"{sent} receipts): {v.render()}")
        failed += v.verdict == tracecheck.REJECTED
        errors += v.verdict == tracecheck.ERROR
        walked.update(events=len(steps), receipts=sent, ticks=sum(s.action["a"] == "Tick" for s in steps),
                      announced=sum(s.action["a"] == "Announce" and s.taken for s in steps))
    if a.walks:
        print(f"reference -> model ({a.profile}): {a.walks} walks, {walked['events']} events ({walked['ticks']} ticks, "
              f"{walked['announced']} announcements taken), {walked['receipts']} receipts compared")
    if errors:
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
