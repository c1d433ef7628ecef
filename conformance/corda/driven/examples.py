"""Receiving nodes for the driven suite: faulty ones, each missing one mechanism (must fail, with
the rule it breaks), and legal variants making choices the protocol leaves open (must pass).
Each is the reference adapter with one method changed; ``--impl
rmkit.conformance.corda.driven.examples:CLASS`` selects one (``python -m
rmkit.conformance.corda.driven.examples NAME ROLE`` serves one as a process)."""

from __future__ import annotations

from .adapters import ReferenceReceiver


# ---- faulty -----------------------------------------------------------------------------------
class AckBeforeCommit(ReferenceReceiver):
    """Acknowledges a NEW copy as soon as it is delivered."""

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        if reply["answer"] == "NEW":
            reply["acks"] = [[event["tag"], event["conn"]]]
        return reply


class DedupOnlyInMemory(ReferenceReceiver):
    """Keeps the processed ids in memory only: a restart forgets them (a restart is a new node given
    the same database file, which it never opens)."""

    def make_node(self, profile, database=None):
        return super().make_node(profile, None)


class FastPathWithoutDbRead(ReferenceReceiver):
    """The fast path answers NEW for any message with a sender UUID when no mark exists."""

    def make_node(self, profile, database=None):
        node = super().make_node(profile, database)
        plain = node.fast_path_new

        def fast_path_new(m):
            key = m.sender_key
            if node.spec.fast_path and key is not None and key not in node.marks:
                return True
            return plain(m)

        node.fast_path_new = fast_path_new
        return node


class AckInFlight(ReferenceReceiver):
    """Acknowledges IN_FLIGHT copies at once (the pre-2022 behaviour), whatever the profile."""

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        if reply["answer"] == "IN_FLIGHT":
            reply["acks"] = [[event["tag"], event["conn"]]]
        return reply


class DuplicateAfterRestart(ReferenceReceiver):
    """Writes the processed id when it acknowledges (one tick after the commit), not in the commit's
    transaction: a copy delivered in between, or redelivered after a restart in between, is processed again."""

    def make_node(self, profile, database=None):
        node = super().make_node(profile, database)
        self.unwritten = []
        self.write = node.persist_dedup_facts   # the row (and, with the fast path, the mark), written later
        self.store, node.store = node.store, None   # the commit no longer writes to the database
        node.persist_dedup_facts = lambda m: self.unwritten.append(m)
        return node

    def on_tick(self, event):
        acks = self.acks_now()
        for m in self.unwritten:
            self.write(m)
            if self.store is not None:
                self.store.commit(m)
        self.unwritten = []
        return {"commits": self.commit_now(), "acks": acks}


class IdsWrittenLater(ReferenceReceiver):
    """Writes the processed ids in a transaction of their own, ``DELAY`` ticks after the commit (the
    commit writes the checkpoint and the effect only): a copy delivered in between is processed
    again, and a crash in between loses the ids for good (CORDA-DEDUP-005: the id belongs in the
    checkpoint's transaction). The generated scenarios hit this window by chance; the catalogue's
    crash after the commit hits it every run."""

    DELAY = 3

    def make_node(self, profile, database=None):
        node = super().make_node(profile, database)
        self.pending = []   # [ticks left, message]
        self.write, self.store = node.persist_dedup_facts, node.store
        node.store = None   # the commit's transaction no longer holds the id
        node.persist_dedup_facts = lambda m: self.pending.append([self.DELAY, m])
        return node

    def on_tick(self, event):
        due = [m for entry in self.pending for m in [entry[1]] if entry[0] <= 1]
        self.pending = [[n - 1, m] for n, m in self.pending if n > 1]
        for m in due:
            self.write(m)
            if self.store is not None:
                self.store.commit(m)
        return super().on_tick(event)

    def close(self):
        if self.node is not None:
            self.node.store = self.store   # closed with the node
        super().close()


class SenderKeyedIds(ReferenceReceiver):
    """Looks processed ids up by (id, sender UUID): a re-send during recovery, which carries no sender
    UUID, of a message committed from its original copy is processed again (the table holds the id;
    the key is wrong: CORDA-DEDUP-003)."""

    def make_node(self, profile, database=None):
        node = super().make_node(profile, database)
        rows = node.store.processed_rows() if node.store is not None else []
        self.keys = {(r[0], r[1]) for r in rows}
        plain_persist = node.persist_dedup_facts

        def persist(m):
            self.keys.add((m.dedup_id, m.sender_uuid))
            plain_persist(m)

        def in_database(dedup_id):
            return (dedup_id, self.current.sender_uuid) in self.keys

        node.persist_dedup_facts, node.in_database = persist, in_database
        return node

    def on_deliver(self, event):
        from .adapters import message_from

        self.current = message_from(event["message"])
        return super().on_deliver(event)


