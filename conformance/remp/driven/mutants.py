"""One mutant of the reference per rule in scope, each breaking that rule: the measure of which
scenarios can detect a breach.

Why mutants: a scenario "checks" a rule only if it would fail an implementation that breaks the
rule. Declaring that (the catalogue's ``checks``) proves nothing; running each scenario against a
reference that breaks exactly one rule does. :mod:`.coverage` runs them; the per-rule table counts a
rule as passed only when a scenario that caught its mutant ran clean on the implementation.

A mutant is the reference adapter with one change: a machine subclass, a config or parameter
override, or a rewrite of its outputs. Several are the faulty examples of
``rmkit.conformance.examples``. ``NOT_DRIVABLE`` lists the rules of the roles' rule sets that no
single machine's outputs can break, with the reason.
"""

from __future__ import annotations

import importlib

from rmkit.conformance.examples._base import VariantAdapter
from rmkit.conformance.remp.model import FULLNODE
from rmkit.reference_impl.remp.events import NEW, CatchainBroadcast, CatchainRecord, Publish, Receipt
from rmkit.reference_impl.remp.fullnode import FullNode
from rmkit.reference_impl.remp.validator import Validator

# ---- machine changes ----------------------------------------------------------------------------


class _RecollatesOwnRejected(Validator):
    def _on_collator(self, ev):
        out = super()._on_collator(ev)
        m = self.msgs.get(ev.msg_id)
        if m is not None and ev.result == "rejected":
            m.own_rej = False  # the mutation: its own collator's reject is forgotten
            if m.rejecters:
                m.rejecters.pop(self.id, None)
            m.stopped = False
            self._enqueue(m)
        return out


class _IgnoredNotRequeued(Validator):
    def _on_ignored(self, ev):
        out = super()._on_ignored(ev)
        for mid in ev.msg_ids:  # the mutation: an ignored message does not return to the queue
            m = self.msgs.get(mid)
            if m is not None:
                m.queued = False
        return out


class _RebroadcastsCatchainCopy(Validator):
    def _on_message(self, ev):
        m = self.msgs.get(ev.msg_id)
        seen_cc = m is not None and m.from_cc and not m.from_fn
        out = super()._on_message(ev)
        if seen_cc and ev.has_body and not any(isinstance(o, CatchainBroadcast) for o in out):
            out.append(CatchainBroadcast(CatchainRecord(self.id, m.id, self.session, NEW, ev.time, m.uid, m.session)))
        return out


class _CopiesObsoleteOn(Validator):
    """Breaks REMP-LIFE-001 alone: the hand-over at a switch copies on the messages that turn
    obsolete at it (it still times them out and never collates them)."""

    def _forward(self, session, to_session, time):
        self._live = lambda s: True  # the mutation: every message counts as live for the hand-over
        try:
            return super()._forward(session, to_session, time)
        finally:
            del self._live


class _CollatesObsolete(Validator):
    """Breaks REMP-EXPIRY-001 alone: an obsolete message is timed out and left out of the hand-over
    as due, but stays in the queue, so it is collated (and included) after it became obsolete."""

    def _expire(self, out, m, time):
        if not m.done and (m.cand is not None or m.acc is not None):
            return super()._expire(out, m, time)
        if not m.done and m.body and not m.own_rej:
            self._emit(out, m, "Timeout", time)
        # the mutation: the message is not forgotten

    def _unfit(self, m):
        return m.done or m.acc is not None or m.own_rej or m.stopped or m.cand is not None


class _CollatesProcessed(Validator):
    def _unfit(self, m):
        if m.acc is not None and not m.own_rej and not m.stopped and m.cand is None:
            return False  # the mutation: a message in an accepted block is collated again
        return super()._unfit(m)

    def _on_accepted(self, ev):
        out = super()._on_accepted(ev)
        for mid in ev.msg_ids:
            m = self.msgs.get(mid)
            if m is not None and m.acc == ev.block.root_hash:
                self._enqueue(m)
        return out


class _FinalizesTwice(FullNode):
    """Breaks REMP-FIN-001 alone: a later commit of a finalized message finalizes it again, naming
    the block it was finalized in (so the receipts claim no second block, REMP-REPLAY-002's fault)."""

    def _on_commit(self, ev):
        firsts = self.__dict__.setdefault("_finalized_in", {})
        done = {mid for mid in ev.msg_ids if mid in self.msgs and self.msgs[mid].final}
        out = super()._on_commit(ev)
        for o in out:
            if isinstance(o, Publish) and o.receipt.kind == "Finalized":
                firsts.setdefault(o.receipt.msg_id, (o.receipt.block, o.receipt.mc_block))
        for mid in done:  # the mutation: a second commit of the message finalizes it again
            blk, mc = firsts.get(mid, (ev.block, ev.mc_block))
            out.append(Publish(Receipt("Finalized", mid, self.id, ev.time, block=blk, mc_block=mc), FULLNODE, ev.time))
        return out


