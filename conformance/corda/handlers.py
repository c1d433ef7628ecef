# cython: annotation_typing=False
"""The Corda log rules, one handler per rule, registered by rule id.

The checker (:mod:`.checker`) is the engine: it reads the records, keeps per message and node what
they show (:mod:`.state`), and at each moment a rule can be decided raises an event; the one
handler that listens to that event judges the rule and reports a finding. A handler is a small
class registered with :func:`handles` for the rule ids it judges; its ``on_<event>`` methods are
its listeners, called with the share being read (``run``: its ``find`` and ``find_if`` report a
finding in the profile's mode, nothing when the rule is off). The rules that span message ids are
judged when the shares merge: a handler's ``span`` yields their findings from the facts every
share kept (:mod:`.spanning` holds those checks).

Every rule id of spec/corda/rules.yaml has exactly one handler, or its ``not_loggable`` in rules.yaml
says why a node's records cannot show it (``tests/corda/test_corda_handlers.py``). One handler
judges the few rules one moment decides together (CORDA-DEDUP-005/006/007: a NEW answer for a
processed id, classified by what failed).

Why events and not a call of every handler per record: the events handlers (``ev_received``, ...)
run once per record, and a call costs about as much as the bookkeeping of a record; so a handler
is called only at the moment its rule is decided, most often never for a record of a well-behaved
node.
"""

from __future__ import annotations

import functools
import re

from rmkit.rulehandlers import EventHooks, RuleRegistry
from rmkit.rules import OFF
from rmkit.protocols.corda.model import corda_spec

REGISTRY = RuleRegistry()  # rule id -> the handler class that judges it
handles = REGISTRY.handles


@functools.lru_cache(maxsize=None)
def not_in_records() -> dict[str, str]:
    """Rule id -> why a node's records cannot show it (its ``not_loggable`` in rules.yaml)."""
    return {r.id: r.not_loggable for r in corda_spec("spec").rules if r.not_loggable}


class Handler:
    """A rule handler, built once per share with the share being read (``run``)."""

    rules: tuple[str, ...] = ()

    def __init__(self, run):
        self.run = run
        self.find = run.find
        self.find_if = run.find_if


class Hooks(EventHooks):
    """The engine's events bound to this protocol's handlers (:class:`rmkit.rulehandlers.EventHooks`)."""

    def __init__(self, run):
        super().__init__(REGISTRY, run)


def judge_spanning(checker, inputs: list[str], shares) -> list:
    """The findings that span message ids: each handler's ``span``, in registration order."""
    from rmkit.conformance.corda.spanning import sorted_commits

    commits = sorted_commits(shares)
    out = []
    for cls in dict.fromkeys(REGISTRY.values()):
        span = getattr(cls, "span", None)
        if span is not None and any(checker.modes.get(r, OFF) != OFF for r in cls.rules):
            out += span(checker, inputs, shares, commits)
    return out


# ---- ids --------------------------------------------------------------------------------------
@handles("CORDA-ID-001")
class IdFormat(Handler):
    """A message id is in one of the spec's formats (messages.yaml dedup_ids); judged at the first
    record of the id."""

    def __init__(self, run):
        super().__init__(run)
        # one match for every format instead of one per format
        self.known = re.compile("|".join(f"(?:{f.pattern.pattern})" for f in run.spec.id_formats.values())).fullmatch

    def on_new_id(self, mid: str, ref: int, kind: str, node: str) -> None:
        if not self.known(mid):
            self.find("CORDA-ID-001", mid, f"id {mid!r} is in none of the formats R-, N-, E- "
                      "(spec/corda/messages.yaml dedup_ids)", [(ref, kind, node)])


@handles("CORDA-ID-003")
class SequenceNumbers(Handler):
    """One sender key's sequence numbers are never reused for another id, and its sends carry them
    in increasing order (from every share's uses and sends)."""

    @staticmethod
    def span(checker, inputs, shares, commits):
        from rmkit.conformance.corda.spanning import sequence_numbers

        return sequence_numbers(checker, inputs, shares)


