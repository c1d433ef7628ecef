"""The typed result of a check: a verdict plus structured witness data, rendered elsewhere.

In the manner of Porcupine/Elle: :class:`Report` holds facts only (what was read, which rule broke
where, with which records); ``rmkit.render`` turns it into text, JSON or JUnit.

The vocabulary is every protocol's: a log holds *records*; a checker judges the records of one
*subject* together (the value of the protocol's record key); a violation names its subject and
rests on *evidence*, records each with the *source* that wrote it. What a protocol calls these
things for people comes from the protocol (:class:`Nouns`, ``Protocol.nouns``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from rmkit.rules import STRICT

PASS, FAIL, NON_STRICT = "pass", "fail", "non-strict"

NOTHING_READ = "no records were read: nothing was checked"  # the reason a run that read nothing fails

# The JSON report's names for the fields whose names differ (see :meth:`Report.to_dict`): the JSON
# format is kept stable for the scripts that read it, so its keys keep their first names.
JSON_KEYS = {"records": "receipts", "subjects": "messages", "subject": "message_id", "source": "source_id"}


@dataclass(frozen=True)
class Nouns:
    """What a protocol calls, for people, the records of its logs, the subjects they are judged
    by, and one subject (``receipts``, ``message``, ``messages``): the words of its text and HTML
    reports. Display only: the report's fields and JSON keys are the same for every protocol."""

    records: str = "records"
    subject: str = "subject"
    subjects: str = "subjects"


GENERIC_NOUNS = Nouns()


@dataclass
class Evidence:
    """One record a violation rests on: where it is, what it said (its kind) and who wrote it."""

    line: int
    kind: str | None = None
    source: str | None = None  # the id of the node or party that wrote the record
    file: str | None = None


@dataclass
class Violation:
    rule: str
    severity: str
    mode: str
    subject: str | None  # the record key the violation is about (None: the log as a whole)
    explanation: str
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class InputProblem:
    """A line that could not be read as a record at all (not JSON, not an object...)."""

    file: str
    line: int
    error: str
    field: str | None = None


@dataclass
class Report:
    protocol: str
    profile: str
    inputs: list[str]
    records: int = 0  # records read
    subjects: int = 0  # distinct subjects (record keys) among them
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
    # active rules that could not be judged for some subjects (e.g. no usable time): rule id ->
    # {"messages": how many subjects (the JSON report's key), "why": ...}. Their count covers the
    # other subjects only.
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

    def add_not_judged(self, rule: str, subjects: int, why: str) -> None:
        if subjects:
            entry = self.not_judged.setdefault(rule, {"messages": 0, "why": why})
            entry["messages"] += subjects

    def decide(self) -> str:
        """Set and return the verdict: a run that read nothing, or could not read a line, fails."""
        reasons = []
        if self.records == 0:
            reasons.append(NOTHING_READ)
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
        """The JSON report (docs/reports.md): ``verdict, protocol, profile, receipts, messages,
        violations, counts, metrics`` first, then the rest; fields named as :data:`JSON_KEYS` says."""
        d = _json_names(asdict(self))
        order = ["verdict", "protocol", "profile", "receipts", "messages", "violations", "counts", "metrics"]
        return {k: d[k] for k in order} | {k: v for k, v in d.items() if k not in order}


def _json_names(d: dict[str, Any]) -> dict[str, Any]:
    """A report's dict with the fields of it, its violations and their evidence named as in JSON."""
    def named(fields: dict[str, Any]) -> dict[str, Any]:
        return {JSON_KEYS.get(k, k): v for k, v in fields.items()}  # in the fields' order

    d = named(d)
    d["violations"] = [named(v) | {"evidence": [named(e) for e in v["evidence"]]} for v in d["violations"]]
    return d


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