class _SendsToNobody(FullNode):
    def _on_submit(self, ev):
        self.choose = {ev.msg_id: []}  # the mutation: the message goes to no validator
        try:
            return super()._on_submit(ev)
        finally:
            self.choose = None


# ---- output rewrites ----------------------------------------------------------------------------


def _rename(kind_from: str, kind_to: str, out_type: str = "Receipt"):
    def rewrite(outs: list) -> list:
        res = []
        for o in outs:
            if o["type"] == out_type and o["receipt"]["kind"] == kind_from:
                o = dict(o, receipt=dict(o["receipt"], kind=kind_to))
            res.append(o)
        return res
    return rewrite


def _drop_kind(kind: str):
    return lambda outs: [o for o in outs if not (o["type"] == "Receipt" and o["receipt"]["kind"] == kind)]


def _no_error(kind: str):
    def rewrite(outs: list) -> list:
        return [dict(o, receipt=dict(o["receipt"], error=None)) if o["type"] == "Receipt" and o["receipt"]["kind"] == kind
                else o for o in outs]
    return rewrite


def _overcount(outs: list) -> list:
    res = []
    for o in outs:
        r = o.get("receipt") if o["type"] == "Publish" else None
        if r and r["kind"] == "SentToValidators":
            o = dict(o, receipt=dict(r, sent_to=r["total_validators"] + 1))
        res.append(o)
    return res


class Mutant(VariantAdapter):
    """The reference adapter with one change for ``faulty_role``."""

    rewrite = None

    def outputs(self, outs):
        return outs if self.rewrite is None else type(self).rewrite(outs)


def _mutant(rule: str, role: str, variant=None, config=None, params=None, rewrite=None) -> type:
    body = {"faulty_role": role, "name": f"mutant breaking {rule}", "variant": variant, "config": config or {}}
    if params is not None:
        body["params"] = lambda self, p: params(p)
    if rewrite is not None:
        body["rewrite"] = staticmethod(rewrite)
    return type(f"Mutant_{rule.replace('-', '_')}", (Mutant,), body)


def _example(name: str) -> type:
    return importlib.import_module(f"rmkit.conformance.examples.{name}").Adapter


# rule -> (role, adapter class, profiles where it applies)
BOTH = ("spec", "ever-node")
MUTANTS: dict = {
    "REMP-VALID-001": ("validator", _example("no_replay_protection"), BOTH),
    "REMP-FWD-001": ("validator", _example("no_forwarding"), BOTH),
    "REMP-SRC-001": ("validator", _example("non_sticky_final"), ("spec",)),
    "REMP-COLL-002": ("validator", _example("collates_rejected"), BOTH),
    "REMP-COLL-001": ("validator", _example("newest_first"), BOTH),
    "REMP-COLL-003": ("validator", _mutant("REMP-COLL-003", "validator", _RecollatesOwnRejected), BOTH),
    "REMP-IGN-001": ("validator", _mutant("REMP-IGN-001", "validator", _IgnoredNotRequeued), BOTH),
    "REMP-QUEUE-001": ("validator", _mutant("REMP-QUEUE-001", "validator", _RebroadcastsCatchainCopy), BOTH),
    "REMP-LIFE-001": ("validator", _mutant("REMP-LIFE-001", "validator", _CopiesObsoleteOn), BOTH),
    "REMP-EXPIRY-001": ("validator", _mutant("REMP-EXPIRY-001", "validator", _CollatesObsolete), BOTH),
    "REMP-REPLAY-003": ("validator", _mutant("REMP-REPLAY-003", "validator", _CollatesProcessed), BOTH),
    "REMP-SEND-001": ("validator", _mutant("REMP-SEND-001", "validator", rewrite=_drop_kind("RejectedByCollator")), BOTH),
    "REMP-KIND-001": ("validator", _mutant("REMP-KIND-001", "validator", rewrite=_rename("IncludedIntoBlock", "IncludedIntoBlocks")), BOTH),
    "REMP-KIND-002": ("validator", _mutant("REMP-KIND-002", "validator", rewrite=_rename("IncludedIntoBlock", "AcceptedByQueue")), ("spec",)),
    "REMP-ROLE-001": ("validator", _mutant("REMP-ROLE-001", "validator", rewrite=_rename("PutIntoQueue", "RejectedByFullnode")), BOTH),
    "REMP-SEQ-001": ("validator", _mutant("REMP-SEQ-001", "validator", rewrite=_rename("PutIntoQueue", "AcceptedByQueue")), ("spec",)),
    "REMP-SCHEMA-001": ("validator", _mutant("REMP-SCHEMA-001", "validator", rewrite=_no_error("RejectedByCollator")), BOTH),
    "REMP-FANOUT-002": ("fullnode", _example("low_fanout"), ("spec",)),
    "REMP-FANOUT-002/ever-node": ("fullnode", _mutant("REMP-FANOUT-002", "fullnode", _SendsToNobody), ("ever-node",)),
    "REMP-KIND-002/ever-node": ("validator", _mutant("REMP-KIND-002", "validator", rewrite=_rename("IncludedIntoBlock", "Duplicate")),
                                ("ever-node",)),
    "REMP-FANOUT-001": ("fullnode", _mutant("REMP-FANOUT-001", "fullnode", rewrite=_overcount), ("spec",)),
    "REMP-CLIENT-001": ("fullnode", _example("slow_resend"), BOTH),
    "REMP-CLIENT-003": ("fullnode", _example("ignores_next_set"), BOTH),
    "REMP-FIN-001": ("fullnode", _mutant("REMP-FIN-001", "fullnode", _FinalizesTwice), ("spec",)),
    "REMP-CLIENT-002": ("consumer", _example("early_reject"), BOTH),
}

