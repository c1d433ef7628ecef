"""One mutant of the reference per rule in scope, each breaking that rule: the measure of which
scenarios can detect a breach.

Why mutants: a scenario "checks" a rule only if it would fail an implementation that breaks the
rule. Declaring that (the catalogue's ``checks``) proves nothing; running each scenario against a
reference that breaks exactly one rule does. :mod:`.coverage` runs them; the per-rule table counts a
rule as passed only when a scenario that caught its mutant ran clean on the implementation.

A mutant is the reference adapter with one change: a machine subclass, a config or parameter
override, or a rewrite of its outputs. Several are the faulty examples of
``rmkit.conformance.remp.examples``. A rule in the scope of a role with no mutant of that role is listed
in ``not_drivable`` of ``spec/remp/conformance.yaml`` with the reason no single machine of the role
can break it there.
"""

from __future__ import annotations

import importlib

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.conformance.remp.driven.catalogue import conformance_spec
from rmkit.conformance.remp.driven.scope import ROLES, rules_in_scope
from rmkit.protocols.remp.model import FULLNODE
from rmkit.protocols.remp.events import Publish, Receipt, SendToValidator
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


class _RepeatsShardAcceptance(Validator):
    """Breaks REMP-SEQ-001 alone: when the masterchain commits, the validator reports
    IncludedIntoAcceptedBlock again (a kind its position after that same receipt does not allow)."""

    def _on_commit(self, ev):
        again = [self.msgs[mid] for mid in ev.msg_ids if mid in self.msgs and self.msgs[mid].pos == "shard"]
        out = super()._on_commit(ev)
        for m in again:
            if m.pos == "shard":  # the mutation: the shard-block receipt is sent once more
                out.append(Receipt("IncludedIntoAcceptedBlock", m.id, self.id, ev.time, ev.block))
        return out


class _SendsToNobody(FullNode):
    def _on_submit(self, ev):
        self.choose = {ev.msg_id: []}  # the mutation: the message goes to no validator
        try:
            return super()._on_submit(ev)
        finally:
            self.choose = None


class _RejectsResubmissionAgain(FullNode):
    """Breaks REMP-SRC-002 alone: a resubmission of a message it rejected at pre-evaluation is
    rejected again (a second RejectedByFullnode after its final one; ever-node's full node does so
    for a message still in processing). It is never sent to validators (that is REMP-FN-001's
    fault, its own mutant)."""

    def _on_submit(self, ev):
        m = self.msgs.get(ev.msg_id)
        if m is not None and m.final and self._pos.get(ev.msg_id) == "rejected":
            # the mutation: the final reject is reported once more
            return [Publish(Receipt("RejectedByFullnode", ev.msg_id, self.id, ev.time, error=ev.error or "rejected again"),
                            FULLNODE, ev.time)]
        return super()._on_submit(ev)


class _FinalizesRejected(FullNode):
    """Breaks REMP-OUTCOME-002: when the masterchain commits a message it rejected (another full
    node's copy went through), it publishes Finalized for it in its own name after telling the user
    'rejected' (in the spec profile the same receipt also breaks REMP-SRC-002, nothing follows its
    final status, and REMP-FIN-002 where no validator's acceptance was relayed)."""

    def _on_commit(self, ev):
        out = super()._on_commit(ev)
        for mid in ev.msg_ids:
            if mid in self.msgs and self._pos.get(mid) == "rejected":  # the mutation: its reject is not looked at
                out.append(Publish(Receipt("Finalized", mid, self.id, ev.time, block=ev.block, mc_block=ev.mc_block),
                                   FULLNODE, ev.time))
        return out


class _ReportsEachResend(FullNode):
    """Breaks REMP-SEQ-001 alone: every resend is reported with another SentToValidators (the kind
    comes once, when the message first goes out)."""

    def _on_tick(self, ev):
        out = super()._on_tick(ev)
        for o in list(out):
            if isinstance(o, SendToValidator) and o.msg_id in self.msgs:
                m = self.msgs[o.msg_id]
                out.append(Publish(Receipt("SentToValidators", m.id, self.id, ev.time, sent_to=len(m.targets),
                                           total_validators=m.total), FULLNODE, ev.time))
        return out


class _SendsFinal(FullNode):
    """Breaks REMP-CLIENT-004: a finalized message goes to one more validator at every Tick."""

    def _on_tick(self, ev):
        out = super()._on_tick(ev)
        for mid, m in self.msgs.items():
            left = [v for vs in self.sets() for v in sorted(vs) if v not in m.targets]
            if m.final and self._pos.get(mid) != "rejected" and left:
                m.targets[left[0]] = None
                out.append(SendToValidator(left[0], mid, m.uid, ev.time))
        return out


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


