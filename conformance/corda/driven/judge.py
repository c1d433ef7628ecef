"""The oracle: what a receiving node may do, as predicates over its outputs.

The judge keeps the protocol's facts, not a copy of one implementation: which ids are committed
(from the implementation's own commit outputs), which are being processed (answered NEW since the
last crash and not committed), which deliveries are live on the broker. Where the protocol leaves
a choice, the judge takes the implementation's choice and goes on from there; only what no legal
node could do is a violation, each tied to a rule of spec/corda and its mode in the profile.
The choices it accepts:

- when to commit and to acknowledge: any rhythm, as long as what a node owes (a commit for every
  NEW copy, an acknowledgement for every live copy of a committed id it answered NEW or DUPLICATE)
  is done within the drain's bound (:data:`.suite.DRAIN_BOUND`); past it, "no progress";
- the order across sessions; within a session, the arrival order (the framework trusts the
  transport to keep the send order) or the send order where the messages show it (sequence
  numbers of one sender, or the N- ids of one flow: its number of suspends, then the index).
  CORDA-ORDER-001 is broken by a commit that passes over an earlier-arrived copy of its session
  when nothing shows the committed one was sent first;
- giving up work in progress whose deliveries died (a broker restart): the redelivered copy is
  answered NEW again. A NEW answer for an id whose NEW copy is still live means that copy was
  released: CORDA-DEDUP-001 if the effect is then committed twice, CORDA-DEDUP-008 (a NEW copy
  dropped without the IN_FLIGHT answer) if it is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmkit.protocols.corda.model import ANSWERS, CordaSpec
from rmkit.reference_impl.corda.broker import Queue
from rmkit.reference_impl.corda.message import Message
from rmkit.rules import OFF


@dataclass
class Violation:
    rule: str
    mode: str
    step: int          # scenario steps played when it was seen
    explanation: str
    where: str = ""    # "step N", "drain tick K", "drain restart R", "the end of the drain"

    def render(self) -> str:
        return f"{self.rule} ({self.mode}) at {self.where or f'step {self.step}'}: {self.explanation}"


def _key_text(m: Message) -> str:
    """A copy's sender key, as a report says it."""
    if m.sender_uuid is None:
        return "without sender UUID (a re-send during recovery)"
    return f"from sender {m.sender_uuid} of peer {m.sending_peer}, sequence number {m.sequence_number}"


def send_position(m: Message) -> tuple | None:
    """Where an N- id puts its message in its flow's sends: (seed, suspends, index); None for
    another format. A flow's later send has more suspends (or a higher index in one suspend), and a
    flow replayed from its checkpoint sends under the same ids (CORDA-ID-002)."""
    if not m.dedup_id.startswith("N-"):
        return None
    seed, suspends, index = m.dedup_id[2:].rsplit("-", 2)
    try:
        return seed, int(suspends), int(index)
    except ValueError:
        return None


def sent_before(a: Message, b: Message) -> bool | None:
    """Whether ``a`` was sent before ``b``, as the messages show it: one sender UUID's sequence
    numbers increase (CORDA-ID-003), one flow's N- ids follow its suspends; None when they do not show it."""
    if a.sender_uuid is not None and a.sender_uuid == b.sender_uuid and None not in (a.sequence_number, b.sequence_number):
        return a.sequence_number < b.sequence_number
    pa, pb = send_position(a), send_position(b)
    if pa is not None and pb is not None and pa[0] == pb[0] and pa != pb:
        return pa[1:] < pb[1:]
    return None


