"""``python -m rmkit.conformance.rmb.driven.measure [JOBS]``: measure again which catalogue
scenarios catch each RMB rule's mutant and rewrite ``coverage.json`` (:mod:`.coverage` says why it
is measured once and kept). Above the suite, whose runner it uses; the suite reads only the table."""

from __future__ import annotations

import asyncio
import sys

from rmkit.conformance.rmb.driven.coverage import FILE, write
from rmkit.conformance.rmb.driven.daemons import Daemons
from rmkit.conformance.rmb.driven.judge import Rules
from rmkit.conformance.rmb.driven.scenario import catalogue
from rmkit.conformance.rmb.driven.suite import run_batches
from rmkit.conformance.rmb.examples.mutants import RULE_MUTANTS


def measure(jobs: int = 3, say=print) -> dict:
    """Run the catalogue against every rule's mutant (each variant once per profile it is measured
    in) and return the coverage as :func:`coverage.load` gives it."""
    serve = "--twin {twin} --directory {directory} --seed {seed} --redis {redis} --listen {listen} --profile {profile}"
    wanted: dict[tuple[str, str], list[str]] = {}
    for rule, (name, profile) in RULE_MUTANTS.items():
        wanted.setdefault((name, profile), []).append(rule)
    out: dict = {}
    for (name, profile), rules in sorted(wanted.items()):
        loop = asyncio.new_event_loop()
        d = Daemons.create(f"{{python}} -m rmkit.conformance.rmb.examples {name} serve {serve}", profile, jobs)
        try:
            loop.run_until_complete(d.start())
            runs = run_batches(d, loop, catalogue(profile, d.b["retry_delay_s"] >= 1))
        finally:
            loop.run_until_complete(d.stop())
            loop.close()
        judge = Rules(profile)
        for rule in rules:
            caught = sorted({r.scenario.title for r in runs for _, c in r.failures(judge) if c.rule == rule})
            out[rule] = {"mutant": name, "profile": profile, "caught_by": caught}
            say(f"{rule:<16} {name:<26} {profile:<10} caught by {len(caught)} scenario(s)")
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    jobs = int((argv or sys.argv[1:] or ["3"])[0])
    rules = measure(jobs)
    write(rules)
    missing = [r for r, v in rules.items() if not v["caught_by"]]
    print(f"written {FILE.name}: {len(rules)} rules, {len(missing)} caught by no scenario {missing}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
