"""Rules as data: a rule's identity, wording, provenance and per-profile mode.

Modes: ``strict`` (a violation fails the run), ``non-strict`` (reported; the verdict is at best
``non-strict``), ``off`` (not checked). The rule text lives in the spec; code only refers to IDs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

STRICT, NON_STRICT, OFF = "strict", "non-strict", "off"
SEVERITIES = ("critical", "major", "minor", "info")  # info: reported, never failing (its modes are non-strict or off)


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: str
    statement: str
    advice: str
    modes: dict[str, str]
    source: dict[str, str]
    profile_notes: dict[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = ()  # inputs beyond the log (e.g. validator_keys); without them: not checked
    driven: tuple[str, ...] | None = None  # the driven roles whose judge can find a violation (None: not stated)
    judged_elsewhere: str = ""      # where a rule no driven role judges is judged instead
    not_loggable: str = ""          # why no log can show the rule (then it has no log fixture; reports list it as not checked)
    not_planted: str = ""           # why no injector plants the rule in a simulated log
    not_covered: dict[str, str] = field(default_factory=dict)  # profile -> why no scenario catches its mutant there
    known_departure: dict[str, dict] = field(default_factory=dict)  # profile -> {reported_as, why, sources}: a breach its facts have

    def mode(self, profile: str) -> str:
        return self.modes.get(profile, OFF)

    def citation(self) -> str:
        """The seed sentence or reference fact the rule comes from, as one line."""
        return citation(self.source)


def citation(source: dict) -> str:
    """A spec ``source`` (a seed sentence ``{doc, quote}`` or a reference fact ``{doc, fact}``) as one line."""
    if "quote" in source:
        return f"document {source['doc']}: \u201c{source['quote']}\u201d"
    return f"{source['doc']}: {source['fact']}"


class RuleSet:
    """The rules of one protocol, in spec order, looked up by ID."""

    def __init__(self, rules: Iterable[Rule]):
        self._rules = list(rules)
        self._by_id = {r.id: r for r in self._rules}

    @classmethod
    def from_spec(cls, data: dict[str, Any]) -> "RuleSet":
        return cls(Rule(**{k: tuple(v) if k in ("requires", "driven") else v for k, v in r.items()}) for r in data["rules"])

    def __iter__(self):
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def __contains__(self, rule_id: str) -> bool:
        return rule_id in self._by_id

    def __getitem__(self, rule_id: str) -> Rule:
        return self._by_id[rule_id]

    def ids(self) -> list[str]:
        return [r.id for r in self._rules]

    def active(self, profile: str) -> list[Rule]:
        return [r for r in self._rules if r.mode(profile) != OFF]
