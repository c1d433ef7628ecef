"""Which scenarios can detect the breach of which Corda rule, as measured and kept
(``coverage.json`` beside this module): what the per-rule table of every run reads
(:mod:`.report`) and which generated scenarios a run plays after the catalogue
(:func:`generated`). :mod:`.measure` measures it again and says how.
"""

from __future__ import annotations

import json
from pathlib import Path

FILE = Path(__file__).with_name("coverage.json")


def load() -> dict:
    """The measured coverage as kept: {"scenarios": {name: {role, title, steps}}, "rules": {rule:
    {role: {"mutant": name, "caught_by": {profile: [scenario names]}}}}}; empty when unreadable."""
    try:
        doc = json.loads(FILE.read_text(encoding="utf-8"))
        return {"scenarios": doc["scenarios"], "rules": doc["rules"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {"scenarios": {}, "rules": {}}


def caught_by(rule: str, role: str, profile: str, cov: dict | None = None) -> list[str]:
    """The scenarios that catch ``rule``'s mutant of ``role`` in ``profile`` (names)."""
    cov = load() if cov is None else cov
    return list(((cov["rules"].get(rule) or {}).get(role) or {}).get("caught_by", {}).get(profile, []))


def generated(role: str, profile: str, cov: dict | None = None) -> list[tuple[str, list]]:
    """(name, steps) of the kept generated scenarios of ``role`` that cover some rule in
    ``profile``: what a conform run plays before it generates its own."""
    cov = load() if cov is None else cov
    wanted = {name for entry in cov["rules"].values() for name in (entry.get(role) or {}).get("caught_by", {}).get(profile, [])}
    return [(name, [tuple(s) for s in sc["steps"]]) for name, sc in sorted(cov["scenarios"].items())
            if sc["role"] == role and name in wanted]


def not_covered(rule: str, profile: str) -> str | None:
    """The spec's reason why no scenario covers ``rule`` in ``profile`` (rules.yaml ``not_covered``)."""
    from rmkit.protocols.corda.model import corda_spec

    return (corda_spec(profile).rules[rule].not_covered or {}).get(profile)
