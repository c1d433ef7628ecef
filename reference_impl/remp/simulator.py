"""A seeded shard simulator: validators, a full node, collators, a network and the chain, composed.

Why: it produces realistic REMP receipt logs in the JSON form of the seeds, for the checker's
tests, benchmarks and demos, reproducibly (one ``random.Random(seed)`` drives every choice; the
machines themselves are deterministic). Its default output is a *conforming* log: it must pass
``RempLogChecker(profile)`` (``pass`` for spec; ``pass`` or ``non-strict`` for ever-node, whose
lost messages are non-strict because the node never sends Timeout).

The scenario, per simulated shard:

- users submit ``messages`` messages at ``rate`` per second (Poisson arrivals); some are invalid
  (RejectedByFullnode), some are rejected by every collator, some are "flaky" (the first one or two
  collators reject them, a later one accepts: the legal "rejected by one validator, finalized via
  another"), some share their body with an earlier message (ever-node's duplicate-uid rule);
- a pool of validators of which ``validators`` validate each master session; sessions last about
  ``lifetime`` and rotate part of the set; the next set is announced shortly before a switch;
- every ``block_interval_ms`` one validator of the set collates (sometimes two compete); a
  candidate may be ignored or rejected by the shardchain, an accepted block may be ignored by the
  masterchain: its messages return to the queue and are collated again;
- faulty validators (``faulty``; kinds ``drop``, ``delay``, ``duplicate`` in turn) and a lossy,
  reordering, duplicating network (:mod:`.network`).

The one exception to a conforming log: the lossy network can keep a message from every validator
(each full-node send lost, or made to a silent ``drop`` validator). The full node, as the real one,
sends a message to each validator at most once, so such a message has SentToValidators alone (in
the profiles that write it) and breaks REMP-LIVE-001 once the log runs a horizon past it. That
takes p_loss to the power of the validators tried (about 1% of messages with one validator per
session, 1e-4 with two, nothing worth counting from about five): ``Simulation.unreached`` lists
them, from the run itself.

Entry points: :func:`simulate` (receipt dicts), :func:`simulate_timed` (``(kafka_time_ms,
receipt)`` pairs: the time the full node wrote the receipt, needed for ever-node whose validator
receipts carry timestamp 0), :class:`Simulation` (the same with counters and ``unreached``), and
:mod:`.dump`'s writers.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterator, Optional

from rmkit.errors import InputError

from rmkit.protocols.remp.events import (ACCEPTED, FORWARD, IGNORED, REJECTED, BlockRef, BlockRefused,
                                         CatchainBroadcast, CatchainRecord, CollationRound, CollatorResult,
                                         Forwarded, ForwardedDigests, HandToCollator, MasterchainCommit,
                                         MasterchainIgnore, MessageFromFullNode, Publish, Receipt,
                                         ReceiptsFromValidator, SendToValidator, SessionSwitch,
                                         ShardBlockAccepted, ShardBlockIgnored, ShardBlockRejected, Submit,
                                         Tick, UpcomingValidators)
from .fullnode import FullNode, FullNodeConfig
from .network import DROP, FAULT_KINDS, Network, NetworkConfig
from .profile import traits
from .validator import Validator, ValidatorConfig
from .wire import hex_id, renderer

SHARD = 0xA000000000000000  # shard prefix with tag bit, as receipts write it
MASTER_SHARD = 0x8000000000000000
COLLATOR_ERROR = "Contract rejected message with error code 52"  # document 000's example
FLAKY_ERROR = "Contract rejected message with error code 101: not enough balance"
INVALID_ERRORS = ("Message rejected by pre-evaluation: account is frozen", None)  # None: undeserializable

# heap event codes
_V_ONE, _V_SEQ, _CC, _FN_RCPT, _CHAIN, _ROUND, _CONSENSUS, _MC, _ARRIVAL, _FN_TICK, _FLUSH, _SWITCH, _ANNOUNCE, _RESUBMIT = range(14)


@dataclass(frozen=True)
class SimConfig:
    """Every knob of a simulation. Probabilities are per message, round, block or send."""

    seed: int = 0
    profile: str = "spec"
    messages: int = 1000
    rate: float = 50.0  # messages per second
    validators: int = 7
    faulty: Optional[int] = None  # default: min(2, (N-1)//3)
    faulty_kinds: tuple = FAULT_KINDS
    lifetime_s: Optional[float] = None  # mc_catchain_lifetime; default: the spec's
    start_ms: int = 1_700_000_000_000
    rotate: Optional[int] = None  # validators replaced per session; default max(1, N//3)
    session_jitter: float = 0.1  # sessions last lifetime * U(1 - jitter, 1)
    switch_notice_ms: int = 10_000
    block_interval_ms: int = 2000
    collate_ms: int = 300
    consensus_ms: int = 800
    chain_ms: int = 50
    mc_delay_ms: tuple = (2000, 4000)
    max_block_messages: int = 400
    p_invalid: float = 0.01
    p_bad: float = 0.01
    p_flaky: float = 0.03
    p_uid_duplicate: float = 0.002
    p_resubmit: float = 0.0  # user sends a copy while it is processed (ever-node: RejectedByFullnode)
    p_collator_ignore: float = 0.01
    p_compete: float = 0.05
    p_shard_ignore: float = 0.02
    p_shard_reject: float = 0.005
    p_mc_ignore: float = 0.01
    network: NetworkConfig = field(default_factory=NetworkConfig)
    fanout: Optional[int] = None
    report_duplicates: bool = True
    tail_sessions: float = 2.2  # simulated time after the last arrival, in lifetimes
    # Ed25519 keys (a key folder written by `rmkit keys gen`, or a loaded signing.KeySet): the
    # validator set of each session and the full node come from it, and receipts are signed
    keys: Optional[object] = None
    # seed of the node ids (validators, full node); default ``seed``. Consecutive runs of one
    # shard (``rmkit simulate --out DIR`` writes one per file) share their nodes, not their messages
    node_seed: Optional[int] = None


def shortest_lifetime_s(profile: str, config: SimConfig = SimConfig()) -> int:
    """The shortest whole mc_catchain_lifetime, in seconds, this simulator runs honestly.

    A session lasts the lifetime less up to ``session_jitter`` of it and less the time a switch
    waits for its last round; a message queued at a session's end times out at the next one's
    end. The spec judges a Timeout by time as early below ``lifetimes.timeout_floor_lifetimes``
    (REMP-EXPIRY-002), so below this lifetime a clean simulation would break the rule it checks."""
    floor = traits(profile).model.timeout_floor_lifetimes
    room = 1 - config.session_jitter - floor
    if room <= 0:
        raise ValueError(f"session_jitter {config.session_jitter} leaves no session as long as the spec's "
                         f"timeout floor ({floor} lifetimes)")
    wait_ms = config.consensus_ms + config.chain_ms + 1
    return math.ceil(wait_ms / (room * 1000))


class Simulation:
    """One run. Iterate :meth:`timed` (or :meth:`receipts`) once; counters fill as it runs.

    ``unreached``: message id -> ``[(index, (kafka_time_ms, receipt))]`` of its receipts (index:
    position in :meth:`timed`'s output), for every message none of whose full-node sends has
    reached a validator so far (all lost, or made to silent validators); once the run is over,
    the messages no validator ever received. Kept without drawing a random number, so the run
    is the same with or without it."""

    def __init__(self, config: SimConfig = SimConfig()):
        c = self.config = config
        self.key_sessions: Optional[list] = None
        signer = None
        if c.keys is not None:
            from rmkit.protocols.remp.signing import KeySet, Signer, load_key_set

            ks = c.keys if isinstance(c.keys, KeySet) else load_key_set(c.keys)
            if not ks.full_node_ids:
                raise InputError(f"--keys: the key set {ks.validator_set.path} has no full node key, and a full node "
                                 f"signs every SentToValidators: generate one with rmkit keys gen --full-nodes 1")
            self.key_sessions = [s.order for s in ks.validator_set.sessions]
            fullnode_key = ks.full_node_ids[0]
            signer = Signer(ks.private.values(), c.profile)
        n = c.validators if self.key_sessions is None else min(map(len, self.key_sessions))
        if n < 1:
            raise ValueError("validators must be >= 1")
        self.traits = t = traits(c.profile)
        most = t.model.threshold("faulty_max", n)
        faulty = c.faulty if c.faulty is not None else min(2, most)
        if faulty < 0 or faulty > most:
            raise ValueError(f"{faulty} faulty validators of {n}: REMP tolerates at most floor((N-1)/3) = {most}")
        self.rng = rng = random.Random(c.seed)
        lifetime_s = c.lifetime_s if c.lifetime_s is not None else t.model.default_lifetime_s
        self.lifetime_ms = int(lifetime_s * 1000)
        self.render = renderer(c.profile, t, signer)
        seed = c.seed
        node_seed = seed if c.node_seed is None else c.node_seed
        rot = c.rotate if c.rotate is not None else max(1, n // 3)
        if self.key_sessions is None:
            self.pool = [hex_id(node_seed, "validator", i) for i in range(n + rot)]
        else:
            self.pool = list(dict.fromkeys(v for s in self.key_sessions for v in s))
        self.rot = rot
        self.faults: dict[str, str] = {}
        kinds = c.faulty_kinds or FAULT_KINDS
        for j, idx in enumerate(sorted(rng.sample(range(len(self.pool)), faulty))):
            self.faults[self.pool[idx]] = kinds[j % len(kinds)]
        self.net = Network(c.network, rng, self.faults)
        vconf = ValidatorConfig(profile=c.profile, lifetime_ms=self.lifetime_ms, report_duplicates=c.report_duplicates)
        self.engines = {v: Validator(v, vconf, t) for v in self.pool}
        self.live = tuple(v for v in self.pool if self.faults.get(v) != DROP)
        self.live_set = frozenset(self.live)
        self.announced: set = set()
        self._current_round = 0
        self.inflight_until = 0  # end of the round being decided (collation to chain news)
        self.paced = any(e.sender is not None for e in self.engines.values())
        self.flush_at: dict[str, int] = {}
        self.fullnode_id = hex_id(node_seed, "fullnode") if self.key_sessions is None else fullnode_key
        self.fullnode = FullNode(self.fullnode_id, FullNodeConfig(profile=c.profile, fanout=c.fanout,
                                                                  lifetime_ms=self.lifetime_ms), t)
        self.heap: list = []
        self.seq = 0
        self.now = c.start_ms
        self.out: list = []
        self.counters: Counter = Counter()
        self.session = 0
        self.session_starts: dict[int, int] = {}
        self.sets: dict[int, tuple] = {}
        self.cc_targets: dict[int, tuple] = {}
        self.chain_seqno = 0
        self.mc_seqno = 0
        self.round_no = 0
        self.round_cands: dict[int, list] = {}
        self.fates: dict[str, tuple] = {}
        self.attempts: Counter = Counter()
        self.bodies: list = []  # recent (uid) for duplicate-uid messages
        self.arrived = 0
        self.last_arrival = c.start_ms
        self.unreached: dict[str, list] = {}
        self.emitted = 0  # items timed() has yielded
        self.end_time: Optional[int] = None

    # ---- scheduling -----------------------------------------------------------------------------
    def _push(self, t: int, code: int, a=None, b=None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, code, a, b))

    def _set_for(self, k: int) -> tuple:
        s = self.sets.get(k)
        if s is None:
            if self.key_sessions is not None:
                if k > len(self.key_sessions):
                    raise InputError(f"--keys: the key set has {len(self.key_sessions)} master sessions and the "
                                     f"simulation reached session {k}: generate more (rmkit keys gen --sessions "
                                     f"{2 * k}) or simulate fewer messages")
                s = self.sets[k] = tuple(self.key_sessions[k - 1])
                return s
            n, pool = self.config.validators, self.pool
            s = self.sets[k] = tuple(pool[(i + (k - 1) * self.rot) % len(pool)] for i in range(n))
        return s

    def _session_length(self) -> int:
        """At most the lifetime, less the time a switch may wait for its last round to be decided
        (so that no session outlasts mc_catchain_lifetime)."""
        c = self.config
        return int(self.lifetime_ms * (1 - c.session_jitter * self.rng.random())) - (c.consensus_ms + c.chain_ms + 1)

    # ---- the run --------------------------------------------------------------------------------
    def timed(self) -> Iterator[tuple]:
        """``(kafka_time_ms, receipt_dict)`` in log order."""
        c = self.config
        start = c.start_ms
        self._switch(1, start)
        self._push(start + self._session_length(), _SWITCH, 2)
        self._push(start + c.block_interval_ms, _ROUND)
        self._push(start + 1000, _FN_TICK)
        if c.messages > 0:
            self._push(start + 1 + int(self.rng.expovariate(c.rate) * 1000), _ARRIVAL)
        else:
            self.end_time = start
        heap, out = self.heap, self.out
        pop = heapq.heappop
        deliver = self._deliver
        while heap:
            t, _, code, a, b = pop(heap)
            if self.end_time is not None and t > self.end_time:
                break
            self.now = t
            if code == _V_ONE:
                deliver(a, b, t)
            elif code == _CC:
                for v in a:
                    deliver(v, b, t)
            elif code == _FN_RCPT:
                self._fullnode(ReceiptsFromValidator(b, t), t)
            elif code == _V_SEQ:
                for ev in b:
                    deliver(a, ev, t)
            elif code == _CHAIN:
                for v in self.live:
                    deliver(v, a, t)
                if b:
                    self._fullnode(a, t)
            elif code == _ROUND:
                self._round(t)
            elif code == _CONSENSUS:
                self._consensus(a, t)
            elif code == _MC:
                self._masterchain(a, b, t)
            elif code == _ARRIVAL:
                self._arrival(t)
            elif code == _FN_TICK:
                self._fullnode(Tick(t), t)
                self._push(t + 1000, _FN_TICK)
            elif code == _FLUSH:
                self._flush(a, t)
            elif code == _SWITCH:
                if t < self.inflight_until:  # a session ends after its last round is decided
                    self._push(self.inflight_until + 1, _SWITCH, a)
                    continue
                self._switch(a, t)
                self._push(t + self._session_length(), _SWITCH, a + 1)
            elif code == _ANNOUNCE:
                self._announce(a, t)
            elif code == _RESUBMIT:
                self._fullnode(Submit(a, t, b), t)
            if out:
                yield from out
                self.emitted += len(out)
                out.clear()

    def receipts(self) -> Iterator[dict]:
        for _, r in self.timed():
            yield r

    # ---- nodes ------------------------------------------------------------------------------------
    def _deliver(self, v: str, ev, t: int) -> None:
        engine = self.engines[v]
        outs = engine.step(ev)
        if outs:
            self._route(v, outs, t)
        if self.paced:
            due = engine.next_due()
            if due is not None:
                cur = self.flush_at.get(v)
                if cur is None or due < cur:
                    self.flush_at[v] = due
                    self._push(due, _FLUSH, v)

    def _route(self, v: str, outs: list, t: int) -> None:
        receipts = None
        for o in outs:
            tp = type(o)
            if tp is Receipt:
                if receipts is None:
                    receipts = [o]
                else:
                    receipts.append(o)
            elif tp is CatchainBroadcast:
                self._broadcast(v, o.record, t)
            elif tp is HandToCollator:
                self._collate(v, o, t)
            elif tp is Forwarded:
                self._forward(o, t)
            elif tp is BlockRefused:
                self.counters["blocks_refused"] += 1
        if receipts:
            self._ship(v, receipts, t)

    def _ship(self, v: str, receipts: list, t: int) -> None:
        batch = tuple(receipts)
        for at in self.net.receipts(t, v):
            self._push(at, _FN_RCPT, v, batch)

    def _flush(self, v: str, t: int) -> None:
        if self.flush_at.get(v) != t:
            return  # superseded by an earlier timer that already ran
        del self.flush_at[v]
        self._deliver(v, Tick(t), t)

    def _fullnode(self, ev, t: int) -> None:
        outs = self.fullnode.step(ev)
        if not outs:
            return
        render, out, net, unreached = self.render, self.out, self.net, self.unreached
        # a new message's first sends: if none arrives, it joins ``unreached`` with its receipts
        new = ev.msg_id if type(ev) is Submit and ev.msg_id not in unreached else None
        tried = reached = False
        mine = None
        for o in outs:
            tp = type(o)
            if tp is Publish:
                item = (t, render(o.receipt, o.role))
                mid = o.receipt.msg_id
                if mid == new:
                    if mine is None:
                        mine = []
                    mine.append((self.emitted + len(out), item))
                elif unreached:
                    seen = unreached.get(mid)
                    if seen is not None:
                        seen.append((self.emitted + len(out), item))
                out.append(item)
            elif tp is SendToValidator:
                arrivals = net.to_validator(t, o.validator)
                if o.msg_id == new:
                    tried = True
                    reached = reached or bool(arrivals)
                elif arrivals and unreached:
                    unreached.pop(o.msg_id, None)
                for at in arrivals:
                    self._push(at, _V_ONE, o.validator, MessageFromFullNode(o.msg_id, at, o.uid))
        if tried and not reached:
            unreached[new] = mine or []

    # ---- catchain ---------------------------------------------------------------------------------
    def _targets(self, session: int) -> tuple:
        tg = self.cc_targets.get(session)
        if tg is None:
            members = dict.fromkeys(self._set_for(session))
            if session + 1 in self.announced:
                members.update(dict.fromkeys(self._set_for(session + 1)))
            tg = self.cc_targets[session] = tuple(v for v in members if v in self.live_set)
        return tg

    def _broadcast(self, sender: str, rec: CatchainRecord, t: int) -> None:
        targets = tuple(v for v in self._targets(rec.session) if v != sender)
        if not targets:
            return
        for at in self.net.catchain(t, sender):
            self._push(at, _CC, targets, CatchainRecord(rec.sender, rec.msg_id, rec.session, rec.kind, at, rec.uid,
                                                        rec.origin_session, rec.block, rec.error, rec.status))

    def _forward(self, f: Forwarded, t: int) -> None:
        targets = [v for v in self._targets(f.to_session) if v != f.sender]
        if not targets:
            return
        for at in self.net.catchain(t, f.sender):
            evs = tuple(CatchainRecord(f.sender, mid, f.to_session, FORWARD, at, uid, origin) for mid, uid, origin in f.full)
            if f.digests:
                evs += (ForwardedDigests(f.sender, f.to_session, f.digests, at),)
            for v in targets:
                self._push(at, _V_SEQ, v, evs)
        self.counters["forwarded_full"] += len(f.full)
        self.counters["forwarded_digests"] += len(f.digests)

    # ---- sessions ---------------------------------------------------------------------------------
    def _switch(self, k: int, t: int) -> None:
        self.session = k
        self.session_starts[k] = t
        members = self._set_for(k)
        self.cc_targets.clear()
        ev = SessionSwitch(k, t, members)
        for v in self.live:
            self._deliver(v, ev, t)
        self._fullnode(ev, t)
        self._push(t + max(0, self.lifetime_ms * 9 // 10 - self.config.switch_notice_ms), _ANNOUNCE, k + 1)

    def _announce(self, k: int, t: int) -> None:
        if k <= self.session:
            return
        self.announced.add(k)
        self.cc_targets.clear()
        self._fullnode(UpcomingValidators(k, self._set_for(k), t), t)

    # ---- users ------------------------------------------------------------------------------------
    def _arrival(self, t: int) -> None:
        c, rng = self.config, self.rng
        i = self.arrived
        self.arrived += 1
        mid = hex_id(c.seed, "message", i)
        roll = rng.random()
        if roll < c.p_uid_duplicate and self.bodies:
            uid = self.bodies[int(rng.random() * len(self.bodies))]
            self.counters["uid_duplicates"] += 1
        else:
            uid = hex_id(c.seed, "body", i)
            self.bodies.append(uid)
            if len(self.bodies) > 64:
                self.bodies.pop(0)
        roll = rng.random()
        error, has_body = None, True
        if roll < c.p_invalid:
            error = INVALID_ERRORS[int(rng.random() * len(INVALID_ERRORS))]
            has_body = error is not None
            self.fates[mid] = ("invalid",)
        elif roll < c.p_invalid + c.p_bad:
            self.fates[mid] = ("bad",)
        elif roll < c.p_invalid + c.p_bad + c.p_flaky:
            self.fates[mid] = ("flaky", 1 + int(rng.random() * 2))
        else:
            self.fates[mid] = ("good",)
        self._fullnode(Submit(mid, t, uid, error, has_body), t)
        if c.p_resubmit and rng.random() < c.p_resubmit:
            self._push(t + 500 + int(rng.random() * 2500), _RESUBMIT, mid, uid)
            self.counters["resubmissions"] += 1
        self.last_arrival = t
        if self.arrived < c.messages:
            self._push(t + 1 + int(rng.expovariate(c.rate) * 1000), _ARRIVAL)
        else:
            self.end_time = t + int(c.tail_sessions * self.lifetime_ms)

    # ---- collation and the chain -----------------------------------------------------------------
    def _round(self, t: int) -> None:
        c, rng = self.config, self.rng
        self._push(t + c.block_interval_ms, _ROUND)
        members = [v for v in self._set_for(self.session) if v in self.live_set]
        if not members:
            return
        r = self.round_no
        self.round_no += 1
        collators = [members[r % len(members)]]
        if len(members) > 1 and rng.random() < c.p_compete:
            collators.append(members[(r + 1) % len(members)])
        self.round_cands[r] = []
        self._current_round = r
        for v in collators:
            self._deliver(v, CollationRound(t, c.max_block_messages), t)
        self._push(t + c.consensus_ms, _CONSENSUS, r)
        self.inflight_until = t + c.consensus_ms + c.chain_ms

    def _collate(self, v: str, hand: HandToCollator, t: int) -> None:
        """The collator of validator ``v`` builds a candidate from the messages it was handed."""
        c, rng = self.config, self.rng
        seqno = self.chain_seqno + 1
        r = self._current_round
        block = BlockRef(0, SHARD, seqno, hex_id(c.seed, "block", r, v), hex_id(c.seed, "file", r, v))
        results = []
        accepted = []
        at = t + c.collate_ms
        for mid in hand.msg_ids:
            fate = self.fates.get(mid, ("good",))
            if fate[0] == "bad":
                results.append(CollatorResult(mid, REJECTED, at, error=COLLATOR_ERROR))
                continue
            if fate[0] == "flaky" and self.attempts[mid] < fate[1]:
                self.attempts[mid] += 1
                results.append(CollatorResult(mid, REJECTED, at, error=FLAKY_ERROR))
                continue
            if len(accepted) >= c.max_block_messages or rng.random() < c.p_collator_ignore:
                results.append(CollatorResult(mid, IGNORED, at))
                continue
            accepted.append(mid)
            results.append(CollatorResult(mid, ACCEPTED, at, block=block))
        self.round_cands[r].append((v, block, tuple(accepted)))
        if results:
            self._push(at, _V_SEQ, v, tuple(results))

    def _consensus(self, r: int, t: int) -> None:
        c, rng = self.config, self.rng
        cands = self.round_cands.pop(r, [])
        if not cands:
            return
        at = t + c.chain_ms
        roll = rng.random()
        if roll < c.p_shard_reject:
            v, block, ids = cands[0]
            self._push(at, _CHAIN, ShardBlockRejected(block, ids, at), False)
            for v2, b2, ids2 in cands[1:]:
                self._push(at, _CHAIN, ShardBlockIgnored(b2, ids2, at), False)
            self.counters["shard_rejected"] += 1
            return
        if roll < c.p_shard_reject + c.p_shard_ignore:
            for v2, b2, ids2 in cands:
                self._push(at, _CHAIN, ShardBlockIgnored(b2, ids2, at), False)
            self.counters["shard_ignored"] += 1
            return
        win = int(rng.random() * len(cands))
        v, block, ids = cands[win]
        self.chain_seqno = block.seqno
        self._push(at, _CHAIN, ShardBlockAccepted(block, ids, v, at), True)
        for j, (v2, b2, ids2) in enumerate(cands):
            if j != win:
                self._push(at, _CHAIN, ShardBlockIgnored(b2, ids2, at, superseded=True), False)
                self.counters["superseded"] += 1
        lo, hi = c.mc_delay_ms
        self._push(at + lo + int(rng.random() * (hi - lo)), _MC, block, ids)

    def _masterchain(self, block: BlockRef, ids: tuple, t: int) -> None:
        c = self.config
        if self.rng.random() < c.p_mc_ignore:
            self.counters["mc_ignored"] += 1
            self._push(t, _CHAIN, MasterchainIgnore(block, ids, t), True)
            return
        self.mc_seqno += 1
        mc = BlockRef(-1, MASTER_SHARD, self.mc_seqno, hex_id(c.seed, "mc", self.mc_seqno), hex_id(c.seed, "mcfile", self.mc_seqno))
        self._push(t, _CHAIN, MasterchainCommit(block, ids, mc, t), True)


def _config(seed, profile, messages, rate, validators, faulty, lifetime_s, options) -> SimConfig:
    net = options.pop("network", None)
    cfg = SimConfig(seed=seed, profile=profile, messages=messages, rate=rate, validators=validators,
                    faulty=faulty, lifetime_s=lifetime_s, **options)
    if net is not None:
        cfg = replace(cfg, network=net if isinstance(net, NetworkConfig) else NetworkConfig(**net))
    return cfg


def simulate(seed: int = 0, profile: str = "spec", messages: int = 1000, rate: float = 50.0,
             validators: int = 7, faulty: Optional[int] = None, lifetime_s: Optional[float] = None,
             **options) -> Iterator[dict]:
    """Receipt dicts (the JSON form of the profile) of one simulated run, in log order.
    ``options``: any other :class:`SimConfig` field."""
    return Simulation(_config(seed, profile, messages, rate, validators, faulty, lifetime_s, options)).receipts()


def simulate_timed(seed: int = 0, profile: str = "spec", messages: int = 1000, rate: float = 50.0,
                   validators: int = 7, faulty: Optional[int] = None, lifetime_s: Optional[float] = None,
                   **options) -> Iterator[tuple]:
    """Like :func:`simulate`, as ``(kafka_time_ms, receipt)`` pairs (the time the full node wrote it)."""
    return Simulation(_config(seed, profile, messages, rate, validators, faulty, lifetime_s, options)).timed()