class SortBySequenceNumber(ReferenceReceiver):
    """Commits a session's copies by sequence number whatever their sender UUID: after the sending
    process restarts (a new UUID, numbers from 1 again) a later message of the session is committed
    before an earlier one (CORDA-ORDER-001: the order is the session's, the numbers are one sender's)."""

    def commit_now(self):
        by_session = {}
        for d in self.node.processing:
            by_session.setdefault(d.message.session_id, []).append(d)
        self.node.processing[:] = [d for copies in by_session.values() for d in sorted(
            copies, key=lambda d: d.message.sequence_number if d.message.sequence_number is not None else 1 << 62)]
        return super().commit_now()


class AckBeforeCommitInOneReply(ReferenceReceiver):
    """Reports, in one tick's ordered reply, each acknowledgement before the commit it waits for: the
    copies are acknowledged before their transaction committed (CORDA-ACK-001)."""

    def on_tick(self, event):
        commits = self.commit_now()
        acks = self.acks_now()
        return {"done": [["ack", *a] for a in acks] + [["commit", i] for i in commits]}


class ReverseWithinSession(ReferenceReceiver):
    """Commits, within a session, the copy that arrived last first: a session's messages reach the
    flow out of the order they were sent (CORDA-ORDER-001)."""

    def commit_now(self):
        done = []
        while self.node.processing:
            newest = self.node.processing.pop()
            self.node.processing.insert(0, newest)
            done.append(self.node.commit(newest.message.session_id).dedup_id)
        return done


class StuckNewCopy(ReferenceReceiver):
    """Marks the first NEW copy of each id as being processed but never hands it to a flow: the id
    stays in flight, nothing commits it until a restart (CORDA-DEDUP-008, as no progress)."""

    def make_node(self, profile, database=None):
        self.seen = set()
        return super().make_node(profile, database)

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        dedup_id = event["message"]["dedup_id"]
        if reply["answer"] == "NEW" and dedup_id not in self.seen:
            self.seen.add(dedup_id)
            self.node.processing = [d for d in self.node.processing if d.message.dedup_id != dedup_id]
            self.held_back(dedup_id)
        return reply

    def held_back(self, dedup_id: str) -> None:
        """The id stays in flight."""


class DropNewCopy(StuckNewCopy):
    """Drops the first NEW copy of each id without acknowledging it and without handing it to a flow,
    and releases its id: a later copy is NEW again (CORDA-DEDUP-008: only IN_FLIGHT copies are dropped)."""

    def held_back(self, dedup_id: str) -> None:
        self.node.in_flight.pop(dedup_id)


class InFlightForCommitted(ReferenceReceiver):
    """Keeps the ids it committed in memory and answers IN_FLIGHT for them until a restart: a copy of a
    committed id is discarded instead of acknowledged (CORDA-DEDUP-003)."""

    def make_node(self, profile, database=None):
        self.recent = set()
        return super().make_node(profile, database)

    def on_deliver(self, event):
        if event["message"]["dedup_id"] in self.recent:
            return {"answer": "IN_FLIGHT"}
        return super().on_deliver(event)

    def commit_now(self):
        done = super().commit_now()
        self.recent.update(done)
        return done


class FastPathAtMark(ReferenceReceiver):
    """The fast path answers NEW for a sequence number at its sender's mark too, not only above it, so
    the copy that set the mark is processed again (CORDA-DEDUP-006)."""

    def make_node(self, profile, database=None):
        node = super().make_node(profile, database)

        def fast_path_new(m):
            mark = node.marks.get(m.sender_key)
            return node.spec.fast_path and mark is not None and m.sequence_number is not None and m.sequence_number >= mark

        node.fast_path_new = fast_path_new
        return node


class NeverAckProcessed(ReferenceReceiver):
    """Commits a NEW copy but never acknowledges it (only DUPLICATE copies are): the broker keeps a
    processed copy until the node restarts (CORDA-ACK-002: the acknowledgement follows the commit)."""

    def make_node(self, profile, database=None):
        self.new_tags = set()
        return super().make_node(profile, database)

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        if reply["answer"] == "NEW":
            self.new_tags.add((event["tag"], event["conn"]))
        return reply

    def acks_now(self):
        return [pair for pair in super().acks_now() if tuple(pair) not in self.new_tags]


class DiscardRecoveryResends(ReferenceReceiver):
    """Trusts only original copies: a re-send during recovery (no sender UUID) is answered IN_FLIGHT
    and discarded, so a message whose original copy was lost is never processed (CORDA-DEDUP-002)."""

    def on_deliver(self, event):
        if event["message"].get("sender_uuid") is None:
            return {"answer": "IN_FLIGHT"}
        return super().on_deliver(event)


# ---- legal variants -----------------------------------------------------------------------------
class BatchingAcks(ReferenceReceiver):
    """Acknowledges in batches, on every third tick only (acknowledgements may wait)."""

    def make_node(self, profile, database=None):
        self.ticks = 0
        return super().make_node(profile, database)

    def on_tick(self, event):
        self.ticks += 1
        commits = self.commit_now()
        return {"commits": commits, "acks": self.acks_now() if self.ticks % 3 == 0 else []}


class NewestSessionFirst(ReferenceReceiver):
    """Commits one copy per tick, from the session whose first pending copy arrived last (the
    order across sessions is free; within a session it stays the arrival order)."""

    def commit_now(self):
        sessions = self.node.sessions_processing()
        return [self.node.commit(sessions[-1]).dedup_id] if sessions else []


