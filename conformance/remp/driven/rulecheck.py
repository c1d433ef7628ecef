"""`rmkit check`'s rules on the receipts a driven implementation has produced so far.

Why: a step whose outputs differ from the reference's says *that* the implementation departs; the
rules say *which promise of the documents* it broke. The receipts of the role's outputs
(``receipts_from`` in ``spec/remp/adapter.yaml``) are written in the profile's log form and checked
by the streaming checker itself, so a driven run and a log check can never disagree about a rule;
only the rules that this role's receipts alone can break (``rules`` of the role) are reported.
"""

from __future__ import annotations

import functools
from collections import Counter

import orjson

from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.protocols.remp.adapterwire import adapter_spec, from_json, WireError
from rmkit.reference_impl.remp.wire import renderer


SCHEMA_RULE = "REMP-SCHEMA-001"
LOG_NAME = "receipts of the scenario"


def _problems(explanation: str) -> set:
    """The field problems a schema finding lists (``KIND: problem; problem``), less the one every
    driven receipt has: its source is a test name (``v1``), not a key hash."""
    body = explanation.split(": ", 1)[1] if ": " in explanation else explanation
    return {p for p in body.split("; ") if not p.startswith("source_id: ")}


@functools.lru_cache(maxsize=None)
def _undrivable(rule: str, role: str, profile: str) -> bool:
    """Whether ``spec/remp/conformance.yaml`` lists ``rule`` as one no machine of ``role`` can break
    in ``profile`` (e.g. REMP-TIME-001 for an ever-node validator, whose receipts may carry 0): a
    finding of it on the role's receipts is the consequence of another fault, not its own."""
    from rmkit.conformance.remp.driven.mutants import not_drivable

    return not_drivable(rule, profile, role) is not None


@functools.lru_cache(maxsize=None)
def _renderer(profile: str):
    """The profile's log form, made once (every scenario keeps two receipt logs)."""
    return renderer(profile)


class ReceiptLog:
    """The receipts of one scenario's outputs in log form, for one side (reference or implementation)."""

    def __init__(self, role: str, profile: str, lifetime_ms: int | None):
        spec = adapter_spec()["roles"][role]
        self.role = role
        self.profile = profile
        self.lifetime_s = lifetime_ms / 1000 if lifetime_ms else None
        self.sources = frozenset(spec["receipts_from"])
        self.rules = tuple(r for r in spec["rules"] if not _undrivable(r, role, profile))
        self._render = _renderer(profile)
        self.lines: list[bytes] = []
        self.steps: list[int] = []  # the step each receipt came from
        self.roles: dict[str, str] = {}
        self.explained: dict = {}  # (rule, message id) -> field problems of the last check's schema findings

    def add(self, step: int, outputs: list, values: list | None = None) -> None:
        """Log the receipts of one step's ``outputs``; ``values``: the same outputs decoded, where the
        caller has them (one per output, in order)."""
        if values is not None and len(values) != len(outputs):
            values = None
        for i, o in enumerate(outputs):
            t = o.get("type")
            if t not in self.sources:
                continue
            try:
                value = values[i] if values is not None else from_json(o, part="outputs")
            except WireError:
                continue  # malformed outputs are reported by the adapter layer
            receipt = value if t == "Receipt" else value.receipt
            role = "validator" if t == "Receipt" else value.role
            self.roles.setdefault(receipt.source_id, role)
            try:
                d = self._render(receipt, role)
            except KeyError:  # a kind the spec does not know: its bare fields, for REMP-KIND-001
                d = {"kind": receipt.kind, "message_id": receipt.msg_id, "timestamp": receipt.time,
                     "source_id": receipt.source_id, "signature": ""}
            self.lines.append(orjson.dumps(d))
            self.steps.append(step)

    def violations(self, horizon_s: float | None = None) -> Counter:
        """(rule, message id) -> count of this role's rules broken by the receipts so far."""
        self.explained = {}
        if not self.lines or not self.rules:
            return Counter()
        # the checker's own pass over the lines, fed from memory (what ``run`` does for a file)
        checker = RempLogChecker(self.profile, lifetime_s=self.lifetime_s, horizon_s=horizon_s,
                                 roles=dict(self.roles), max_examples=0, jobs=1)
        checker.begin([LOG_NAME])
        checker.feed([(range(1, len(self.lines) + 1), self.lines)])
        report = checker.finish(checker.end_clock([checker.end_mark], [checker.top_mark]))
        wanted = set(self.rules)
        found = Counter()
        self.last_report = report
        for v in report.violations:
            if v.rule in wanted:
                found[(v.rule, v.subject)] += 1
                self.explained.setdefault((v.rule, v.subject), set()).update(_problems(v.explanation))
        return found

    def evidence(self, rule: str, mid: str | None) -> list[tuple[int, str]]:
        """(step, receipt line) of the receipts a violation cites, from the last check."""
        out = []
        report = getattr(self, "last_report", None)
        for v in (report.violations if report is not None else ()):
            if v.rule == rule and v.subject == mid:
                if rule == SCHEMA_RULE and not _problems(v.explanation):
                    continue  # only the test names of the sources: not what the implementation got wrong
                for e in v.evidence:
                    if 1 <= e.line <= len(self.lines):
                        out.append((self.steps[e.line - 1], self.lines[e.line - 1].decode()))
        return out


def rules_broken(impl: ReceiptLog, ref: ReceiptLog) -> list[tuple[str, str | None]]:
    """The (rule, message id) pairs the implementation's receipts break and the reference's don't
    (the scenario itself may leave a message unfinished; that is not the implementation's fault)."""
    if impl.lines == ref.lines:
        return []  # the same receipts break the same rules
    mine = impl.violations()
    if not mine:
        return []
    theirs = ref.violations()
    return sorted(k for k in mine if _own_finding(k, impl, ref, theirs))


def _own_finding(k: tuple, impl: ReceiptLog, ref: ReceiptLog, theirs: Counter) -> bool:
    """Whether finding ``k`` (rule, message id) of the implementation's receipts is its own fault.

    A schema finding lists the receipt's field problems; every driven receipt has one that is the
    kit's doing (its source is a test name, not a key hash), so a schema finding counts only for a
    problem beyond that one and beyond what the reference's receipts of the message show, whether
    or not the reference has a finding of its own. Any other rule counts when the reference's
    receipts do not break it for the message."""
    if k[0] == SCHEMA_RULE:
        return bool(impl.explained.get(k, set()) - ref.explained.get(k, set()))
    return k not in theirs
