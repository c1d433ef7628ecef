"""``rmkit explain``: a rule with its source and a live example violation.

The example is not prose: it is the rule's own fixture (shipped with the kit) run through the
checker, so the example cannot drift from what the checker really reports.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.protocols.remp.model import model_for
from rmkit.protocols.remp.keys import load_validator_set
from rmkit.examples import fixture_example
from rmkit.rules import OFF


def _fixture_root():
    return resources.files("rmkit.fixtures") / "remp" / "rules"


def explain_rule(rule_id: str) -> dict[str, Any]:
    model = model_for("spec")
    rule = model.rules[rule_id]
    out: dict[str, Any] = {"rule": rule, "example": None}
    manifest = json.loads((_fixture_root() / "manifest.json").read_text(encoding="utf-8"))
    for profile in [p for p in model.profiles if rule.mode(p) != OFF]:
        entry = next((f for f in manifest["fixtures"] if f["profile"] == profile and f["file"].endswith(f"/{rule_id}.jsonl")), None)
        if entry is None:
            continue
        res = _fixture_root() / entry["file"]
        valset = None
        if entry.get("validators"):  # a signature rule: its fixture is checked against the fixtures' keys
            with resources.as_file(_fixture_root() / entry["validators"]) as vpath:
                valset = load_validator_set(str(vpath))
        with resources.as_file(res) as path:
            report = RempLogChecker(profile, validator_set=valset).run([str(path)])
            lines = path.read_text(encoding="utf-8").splitlines()
        hit = next((v for v in report.violations if v.rule == rule_id), None)
        if hit is None and rule_id == report.input_rule and report.input_problems:
            p = report.input_problems[0]
            from rmkit.verdict import Evidence, Violation

            hit = Violation(rule_id, rule.severity, rule.mode(profile), None, p.error, [Evidence(p.line, None, None, entry["file"])])
        if hit is None:
            continue
        out["example"] = fixture_example(hit, lines, profile, entry["file"], entry["why"])
        break
    return out
