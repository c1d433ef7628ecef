"""The full node as REMP client: takes user messages, fans them out, relays receipts.

Why a machine of its own: the full node is the one place where a message's story starts (its
pre-evaluation verdict, SentToValidators) and, in the documents' profile, where it ends (Finalized
is issued once, by the full node, when the masterchain commits a block holding the message). It is
also the receipt log's writer: every receipt a validator sends is relayed as a :class:`Publish`.

Covered:

- pre-evaluation: a message that cannot be deserialized or fails against the shard state gets
  RejectedByFullnode (final; it is never sent to validators);
- fan-out to ``fanout`` validators of the current set (default floor(N/3)+1, document 001: "If at
  least 1/3 + 1 of validators receive the message ... at least one good validator processes it"),
  and as many of the next set while a session switch is announced (000: "to each validator in the
  current shard and to each validator in the next shard (in case of session switching)");
  SentToValidators reports ``sent_to`` / ``total_validators`` where the profile's table has it;
- resending: while at most a third of the addressed validators have answered, one more validator
  every ``retry_interval_ms`` (remp-as-built section 3: "then every 2 s to another while at most a
  third of validators have answered");
- a resubmission of a message still in processing: ignored in the documents' profile, rejected
  with RejectedByFullnode in ever-node (remp-as-built section 3);
- Finalized from the full node when the profile's Finalized issuer is the full node only;
- expiry: a message is forgotten once its session is obsolete under the profile's session rule
  (N+2 in the documents), ``forget_grace_ms`` later and only when no accepted shard block holding it
  still waits for the masterchain.

Like the validator, the state is a mutable object; :func:`step` returns it with the outputs.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass
from typing import Optional

from rmkit.protocols.remp.model import FULLNODE, VALIDATOR

from rmkit.protocols.remp.events import (MasterchainCommit, MasterchainIgnore, Publish, Receipt,
                                         ReceiptsFromValidator, SendToValidator, SessionSwitch,
                                         ShardBlockAccepted, ShardBlockIgnored, ShardBlockRejected, Submit,
                                         Tick, UpcomingValidators)
from .lifetime import expiry_rule
from .profile import Traits, traits

UNDESERIALIZABLE_ERROR = "Can't deserialize message"  # document 000's example error
IN_PROCESSING_ERROR = "message {mid} is already in processing"  # remp-as-built section 3


@dataclass(frozen=True)
class FullNodeConfig:
    """``fanout``: validators addressed per set at once (None: floor(N/3)+1); ``retry_interval_ms``:
    pause between extra sends; ``forget_grace_ms``: how long after its session became obsolete a
    message is still remembered (late masterchain news); ``lifetime_ms``: mc_catchain_lifetime."""

    profile: str = "spec"
    fanout: Optional[int] = None
    retry_interval_ms: int = 2000
    forget_grace_ms: int = 60_000
    lifetime_ms: Optional[int] = None


class _FnMsg:
    __slots__ = ("id", "uid", "session", "final", "targets", "answered", "last_send", "awaiting", "total")

    def __init__(self, mid: str, uid, session: int):
        self.id = mid
        self.uid = uid
        self.session = session
        self.final = False
        self.targets: dict = {}  # validator -> None, in send order
        self.answered: dict = {}  # validators that sent a receipt
        self.last_send = 0
        self.awaiting: Optional[str] = None  # accepted shard block waiting for the masterchain
        self.total = 0


def rotation(msg_id: str, validators: tuple) -> list:
    """The order in which a message's validators are tried: the set rotated by the message id
    (deterministic, spreads messages over validators without randomness)."""
    n = len(validators)
    if n == 0:
        return []
    start = int(msg_id[:8], 16) % n
    return [validators[(start + i) % n] for i in range(n)]


class FullNode:
    """The REMP client state of one full node."""

    def __init__(self, node_id: str, config: FullNodeConfig = FullNodeConfig(),
                 profile_traits: Optional[Traits] = None):
        self.id = node_id
        self.config = config
        t = self.traits = profile_traits or traits(config.profile)
        lifetime = config.lifetime_ms if config.lifetime_ms is not None else int(t.model.default_lifetime_s * 1000)
        self.window = expiry_rule(t.profile, lifetime)
        self.session = 0
        self.validators: tuple = ()
        self.upcoming: Optional[tuple] = None  # (seqno, validators)
        self.msgs: dict[str, _FnMsg] = {}
        self.buckets: dict[int, list] = {}
        self.watch: dict[str, None] = {}  # messages that may need one more send
        self.expiring: deque = deque()  # (deadline, msg_id)
        self.suppressed: Counter = Counter()
        self._ft = t.fullnode_transitions
        self._pos: dict[str, str] = {}  # msg_id -> this node's position (transitions.yaml, fullnode)
        self._finalizes = not t.validator_finalizes
        # msg_id -> validators to send it to at this step, instead of the machine's own pick: set by
        # the conformance judge to follow the legal choice of an implementation under test
        self.choose: Optional[dict] = None
        self._handlers = {
            Submit: self._on_submit,
            ReceiptsFromValidator: self._on_receipts,
            ShardBlockAccepted: self._on_accepted,
            ShardBlockIgnored: self._on_candidate_fate,
            ShardBlockRejected: self._on_candidate_fate,
            MasterchainCommit: self._on_commit,
            MasterchainIgnore: self._on_mc_ignore,
            SessionSwitch: self._on_switch,
            UpcomingValidators: self._on_upcoming,
            Tick: self._on_tick,
        }

    def step(self, event) -> list:
        handler = self._handlers.get(type(event))
        if handler is None:
            raise TypeError(f"a full node does not take {type(event).__name__} events")
        return handler(event)

    # ---- receipts -------------------------------------------------------------------------------
    def _emit(self, out: list, mid: str, kind: str, time: int, **fields) -> bool:
        if not self.traits.emits(kind):
            self.suppressed[kind] += 1
            return False
        to, allowed = self._ft[kind]
        pos = self._pos.get(mid, "none")
        if pos not in allowed:
            self.suppressed[kind] += 1
            return False
        self._pos[mid] = to
        out.append(Publish(Receipt(kind, mid, self.id, time, **fields), FULLNODE, time))
        return True

    # ---- submission -----------------------------------------------------------------------------
    def sets(self) -> tuple:
        """The validator sets a new message goes to now: the current one, and the announced next one."""
        return self._sets()

    def _fanout_for(self, n: int) -> int:
        """How many validators of a set of ``n`` a new message goes to: the configured fan-out, or
        the profile's floor (protocol.yaml fanout_min: floor(N/3)+1 in the documents' profile)."""
        return self.config.fanout if self.config.fanout is not None else self.traits.model.threshold("fanout_min", n)

    def _sets(self) -> tuple:
        sets = [self.validators]
        if self.upcoming is not None and self.upcoming[0] > self.session:
            sets.append(self.upcoming[1])
        return tuple(sets)

    def _on_submit(self, ev: Submit) -> list:
        out: list = []
        mid = ev.msg_id
        known = self.msgs.get(mid)
        if known is not None:
            if not known.final and self.traits.reject_resubmission:
                self._emit(out, mid, "RejectedByFullnode", ev.time, error=IN_PROCESSING_ERROR.format(mid=mid))
            return out
        m = self._remember(mid, ev.uid)
        error = UNDESERIALIZABLE_ERROR if not ev.has_body else ev.error
        if error is not None:
            m.final = True
            self._emit(out, mid, "RejectedByFullnode", ev.time, error=error)
            return out
        union: dict = {}
        chosen = self.choose.get(mid) if self.choose else None
        if chosen is not None:
            for v in chosen:
                if v not in m.targets:
                    m.targets[v] = None
                    out.append(SendToValidator(v, mid, ev.uid, ev.time))
        for vs in self._sets():
            for v in vs:
                union[v] = None
            if chosen is not None:
                continue
            k = max(1, min(self._fanout_for(len(vs)), len(vs)))
            picked = 0
            for v in rotation(mid, vs):
                if picked >= k:
                    break
                if v not in m.targets:
                    m.targets[v] = None
                    out.append(SendToValidator(v, mid, ev.uid, ev.time))
                picked += 1
        m.total = len(union)
        m.last_send = ev.time
        if len(m.targets) < m.total:
            self.watch[mid] = None
        self._emit(out, mid, "SentToValidators", ev.time, sent_to=len(m.targets), total_validators=m.total)
        return out

    def _remember(self, mid: str, uid) -> _FnMsg:
        m = self.msgs[mid] = _FnMsg(mid, uid, self.session)
        b = self.buckets.get(self.session)
        if b is None:
            b = self.buckets[self.session] = []
        b.append(mid)
        return m

    # ---- relaying and chain news ----------------------------------------------------------------
    def _on_receipts(self, ev: ReceiptsFromValidator) -> list:
        out = []
        msgs = self.msgs
        t = ev.time
        for r in ev.receipts:
            out.append(Publish(r, VALIDATOR, t))
            m = msgs.get(r.msg_id)
            if m is not None:
                m.answered[r.source_id] = None
                if r.kind == "Finalized":
                    m.final = True
        return out

    def _on_accepted(self, ev: ShardBlockAccepted) -> list:
        root = ev.block.root_hash
        for mid in ev.msg_ids:
            m = self.msgs.get(mid)
            if m is not None and not m.final:
                m.awaiting = root
        return []

    def _on_candidate_fate(self, ev) -> list:
        """A candidate that did not become a shard block (ignored or rejected by the shard's
        validators). The full node has nothing to say (no full-node kind reports a candidate's
        fate; each validator that collated it does) and nothing to change: the message stays
        open, as another validator may still collate it (000: "RejectedByCollator ... will not be
        tried again by this particular validator"), and its outcome comes from the masterchain or
        from the validators' receipts."""
        return []

    def _on_commit(self, ev: MasterchainCommit) -> list:
        out: list = []
        for mid in ev.msg_ids:
            m = self.msgs.get(mid)
            if m is None or m.final:
                continue
            if self._finalizes:
                self._emit(out, mid, "Finalized", ev.time, block=ev.block, mc_block=ev.mc_block)
            m.final = True
            m.awaiting = None
        return out

    def _on_mc_ignore(self, ev: MasterchainIgnore) -> list:
        root = ev.block.root_hash
        for mid in ev.msg_ids:
            m = self.msgs.get(mid)
            if m is not None and m.awaiting == root:
                m.awaiting = None
        return []

    # ---- sessions and timers --------------------------------------------------------------------
    def _on_upcoming(self, ev: UpcomingValidators) -> list:
        self.upcoming = (ev.seqno, tuple(ev.validators))
        return []

    def _on_switch(self, ev: SessionSwitch) -> list:
        if ev.seqno <= self.session and self.validators:
            self.window.start(ev.seqno, ev.start_time)
            return []
        self.window.start(ev.seqno, ev.start_time)
        self.session = ev.seqno
        self.validators = tuple(ev.validators)
        if self.upcoming is not None and self.upcoming[0] <= ev.seqno:
            self.upcoming = None
        bound = self.window.lower_bound
        if bound is not None:
            deadline = ev.start_time + self.config.forget_grace_ms
            for s in sorted(s for s in self.buckets if s < bound):
                for mid in self.buckets.pop(s):
                    self.expiring.append((deadline, mid))
        return []

    def resend_due(self, mid: str, now: int):
        """Whether message ``mid`` must go to one more validator at ``now`` (the retry interval has
        passed since its last send, at most a third answered, and a validator is left), for the judge."""
        m = self.msgs.get(mid)
        if m is None or mid not in self.watch or m.final or 3 * len(m.answered) > m.total:
            return False
        if now - m.last_send < self.config.retry_interval_ms:
            return False
        return any(v not in m.targets for vs in self._sets() for v in vs)

    def _on_tick(self, ev: Tick) -> list:
        out: list = []
        now = ev.time
        exp = self.expiring
        while exp and exp[0][0] <= now:
            deadline, mid = exp.popleft()
            m = self.msgs.get(mid)
            if m is None:
                continue
            if m.awaiting is not None and not m.final:
                exp.append((now + self.config.forget_grace_ms, mid))
                continue
            del self.msgs[mid]
            self._pos.pop(mid, None)
            self.watch.pop(mid, None)
        if self.choose:
            for mid, chosen in self.choose.items():
                m = self.msgs.get(mid)
                if m is None or m.final:  # a final message is never sent on (a choice the judge refuses)
                    continue
                for v in chosen:
                    if v not in m.targets:
                        m.targets[v] = None
                        m.last_send = now
                        out.append(SendToValidator(v, mid, m.uid, now))
        if self.watch:
            interval = self.config.retry_interval_ms
            for mid in list(self.watch):
                m = self.msgs.get(mid)
                if m is None or m.final or 3 * len(m.answered) > m.total:
                    del self.watch[mid]
                    continue
                if now - m.last_send < interval:
                    continue
                nxt = None
                for vs in self._sets():
                    for v in rotation(mid, vs):
                        if v not in m.targets:
                            nxt = v
                            break
                    if nxt is not None:
                        break
                if nxt is None:
                    del self.watch[mid]
                    continue
                m.targets[nxt] = None
                m.last_send = now
                out.append(SendToValidator(nxt, mid, m.uid, now))
        return out


def step(state: FullNode, event) -> tuple[FullNode, list]:
    """``step(state, event) -> (state, outputs)``; the state object is updated in place."""
    return state, state.step(event)
