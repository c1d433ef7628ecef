"""The typed result of a check: a verdict plus structured witness data, rendered elsewhere.

In the manner of Porcupine/Elle: :class:`Report` holds facts only (what was read, which rule broke
where, with which receipts); ``rmkit.render`` turns it into text, JSON or JUnit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from rmkit.rules import STRICT

PASS, FAIL, NON_STRICT = "pass", "fail", "non-strict"


@dataclass
class Evidence:
    """One receipt a violation rests on: where it is and what it said."""

    line: int
    kind: str | None = None
    source_id: str | None = None
    file: str | None = None


@dataclass
class Violation:
    rule: str
    severity: str
    mode: str
    message_id: str | None
    explanation: str
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class InputProblem:
    """A line that could not be read as a receipt at all (not JSON, not an object...)."""

    file: str
    line: int
    error: str
    field: str | None = None


@dataclass
class Report:
    protocol: str
    profile: str
    inputs: list[str]
    receipts: int = 0
    messages: int = 0
    violations: list[Violation] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    strict_counts: dict[str, int] = field(default_factory=dict)
    input_problems: list[InputProblem] = field(default_factory=list)
    unreadable: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)  # rule id -> mode in this run
    # active rules that could not be checked (an input they need was not given): rule id -> why.
    # They are listed as such, never shown as passing.
    not_checked: dict[str, str] = field(default_factory=dict)
    # active rules that could not be judged for some messages (e.g. no usable time): rule id ->
    # {"messages": how many, "why": ...}. Their count covers the other messages only.
    not_judged: dict[str, dict] = field(default_factory=dict)
    input_rule: str | None = None  # the rule that unreadable lines count against
    shown_per_rule: int = 0  # 0: every violation is listed
    verdict: str = FAIL
    reasons: list[str] = field(default_factory=list)

    def count(self, rule: str, mode: str, n: int = 1) -> None:
        """Count ``n`` violations of ``rule`` (those of strict rules also towards the verdict)."""
        self.counts[rule] = self.counts.get(rule, 0) + n
        if mode == STRICT:
            self.strict_counts[rule] = self.strict_counts.get(rule, 0) + n

    def add_not_judged(self, rule: str, messages: int, why: str) -> None:
        if messages:
            entry = self.not_judged.setdefault(rule, {"messages": 0, "why": why})
            entry["messages"] += messages

    def decide(self) -> str:
        """Set and return the verdict: a run that read nothing, or could not read a line, fails."""
        reasons = []
        if self.receipts == 0:
            reasons.append("no receipts were read: nothing was checked")
        if self.unreadable:
            reasons.append(f"{self.unreadable} line(s) could not be read")
        strict = sum(self.strict_counts.values())
        if strict:
            reasons.append(f"{strict} violation(s) of strict rules")
        non_strict = sum(self.counts.values()) - strict
        if reasons:
            self.verdict = FAIL
        elif non_strict:
            self.verdict = NON_STRICT
            reasons.append(f"{non_strict} violation(s) of non-strict rules only")
        else:
            self.verdict = PASS
        self.reasons = reasons
        return self.verdict

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        order = ["verdict", "protocol", "profile", "receipts", "messages", "violations", "counts", "metrics"]
        return {k: d[k] for k in order} | {k: v for k, v in d.items() if k not in order}


def renumber(reports: list[Report], line_of: Callable[[str | None, int], int]) -> None:
    """Give every line a report names (evidence, input problems) as ``line_of(file, line)``: a
    distributed run that ordered records by provisional line numbers (``rmkit audit`` in one
    pass) puts the real ones in after the merge. Each record is renumbered once, also when several
    reports hold it (a combined report lists its logs' violations)."""
    done: set[int] = set()
    for rep in reports:
        for item in [e for v in rep.violations for e in v.evidence] + rep.input_problems:
            if id(item) not in done:
                done.add(id(item))
                item.line = line_of(item.file, item.line)
