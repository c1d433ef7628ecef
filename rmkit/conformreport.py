"""The typed result of a driven conformance run (``rmkit conform``), the same for every protocol:
what each rule's judge found, from evidence, and what each scenario did. A protocol's suite
builds it from its own run; :mod:`rmkit.render.conform` renders it as text, JSON (one shape for
every protocol: ``spec/schema/conform-report.schema.json``), JUnit XML and a standalone HTML page,
so CI and a reader see every protocol's run in one shape. What is a protocol's own (the
parameters its generator drew, the acts or steps of a scenario, a role's findings, an exchange)
goes in the ``extras`` of the report, a group, a rule or a scenario: one declared place, written
as given.

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

FORMAT = "rmkit-conform-report/1"  # the JSON report's ``format``: raised when its shape changes

# exit codes of ``rmkit conform`` (the kit's contract): a verdict of pass, violations, or none
EXIT_PASS, EXIT_FAIL, EXIT_NO_VERDICT = 0, 1, 2

# the run's settings every protocol's ``rmkit conform`` takes (``--seed`` and so on)
SETTINGS = ("seed", "max_examples", "derandomize", "time_budget", "catalogue_only", "timeout")


def settings_of(args) -> dict:
    """The settings of a run as its options gave them (None where not given): what a rerun repeats
    besides the implementation."""
    return {name: getattr(args, name, None) for name in SETTINGS}

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
    extras: dict = field(default_factory=dict)  # the protocol's own, JSON-ready (e.g. how many checks it made)


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
    rules: list[str] = field(default_factory=list)  # the rules it broke (strict or not), first named first
    # differences no requirement of the documents names (not failures): each {"summary": ..., "step": N, ...}
    informational: list[dict] = field(default_factory=list)
    extras: dict = field(default_factory=dict)  # the protocol's own, JSON-ready (its steps or acts, its failure in full)


@dataclass
class RuleGroup:
    """The rules one judge gives verdicts on: a role's (``name``), or the whole run's (``""``)."""

    name: str
    rules: list[RuleResult] = field(default_factory=list)
    breakdown: Failure | None = None  # the implementation broke down (crashed, exited) where no rule names it
    note: str = ""  # what this judge does not judge, and where that is judged
    elapsed_s: float = 0.0
    verdict: str = ""  # the judge's own verdict, where a run has several judges (one per role)
    summary: str = ""  # one line: what this judge's scenarios were, and how the run ended for it
    extras: dict = field(default_factory=dict)  # the protocol's own, JSON-ready


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
    settings: dict = field(default_factory=dict)  # :func:`settings_of` the options of the run
    exit: int | None = None  # the command's exit code (None: :attr:`exit_code` reads it from the verdict)
    notes: list[str] = field(default_factory=list)  # the protocol's own lines under the text report's header
    extras: dict = field(default_factory=dict)  # the protocol's own, JSON-ready (see the module's docstring)

    @property
    def rules(self) -> list[tuple[str, RuleResult]]:
        """(group name, rule) of every group, in order."""
        return [(g.name, r) for g in self.groups for r in g.rules]

    @property
    def exit_code(self) -> int:
        """0 pass, 1 violations, 2 no verdict: as the command set it, else from the verdict."""
        if self.exit is not None:
            return self.exit
        return {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(self.verdict, EXIT_NO_VERDICT)

    def totals(self) -> dict:
        """How many scenarios ran, passed and failed (in all and per origin), and rules per status."""
        by_origin: dict[str, dict[str, int]] = {}
        for s in self.scenarios:
            counts = by_origin.setdefault(s.origin, {"run": 0, "passed": 0, "failed": 0})
            counts["run"] += 1
            counts["passed" if s.verdict == PASS else "failed"] += 1
        statuses = {status: 0 for status in RULE_STATUSES}
        for _, r in self.rules:
            statuses[r.status] += 1
        return {"scenarios": len(self.scenarios), "passed": sum(c["passed"] for c in by_origin.values()),
                "failed": sum(c["failed"] for c in by_origin.values()), "by_origin": by_origin,
                "rules": {status: n for status, n in statuses.items() if n}}

    def coverage(self) -> dict:
        """How far the per-rule table is evidence: rules listed, those a scenario able to catch a
        breach backs in this run (``covered``: a pass, or a rule some scenario broke), those without
        a verdict (with why in their row)."""
        judged = [r for _, r in self.rules if r.status != OFF]
        covered = [r for r in judged if r.status == PASS or r.status in (FAIL, FINDING, DEPARTURE)]
        return {"rules": len(self.rules), "judged": len(judged), "covered": len(covered),
                "unjudged": sum(1 for r in judged if r.status in UNJUDGED), "note": self.matrix_note}
