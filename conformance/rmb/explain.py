"""``rmkit explain RMB-...``: a rule with its source and a live example violation: the rule's own
fixture (shipped with the kit) run through the log checker, so the example cannot drift from what
the checker reports. A rule no log can show says so (spec/rmb/logcheck.yaml)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from rmkit.examples import fixture_example
from rmkit.rules import OFF


def _fixture_root():
    return resources.files("rmkit.fixtures") / "rmb" / "rules"


def explain_rule(rule_id: str) -> dict[str, Any]:
    from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards
    from rmkit.protocols.rmb.model import rmb_spec

    spec = rmb_spec()
    rule = spec.rules[rule_id]
    out: dict[str, Any] = {"rule": rule, "example": None}
    why_not = spec.raw["logcheck"]["not_loggable"].get(rule_id)
    if why_not:
        out["not_loggable"] = why_not
        return out
    manifest = json.loads((_fixture_root() / "manifest.json").read_text(encoding="utf-8"))
    for profile in [p for p in spec.profiles if rule.mode(p) != OFF]:
        entry = next((f for f in manifest["fixtures"] if f["profile"] == profile and f["file"].endswith(f"/{rule_id}.jsonl")), None)
        if entry is None:
            continue
        with resources.as_file(_fixture_root() / entry["file"]) as path, \
                resources.as_file(_fixture_root() / manifest["directory"]) as directory:
            report = RmbLogChecker(RmbShards(profile, str(directory) if entry["directory"] else None)).run([str(path)])
            lines = path.read_text(encoding="utf-8").splitlines()
        hit = next((v for v in report.violations if v.rule == rule_id), None)
        if hit is None:
            continue
        out["example"] = fixture_example(hit, lines, profile, f"rmb/rules/{entry['file']}", entry["why"])
        break
    return out
