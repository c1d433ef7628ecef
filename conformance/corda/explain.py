"""``rmkit explain CORDA-...``: a rule with its source and a live example violation.

The example is the rule's own fixture (fixtures/corda/rules, shipped with the kit) run through the
log checker, so it cannot drift from what the checker reports. Rules a node's records cannot show
(the bridge's, the queues') have no fixture: the rule's ``driven`` roles and ``judged_elsewhere`` in
spec/corda/rules.yaml say where they are judged.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from rmkit.examples import fixture_example
from rmkit.rules import OFF

from rmkit.conformance.corda.checker import NOT_IN_RECORDS, CordaLogChecker
from rmkit.protocols.corda.model import corda_spec, profiles


def _fixture_root():
    return resources.files("rmkit.fixtures") / "corda" / "rules"


def explain_rule(rule_id: str) -> dict[str, Any]:
    rule = corda_spec(profiles()[0]).rules[rule_id]
    out: dict[str, Any] = {"rule": rule, "example": None}
    if rule_id in NOT_IN_RECORDS:  # no fixture can show it; say so, and where it is judged
        where = (f"rmkit conform --protocol corda --role {' / '.join(rule.driven)} judges it" if rule.driven
                 else f"where judged: {rule.judged_elsewhere}")   # spec/corda/rules.yaml: driven, judged_elsewhere
        out["not_loggable"] = f"{NOT_IN_RECORDS[rule_id]}; {where}"
        return out
    manifest = json.loads((_fixture_root() / "manifest.json").read_text(encoding="utf-8"))["fixtures"]
    for profile in [p for p in profiles() if rule.mode(p) != OFF]:
        entry = next((f for f in manifest if f["profile"] == profile and f["file"].endswith(f"/{rule_id}.jsonl")), None)
        if entry is None:
            continue
        with resources.as_file(_fixture_root() / entry["file"]) as path:
            report = CordaLogChecker(profile, settled=entry["settled"]).run([str(path)])
            lines = path.read_text(encoding="utf-8").splitlines()
        hit = next((v for v in report.violations if v.rule == rule_id), None)
        if hit is None:
            continue
        out["example"] = fixture_example(hit, lines, profile, entry["file"], entry["why"])
        break
    return out