def _no_error(kind: str, out_type: str = "Receipt"):
    def rewrite(outs: list) -> list:
        return [dict(o, receipt=dict(o["receipt"], error=None)) if o["type"] == out_type and o["receipt"]["kind"] == kind
                else o for o in outs]
    return rewrite


def _no_new_records(outs: list) -> list:
    """Breaks REMP-QUEUE-001: a message from the full node is queued but never put into the catchain."""
    return [o for o in outs if not (o["type"] == "CatchainBroadcast" and o["record"]["kind"] == "new")]


def _flipped_votes(outs: list) -> list:
    """Breaks REMP-VOTE-001: the record of the collator's accept says reject."""
    res = []
    for o in outs:
        rec = o.get("record") if o["type"] == "CatchainBroadcast" else None
        if rec and rec["kind"] == "accept":
            o = dict(o, record=dict(rec, kind="reject", block=None, error="rejected by collator"))
        res.append(o)
    return res


def _names_another_block(outs: list) -> list:
    """Breaks REMP-INCL-001: IncludedIntoBlock names a block the validator did not collate into."""
    return [dict(o, receipt=dict(o["receipt"], block=dict(o["receipt"]["block"], seqno=o["receipt"]["block"]["seqno"] + 99)))
            if o["type"] == "Receipt" and o["receipt"]["kind"] == "IncludedIntoBlock" and o["receipt"].get("block") else o
            for o in outs]


def _undercount(outs: list) -> list:
    """Breaks REMP-COUNT-001: SentToValidators reports one validator fewer than the message went to."""
    res = []
    for o in outs:
        r = o.get("receipt") if o["type"] == "Publish" else None
        if r and r["kind"] == "SentToValidators" and isinstance(r.get("sent_to"), int) and r["sent_to"] > 1:
            o = dict(o, receipt=dict(r, sent_to=r["sent_to"] - 1))
        res.append(o)
    return res


def _drops_relayed(outs: list) -> list:
    """Breaks REMP-RELAY-001: the validators' receipts are not passed on to the user."""
    return [o for o in outs if not (o["type"] == "Publish" and o.get("role") == "validator")]


def _overcount(outs: list) -> list:
    res = []
    for o in outs:
        r = o.get("receipt") if o["type"] == "Publish" else None
        if r and r["kind"] == "SentToValidators":
            o = dict(o, receipt=dict(r, sent_to=r["total_validators"] + 1))
        res.append(o)
    return res


def _finalized_names_master_block(outs: list) -> list:
    """Breaks REMP-FIN-002: Finalized names the masterchain block where the shard block the
    validators reported accepted belongs (the seed's Finalized example blurs the two)."""
    res = []
    for o in outs:
        r = o.get("receipt") if o["type"] == "Publish" else None
        if r and r["kind"] == "Finalized" and r.get("mc_block"):
            o = dict(o, receipt=dict(r, block=r["mc_block"]))
        res.append(o)
    return res


def _relay_reversed(outs: list) -> list:
    """Breaks REMP-SRC-001 (from the full node's log): the receipts a validator sent together are
    published newest first, so its final receipt precedes what it said before."""
    relayed = [o for o in outs if o["type"] == "Publish" and o["role"] == "validator"]
    rest = [o for o in outs if not (o["type"] == "Publish" and o["role"] == "validator")]
    return relayed[::-1] + rest


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
    return importlib.import_module(f"rmkit.conformance.remp.examples.{name}").Adapter