# ---- the deduplicator ---------------------------------------------------------------------------
@handles("CORDA-DEDUP-001")
class CommittedTwice(Handler):
    """A message's effect is committed at most once: a second committed event, or a second row."""

    def on_second_commit(self, tr, c, r, ref: int) -> None:
        node, mid, first = tr.node, tr.mid, tr.commits[0]
        self.find("CORDA-DEDUP-001", mid, f"node {node} committed {mid} again (transaction {r.tx}; "
                  f"first in transaction {first.tx}): its effect happened twice",
                  [(first.ref, "committed", node), (c.vref or None if c is not None else None, "dedup", node),
                   (ref, "committed", node)])

    def on_second_row(self, tr, r, ref: int) -> None:
        self.find("CORDA-DEDUP-001", r.id, f"the processed-ids table of node {r.node} holds {r.id} "
                  "twice: it was processed twice", [(tr.rows[0].ref, "row", r.node), (ref, "row", r.node)])


@handles("CORDA-DEDUP-002")
class Lost(Handler):
    """A sent message is never lost (judged only on settled records): acknowledged and never
    committed, or sent and never received by any node whose records were given."""

    def on_acked_never_committed(self, tr, refs) -> None:
        node, mid = tr.node, tr.mid
        self.find("CORDA-DEDUP-002", mid, f"node {node} acknowledged {mid} and never committed it: the broker "
                  "forgot the message, its effect never happened", refs + [(tr.acked, "acked", node)])

    def on_never_received(self, mid: str, sent) -> None:
        self.find("CORDA-DEDUP-002", mid, f"{mid}, sent by node {sent[1]} on session {sent[3]}, never reached "
                  "a node whose records were given: lost on the way", [(sent[0], "sent", sent[1])])


@handles("CORDA-REDELIVER-001")
class NotRedelivered(Handler):
    """A copy neither acknowledged nor committed comes again (judged only on settled records)."""

    def on_never_settled(self, tr, refs) -> None:
        n = len(tr.copies)
        self.find("CORDA-REDELIVER-001", tr.mid, f"node {tr.node} received {tr.mid} ({n} cop"
                  f"{'y' if n == 1 else 'ies'}), never acknowledged nor committed it, and no copy came again", refs)


@handles("CORDA-DEDUP-003")
class NotNewHandled(Handler):
    """Only a NEW copy is processed, and a DUPLICATE is acknowledged, never dropped."""

    def on_commit_not_new(self, tr, other, ref: int) -> None:
        node, mid = tr.node, tr.mid
        self.find("CORDA-DEDUP-003", mid, f"node {node} committed {mid} from a copy its deduplicator answered "
                  f"{other.verdict}: a copy that is not NEW was handed to its flow",
                  [(other.vref, "dedup", node), (ref, "committed", node)])

    def on_duplicate_dropped(self, tr, refs, r, ref: int) -> None:
        self.find("CORDA-DEDUP-003", tr.mid, f"node {tr.node} dropped delivery {r.delivery} of {tr.mid} without "
                  "acknowledging it although it was a DUPLICATE: the broker keeps redelivering it",
                  refs + [(ref, "discarded", tr.node)])


@handles("CORDA-DEDUP-004")
class DiscardableAcked(Handler):
    """A copy whose answer says another copy is being processed is not acknowledged (where the
    profile's consequence of that answer is to drop it)."""

    def on_discardable_acked(self, tr, c, answer: str, r, ref: int) -> None:
        node, mid = tr.node, tr.mid
        self.find("CORDA-DEDUP-004", mid, f"node {node} acknowledged delivery {r.delivery} of {mid}, which its "
                  f"deduplicator answered {answer} (another copy was being processed): if that copy's commit "
                  "fails, no copy is left", [(c.ref, "received", node), (c.vref, "dedup", node), (ref, "acked", node)])


@handles("CORDA-DEDUP-005", "CORDA-DEDUP-006", "CORDA-DEDUP-007")
class ProcessedIdLost(Handler):
    """A committed id is known as processed: its row is in the export, and no copy of it is answered
    NEW again; such a NEW answer is classified by the mechanism that failed (spanning's
    ``renewed``)."""

    def on_committed_without_row(self, tr) -> None:
        node, mid = tr.node, tr.mid
        self.find_if("export", node, "CORDA-DEDUP-005", mid, f"node {node} committed {mid} but its processed-ids "
                     "export has no row for it: a redelivered copy would be processed again",
                     [(tr.commits[0].ref, "committed", node)])

    @staticmethod
    def span(checker, inputs, shares, commits):
        from rmkit.conformance.corda.spanning import renewed

        return renewed(checker, inputs, shares, commits)


