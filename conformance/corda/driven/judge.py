"""The oracle: what a receiving node may do, as predicates over its outputs.

The judge keeps the protocol's facts, not a copy of one implementation: which ids are committed
(from the implementation's own commit outputs), which are being processed (answered NEW since the
last crash and not committed), which deliveries are live on the broker. Where the protocol leaves
a choice (when to commit, which session first, when and in which batches to acknowledge), the
judge takes the implementation's choice and goes on from there; only what no legal node could do
is a violation, each tied to a rule of spec/corda and its mode in the profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmkit.conformance.corda.spec import CordaSpec
from rmkit.reference_impl.corda.broker import Queue
from rmkit.rules import OFF


@dataclass
class Violation:
    rule: str
    mode: str
    step: int
    explanation: str

    def render(self) -> str:
        return f"{self.rule} ({self.mode}) at step {self.step}: {self.explanation}"


@dataclass
class Judge:
    spec: CordaSpec
    inbound: Queue
    committed: list[str] = field(default_factory=list)          # ids, in commit order
    in_flight: dict[str, str] = field(default_factory=dict)     # id -> session (NEW since the last crash, not committed)
    arrival: dict[str, list[str]] = field(default_factory=dict)  # session -> NEW ids in arrival order, uncommitted
    answers: dict[tuple, tuple] = field(default_factory=dict)   # (tag, conn) -> (id, answer)
    sent: set[str] = field(default_factory=set)                 # every id a copy of which reached the queue
    violations: list[Violation] = field(default_factory=list)
    step: int = 0
    processing: dict[str, object] = field(default_factory=dict)  # id -> the message of its NEW copy
    marks: dict[tuple, int] = field(default_factory=dict)       # sender key -> highest committed sequence number
    readmitted: set[str] = field(default_factory=set)           # committed ids answered NEW again (reported once)
    reported: set[str] = field(default_factory=set)             # ids whose consequences are already reported

    def _fail(self, rule: str, why: str) -> None:
        mode = self.spec.mode(rule)
        if mode != OFF:
            self.violations.append(Violation(rule, mode, self.step, why))

    def expected_answer(self, dedup_id: str) -> str:
        if dedup_id in self.in_flight:
            return "IN_FLIGHT"
        return "DUPLICATE" if dedup_id in self.committed else "NEW"

    def readmission_rule(self, m) -> str:
        """Why a committed id was answered NEW: the fast path without a mark (DEDUP-006), the fast
        path above a mark that a reordering defeated (DEDUP-007), or ids not kept (DEDUP-005)."""
        if self.spec.fast_path and m.sender_key is not None and m.sequence_number is not None:
            if m.sender_key not in self.marks:
                return "CORDA-DEDUP-006"
            if m.sequence_number > self.marks[m.sender_key]:
                return "CORDA-DEDUP-007"
        return "CORDA-DEDUP-005"

    def on_answer(self, tag: int, conn: int, m, answer) -> None:
        dedup_id, session = m.dedup_id, m.session_id
        if answer not in ("NEW", "DUPLICATE", "IN_FLIGHT"):
            self._fail("CORDA-DEDUP-003", f"answer {answer!r} for {dedup_id}: expected NEW, DUPLICATE or IN_FLIGHT")
            return
        want = self.expected_answer(dedup_id)
        self.answers[(tag, conn)] = (dedup_id, answer)
        if answer != want:
            if answer == "NEW" and want == "DUPLICATE":
                self._fail(self.readmission_rule(m), f"{dedup_id} is committed, yet answered NEW: its effect would be committed again")
                self.readmitted.add(dedup_id)
                self.reported.add(dedup_id)
            elif answer == "NEW":
                self._fail("CORDA-DEDUP-001", f"{dedup_id} is being processed, yet answered NEW")
            else:
                self._fail("CORDA-DEDUP-002", f"{dedup_id} answered {answer} where the protocol says {want}: "
                                              "the message would not be processed")
        if answer == "NEW":
            self.processing[dedup_id] = m
            self.in_flight[dedup_id] = session
            self.arrival.setdefault(session, []).append(dedup_id)

    def on_commit(self, dedup_id) -> None:
        if dedup_id in self.committed and dedup_id not in self.readmitted:
            self._fail("CORDA-DEDUP-001", f"{dedup_id} committed a second time")
            return
        if dedup_id not in self.in_flight:
            self._fail("CORDA-DEDUP-001", f"{dedup_id} committed without a NEW copy being processed")
            return
        session = self.in_flight.pop(dedup_id)
        queue = self.arrival.get(session, [])
        if queue and queue[0] != dedup_id:
            self._fail("CORDA-ORDER-001", f"{dedup_id} committed before {queue[0]}, which arrived before it on session {session}")
        if dedup_id in queue:
            queue.remove(dedup_id)
        self.committed.append(dedup_id)
        self.readmitted.discard(dedup_id)
        m = self.processing.pop(dedup_id, None)
        if m is not None and m.sender_key is not None and m.sequence_number is not None:
            self.marks[m.sender_key] = max(self.marks.get(m.sender_key, 0), m.sequence_number)

    def on_ack(self, tag, conn) -> None:
        hit = self.answers.get((tag, conn))
        if not self.inbound.ack(tag, conn) or hit is None:
            return  # a stale or unknown delivery: the broker refuses it, nothing changes
        dedup_id, answer = hit
        if dedup_id not in self.committed:
            if answer == "IN_FLIGHT":
                self._fail("CORDA-DEDUP-004", f"the IN_FLIGHT copy of {dedup_id} (tag {tag}) was acknowledged before its commit")
            else:
                self._fail("CORDA-ACK-001", f"copy {tag} of {dedup_id} acknowledged before {dedup_id} was committed")

    def on_reply(self, reply: dict) -> None:
        for dedup_id in reply.get("commits", []) or []:
            self.on_commit(dedup_id)
        for pair in reply.get("acks", []) or []:
            if isinstance(pair, list) and len(pair) == 2:
                self.on_ack(pair[0], pair[1])

    def on_crash(self) -> None:
        self.in_flight.clear()
        self.arrival.clear()

    def at_end(self) -> None:
        """After the drain: nothing lost, nothing left unacknowledged in the broker."""
        self.step += 1
        for dedup_id in sorted(self.sent - set(self.committed)):
            self._fail("CORDA-DEDUP-002", f"{dedup_id} was delivered but never committed")
        left = [e.message.dedup_id for e in self.inbound.entries if e.message.dedup_id not in self.reported]
        if left and not [v for v in self.violations if v.rule == "CORDA-DEDUP-002"]:
            self._fail("CORDA-DEDUP-003", f"copies never acknowledged after the drain: {', '.join(left)}")
