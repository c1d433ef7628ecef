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
    """Keeps the processed ids in memory only (the database hello names is not used): a restart
    forgets them."""

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
    transaction: a restart in between lets the redelivered copy be processed again."""

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


FAULTY = {"ack_before_commit": AckBeforeCommit, "dedup_only_in_memory": DedupOnlyInMemory,
          "fast_path_without_db_read": FastPathWithoutDbRead, "ack_in_flight": AckInFlight,
          "duplicate_after_restart": DuplicateAfterRestart}
LEGAL = {"batching_acks": BatchingAcks, "newest_session_first": NewestSessionFirst}


if __name__ == "__main__":
    import sys

    from .adapters import serve

    serve({**FAULTY, **LEGAL}[sys.argv[1]], sys.argv[2] if len(sys.argv) > 2 else "receiver")
