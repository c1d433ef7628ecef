"""The typed result of a driven conformance run (``rmkit conform``), the same for every protocol:
what each rule's judge found, from evidence, and what each scenario did. A protocol's suite
builds it from its own run; :mod:`rmkit.render.conform` renders it as JUnit XML and as a
standalone HTML page, so CI and a reader see every protocol's run in one shape.

A rule's status is one of :data:`RULE_STATUSES`: never a pass that no scenario able to catch a
breach backs (``covered_by``: the scenarios that catch the rule's mutant and ran in this run).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# a rule's status in the per-rule table
FAIL = "fail"                     # a strict requirement broken (the run fails)
FINDING = "finding"               # broken, but not strict in this profile (reported, the run may pass)
DEPARTURE = "known departure"     # broken as the profile's reference facts are, reported as another rule
PASS = "pass"                     # a scenario that catches the rule's mutant ran clean
NOT_EXERCISED = "not exercised"   # no such scenario ran clean in this run (``why`` says why)
NOT_COVERED = "not covered"       # no scenario catches the rule's mutant (``why`` says why)
NOT_REACHED = "not reached"       # every scenario that covers it ended before its first event
OFF = "off"                       # the profile does not judge it
RULE_STATUSES = (FAIL, FINDING, DEPARTURE, PASS, NOT_EXERCISED, NOT_COVERED, NOT_REACHED, OFF)
UNJUDGED = (NOT_EXERCISED, NOT_COVERED, NOT_REACHED, OFF)  # no verdict on the rule: skipped, with why

NO_VERDICT = "no verdict"  # the run's verdict when the implementation could not be driven

LEGEND = ("per rule: fail; finding (non-strict in this profile); known departure (broken the way the profile's "
          "reference facts are, reported as the finding named); pass, covered by N (N scenarios that catch the "
          "rule's mutant ran clean); not exercised, not covered, not reached (why); off")


@dataclass
class RuleResult:
    """One rule of the per-rule table."""

    id: str
    title: str
    mode: str  # strict, non-strict, off; or ``driven`` for a requirement only driven conformance judges
    status: str  # one of RULE_STATUSES
    covered_by: list[str] = field(default_factory=list)  # scenarios of this run that catch the rule's mutant
    evidence: str = ""  # fail, finding, known departure: what broke it, in one line
    why: str = ""  # the unjudged statuses: why there is no verdict
    detail: str = ""  # fail, finding: what a CI reader acts on (what to do, the findings, the reproduce line)


@dataclass
class Failure:
    """What went wrong in one scenario (or with the implementation): one line, its kind, the whole text."""

    summary: str
    kind: str
    text: str


@dataclass
class ScenarioResult:
    """One scenario run."""

    id: str
    role: str
    origin: str  # regression (a saved failure), catalogue (named), generated
    title: str
    verdict: str  # pass, fail
    steps: int | None = None
    elapsed_s: float = 0.0
    failure: Failure | None = None
    reproduce: str = ""  # the command that runs it again (a failure's)
    case_name: str = ""  # its JUnit test case's name, when the protocol lists scenarios as cases (default: id)


@dataclass
class RuleGroup:
    """The rules one judge gives verdicts on: a role's (``name``), or the whole run's (``""``)."""

    name: str
    rules: list[RuleResult] = field(default_factory=list)
    breakdown: Failure | None = None  # the implementation broke down (crashed, exited) where no rule names it
    note: str = ""  # what this judge does not judge, and where that is judged
    elapsed_s: float = 0.0


@dataclass
class ConformReport:
    protocol: str
    title: str  # the protocol as a page's title names it
    profile: str
    implementation: str
    impl_argv: list[str]  # --impl-cmd CMD or --impl M:F as given: what a rerun repeats
    roles: list[str]
    verdict: str  # pass, fail, or NO_VERDICT
    elapsed_s: float
    groups: list[RuleGroup] = field(default_factory=list)
    scenarios: list[ScenarioResult] = field(default_factory=list)
    scenario_cases: bool = False  # JUnit lists each scenario as a test case too (grouped by origin)
    summary: str = ""  # one line: how many scenarios ran, and how
    matrix_note: str = ""  # what the per-rule table's statuses mean, for this protocol's evidence
    not_driven: dict[str, str] = field(default_factory=dict)  # role -> why the implementation could not be driven
    kit_errors: list[str] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)  # failing scenarios saved by this run

    @property
    def rules(self) -> list[tuple[str, RuleResult]]:
        """(group name, rule) of every group, in order."""
        return [(g.name, r) for g in self.groups for r in g.rules]
