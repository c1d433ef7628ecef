"""One validator's REMP engine: the reliable message queue, its collation order and its receipts.

Why this shape: the engine is a deterministic state machine, ``step(state, event) -> (state,
outputs)``. For speed (the simulator drives a million receipts through it) the state is a mutable
:class:`Validator` object and :func:`step` returns that same object with the outputs; nothing in it
reads a clock or draws a random number, and it never iterates over a set, so the same events always
give the same outputs.

What it covers (documents 000/001 and remp-as-built, sections named where they decide):

- a message enters the queue once, whatever the number of copies (from the full node or the
  catchain); a copy from the full node is re-broadcast into the catchain only when the catchain has
  not delivered it yet (000, "Proposals for speeding up");
- collation takes the oldest eligible messages first; never a message already in an accepted
  block, one its own collator rejected, one 2/3 of the validators rejected (counted from the
  catchain's reject records), one another validator has in a pending candidate, or an obsolete one;
- validation refuses a shard block holding a message already in another accepted block within the
  replay-protection window (:class:`~rmkit.protocols.remp.events.BlockRefused`);
- Ignored at any level puts the message back into the queue in its original place;
- expiry follows the profile's session rule (:mod:`.lifetime`); an obsolete message still in a
  candidate or an accepted block is kept until that block's fate is known;
- at the end of a session in which it validated, pending messages are forwarded whole and
  processed or finally rejected ones as ids (remp-as-built section 5).

Receipts: every receipt goes through the profile's transition table for the validator role
(``spec/remp/transitions.yaml``): a kind outside the profile's status table, or one the table does
not allow from this validator's current position, is not emitted (and counted in ``suppressed``).
So "final statuses are sticky" and "IncludedIntoAcceptedBlock also after a reject (ever-node)" are
the spec's tables, not code.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from rmkit.protocols.remp.events import (ACCEPT, ACCEPTED, DIGEST, FORWARD, IGNORED, NEW, REJECT, REJECTED,
                                         BlockRefused, CatchainBroadcast, CatchainRecord, CollationRound,
                                         CollatorResult, Forwarded, ForwardedDigests, HandToCollator,
                                         MasterchainCommit, MasterchainIgnore, MessageFromFullNode, Receipt,
                                         SessionSwitch, ShardBlockAccepted, ShardBlockIgnored,
                                         ShardBlockRejected, Tick)
from .lifetime import expiry_rule
from .profile import Traits, traits
from .sender import Offer, ReceiptSender

DUPLICATE_UID_ERROR = "Duplicate uid {uid}: {why}"  # remp-as-built section 3: the text starts "Duplicate uid"
RESOLVED_KEEP_SESSIONS = 2  # how long block fates are remembered (late catchain records about them)
HANDED = ""  # ``_Msg.cand`` while the collator has the message and has not answered yet


@dataclass(frozen=True)
class ValidatorConfig:
    """Knobs of one validator engine.

    ``lifetime_ms``: mc_catchain_lifetime (default: the spec's); ``report_duplicates``: report the
    Duplicate kind (000: "SkippedAsDuplicate ... Each node") when another validator collated a
    queued message, where the profile's table has the kind; ``stop_at_two_thirds``: no further
    collation once 2/3 of the validators rejected (000: "those rejected by 2/3 of collators should
    not be collated further"); ``paced``: send receipts through the node's paced, coalescing
    :class:`~.sender.ReceiptSender` (None: where the profile lets intermediate receipts be skipped).
    """

    profile: str = "spec"
    lifetime_ms: Optional[int] = None
    report_duplicates: bool = True
    stop_at_two_thirds: bool = True
    paced: Optional[bool] = None


class _Msg:
    """What one validator knows about one message."""

    __slots__ = ("id", "uid", "session", "order", "body", "pos", "final_pos", "queued", "cand", "others", "acc",
                 "done", "own_rej", "stopped", "rejecters", "expired", "from_fn", "from_cc")

    def __init__(self, mid: str, uid: Optional[str], session: int, order: int, body: bool):
        self.id = mid
        self.uid = uid
        self.session = session  # master session it was received in (its lifetime counts from it)
        self.order = order  # age rank: collation takes the lowest first
        self.body = body  # header and body known (else only the id: digest, block, record)
        self.pos = "none"  # this validator's position as its receipts told it (transitions.yaml)
        self.final_pos: Optional[str] = None  # the first final position it reported, if any
        self.queued = False  # has a live entry in the collation queue
        self.cand: Optional[str] = None  # root hash of its own candidate holding it (HANDED: at the collator)
        self.others: Optional[set] = None  # candidates of other validators holding it, pending
        self.acc: Optional[str] = None  # root hash of the accepted shard block holding it
        self.done = False  # finalized or timed out: nothing more happens to it here
        self.own_rej = False  # its own collator (or shardchain) rejected it: never collated again
        self.stopped = False  # rejected by 2/3 of the validators (or forwarded as rejected)
        self.rejecters: Optional[dict] = None  # validator -> None, from reject records
        self.expired = False  # obsolete, kept only until its pending block's fate is known
        self.from_fn = False  # received from the full node
        self.from_cc = False  # received from the catchain


class Validator:
    """The state of one validator's REMP engine; :meth:`step` mutates it and returns outputs."""

    def __init__(self, validator_id: str, config: ValidatorConfig = ValidatorConfig(),
                 profile_traits: Optional[Traits] = None):
        self.id = validator_id
        self.config = config
        t = self.traits = profile_traits or traits(config.profile)
        lifetime = config.lifetime_ms if config.lifetime_ms is not None else int(t.model.default_lifetime_s * 1000)
        self.lifetime_ms = lifetime
        self.window = expiry_rule(t.profile, lifetime)
        self.session = 0
        self.members: tuple = ()
        self.member = False
        self.n = 1
        self.msgs: dict[str, _Msg] = {}
        self.buckets: dict[int, list] = {}
        self.acc_only: dict[str, str] = {}  # ids known only from accepted blocks -> block root
        self.acc_only_buckets: dict[int, list] = {}
        self.queue: list = []  # heap of (order, msg_id)
        self.next_order = 0
        self.resolved: dict[str, int] = {}  # block root -> session its fate became known
        self.uid_ids: dict[str, dict] = {}
        self.uid_acc: dict[str, str] = {}
        self.suppressed: Counter = Counter()
        self.refused = 0
        # the ids to hand the collator at the next round instead of the machine's own pick: set by
        # the conformance judge to follow an implementation's legal collation order
        self.choose_order: Optional[list] = None
        self._vt = {k: v for k, v in t.validator_transitions.items() if k in t.in_table}
        self._final = t.model.roles["validator"].final
        self._in_table = t.in_table
        self._report_dup = config.report_duplicates and "Duplicate" in t.in_table
        self._uid = t.uid_duplicates
        paced = t.paced_sender if config.paced is None else config.paced
        self.sender = ReceiptSender(t.send_spacing_ms or (0,), t.send_idle_ms or 30_000) if paced else None
        self._handlers = {
            MessageFromFullNode: self._on_message,
            CatchainRecord: self._on_record,
            ForwardedDigests: self._on_digests,
            CollationRound: self._on_round,
            CollatorResult: self._on_collator,
            ShardBlockAccepted: self._on_accepted,
            ShardBlockIgnored: self._on_ignored,
            ShardBlockRejected: self._on_rejected,
            MasterchainCommit: self._on_commit,
            MasterchainIgnore: self._on_mc_ignore,
            SessionSwitch: self._on_switch,
            Tick: self._on_tick,
        }

    # ------------------------------------------------------------------------------------------
    def step(self, event) -> list:
        """Apply one event; return the outputs (receipts, broadcasts, hand-offs...) in order.

        With a paced sender, the receipts returned are the ones sent now (some made earlier, due
        now; some made now may wait, and be overtaken); :meth:`next_due` says when to Tick."""
        handler = self._handlers.get(type(event))
        if handler is None:
            raise TypeError(f"a validator does not take {type(event).__name__} events")
        outs = handler(event)
        sender = self.sender
        if sender is None:
            return outs
        if type(event) is Tick:
            return sender.step(event) + outs
        receipts = [o for o in outs if type(o) is Receipt]
        if not receipts:
            return outs
        return sender.step(Offer(tuple(receipts), event.time)) + [o for o in outs if type(o) is not Receipt]

    def next_due(self) -> Optional[int]:
        """When a paced receipt is due (the driver then steps a Tick), if any."""
        return self.sender.next_due() if self.sender is not None else None

    # ---- receipts -----------------------------------------------------------------------------
    def _emit(self, out: list, m: _Msg, kind: str, time: int, block=None, mc_block=None, error=None) -> bool:
        """Report ``kind`` for ``m`` if the profile's table lets this validator say it now.

        Also from its first *final* position: where intermediate receipts may be skipped on the way
        to the full node, what follows a final receipt in the stream must be allowed from it."""
        trans = self._vt.get(kind)
        if trans is None:  # not in the profile's status table
            self.suppressed[kind] += 1
            return False
        to, allowed = trans
        if m.pos not in allowed or (m.final_pos is not None and m.final_pos not in allowed):
            self.suppressed[kind] += 1
            return False
        m.pos = to
        if m.final_pos is None and to in self._final:
            m.final_pos = to
        out.append(Receipt(kind, m.id, self.id, time, block, mc_block, error))
        return True

    # ---- bookkeeping --------------------------------------------------------------------------
    def _record(self, mid: str, uid, session: int, body: bool) -> _Msg:
        m = _Msg(mid, uid, session, self.next_order, body)
        self.next_order += 1
        self.msgs[mid] = m
        b = self.buckets.get(session)
        if b is None:
            b = self.buckets[session] = []
        b.append(mid)
        acc = self.acc_only.pop(mid, None)
        if acc is not None:
            m.acc = acc
        return m

    def _enqueue(self, m: _Msg) -> None:
        if not m.queued:
            m.queued = True
            heapq.heappush(self.queue, (m.order, m.id))

    def _enter(self, out: list, m: _Msg, time: int, older: bool) -> None:
        """A message with a body arrives for the first time: report it and queue it."""
        if m.acc is not None or m.done:
            return  # already processed (known from a block or a digest): nothing to queue
        if not self._live(m.session):
            return  # obsolete: known so far only by its id (a late record), never queued now
        self._emit(out, m, self.traits.older_session_entry if older else "PutIntoQueue", time)
        if self._uid and m.uid is not None and self._uid_check(out, m, time):
            return
        if not (m.own_rej or m.stopped):
            self._enqueue(m)

    def _uid_check(self, out: list, m: _Msg, time: int) -> bool:
        """The node's duplicate rule (remp-as-built section 3): a message is a duplicate when
        another one with its uid was accepted, or when its id is not the lowest for that uid.
        Returns True when ``m`` itself was rejected."""
        uid = m.uid
        acc = self.uid_acc.get(uid)
        if acc is not None and acc != m.id:
            self._reject_dup(out, m, time, f"message {acc} with this uid is already accepted")
            return True
        ids = self.uid_ids.get(uid)
        if ids is None:
            self.uid_ids[uid] = {m.id: None}
            return False
        lowest = min(ids)
        if lowest < m.id:
            self._reject_dup(out, m, time, f"message {lowest} with this uid has a lower id")
            return True
        for other in list(ids):
            o = self.msgs.get(other)
            if o is not None and o.acc is None and not o.done and not o.own_rej:
                self._reject_dup(out, o, time, f"message {m.id} with this uid has a lower id")
        ids[m.id] = None
        return False

    def _reject_dup(self, out: list, m: _Msg, time: int, why: str) -> None:
        self._emit(out, m, "RejectedByQueue", time, error=DUPLICATE_UID_ERROR.format(uid=m.uid, why=why))
        m.own_rej = True
        m.queued = False

    def _live(self, session: int) -> bool:
        return self.window.is_live(session)

    # ---- inputs from the full node and the catchain --------------------------------------------
    def _on_message(self, ev: MessageFromFullNode) -> list:
        out: list = []
        m = self.msgs.get(ev.msg_id)
        if m is None:
            m = self._record(ev.msg_id, ev.uid, self.session, ev.has_body)
            m.from_fn = True
            if ev.has_body:
                self._enter(out, m, ev.time, older=False)
                out.append(CatchainBroadcast(CatchainRecord(self.id, m.id, self.session, NEW, ev.time, m.uid, m.session)))
            return out
        seen_cc = m.from_cc
        m.from_fn = True
        if not m.body and ev.has_body:
            m.body = True
            if m.uid is None:
                m.uid = ev.uid
            self._enter(out, m, ev.time, older=False)
            if not seen_cc:
                out.append(CatchainBroadcast(CatchainRecord(self.id, m.id, self.session, NEW, ev.time, m.uid, m.session)))
        return out  # a later copy: ignored

    def _on_record(self, rec: CatchainRecord) -> list:
        kind = rec.kind
        if kind == NEW or kind == FORWARD:
            return self._on_new_record(rec)
        if kind == ACCEPT:
            return self._on_accept_record(rec)
        if kind == REJECT:
            self._on_reject_record(rec)
            return []
        if kind == DIGEST:
            return self._on_digests(ForwardedDigests(rec.sender, rec.session,
                                                     ((rec.msg_id, rec.status, rec.block.root_hash if rec.block else None,
                                                       rec.origin_session),), rec.time))
        raise ValueError(f"unknown catchain record kind {kind!r}")

    def _on_new_record(self, rec: CatchainRecord) -> list:
        out: list = []
        origin = rec.origin_session if rec.origin_session is not None else rec.session
        older = rec.kind == FORWARD or rec.session < self.session
        m = self.msgs.get(rec.msg_id)
        if m is None:
            if not self._live(origin):
                return out  # obsolete: not taken into the queue any more
            m = self._record(rec.msg_id, rec.uid, origin, True)
            m.from_cc = True
            self._enter(out, m, rec.time, older)
            return out
        m.from_cc = True
        if not m.body:
            m.body = True
            if m.uid is None:
                m.uid = rec.uid
            self._enter(out, m, rec.time, older)
        return out

    def _stub(self, mid: str, session: int) -> _Msg:
        return self._record(mid, None, session, False)

    def _on_accept_record(self, rec: CatchainRecord) -> list:
        if rec.sender == self.id or rec.block is None:
            return []
        root = rec.block.root_hash
        if root in self.resolved:
            return []  # late news about a candidate whose fate is already known
        m = self.msgs.get(rec.msg_id)
        if m is None:
            m = self._stub(rec.msg_id, rec.origin_session if rec.origin_session is not None else rec.session)
        if m.others is None:
            m.others = {root}
        else:
            m.others.add(root)
        out: list = []
        if self._report_dup and m.body and m.pos == "queue" and not m.done and m.acc is None:
            self._emit(out, m, "Duplicate", rec.time, block=rec.block)
        return out

    def _on_reject_record(self, rec: CatchainRecord) -> None:
        m = self.msgs.get(rec.msg_id)
        if m is None:
            m = self._stub(rec.msg_id, rec.origin_session if rec.origin_session is not None else rec.session)
        self._count_reject(m, rec.sender)

    def _count_reject(self, m: _Msg, who: str) -> None:
        if m.rejecters is None:
            m.rejecters = {who: None}
        else:
            m.rejecters[who] = None
        if self.config.stop_at_two_thirds and len(m.rejecters) >= self._reject_stop(self.n):
            m.stopped = True

    def _reject_stop(self, n: int) -> int:
        """How many rejecting validators of a set of ``n`` stop a message's collation (protocol.yaml
        stop_collation_rejected: 000 "those rejected by 2/3 of collators should not be collated further")."""
        return self.traits.model.threshold("stop_collation_rejected", n)

    def _on_digests(self, ev: ForwardedDigests) -> list:
        """Hand-over digests: only messages this validator does not know are recorded (for replay
        protection and so that a late copy is not collated again)."""
        msgs = self.msgs
        for item in ev.digests:
            mid, status, root = item[0], item[1], item[2]
            origin = item[3] if len(item) > 3 and item[3] is not None else ev.session
            if mid in msgs or not self._live(origin):
                continue
            m = self._stub(mid, origin)
            if status == ACCEPTED and root is not None:
                m.acc = root
            else:
                m.stopped = True
        return []

    # ---- collation ------------------------------------------------------------------------------
    def _on_round(self, ev: CollationRound) -> list:
        if not self.member:
            return []
        out: list = []
        if self.choose_order is not None:
            take = [self.msgs[mid] for mid in self.choose_order]
            for m in take:
                m.queued = False
        else:
            take = self._take_oldest(out, ev)
        for m in take:
            m.cand = HANDED
        if "AcceptedByQueue" in self._in_table:
            for m in take:
                self._emit(out, m, "AcceptedByQueue", ev.time)
        out.append(HandToCollator(self.id, tuple(m.id for m in take), ev.time))
        return out

    def _unfit(self, m: _Msg) -> bool:
        """Never collated now: processed, rejected (own collator, 2/3), at its own collator or in its
        own candidate, or obsolete (a body that came after expiry, with a late record, is obsolete too)."""
        return (m.done or m.acc is not None or m.own_rej or m.stopped or m.cand is not None or m.expired
                or not self._live(m.session))

    def _take_oldest(self, out: list, ev: CollationRound) -> list:
        queue, msgs = self.queue, self.msgs
        take: list = []
        keep: list = []
        limit = ev.max_messages
        while queue and len(take) < limit:
            entry = heapq.heappop(queue)
            m = msgs.get(entry[1])
            if m is None or not m.queued or m.order != entry[0]:
                continue  # a stale entry (of a message forgotten and received again)
            m.queued = False
            if self._unfit(m):
                continue
            if m.others:
                m.queued = True
                keep.append(entry)
                continue
            if self._uid and m.uid is not None and self._uid_duplicate_now(out, m, ev.time):
                continue
            take.append(m)
        for entry in keep:
            heapq.heappush(queue, entry)
        return take

    def collation_plan(self, limit: int, accepted_first: bool = False, hold_back: bool = True) -> list:
        """The ids a collation round would hand over now, without changing anything: oldest first
        (a message in another validator's pending candidate held back), or, with ``accepted_first``
        (000: "Accepted messages should be collated first"), those first and then the oldest, or,
        without ``hold_back``, the oldest whatever other collators did (000: "it takes the oldest
        messages from the hashmap"). For the conformance judge, which accepts each of these orders
        (spec/remp/freedoms.yaml, REMP-FREE-005)."""
        if not self.member:
            return []
        seen, first, rest = set(), [], []
        for order, mid in sorted(self.queue):
            m = self.msgs.get(mid)
            if m is None or not m.queued or m.order != order or mid in seen or self._unfit(m):
                continue
            seen.add(mid)
            if self._uid and m.uid is not None and self._uid_dup_reason(m):
                continue
            if m.others and hold_back:
                if accepted_first:
                    first.append(mid)
                continue
            rest.append(mid)
        return (first + rest)[:limit]

    def _uid_dup_reason(self, m: _Msg):
        acc = self.uid_acc.get(m.uid)
        if acc is not None and acc != m.id:
            return f"message {acc} with this uid is already accepted"
        ids = self.uid_ids.get(m.uid)
        if ids:
            lowest = min(ids)
            if lowest < m.id:
                return f"message {lowest} with this uid has a lower id"
        return None

    def _uid_duplicate_now(self, out: list, m: _Msg, time: int) -> bool:
        why = self._uid_dup_reason(m)
        if why is not None:
            self._reject_dup(out, m, time, why)
            return True
        return False

    def _on_collator(self, ev: CollatorResult) -> list:
        m = self.msgs.get(ev.msg_id)
        if m is None:
            return []
        out: list = []
        res = ev.result
        if m.cand == HANDED:
            m.cand = None
        if res == ACCEPTED:
            if ev.block is None:
                raise ValueError("an accepted collator result names its candidate block")
            if m.done or m.acc is not None:
                return out
            m.cand = ev.block.root_hash
            self._emit(out, m, "IncludedIntoBlock", ev.time, block=ev.block)
            out.append(CatchainBroadcast(CatchainRecord(self.id, m.id, self.session, ACCEPT, ev.time,
                                                        origin_session=m.session, block=ev.block)))
        elif res == REJECTED:
            m.own_rej = True
            self._count_reject(m, self.id)
            self._emit(out, m, "RejectedByCollator", ev.time, block=ev.block, error=ev.error or "rejected by collator")
            out.append(CatchainBroadcast(CatchainRecord(self.id, m.id, self.session, REJECT, ev.time,
                                                        origin_session=m.session, error=ev.error)))
            if m.expired:
                self._forget(m)
        elif res == IGNORED:
            if m.expired:  # it became obsolete while at the collator: no second chance
                self._emit(out, m, "Timeout", ev.time)
                self._forget(m)
                return out
            self._emit(out, m, "IgnoredByCollator", ev.time, block=ev.block)
            if not (m.done or m.acc is not None or m.own_rej):
                self._enqueue(m)
        else:
            raise ValueError(f"unknown collator result {res!r}")
        return out

    # ---- shard blocks -----------------------------------------------------------------------------
    def _on_accepted(self, ev: ShardBlockAccepted) -> list:
        block = ev.block
        root = block.root_hash
        if root in self.resolved:
            return []
        msgs = self.msgs
        replayed = []
        for mid in ev.msg_ids:
            m = msgs.get(mid)
            acc = m.acc if m is not None else self.acc_only.get(mid)
            if acc is not None and acc != root:
                replayed.append(mid)
        if replayed:
            self.refused += 1
            self.resolved[root] = self.session
            return [BlockRefused(self.id, block, tuple(replayed), ev.time)]
        self.resolved[root] = self.session
        out: list = []
        t = ev.time
        uid = self._uid
        for mid in ev.msg_ids:
            m = msgs.get(mid)
            if m is None:
                if mid not in self.acc_only:
                    self.acc_only[mid] = root
                    b = self.acc_only_buckets.get(self.session)
                    if b is None:
                        b = self.acc_only_buckets[self.session] = []
                    b.append(mid)
                continue
            m.acc = root
            m.others = None
            m.cand = None  # a leftover acceptance in another candidate is moot now
            if m.queued:
                m.queued = False
            if m.body and not m.done:
                if m.pos != "none":
                    self._emit(out, m, "IncludedIntoAcceptedBlock", t, block=block)
                if uid and m.uid is not None:
                    self._uid_accepted(out, m, t)
        return out

    def _uid_accepted(self, out: list, m: _Msg, time: int) -> None:
        self.uid_acc[m.uid] = m.id
        ids = self.uid_ids.get(m.uid)
        if not ids:
            return
        for other in list(ids):
            if other == m.id:
                continue
            o = self.msgs.get(other)
            if o is not None and o.acc is None and not o.done and not o.own_rej:
                self._reject_dup(out, o, time, f"message {m.id} with this uid is already accepted")

    def _candidates_of(self, block, msg_ids) -> list:
        """The messages this validator had in ``block`` as its candidate, still undecided; marks
        the block resolved (a block's fate is handled once) and clears each message's candidate."""
        root = block.root_hash
        if root in self.resolved:
            return []
        self.resolved[root] = self.session
        found = []
        for mid in msg_ids:
            m = self.msgs.get(mid)
            if m is None:
                continue
            if m.others:
                m.others.discard(root)
            if m.cand != root:
                continue
            m.cand = None
            if m.done or m.acc is not None:
                continue
            found.append(m)
        return found

    def _on_ignored(self, ev: ShardBlockIgnored) -> list:
        out: list = []
        silent = ev.superseded and self.traits.silent_superseded
        for m in self._candidates_of(ev.block, ev.msg_ids):
            if m.expired:
                self._emit(out, m, "Timeout", ev.time)
                self._forget(m)
                continue
            if not silent:
                self._emit(out, m, "IgnoredByShardchain", ev.time, block=ev.block)
            if not m.own_rej:
                self._enqueue(m)
        return out

    def _on_rejected(self, ev: ShardBlockRejected) -> list:
        out: list = []
        for m in self._candidates_of(ev.block, ev.msg_ids):
            m.own_rej = True
            self._emit(out, m, "RejectedByShardchain", ev.time, block=ev.block, error=ev.error)
            if m.expired:
                self._forget(m)
        return out

    # ---- masterchain ------------------------------------------------------------------------------
    def _on_commit(self, ev: MasterchainCommit) -> list:
        out: list = []
        root = ev.block.root_hash
        finalizes = self.traits.validator_finalizes
        for mid in ev.msg_ids:
            m = self.msgs.get(mid)
            if m is None:
                continue
            if m.acc is None:
                m.acc = root
            if m.done:
                continue
            m.done = True
            if finalizes and m.body and m.pos != "none":
                self._emit(out, m, "Finalized", ev.time, block=ev.block, mc_block=ev.mc_block)
            if m.expired:
                self._forget(m)
        return out

    def _on_mc_ignore(self, ev: MasterchainIgnore) -> list:
        out: list = []
        root = ev.block.root_hash
        for mid in ev.msg_ids:
            m = self.msgs.get(mid)
            if m is None:
                if self.acc_only.get(mid) == root:
                    del self.acc_only[mid]
                continue
            if m.acc != root or m.done:
                continue
            m.acc = None
            if self._uid and m.uid is not None and self.uid_acc.get(m.uid) == mid:
                del self.uid_acc[m.uid]
            if not m.body:
                continue
            if m.expired:
                self._emit(out, m, "Timeout", ev.time)
                self._forget(m)
                continue
            self._emit(out, m, "IgnoredByMasterchain", ev.time, block=ev.block)
            if not m.own_rej and not m.stopped:
                self._enqueue(m)
        return out

    # ---- sessions ----------------------------------------------------------------------------------
    def _on_switch(self, ev: SessionSwitch) -> list:
        out: list = []
        if ev.seqno <= self.session and self.members:
            self.window.start(ev.seqno, ev.start_time)  # a repeat: the window checks it is the same
            return out
        was_member, old = self.member, self.session
        self.window.start(ev.seqno, ev.start_time)
        self.session = ev.seqno
        self.members = tuple(ev.validators)
        self.member = self.id in self.members
        self.n = max(1, len(self.members))
        bound = self.window.lower_bound
        if was_member:
            out.append(self._forward(old, ev.seqno, ev.start_time))
        if bound is not None:
            for s in sorted(s for s in self.buckets if s < bound):
                for mid in self.buckets.pop(s):
                    m = self.msgs.get(mid)
                    if m is not None and m.session == s:
                        self._expire(out, m, ev.start_time)
            for s in sorted(s for s in self.acc_only_buckets if s < bound):
                for mid in self.acc_only_buckets.pop(s):
                    self.acc_only.pop(mid, None)
        if self.resolved:
            oldest = ev.seqno - RESOLVED_KEEP_SESSIONS
            if next(iter(self.resolved.values())) < oldest:
                self.resolved = {r: s for r, s in self.resolved.items() if s >= oldest}
        return out

    def _expire(self, out: list, m: _Msg, time: int) -> None:
        if not m.done and (m.cand is not None or m.acc is not None):
            m.expired = True  # its block decides: finalized, or Timeout when that block fails
            return
        if not m.done and m.body and not m.own_rej:
            self._emit(out, m, "Timeout", time)
        self._forget(m)

    def _forget(self, m: _Msg) -> None:
        if self.msgs.get(m.id) is m:
            del self.msgs[m.id]
        m.queued = False
        m.done = True
        if m.uid is not None and self._uid:
            ids = self.uid_ids.get(m.uid)
            if ids is not None:
                ids.pop(m.id, None)
                if not ids:
                    del self.uid_ids[m.uid]
            if self.uid_acc.get(m.uid) == m.id:
                del self.uid_acc[m.uid]

    def _forward(self, session: int, to_session: int, time: int) -> Forwarded:
        """The hand-over of remp-as-built section 5: pending messages whole, processed and finally
        rejected ones as ids; obsolete, timed-out and body-less ones not at all."""
        full, digests = [], []
        live = self._live
        for m in self.msgs.values():
            if not m.body or m.expired or not live(m.session):
                continue
            if m.acc is not None:
                digests.append((m.id, ACCEPTED, m.acc, m.session))
            elif m.done:
                continue
            elif m.own_rej or m.stopped:
                digests.append((m.id, REJECTED, None, m.session))
            else:
                full.append((m.id, m.uid, m.session))
        return Forwarded(self.id, session, to_session, tuple(full), tuple(digests), time)

    def _on_tick(self, ev: Tick) -> list:
        return []  # the queue has no timers (expiry follows session switches); the sender has


def step(state: Validator, event) -> tuple[Validator, list]:
    """``step(state, event) -> (state, outputs)``. The state object is updated in place and
    returned (documented trade-off for speed); the result depends only on the state and event."""
    return state, state.step(event)