# key -> (role, adapter class, profiles where it applies). A key is the rule's id, optionally
# ``@ROLE`` (a rule in scope for several roles has a mutant of each, so that a run of one role
# measures its own coverage), ``/PROFILE`` (a profile's own mutant where the rule's is legal there)
# and ``+NAME`` (a further mechanism breaking the same rule: not the one coverage measures, but a
# scenario must still catch it for its rule, tests/remp/test_driven_judging.py).
BOTH = ("spec", "ever-node")
MUTANTS: dict = {
    "REMP-VALID-001": ("validator", _example("no_replay_protection"), BOTH),
    "REMP-FWD-001": ("validator", _example("no_forwarding"), BOTH),
    "REMP-SRC-001": ("validator", _example("non_sticky_final"), BOTH),
    "REMP-COLL-002": ("validator", _example("collates_rejected"), BOTH),
    "REMP-COLL-002+digests": ("validator", _example("ignores_rejected_digests"), BOTH),
    "REMP-VOTE-001": ("validator", _mutant("REMP-VOTE-001", "validator", rewrite=_flipped_votes), BOTH),
    "REMP-STATUS-001": ("validator", _mutant("REMP-STATUS-001", "validator", rewrite=_rename("IncludedIntoBlock", "IgnoredByCollator")),
                        BOTH),
    "REMP-INCL-001": ("validator", _mutant("REMP-INCL-001", "validator", rewrite=_names_another_block), BOTH),
    "REMP-COUNT-001@fullnode": ("fullnode", _mutant("REMP-COUNT-001", "fullnode", rewrite=_undercount), ("spec",)),
    "REMP-RELAY-001@fullnode": ("fullnode", _mutant("REMP-RELAY-001", "fullnode", rewrite=_drops_relayed), BOTH),
    "REMP-TIME-001": ("validator", _example("stamps_zero"), ("spec",)),
    "REMP-TIME-001@fullnode": ("fullnode", _example("fullnode_stamps_zero"), BOTH),
    "REMP-FN-001@fullnode": ("fullnode", _example("sends_rejected"), ("spec",)),
    "REMP-COLL-001": ("validator", _example("newest_first"), BOTH),
    "REMP-COLL-003": ("validator", _mutant("REMP-COLL-003", "validator", _RecollatesOwnRejected), BOTH),
    "REMP-IGN-001": ("validator", _mutant("REMP-IGN-001", "validator", _IgnoredNotRequeued), BOTH),
    "REMP-QUEUE-001": ("validator", _mutant("REMP-QUEUE-001", "validator", rewrite=_no_new_records), BOTH),
    "REMP-LIFE-001": ("validator", _mutant("REMP-LIFE-001", "validator", _CopiesObsoleteOn), BOTH),
    "REMP-EXPIRY-001": ("validator", _mutant("REMP-EXPIRY-001", "validator", _CollatesObsolete), BOTH),
    "REMP-REPLAY-003": ("validator", _mutant("REMP-REPLAY-003", "validator", _CollatesProcessed), BOTH),
    "REMP-SEND-001": ("validator", _mutant("REMP-SEND-001", "validator", rewrite=_drop_kind("RejectedByCollator")), BOTH),
    "REMP-KIND-001": ("validator", _mutant("REMP-KIND-001", "validator", rewrite=_rename("IncludedIntoBlock", "IncludedIntoBlocks")), BOTH),
    "REMP-KIND-002": ("validator", _mutant("REMP-KIND-002", "validator", rewrite=_rename("IncludedIntoBlock", "AcceptedByQueue")), ("spec",)),
    "REMP-ROLE-001": ("validator", _mutant("REMP-ROLE-001", "validator", rewrite=_rename("RejectedByCollator", "RejectedByFullnode")),
                      BOTH),
    "REMP-SEQ-001": ("validator", _mutant("REMP-SEQ-001", "validator", _RepeatsShardAcceptance), ("spec",)),
    "REMP-SCHEMA-001": ("validator", _mutant("REMP-SCHEMA-001", "validator", rewrite=_no_error("RejectedByCollator")), BOTH),
    "REMP-FANOUT-002": ("fullnode", _example("low_fanout"), ("spec",)),
    "REMP-FANOUT-002/ever-node": ("fullnode", _mutant("REMP-FANOUT-002", "fullnode", _SendsToNobody), ("ever-node",)),
    "REMP-KIND-002/ever-node": ("validator", _mutant("REMP-KIND-002", "validator", rewrite=_rename("IncludedIntoBlock", "Duplicate")),
                                ("ever-node",)),
    "REMP-FANOUT-001": ("fullnode", _mutant("REMP-FANOUT-001", "fullnode", rewrite=_overcount), ("spec",)),
    "REMP-CLIENT-001": ("fullnode", _example("slow_resend"), ("ever-node",)),
    "REMP-CLIENT-004": ("fullnode", _mutant("REMP-CLIENT-004", "fullnode", _SendsFinal), BOTH),
    "REMP-CLIENT-003": ("fullnode", _example("ignores_next_set"), BOTH),
    "REMP-FIN-001": ("fullnode", _mutant("REMP-FIN-001", "fullnode", _FinalizesTwice), ("spec",)),
    "REMP-CLIENT-002": ("consumer", _example("early_reject"), BOTH),
    # the receipt rules of the full node's own log: its own receipts, and the validators' it relays
    "REMP-SRC-001@fullnode": ("fullnode", _mutant("REMP-SRC-001", "fullnode", rewrite=_relay_reversed), BOTH),
    "REMP-SRC-002@fullnode": ("fullnode", _mutant("REMP-SRC-002", "fullnode", _RejectsResubmissionAgain), ("spec",)),
    "REMP-FIN-002@fullnode": ("fullnode", _mutant("REMP-FIN-002", "fullnode", rewrite=_finalized_names_master_block), ("spec",)),
    "REMP-OUTCOME-002@fullnode": ("fullnode", _mutant("REMP-OUTCOME-002", "fullnode", _FinalizesRejected), BOTH),
    "REMP-SEQ-001@fullnode": ("fullnode", _mutant("REMP-SEQ-001", "fullnode", _ReportsEachResend), ("spec",)),
    "REMP-SCHEMA-001@fullnode": ("fullnode", _mutant("REMP-SCHEMA-001", "fullnode", rewrite=_no_error("RejectedByFullnode", "Publish")), BOTH),
    "REMP-KIND-001@fullnode": ("fullnode", _mutant("REMP-KIND-001", "fullnode", rewrite=_rename("RejectedByFullnode", "RejectedByFullNode", "Publish")),
                               BOTH),
    "REMP-KIND-002@fullnode": ("fullnode", _mutant("REMP-KIND-002", "fullnode", rewrite=_rename("RejectedByFullnode", "IgnoredByFullNode", "Publish")),
                               BOTH),
    "REMP-ROLE-001@fullnode": ("fullnode", _mutant("REMP-ROLE-001", "fullnode", rewrite=_rename("RejectedByFullnode", "RejectedByCollator", "Publish")),
                               BOTH),
}


