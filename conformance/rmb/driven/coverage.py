"""Which catalogue scenarios can detect the breach of which RMB rule: measured by running the
catalogue against each rule's mutant of the reference daemon (:mod:`rmkit.conformance.rmb.examples.mutants`);
a scenario covers a rule when it fails on that rule's mutant *by that rule* (a failed check names
it), not when it fails for any reason.

Why measured once and kept (``coverage.json`` beside this module) instead of at every run: each
mutant is a daemon process on its own Redis, and the catalogue against all of them takes minutes.
``python -m rmkit.conformance.rmb.driven.measure`` measures again and rewrites the file; a slow
test measures again and compares. Scenarios are named by title, which is the same in every profile
(ids are numbered per profile). The per-rule table of a run (:func:`rule_verdicts`) then says, per
rule: fail (a strict check failed), pass with the number of scenarios that catch its mutant and
ran clean, or not exercised with why: never "pass" without such a scenario.
"""

from __future__ import annotations

import json
from pathlib import Path

FILE = Path(__file__).with_name("coverage.json")


def load() -> dict:
    """rule -> {"mutant": name, "profile": P, "caught_by": [titles]} as last measured."""
    try:
        return json.loads(FILE.read_text(encoding="utf-8"))["rules"]
    except (OSError, ValueError, KeyError):
        return {}


def write(rules: dict) -> None:
    FILE.write_text(json.dumps({"about": "catalogue scenarios (by title) that fail each rule's mutant by that rule; "
                                         "python -m rmkit.conformance.rmb.driven.measure measures again",
                                "rules": rules}, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def rule_verdicts(report, rules) -> dict:
    """rule -> ("fail", n failed checks) | ("pass", n scenarios that catch its mutant and ran
    clean) | ("not exercised", why), for the rules ``rules`` (a judge.Rules) judges."""
    return {rid: (what, len(n) if what == "pass" else n) for rid, (what, n) in rule_evidence(report, rules).items()}


def rule_evidence(report, rules) -> dict:
    """As :func:`rule_verdicts`, a pass with the ids of the scenarios behind it."""
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
            out[rid] = ("pass", [run.scenario.id for run in clean])
        elif rid in NOT_DRIVEN:
            out[rid] = ("not exercised", NOT_DRIVEN[rid])
        elif titles:
            out[rid] = ("not exercised", "no scenario that catches its mutant ran in this run")
        else:
            out[rid] = ("not exercised", "no scenario catches its mutant")
    return out