# rules of the roles' rule sets no single machine's outputs can break, and why
NOT_DRIVABLE = {
    "REMP-SRC-002": "the full node's receipts after its own final one need a resubmission the documents' profile ignores; "
                    "checked on logs by rmkit check",
    "REMP-FN-001": "needs validators reporting on a message the full node rejected: the validators' receipts, not the full node's",
    "REMP-FIN-002": "needs the validators' IncludedIntoAcceptedBlock receipts the full node only relays",
    "REMP-REPLAY-001": "a replay is accepted by the validators; the full node only relays their receipts",
    "REMP-REPLAY-002": "Finalized in two blocks needs two masterchain commits of one message (the validators' fault)",
    "REMP-OUTCOME-001": "the validators' rejects the full node relays decide it; checked on logs by rmkit check",
    "REMP-OUTCOME-002": "needs validators that go on after the full node rejected; checked on logs by rmkit check",
    "REMP-FANOUT-001/ever-node": "the ever-node full node issues no SentToValidators receipt (not in the profile's status "
                                 "table, spec/remp/kinds.yaml), so no output of it carries sent_to",
    "REMP-LIVE-001": "a consumer's outcome past the horizon is REMP-CLIENT-002's; liveness of a whole shard is checked on logs",
}


def mutant_for(rule: str, profile: str):
    """(role, factory) of the mutant breaking ``rule`` in ``profile``, or None (a key ``RULE/PROFILE``
    holds a profile's own mutant where the rule's is legal there)."""
    for entry in (MUTANTS.get(f"{rule}/{profile}"), MUTANTS.get(rule)):
        if entry is not None and profile in entry[2]:
            return entry[0], entry[1]
    return None


def rules_with_mutants() -> list:
    return list(dict.fromkeys(k.split("/")[0] for k in MUTANTS))


# rules a mutant should cover but whose coverage is not measured yet, and why (shown, never a pass)
NOT_MEASURED = {
    "REMP-SRC-001/ever-node": "the profile lets a validator report after a reject; a mutant that reports "
                              "IncludedIntoAcceptedBlock after its Finalized is not reported under this rule by the "
                              "ever-node log rules on driven receipts (an open problem of the kit)",
}


def why_not_covered(rule: str, profile: str) -> str:
    if f"{rule}/{profile}" in NOT_MEASURED:
        return "not measured: " + NOT_MEASURED[f"{rule}/{profile}"]
    for k in (f"{rule}/{profile}", rule):
        if k in NOT_DRIVABLE:
            return "not drivable: " + NOT_DRIVABLE[k]
    if mutant_for(rule, profile) is None:
        return f"no mutant in the {profile} profile (the rule's breach is legal or not observable there)"
    return "no scenario catches its mutant"