@handles("CORDA-DEDUP-008")
class DroppedAnswered(Handler):
    """Only an IN_FLIGHT copy is dropped without acknowledgement."""

    def on_answered_dropped(self, tr, refs, answer, r, ref: int) -> None:
        self.find("CORDA-DEDUP-008", tr.mid, f"node {tr.node} dropped delivery {r.delivery} of {tr.mid} without "
                  f"acknowledgement after the answer {answer or '(none)'}: only an IN_FLIGHT copy is dropped so",
                  refs + [(ref, "discarded", tr.node)])


# ---- acknowledgement ----------------------------------------------------------------------------
@handles("CORDA-ACK-001")
class AckBeforeCommit(Handler):
    """A copy is acknowledged only after its message's commit. The row excuses an acknowledgement
    only when its own transaction's commit left no record (a kill between the commit and its
    record): a row is inserted before its commit, so an ack recorded before the row's committed
    record came before the commit, whatever the clock says. Nor does the row excuse the ack of a
    copy answered for processing (NEW): the writer records that copy's commit before its ack, so a
    node killed between the commit and its record never acknowledged it; its ack came before the
    commit even when it shares the row's millisecond (the row's time is taken as its transaction
    starts)."""

    def __init__(self, run):
        super().__init__(run)
        consequence = run.spec.consequence
        self.processed = frozenset(a for a, c in consequence.items() if c == "process")

    def on_acks_before_commit(self, tr, row, row_commit_unrecorded: bool) -> None:
        node, mid = tr.node, tr.mid
        for a in tr.acks:
            if row_commit_unrecorded and row.t <= a.t and a.answer not in self.processed:
                continue  # committed before the ack: the commit's event was lost in a crash (the row shows it)
            later = next((c.ref for c in tr.commits if c.ref > a.ref), None)
            self.find("CORDA-ACK-001", mid, f"node {node} acknowledged a copy of {mid} (answer {a.answer}) "
                      + ("before its commit (the committed line below)" if later else "and never committed it")
                      + ": a crash in between loses the message",
                      [(a.copy_ref, "received", node), (a.verdict_ref, "dedup", node), (a.ref, "acked", node)]
                      + ([(later, "committed", node)] if later else []))


@handles("CORDA-ACK-002")
class RowOfItsTransaction(Handler):
    """The processed id is persisted in the transaction that processed the message: its row names
    the commit's transaction, and no row stands for an id the node never received."""

    def on_row_of_other_tx(self, tr, row) -> None:
        node, mid = tr.node, tr.mid
        self.find("CORDA-ACK-002", mid, f"the processed-ids row of {mid} on node {node} was written by transaction "
                  f"{row.tx}, its commit was transaction {tr.commits[0].tx}: the id was not persisted in the "
                  "checkpoint's transaction", [(tr.commits[0].ref, "committed", node), (row.ref, "row", node)])

    def on_row_never_received(self, tr, row) -> None:
        node, mid = tr.node, tr.mid
        self.find_if("events", node, "CORDA-ACK-002", mid, f"the processed-ids table of node {node} holds {mid}, "
                     "which the node never received: the id was persisted outside a transaction that processed it",
                     [(row.ref, "row", node)])


# ---- order --------------------------------------------------------------------------------------
@handles("CORDA-ORDER-001")
class SessionOrder(Handler):
    """A session's messages are consumed in the order they were sent (from every share's commits)."""

    @staticmethod
    def span(checker, inputs, shares, commits):
        from rmkit.conformance.corda.spanning import session_order

        return session_order(checker, inputs, shares, commits)


@handles("CORDA-ORDER-002")
class SenderOrder(Handler):
    """Where the fast path trusts a sender key's mark, that key's messages are committed in
    increasing sequence numbers at each node."""

    @staticmethod
    def span(checker, inputs, shares, commits):
        from rmkit.conformance.corda.spanning import sender_order

        return sender_order(checker, inputs, commits)