def _base(key: str) -> str:
    return key.split("+")[0].split("/")[0].split("@")[0]


def every_mutant(profile: str) -> list:
    """(key, role, factory) of every mutant that applies in ``profile``, the further mechanisms
    (``+NAME`` keys) included."""
    return [(key, role, cls) for key, (role, cls, profiles) in MUTANTS.items() if profile in profiles]


def mutants_for(rule: str, profile: str) -> dict:
    """role -> factory of the mutants breaking ``rule`` in ``profile`` (one per role the kit has one
    for; a key's ``/PROFILE`` form replaces the generic one of its role in that profile)."""
    out: dict = {}
    for key, (role, cls, profiles) in MUTANTS.items():
        if _base(key) != rule or profile not in profiles or "+" in key:
            continue
        if role not in out or key.endswith(f"/{profile}"):
            out[role] = cls
    return out


def mutant_for(rule: str, profile: str, role: str | None = None):
    """(role, factory) of a mutant breaking ``rule`` in ``profile`` (of ``role`` when given), or None."""
    found = mutants_for(rule, profile)
    if role is not None:
        return (role, found[role]) if role in found else None
    return next(iter(found.items()), None)


def rules_with_mutants() -> list:
    return list(dict.fromkeys(_base(k) for k in MUTANTS))


def not_drivable(rule: str, profile: str, role: str) -> str | None:
    """The reason the spec gives (``not_drivable`` of ``spec/remp/conformance.yaml``) why no single
    machine of ``role`` can break ``rule`` in ``profile``, or None."""
    for e in conformance_spec().get("not_drivable", []):
        if e["rule"] == rule and role in e["roles"] and profile in e.get("profiles", BOTH):
            return e["reason"]
    return None


def why_not_covered(rule: str, profile: str, roles=None) -> str:
    """Why no scenario of a run of ``roles`` (default: every role) covers ``rule``: for each of those
    roles that has the rule in scope, the spec's reason it is not drivable there, or that a mutant
    exists but no scenario catches it."""
    roles = [r for r in (roles or ROLES) if rule in rules_in_scope(profile, (r,))]
    reasons = {r: not_drivable(rule, profile, r) for r in roles}
    if roles and all(reasons.values()):
        if len(set(reasons.values())) == 1:
            return "not drivable: " + reasons[roles[0]]
        return "not drivable: " + "; ".join(f"{r}: {why}" for r, why in reasons.items())
    have = mutants_for(rule, profile)
    if not any(r in have for r in roles):
        return f"no mutant in the {profile} profile (the rule's breach is legal or not observable there)"
    return "no scenario catches its mutant"