def reply_order(reply: dict) -> list[tuple]:
    """A reply's ``("commit", id)`` and ``("ack", tag, conn)`` items in the order they happened.
    A reply may give them as one ordered list (``done``) or as ``commits`` then ``acks``, not both:
    TypeError otherwise (a malformed reply, which fails the scenario)."""
    done = reply.get("done")
    if done is None:
        return ([("commit", i) for i in reply.get("commits") or []]
                + [("ack", p[0], p[1]) for p in reply.get("acks") or [] if isinstance(p, list) and len(p) == 2])
    if "commits" in reply or "acks" in reply:
        raise TypeError("a reply with done must not carry commits or acks as well")
    if not isinstance(done, list):
        raise TypeError(f"done must be a list, found {done!r:.80}")
    out = []
    for item in done:
        if isinstance(item, list) and len(item) == 2 and item[0] == "commit" and isinstance(item[1], str):
            out.append(("commit", item[1]))
        elif isinstance(item, list) and len(item) == 3 and item[0] == "ack":
            out.append(("ack", item[1], item[2]))
        else:
            raise TypeError(f"expected [\"commit\", ID] or [\"ack\", TAG, CONN] in done, found {item!r:.80}")
    return out


@dataclass
class Judge:
    spec: CordaSpec
    inbound: Queue
    committed: list[str] = field(default_factory=list)          # ids, in commit order
    # id -> (the message of its NEW copy, that copy's (tag, conn)): NEW since the last crash, not committed
    in_flight: dict[str, tuple[Message, tuple]] = field(default_factory=dict)
    arrival: dict[str, list[str]] = field(default_factory=dict)  # session -> ids in flight, in the order answered NEW
    answers: dict[tuple, tuple] = field(default_factory=dict)   # (tag, conn) -> (id, answer)
    sent: set[str] = field(default_factory=set)                 # every id a copy of which reached the queue
    violations: list[Violation] = field(default_factory=list)
    step: int = 0
    where: str = "the hello"                                    # the label of what is being judged
    marks: dict[tuple, int] = field(default_factory=dict)       # sender key -> highest committed sequence number
    readmitted: set[str] = field(default_factory=set)           # committed ids answered NEW again (reported once)
    reported: set[str] = field(default_factory=set)             # ids whose consequences are already reported
    crashes: int = 0
    commit_crashes: dict[str, int] = field(default_factory=dict)  # id -> crashes seen when it was committed
    released: dict[tuple, tuple] = field(default_factory=dict)  # (tag, conn) of a live NEW copy superseded -> (id, where)
    early_acks: dict[str, list] = field(default_factory=dict)   # id -> [(answer, tag, where)] acked before any commit
    unsure: dict[str, tuple] = field(default_factory=dict)      # id -> (message, where, why, restarted): a readmission
                                                                # its answer alone does not pin on one mechanism
    first_copy: dict[str, Message] = field(default_factory=dict)  # id -> the copy whose commit first committed it
    probe_tags: dict[int, tuple] = field(default_factory=dict)  # tag -> (id, kind) of a copy the durability check sent
    probe_answers: dict[tuple, str] = field(default_factory=dict)  # (id, kind) -> the answer to it

    def _fail(self, rule: str, why: str, *, mode: str | None = None, where: str | None = None) -> None:
        mode = mode or self.spec.mode(rule)
        if mode != OFF:
            self.violations.append(Violation(rule, mode, self.step, why, where or self.where))

    def expected_answer(self, dedup_id: str) -> str:
        if dedup_id in self.in_flight:
            return "IN_FLIGHT"
        return "DUPLICATE" if dedup_id in self.committed else "NEW"

    # -- answers ---------------------------------------------------------------------------------
    def on_answer(self, tag: int, conn: int, m: Message, answer) -> None:
        dedup_id = m.dedup_id
        if answer not in ANSWERS:
            self._fail("CORDA-DEDUP-003", f"answer {answer!r} for {dedup_id}: expected NEW, DUPLICATE or IN_FLIGHT")
            return
        want = self.expected_answer(dedup_id)
        self.answers[(tag, conn)] = (dedup_id, answer)
        probe = tag in self.probe_tags
        if probe:
            self.probe_answers.setdefault(self.probe_tags[tag], answer)
        if answer == "NEW":
            if want == "DUPLICATE":
                self.readmitted.add(dedup_id)
                if not probe:
                    self._readmitted(m)
            elif want == "IN_FLIGHT":
                self._superseded(dedup_id)
            self._start(tag, conn, m)
        elif answer != want and not probe:
            self._not_processed(m, answer, want)

    def _start(self, tag: int, conn: int, m: Message) -> None:
        """A NEW copy: its id is in flight, last in its session's arrival order."""
        self.in_flight[m.dedup_id] = (m, (tag, conn))
        queue = self.arrival.setdefault(m.session_id, [])
        if m.dedup_id in queue:
            queue.remove(m.dedup_id)
        queue.append(m.dedup_id)

    def _live(self, tag: int, conn: int) -> bool:
        """The delivery can still be acknowledged: no disconnect since, not acknowledged yet."""
        return conn == self.inbound.connection and any(e.tag == tag and e.delivered for e in self.inbound.entries)

    def _superseded(self, dedup_id: str) -> None:
        """Another NEW answer for an id in flight: the node gave up the earlier copy's processing.
        Legal when that delivery died (a broker restart); a live one was released: judged when it
        is clear whether the effect is committed twice (DEDUP-001) or once (DEDUP-008)."""
        if dedup_id in self.in_flight:
            _, earlier = self.in_flight[dedup_id]
            if self._live(*earlier):
                self.released[earlier] = (dedup_id, self.where)

    def _readmitted(self, m: Message) -> None:
        rule, why = self.readmission(m)
        self.reported.add(m.dedup_id)
        if rule is None:
            self.unsure.setdefault(m.dedup_id, (m, self.where, why, self.crashes > self.commit_crashes[m.dedup_id]))
        else:
            self._fail(rule, f"{m.dedup_id} is committed, yet answered NEW: {why}")

    def readmission(self, m: Message) -> tuple[str | None, str]:
        """Why a committed id was answered NEW. In the fast path's profile, for a copy with sender UUID
        and sequence number: no mark for its key (DEDUP-006), a number above the mark that a
        reordering defeated (DEDUP-007); a number at or below the mark may be the fast path skipping
        the database (DEDUP-006), a table that lost the id (DEDUP-005) or an id not in the table yet
        (written after its commit): rule None, the durability check decides (:meth:`_resolve`). A
        copy under another sender key than the committed one (a re-send without sender UUID, say)
        may also meet a table keyed by more than the id: None too. Otherwise: the processed-ids table
        lost it at a restart (DEDUP-005), or, with no restart since the commit, the deduplicator did
        not find it in the table (DEDUP-001)."""
        restarted = self.crashes > self.commit_crashes.get(m.dedup_id, self.crashes)
        if self.spec.fast_path and m.sender_key is not None and m.sequence_number is not None:
            mark = self.marks.get(m.sender_key)
            if mark is None:
                return "CORDA-DEDUP-006", "the fast path answered NEW with no mark for its sender key; the database must be read"
            if m.sequence_number > mark:
                return "CORDA-DEDUP-007", (f"its sequence number {m.sequence_number} is above its sender's mark {mark}, "
                                           "which a copy committed under no sender key did not raise")
            return None, f"its sequence number {m.sequence_number} is not above its sender's mark {mark}"
        first = self.first_copy.get(m.dedup_id)
        if first is not None and first.sender_key != m.sender_key:
            return None, (f"it came {_key_text(m)}, and was committed {_key_text(first)}")
        again = "its effect would be committed again"
        if restarted:
            return "CORDA-DEDUP-005", f"the restart since its commit lost it from the processed-ids table; {again}"
        return "CORDA-DEDUP-001", f"no restart since its commit, yet the deduplicator did not find it; {again}"

    def probes(self, round_: int) -> list[tuple[str, Message]]:
        """(kind, copy) for each readmission in doubt, delivered by the durability check after a
        restart. Round 1: the message under a sender key it never had ("fresh key": only the
        table, looked up by the id, recognises it). Round 2, after another restart: where that was
        NEW, the copy first committed ("committed copy": recognised, the table holds the id under
        that copy's sender only); where it was recognised and the fast path applies, the readmitted
        copy again ("same copy": NEW, the fast path skips the table at or below the mark)."""
        out = []
        for dedup_id, (m, _, _, _) in self.unsure.items():
            first = self.first_copy.get(dedup_id, m)
            if round_ == 1:
                fresh = Message(m.dedup_id, m.session_id, m.session_init, m.payload, f"{first.sending_peer}-probe", 1,
                                peer=first.sending_peer)
                out.append(("fresh key", fresh))
                continue
            answer = self.probe_answers.get((dedup_id, "fresh key"))
            if answer == "NEW":
                out.append(("committed copy", first))
            elif answer is not None and self.spec.fast_path and m.sender_key is not None:
                out.append(("same copy", m))
        return out

    def _resolve(self, dedup_id: str) -> None:
        """Decide a readmission in doubt from the durability check's answers: the message under a
        fresh sender key NEW, the table does not hold the id: the copy first committed recognised
        all the same, the table's key includes the sender (DEDUP-003: the id is in the table, the
        copy was processed), else the table lost it (DEDUP-005). The fresh key recognised: the
        readmitted copy NEW again, the fast path skips the table at or below the mark (DEDUP-006);
        else the id was not in the table when the copy came: written after its commit (DEDUP-005
        across a restart, DEDUP-001 without one). No answers: DEDUP-006 in the fast path's profile,
        naming the other causes; else as the restarts say."""
        m, where, why, restarted = self.unsure.pop(dedup_id)
        fresh, committed, same = (self.probe_answers.get((dedup_id, kind))
                                  for kind in ("fresh key", "committed copy", "same copy"))
        first = self.first_copy.get(dedup_id, m)
        if fresh == "NEW" and committed == "DUPLICATE":
            rule, why = "CORDA-DEDUP-003", (
                f"{why}; after another restart the copy committed first was recognised, yet the message under another "
                f"sender key was NEW: the table holds the id, looked up with the sender ({_key_text(first)}). A message's "
                "copies share its deduplication id alone (a re-send during recovery carries no sender UUID)")
        elif fresh == "NEW":
            rule, why = "CORDA-DEDUP-005", ("the restart lost it from the processed-ids table (after another restart "
                                            "it was NEW under any sender key, the one it was committed with too)")
        elif same == "NEW":
            rule, why = "CORDA-DEDUP-006", (f"{why}, yet the fast path skipped the database (after another restart the "
                                            f"table still knew it, and the same copy was NEW again)")
        elif fresh is not None:
            rule = "CORDA-DEDUP-005" if restarted else "CORDA-DEDUP-001"
            why = (f"it was not in the processed-ids table when the copy came{' after a restart' if restarted else ''}, "
                   "though after another restart the table recognised it: the id is written after its commit, not in "
                   "the checkpoint's transaction")
        elif self.spec.fast_path and m.sender_key is not None:
            rule, why = "CORDA-DEDUP-006", (f"{why}: the fast path must read the database (or the table did not hold "
                                            "the id: CORDA-DEDUP-005)")
        else:
            rule = "CORDA-DEDUP-005" if restarted else "CORDA-DEDUP-001"
            why = f"{why}; the deduplicator did not find it in the processed-ids table"
        self._fail(rule, f"{dedup_id} is committed, yet answered NEW: {why}; its effect would be committed again", where=where)

    def _not_processed(self, m: Message, answer: str, want: str) -> None:
        """DUPLICATE or IN_FLIGHT where the judge expects another answer."""
        dedup_id = m.dedup_id
        if want == "DUPLICATE":   # IN_FLIGHT for a committed id
            if self.spec.consequence["IN_FLIGHT"] == "discard":
                self._fail("CORDA-DEDUP-003", f"{dedup_id} is committed, yet answered IN_FLIGHT: a copy of a committed id is a "
                                              "DUPLICATE, acknowledged and dropped; discarded, the broker redelivers it")
                self.reported.add(dedup_id)
        elif want == "NEW":
            self._fail("CORDA-DEDUP-002", f"{dedup_id} is neither committed nor being processed, yet answered {answer}: "
                                          "the message would not be processed")
            self.reported.add(dedup_id)
        # DUPLICATE for an id in flight: acknowledging it before the commit is CORDA-ACK-001 (on_ack)

    # -- commits and acknowledgements ------------------------------------------------------------
    def on_commit(self, dedup_id) -> None:
        if dedup_id in self.committed and dedup_id not in self.readmitted:
            self._fail("CORDA-DEDUP-001", f"{dedup_id} committed a second time")
            self._forget_released(dedup_id)
            self.reported.add(dedup_id)
            return
        if dedup_id not in self.in_flight:
            self._fail("CORDA-DEDUP-001", f"{dedup_id} committed without a NEW copy being processed")
            return
        m, _ = self.in_flight.pop(dedup_id)
        self._check_order(m)
        self.committed.append(dedup_id)
        self.commit_crashes[dedup_id] = self.crashes
        self.first_copy.setdefault(dedup_id, m)
        self.readmitted.discard(dedup_id)
        if m.sender_key is not None and m.sequence_number is not None:
            self.marks[m.sender_key] = max(self.marks.get(m.sender_key, 0), m.sequence_number)

    def _check_order(self, m: Message) -> None:
        """CORDA-ORDER-001 at the commit of ``m``: passing over an earlier-arrived copy of the
        session (still in flight: the arrival order holds only those) is allowed only when the
        messages show the committed one was sent first."""
        dedup_id, session = m.dedup_id, m.session_id
        queue = self.arrival.get(session, [])
        if dedup_id not in queue:
            return
        for earlier in queue[:queue.index(dedup_id)]:
            e, _ = self.in_flight[earlier]
            if sent_before(m, e) is True:
                continue
            if sent_before(e, m):
                same_sender = e.sender_uuid is not None and e.sender_uuid == m.sender_uuid
                how = "which was sent before it" + (f" (sequence numbers {e.sequence_number} < {m.sequence_number} "
                                                   f"of sender {m.sender_uuid})" if same_sender else
                                                   " (its flow's ids)") + " and arrived before it"
            else:
                how = "which arrived before it, and nothing in the messages shows it was sent after"
            self._fail("CORDA-ORDER-001", f"{dedup_id} committed before {earlier}, {how}, on session {session}")
            break
        queue.remove(dedup_id)

    def _forget_released(self, dedup_id: str) -> None:
        for copy, (released_id, _) in list(self.released.items()):
            if released_id == dedup_id:
                del self.released[copy]

    def on_ack(self, tag, conn) -> None:
        hit = self.answers.get((tag, conn))
        if not self.inbound.ack(tag, conn) or hit is None:
            return  # a stale or unknown delivery: the broker refuses it, nothing changes
        dedup_id, answer = hit
        if dedup_id not in self.committed:
            self.early_acks.setdefault(dedup_id, []).append((answer, tag, self.where))
            if answer == "IN_FLIGHT":
                self._fail("CORDA-DEDUP-004", f"the IN_FLIGHT copy of {dedup_id} (tag {tag}) was acknowledged before its commit")
            else:
                self._fail("CORDA-ACK-001", f"copy {tag} of {dedup_id} acknowledged before {dedup_id} was committed")

    def on_reply(self, reply: dict) -> None:
        """The commits and acknowledgements of a reply, in the order they happened: ``done`` lists
        them in order; ``commits`` and ``acks`` say every commit came before every acknowledgement
        (spec/corda/adapter.yaml replies)."""
        for item in reply_order(reply):
            if item[0] == "commit":
                self.on_commit(item[1])
            else:
                self.on_ack(item[1], item[2])

    def on_crash(self) -> None:
        self.crashes += 1
        self.in_flight.clear()
        self.arrival.clear()

    # -- liveness and the end --------------------------------------------------------------------
    def owed(self) -> list[tuple[str, str, str]]:
        """(rule, id, what) the node still owes: a commit for each NEW copy in flight, an
        acknowledgement for each live copy of a committed id it answered NEW or DUPLICATE (a released
        copy excepted: it is judged as dropped)."""
        out = [("CORDA-DEDUP-008", i, f"{i} answered NEW (tag {copy[0]}) and never committed: a NEW copy "
                                      "is handed to its flow, whose commit ends its processing")
               for i, (_, copy) in self.in_flight.items()]
        for e in self.inbound.entries:
            hit = self.answers.get((e.tag, e.connection))
            if not e.delivered or e.connection != self.inbound.connection or hit is None:
                continue
            dedup_id, answer = hit
            if dedup_id not in self.committed or dedup_id in self.in_flight or (e.tag, e.connection) in self.released:
                continue
            if answer == "DUPLICATE":
                out.append(("CORDA-DEDUP-003", dedup_id,
                            f"copy tag {e.tag} of {dedup_id}, answered DUPLICATE, never acknowledged"))
            elif answer == "NEW":
                out.append(("CORDA-ACK-002", dedup_id, f"copy tag {e.tag} of {dedup_id} committed, never acknowledged: "
                                                       "the acknowledgement follows the commit"))
        return out

    def settled(self) -> bool:
        return not self.owed()

    def stalled(self, ticks: int) -> None:
        """The drain's bound was reached with work owed: each item is no progress under its rule."""
        for rule, dedup_id, what in self.owed():
            if dedup_id not in self.reported:
                self._fail(rule, f"no progress within {ticks} ticks: {what}")
                self.reported.add(dedup_id)

    def at_end(self) -> None:
        """After the drain: every copy released while live was dropped (DEDUP-008), nothing lost,
        nothing left unacknowledged on the broker."""
        self.where = "the end of the drain"
        for dedup_id in list(self.unsure):
            self._resolve(dedup_id)
        for (tag, _), (dedup_id, where) in self.released.items():
            if dedup_id not in self.reported:
                self._fail("CORDA-DEDUP-008", f"copy tag {tag} of {dedup_id}, answered NEW, was dropped unacknowledged: "
                                              f"another copy was answered NEW while it was live, and {dedup_id} was "
                                              "committed once; only an IN_FLIGHT copy is dropped so", where=where)
                self.reported.add(dedup_id)
        for dedup_id in sorted(self.sent - set(self.committed) - self.reported):
            self._uncommitted(dedup_id)
        left = sorted({e.message.dedup_id for e in self.inbound.entries} - self.reported)
        if left:
            self._fail("CORDA-DEDUP-003", f"copies of committed ids never acknowledged after the drain: {', '.join(left)}")

    def _uncommitted(self, dedup_id: str) -> None:
        """An id sent and never committed: lost when no copy is left, else never processed. A loss
        through acknowledged IN_FLIGHT copies where the profile acknowledges them is the profile's
        known departure (CORDA-DEDUP-004, off there as a check): reported, not failed."""
        self.reported.add(dedup_id)
        if any(e.message.dedup_id == dedup_id for e in self.inbound.entries):
            self._fail("CORDA-DEDUP-002", f"{dedup_id} is still on the broker after the drain and was never committed")
            return
        acks = self.early_acks.get(dedup_id, [])
        if acks and all(a == "IN_FLIGHT" for a, _, _ in acks) and self.spec.consequence["IN_FLIGHT"] == "ack_and_drop":
            _, tag, where = acks[-1]
            self._fail("CORDA-DEDUP-004", f"{dedup_id} lost: its IN_FLIGHT copy (tag {tag}) was acknowledged at {where}, "
                                          "as this profile does, and the copy being processed was never committed: "
                                          "the loss the 2022 change removed", mode="non-strict")
            return
        early = f" (copy tag {acks[-1][1]} acknowledged before any commit, at {acks[-1][2]})" if acks else ""
        self._fail("CORDA-DEDUP-002", f"{dedup_id} was delivered but never committed, and no copy is left{early}")


@dataclass
class Outcome:
    """What playing one scenario gave: its actions, the violations judged and the exchange's log
    (a receiver's run or a bridge's)."""

    profile: str
    actions: list
    violations: list[Violation]
    log: list[str] = field(default_factory=list)

    @property
    def strict(self) -> list[Violation]:
        return [v for v in self.violations if v.mode == "strict"]


@dataclass
class Stopped(Outcome):
    """A scenario the implementation did not get through after its hello: it crashed, timed out or
    answered something that is not a reply. That fails the scenario (exit 1), shrunk and saved
    like any failure; only an implementation that never gets past a hello could not be driven
    (exit 2). ``log`` is the exchange as the kit saw it, up to the failure."""

    cause: str = ""


def failed(out: Outcome) -> bool:
    return bool(out.strict) or isinstance(out, Stopped)
