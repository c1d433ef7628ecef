"""Which catalogue scenarios can detect the breach of which RMB rule: measured by running the
catalogue against each rule's mutant of the reference daemon (:mod:`rmkit.conformance.rmb.examples.mutants`);
a scenario covers a rule when it fails on that rule's mutant *by that rule* (a failed check names
it), not when it fails for any reason.

Why measured once and kept (``coverage.json`` beside this module) instead of at every run: each
mutant is a daemon process on its own Redis, and the catalogue against all of them takes minutes.
``python -m rmkit.conformance.rmb.driven.coverage`` measures again and rewrites the file; a slow
test measures again and compares. Scenarios are named by title, which is the same in every profile
(ids are numbered per profile). The per-rule table of a run (:func:`rule_verdicts`) then says, per
rule: fail (a strict check failed), pass with the number of scenarios that catch its mutant and
ran clean, or not exercised with why: never "pass" without such a scenario.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILE = Path(__file__).with_name("coverage.json")


def load() -> dict:
    """rule -> {"mutant": name, "profile": P, "caught_by": [titles]} as last measured."""
    try:
        return json.loads(FILE.read_text(encoding="utf-8"))["rules"]
    except (OSError, ValueError, KeyError):
        return {}


def measure(jobs: int = 3, say=print) -> dict:
    """Run the catalogue against every rule's mutant (each variant once per profile it is measured
    in) and return the coverage as :func:`load` gives it."""
    import asyncio

    from rmkit.conformance.rmb.driven.daemons import Daemons
    from rmkit.conformance.rmb.driven.judge import Rules
    from rmkit.conformance.rmb.driven.scenario import catalogue
    from rmkit.conformance.rmb.driven.suite import run_batches
    from rmkit.conformance.rmb.examples.mutants import RULE_MUTANTS

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


def write(rules: dict) -> None:
    FILE.write_text(json.dumps({"about": "catalogue scenarios (by title) that fail each rule's mutant by that rule; "
                                         "python -m rmkit.conformance.rmb.driven.coverage measures again",
                                "rules": rules}, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def rule_verdicts(report, rules) -> dict:
    """rule -> ("fail", n failed checks) | ("pass", n scenarios that catch its mutant and ran
    clean) | ("not exercised", why), for the rules ``rules`` (a judge.Rules) judges."""
    from rmkit.conformance.rmb.driven.scenario import NOT_DRIVEN

    cov = load()
    runs = report.runs + ([report.final] if report.final else [])
    out = {}
    for r in rules.spec.rules:
        rid = r.id
        if rules.mode(rid) == "off":
            continue
        failed = sum(1 for run in runs for a in run.acts for c in a.checks if c.rule == rid and not c.ok)
        if failed:
            out[rid] = ("fail", failed)
            continue
        titles = set((cov.get(rid) or {}).get("caught_by", ()))
        clean = [run for run in runs if run.scenario.title in titles and not run.crashed
                 and any(c.rule == rid for a in run.acts for c in a.checks)]
        if clean:
            out[rid] = ("pass", len(clean))
        elif rid in NOT_DRIVEN:
            out[rid] = ("not exercised", NOT_DRIVEN[rid])
        elif titles:
            out[rid] = ("not exercised", "no scenario that catches its mutant ran in this run")
        else:
            out[rid] = ("not exercised", "no scenario catches its mutant")
    return out


def main(argv: list[str] | None = None) -> int:
    jobs = int((argv or sys.argv[1:] or ["3"])[0])
    rules = measure(jobs)
    write(rules)
    missing = [r for r, v in rules.items() if not v["caught_by"]]
    print(f"written {FILE.name}: {len(rules)} rules, {len(missing)} caught by no scenario {missing}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