class SendOrderWithinSession(ReferenceReceiver):
    """Restores a session's send order where the copies show it: when every copy of a session being
    processed carries a sequence number of one sender, they are committed by sequence number, otherwise
    in arrival order (ORDER-001 asks for the send order; the transport may not keep it)."""

    def commit_now(self):
        by_session = {}
        for d in self.node.processing:
            by_session.setdefault(d.message.session_id, []).append(d)
        ordered = []
        for copies in by_session.values():
            senders = {d.message.sender_uuid for d in copies}
            numbered = None not in senders and len(senders) == 1
            ordered += sorted(copies, key=lambda d: d.message.sequence_number) if numbered else copies
        self.node.processing[:] = ordered
        return super().commit_now()


class AbandonOnBrokerRestart(ReferenceReceiver):
    """When its broker restarts (the deliveries it holds are dead) it rolls back the work in progress,
    as a consumer restart would: nothing was committed, the redelivered copies are NEW again."""

    def on_broker_restart(self, event):
        self.node.in_flight.clear()
        self.node.processing.clear()
        return super().on_broker_restart(event)


class PeerScopedIds(ReferenceReceiver):
    """Keys its processed ids by (sending peer, id), the peer read from the message: every copy of a
    message comes from its one sending peer, with or without sender UUID, so this is the id alone in
    effect (legal; the message names its peer so that no node has to guess it)."""

    def make_node(self, profile, database=None):
        node = super().make_node(profile, database)
        rows = node.store.processed_rows() if node.store is not None else []
        self.keys = {(r[2], r[0]) for r in rows}
        plain_persist = node.persist_dedup_facts

        def persist(m):
            self.keys.add((m.sending_peer, m.dedup_id))
            plain_persist(m)

        node.persist_dedup_facts = persist
        node.in_database = lambda dedup_id: (self.current.sending_peer, dedup_id) in self.keys
        return node

    def on_deliver(self, event):
        from .adapters import message_from

        self.current = message_from(event["message"])
        return super().on_deliver(event)


class OrderedReply(ReferenceReceiver):
    """Reports each tick's commits and acknowledgements as one ordered list, each acknowledgement after
    the commit it waits for (legal: the order the suspend's actions run in)."""

    def on_tick(self, event):
        commits = self.commit_now()
        return {"done": [["commit", i] for i in commits] + [["ack", *a] for a in self.acks_now()]}


class SlowRhythm(ReferenceReceiver):
    """Commits and acknowledges only on every seventh tick (a node's rhythm is its own choice)."""

    EVERY = 7

    def make_node(self, profile, database=None):
        self.ticks = 0
        return super().make_node(profile, database)

    def on_tick(self, event):
        self.ticks += 1
        if self.ticks % self.EVERY:
            return {}
        return super().on_tick(event)


FAULTY = {"ack_before_commit": AckBeforeCommit, "dedup_only_in_memory": DedupOnlyInMemory,
          "fast_path_without_db_read": FastPathWithoutDbRead, "ack_in_flight": AckInFlight,
          "duplicate_after_restart": DuplicateAfterRestart, "ids_written_later": IdsWrittenLater,
          "reverse_within_session": ReverseWithinSession,
          "drop_new_copy": DropNewCopy, "stuck_new_copy": StuckNewCopy, "in_flight_for_committed": InFlightForCommitted,
          "fast_path_at_mark": FastPathAtMark, "never_ack_processed": NeverAckProcessed,
          "discard_recovery_resends": DiscardRecoveryResends, "sender_keyed_ids": SenderKeyedIds,
          "sort_by_sequence_number": SortBySequenceNumber, "ack_before_commit_in_one_reply": AckBeforeCommitInOneReply}
LEGAL = {"batching_acks": BatchingAcks, "newest_session_first": NewestSessionFirst,
         "send_order_within_session": SendOrderWithinSession, "abandon_on_broker_restart": AbandonOnBrokerRestart,
         "slow_rhythm": SlowRhythm, "peer_scoped_ids": PeerScopedIds, "ordered_reply": OrderedReply}


def main(argv: list[str] | None = None) -> int:
    """``python -m rmkit.conformance.corda.driven.examples NAME [ROLE]``: one example as an adapter
    process; a name or role that is none is a usage error (exit 2)."""
    import textwrap

    from rmkit.guard import run_command_line

    from .adapters import serve, serve_command_line

    examples = {**FAULTY, **LEGAL}
    listed = "\n".join(textwrap.fill(f"{kind}: {', '.join(names)}", 100, subsequent_indent="  ")
                       for kind, names in (("faulty (must fail)", FAULTY), ("legal (must pass)", LEGAL)))
    p = serve_command_line("python -m rmkit.conformance.corda.driven.examples",
                           "Serve one example receiving node as an adapter process (JSON Lines on stdin/stdout),\n"
                           f"for `rmkit conform --protocol corda --impl-cmd`. NAME is one of\n{listed}",
                           names=sorted(examples))
    p.set_defaults(func=lambda args: serve(examples[args.name], args.role) or 0)
    return run_command_line(p, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
