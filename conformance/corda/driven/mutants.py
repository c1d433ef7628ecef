"""One mutant of the reference per rule a driven Corda role judges: each breaks the promise of
its rule (and as little else as it can), so that a scenario is said to cover the rule only when it
fails that mutant by that rule (:mod:`.coverage`).

Why mutants: a scenario "checks" a rule only if it would fail an implementation that breaks the
rule; a scenario that plays a rule's situation but lets a breach pass proves nothing. Running each
scenario against a reference that breaks exactly one rule measures it.

A mutant is the reference adapter of its role with one change. Where a faulty example of
:mod:`.examples` or :mod:`.bridge` already is that breach it is taken as it is; the others are
written here. A rule a role judges that has no mutant, or whose mutant no scenario catches in some
profile, says why in ``spec/corda/rules.yaml`` (``not_covered``, per profile).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import bridge as bridge_examples
from . import examples
from .adapters import ReferenceReceiver
from .bridge import ReferenceBridge


# ---- written here ---------------------------------------------------------------------------------
class TableReadAtStart(ReferenceReceiver):
    """Reads the processed-ids table once, when it starts, and looks copies up in that snapshot: an
    id it committed since is not found, so a copy redelivered before the next restart is answered
    NEW and its effect committed again, with no restart in between (CORDA-DEDUP-001; the table
    itself is whole, so a restart hides the fault)."""

    def make_node(self, profile, database=None):
        node = super().make_node(profile, database)
        snapshot = set(node.db)

        def in_database(dedup_id):
            node.db_reads += 1
            return dedup_id in snapshot

        node.in_database = in_database
        return node


class IgnoresNewResends(ReferenceReceiver):
    """Answers IN_FLIGHT, and so discards, a re-send during recovery (no sender UUID) of a message
    it has neither committed nor is processing: a message whose original copy did not come is
    never processed (CORDA-DEDUP-002). A re-send of a committed id is still a DUPLICATE, where the
    faulty example discard_recovery_resends breaks CORDA-DEDUP-003 too."""

    def on_deliver(self, event):
        m = event["message"]
        if m.get("sender_uuid") is None and m["dedup_id"] not in self.node.in_flight and m["dedup_id"] not in self.node.db:
            return {"answer": "IN_FLIGHT"}
        return super().on_deliver(event)


class NeverAckDuplicates(ReferenceReceiver):
    """Answers a copy of a committed id DUPLICATE and drops it without acknowledging it: the broker
    keeps redelivering it (CORDA-DEDUP-003, in every profile, where an IN_FLIGHT answer for a
    committed id is acknowledged in some)."""

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        if reply["answer"] == "DUPLICATE":
            self.node.to_ack = [d for d in self.node.to_ack if (d.tag, d.connection) != (event["tag"], event["conn"])]
        return reply


class NewestFirst(ReferenceBridge):
    """Holds what the local queue delivers until a tick, then sends the newest first: a session's
    later message reaches the remote broker before an earlier one with no loss on the link to
    excuse it (CORDA-ORDER-001 in every profile: strict where the bridge keeps order, a finding
    where it pipelines)."""

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        if reply.get("send"):   # taken back: sent at the next tick instead, newest first
            held = [self.unacked.pop(tag) for tag in reply["send"]]
            self.waiting[:0] = held
        return {k: v for k, v in reply.items() if k != "send"}

    def on_tick(self, event):
        self.waiting.reverse()
        return super().on_tick(event)


# ---- the table ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mutant:
    name: str     # a faulty example's name, or this module's class name in snake case
    role: str
    cls: type


def _m(name: str, role: str, cls: type) -> Mutant:
    return Mutant(name, role, cls)


# (rule, role) -> its mutant; the rule is judged by that role (rules.yaml ``driven``)
MUTANTS: dict[tuple[str, str], Mutant] = {
    ("CORDA-DEDUP-001", "receiver"): _m("table_read_at_start", "receiver", TableReadAtStart),
    ("CORDA-DEDUP-002", "receiver"): _m("ignores_new_resends", "receiver", IgnoresNewResends),
    ("CORDA-DEDUP-003", "receiver"): _m("never_ack_duplicates", "receiver", NeverAckDuplicates),
    ("CORDA-DEDUP-004", "receiver"): _m("ack_in_flight", "receiver", examples.AckInFlight),
    ("CORDA-DEDUP-005", "receiver"): _m("dedup_only_in_memory", "receiver", examples.DedupOnlyInMemory),
    ("CORDA-DEDUP-006", "receiver"): _m("fast_path_without_db_read", "receiver", examples.FastPathWithoutDbRead),
    ("CORDA-DEDUP-008", "receiver"): _m("drop_new_copy", "receiver", examples.DropNewCopy),
    ("CORDA-ACK-001", "receiver"): _m("ack_before_commit", "receiver", examples.AckBeforeCommit),
    ("CORDA-ACK-002", "receiver"): _m("never_ack_processed", "receiver", examples.NeverAckProcessed),
    ("CORDA-ORDER-001", "receiver"): _m("reverse_within_session", "receiver", examples.ReverseWithinSession),
    ("CORDA-BRIDGE-001", "bridge"): _m("ack_on_send", "bridge", bridge_examples.AckOnSend),
    ("CORDA-BRIDGE-002", "bridge"): _m("no_rollback", "bridge", bridge_examples.NoRollback),
    ("CORDA-ORDER-001", "bridge"): _m("newest_first", "bridge", NewestFirst),
}


def reference(role: str) -> type:
    """The reference adapter class of ``role``: what every mutant changes, and what a covering
    scenario must pass."""
    return ReferenceBridge if role == "bridge" else ReferenceReceiver
