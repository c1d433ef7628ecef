"""Run one scenario against an implementation and the reference in lock-step.

Each step: the reference machine answers, the implementation answers, the two are compared up to
what the spec leaves free (:mod:`.compare`). The first difference ends the scenario; the rules the
implementation's receipts then break, and the reference's do not, name what it got wrong
(:mod:`.rulecheck`). A scenario that runs to its end is checked once more against the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmkit.conformance.remp.driven.adapters import ImplementationFailure, hello_message
from rmkit.conformance.remp.driven.compare import describe
from rmkit.conformance.remp.driven.judge import Judge, Judgement
from rmkit.conformance.remp.driven.rulecheck import ReceiptLog, rules_broken
from rmkit.conformance.remp.driven.scenario import Scenario
from rmkit.reference_impl.remp.adapter import ReferenceAdapter

PASS, FAIL = "pass", "fail"


@dataclass
class Failure:
    """Why a scenario failed: ``kind`` mismatch (outputs differ), rule (outputs equal but a rule
    broken by free fields, e.g. timestamps), or an :class:`ImplementationFailure` kind."""

    kind: str
    step: int
    event: dict | None
    expected: list
    actual: list | None
    summary: str
    rules: list = field(default_factory=list)  # [(rule id, message id)]
    evidence: list = field(default_factory=list)  # [(rule, step, receipt line)]
    received: str = ""
    stderr: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "step": self.step, "summary": self.summary,
                "rules": [{"rule": r, "message_id": m} for r, m in self.rules],
                "event": self.event, "expected": self.expected, "actual": self.actual,
                "received": self.received, "stderr": self.stderr[-4000:]}


@dataclass
class ScenarioResult:
    scenario: Scenario
    verdict: str
    steps: int  # steps run
    failure: Failure | None = None
    expected: list = field(default_factory=list)  # the reference's outputs per step run
    implementation: str = ""
    freedoms_used: dict = field(default_factory=dict)  # freedom name -> steps where the judge applied it
    # outputs that differ from the reference's where no requirement names the difference: shown, never failed
    differences: list = field(default_factory=list)  # [InformationalDifference]
    elapsed_s: float = 0.0  # the run's wall time (JUnit's time=), set by the suite


@dataclass
class InformationalDifference:
    """A step whose outputs differ from the reference's where no requirement of the documents names
    the difference (Autobahn's INFORMATIONAL): the report shows it, the verdict ignores it."""

    step: int
    event: dict
    expected: list
    actual: list
    summary: str

    def as_dict(self) -> dict:
        return {"step": self.step, "event": self.event, "expected": self.expected, "actual": self.actual,
                "summary": self.summary}


class Rejected(Exception):
    """A deferred step the judge does not allow, found when its outputs arrived with later ones."""

    def __init__(self, seq: int, judgement: Judgement):
        super().__init__(f"step {seq}: {judgement.summary()}")
        self.seq, self.judgement = seq, judgement


class LockStep:
    """The reference and the implementation driven together, one event at a time, each side's
    receipts kept in log form for the rules (what both the catalogue runner and the generators do).

    Against an implementation that takes several events in one request (``impl.batch``), events the
    judge may judge later (:meth:`.Judge.deferrable`) are :meth:`defer`-red: the reference answers at
    once (the caller draws the next event from it), the implementation gets them all with the next
    event that is not deferrable (or at :meth:`flush`), and each step's outputs are then judged in
    order, exactly as one by one: the first step not allowed is the one reported."""

    MAX_DEFERRED = 64  # events of one request at most

    def __init__(self, role: str, profile: str, params: dict, impl, scenario_id: str = ""):
        self.ref = ReferenceAdapter(role)
        self.ref.hello(dict(params, profile=profile))
        self.impl = impl
        self.hello = hello_message(role, profile, params, scenario_id)
        lifetime = params.get("lifetime_ms")
        self.ref_log, self.impl_log = ReceiptLog(role, profile, lifetime), ReceiptLog(role, profile, lifetime)
        self.seq = 0
        self.judge = Judge(role, profile, self.ref)
        self.expected: list = []  # the reference's outputs for the latest event (kept when the implementation fails)
        self.deferred: list = []  # [(seq, prepared step)] sent to the implementation with the next request
        self.differences: list = []  # [InformationalDifference] of the steps judged so far
        self.informational = 0  # steps with an informational difference

    def start(self, early: bool = False) -> None:
        """Say hello; ``early``: without waiting for the ready where the implementation can (its
        failure then comes with the next request, as step 0's)."""
        if early and hasattr(self.impl, "begin"):
            self.impl.begin(self.hello)
        else:
            self.impl.start(self.hello)  # an ImplementationFailure is the caller's to report

    def can_defer(self, event: dict) -> bool:
        return (getattr(self.impl, "batch", False) and len(self.deferred) < self.MAX_DEFERRED
                and self.judge.deferrable(event))

    def defer(self, event: dict) -> list:
        """The reference's outputs for ``event`` (one :meth:`can_defer` allows); the implementation's
        are judged at the next :meth:`step` or :meth:`flush`."""
        self.seq += 1
        p = self.judge.prepare(event, None)
        self.deferred.append((self.seq, p))
        return p.expected

    def flush(self) -> None:
        """Judge the deferred steps: raises :class:`Rejected` at the first not allowed,
        :class:`ImplementationFailure` at the first the implementation failed."""
        if self.deferred:
            self._judge_deferred(self.impl.steps(self.deferred[0][0], [p.event for _, p in self.deferred]))

    def _judge_deferred(self, answers: list) -> None:
        deferred, self.deferred = self.deferred, []
        for (seq, p), answer in zip(deferred, answers):
            if isinstance(answer, ImplementationFailure):
                self.expected = p.expected
                raise answer
            actual, values = answer
            j = self.judge.finish(p, actual)
            self.ref_log.add(seq, p.expected, p.values)
            self.impl_log.add(seq, actual, values)
            self._note(seq, p.event, actual, j)
            if j:
                self.expected = p.expected
                raise Rejected(seq, j)

    def step(self, event: dict) -> tuple[list, list, Judgement]:
        """(reference's outputs, implementation's outputs, the judgement) for one event: the
        implementation answers first, so that the reference can follow its legal choices. Deferred
        steps go with it (and are judged first)."""
        self.seq += 1
        try:
            if self.deferred:
                answers = self.impl.steps(self.deferred[0][0], [p.event for _, p in self.deferred] + [event])
                self._judge_deferred(answers)
                last = answers[-1]
                if isinstance(last, ImplementationFailure):
                    raise last
                actual, values = last
            else:
                actual = self.impl.step(self.seq, event)
                values = getattr(self.impl, "last_values", None)  # the implementation's outputs, decoded when checked
        except ImplementationFailure as f:
            if f.step == self.seq:
                self.expected = self.ref.step(event)  # for the report: what the reference would answer
            raise
        j = self.judge.step(event, actual)
        expected = self.expected = j.expected
        self.ref_log.add(self.seq, expected, getattr(self.ref, "last_values", None))
        self.impl_log.add(self.seq, actual, values)
        self._note(self.seq, event, actual, j)
        return expected, actual, j

    MAX_DIFFERENCES = 20  # informational differences kept per scenario (the count goes on)

    def _note(self, seq: int, event: dict, actual: list, j: Judgement) -> None:
        """Keep a step's informational difference for the report."""
        if j.informational:
            self.informational += 1
            if len(self.differences) < self.MAX_DIFFERENCES:
                self.differences.append(InformationalDifference(seq, event, j.expected, actual, j.diff.summary()))

    def rules_broken(self) -> list:
        return rules_broken(self.impl_log, self.ref_log)


def run_scenario(sc: Scenario, impl) -> ScenarioResult:
    """Drive ``impl`` (an opened implementation) and the reference through ``sc``."""
    run = LockStep(sc.role, sc.profile, sc.params, impl, sc.id)
    expected_all: list = []
    actual_all: list = []  # the implementation's outputs per step run (a rule failure shows its step's)

    def failed(kind, step, event, expected, actual, summary, received=b"", stderr="", rules=None) -> ScenarioResult:
        if rules is None:
            rules = run.rules_broken() if actual is not None else []
        evidence = [(r, s, line) for r, m in rules for s, line in run.impl_log.evidence(r, m)]
        f = Failure(kind, step, event, expected, actual, summary, rules, evidence,
                    received.decode("utf-8", "replace") if isinstance(received, bytes) else str(received), stderr)
        return ScenarioResult(sc, FAIL, step, f, expected_all, getattr(impl, "name", ""), dict(run.judge.used_total),
                              list(run.differences))

    try:
        run.start()
    except ImplementationFailure as f:
        return failed(f.kind, 0, None, [], None, str(f), f.received, f.stderr)
    for i, event in enumerate(sc.events, 1):
        try:
            expected, actual, diff = run.step(event)
        except ImplementationFailure as f:
            expected_all.append(run.expected)
            return failed(f.kind, i, event, run.expected, None, str(f), f.received, f.stderr or impl.stderr())
        expected_all.append(expected)
        actual_all.append(actual)
        if diff:
            return failed("mismatch", i, event, expected, actual, diff.summary(), stderr=impl.stderr(),
                          rules=named_rules(run.rules_broken(), diff))
    rules = run.rules_broken()
    if rules:
        r, m = rules[0]
        step = max((s for s, _ in run.impl_log.evidence(r, m)), default=len(sc.events))
        return failed("rule", step, sc.events[step - 1] if sc.events else None, expected_all[step - 1] if expected_all else [],
                      actual_all[step - 1] if actual_all else [],
                      f"the receipts break {', '.join(sorted({x for x, _ in rules}))}", stderr=impl.stderr(), rules=rules)
    try:
        impl.end()
    except ImplementationFailure as f:
        return failed(f.kind, len(sc.events) + 1, None, [], None, str(f), f.received, f.stderr)
    return ScenarioResult(sc, PASS, len(sc.events), None, expected_all, getattr(impl, "name", ""),
                          dict(run.judge.used_total), list(run.differences))


def named_rules(logged: list, j: Judgement) -> list:
    """The rules a departing step is reported under: the log rules the receipts break (with their
    message) and the judge's own attribution of the step, each once. Both count: a receipt rule the
    log shows does not make the judge's finding on the step's other outputs (a block not refused, a
    message collated) any less the fault. Where the log names rules, the judge's naming of a
    receipt by its type alone adds nothing and is left out. A step is only ever failed when a
    requirement names it (:class:`.judge.Judgement`), so the list is never empty."""
    seen = {r for r, _ in logged}
    mine = [r for r in j.rules if not (logged and r in j.receipt_rules)]
    return logged + [(r, None) for r in dict.fromkeys(mine) if r not in seen]


def explain_failure(res: ScenarioResult, stderr: bool = True) -> str:
    """The failure as a reader wants it: the step, the event, expected and actual outputs, the rule;
    the implementation's last stderr lines unless ``stderr`` is false (a report that showed them already)."""
    f = res.failure
    if f is None:
        return f"{res.scenario.id}: pass ({res.steps} steps)"
    import orjson

    from rmkit.conformance.remp.driven.scenario_text import scenario_lines

    lines = [f"{res.scenario.id} ({res.scenario.role}, {res.scenario.profile}): FAIL at step {f.step} of "
             f"{len(res.scenario.events)}: {f.kind}", f"  {f.summary}", *scenario_lines(res)]
    if f.event is not None:
        lines.append(f"  event (step {f.step}, in full): {orjson.dumps(f.event).decode()}")
    if not 0 < f.step <= len(res.scenario.events):  # else the scenario's lines above show them at the step
        lines.append("  expected: " + (", ".join(describe(o) for o in f.expected) or "(no outputs)"))
        if f.actual is not None:
            lines.append("  actual:   " + (", ".join(describe(o) for o in f.actual) or "(no outputs)"))
    for r, m in f.rules:
        lines.append(f"  breaks {r}" + (f" for message {m}" if m else ""))
    for r, s, line in f.evidence[:6]:
        lines.append(f"    {r}: step {s}: {line}")
    if f.received:
        lines.append(f"  received: {f.received[:300]}")
    if f.stderr and not stderr:
        lines.append("  implementation's stderr: as above")
    elif f.stderr:
        tail = f.stderr.strip().splitlines()[-8:]
        lines.append("  implementation's stderr (last lines):")
        lines += [f"    {t}" for t in tail]
    return "\n".join(lines)
