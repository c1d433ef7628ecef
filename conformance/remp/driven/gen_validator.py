"""Generated scenarios for the validator role: one validator (``v1``) among peers whose catchain
records, blocks and hand-overs the generator plays.

Weighted toward the hard parts of the documents, each a rule of its own so Hypothesis reaches it
often: session switches with pending messages (and the validator leaving or joining the set), replays
across a switch, time passing just past the ever-node pacing bound,
replays of messages already in an accepted or committed block, expiry edges (a message two
sessions old while its block is still pending), ignored-then-recollated blocks, rejections by 2/3
of the validators, faulty peers (records about messages and blocks nobody else saw), duplicate
catchain deliveries, records from an older session's catchain.
"""

from __future__ import annotations

from rmkit.conformance.remp.driven.draws import precondition, rule, st

from rmkit.conformance.remp.driven.machine import DrivenMachine
from rmkit.conformance.remp.driven.names import OWN_VALIDATOR, block, msg_id
from rmkit.protocols.remp.model import model_for

MESSAGES = [f"m{i}" for i in range(1, 5)]
COLLATOR_ERROR = "rejected by collator"
PEER_ERROR = "rejected by peer's collator"

msgs = st.sampled_from(MESSAGES)


def _has_peers(world) -> bool:
    """A step that needs another validator of the set (a set of one has none)."""
    return bool(world.peers)


def _digest(m: str, accepted: bool, root, session: int) -> dict:
    """A hand-over digest: a processed message ("accepted", in the block ``root``) or a finally
    rejected one ("rejected", no block)."""
    return {"msg_id": msg_id(m), "status": "accepted" if accepted else "rejected",
            "block_root": root if accepted else None, "origin_session": session}


class ValidatorWorld(DrivenMachine):
    def __init__(self):
        super().__init__()
        self.vals = list(self.params["validators"])
        self.peers = [v for v in self.vals if v != OWN_VALIDATOR]
        self.lifetime = self.params["lifetime_ms"]
        self.session = 0
        self.members = list(self.vals)
        self.time = 1_000
        self.blocks: dict[int, dict] = {}  # n -> {msgs, by, st}
        self.handed: list = []
        self.delivered: list = []  # catchain records delivered so far (for duplicates)
        self.seen: set = set()  # message names that reached v1 somehow
        model = model_for(self.profile)
        self.n_reject = model.threshold("stop_collation_rejected", len(self.vals))
        self.final_kinds = frozenset(k for k, ki in model.kinds.items() if ki.final)
        self.names = {msg_id(m): m for m in MESSAGES}
        self.last_kind: dict = {}  # message name -> v1's latest receipt kind
        self.send({"type": "SessionSwitch", "seqno": 0, "start_time": 0, "validators": self.members})

    # ---- helpers ------------------------------------------------------------------------------
    def send(self, event: dict) -> list:
        out = super().send(event)
        for o in out:
            if o["type"] == "Receipt":
                self.last_kind[self.names.get(o["receipt"]["msg_id"], "")] = o["receipt"]["kind"]
        return out

    def tick(self, dt: int = 100) -> int:
        self.time += dt
        return self.time

    def _record(self, sender, m, kind, session=None, origin=None, blk=None, error=None, uid=None):
        rec = {"type": "CatchainRecord", "sender": sender, "msg_id": msg_id(m), "session": self.session if session is None else session,
               "kind": kind, "time": self.tick(), "uid": uid, "origin_session": origin, "block": blk, "error": error,
               "status": None}
        self.delivered.append(rec)
        self.seen.add(m)
        return self.send(rec)

    def _new_block(self, names, by) -> int:
        n = len(self.blocks) + 1
        self.blocks[n] = {"msgs": list(names), "by": by, "st": "candidate"}
        return n

    def before_step(self) -> None:
        """The states the blocks are in, once per step (every precondition asks)."""
        self._states = {b["st"] for b in self.blocks.values()}

    def _has(self, *states) -> bool:
        """Some block is in one of ``states`` (as of the step's start: only preconditions ask)."""
        return not self._states.isdisjoint(states)

    def _blocks_in(self, *states) -> list:
        return [n for n, b in self.blocks.items() if b["st"] in states]

    def _pick(self, i: int, *states) -> int:
        """The drawn block among those in ``states`` (the rule's precondition says there is one)."""
        c = self._blocks_in(*states)
        return c[i % len(c)]

    def _block_event(self, typ, n, **extra) -> list:
        b = self.blocks[n]
        ev = {"type": typ, "block": block(n), "msg_ids": [msg_id(m) for m in b["msgs"]], "time": self.tick(), **extra}
        return self.send(ev)

    # ---- messages arriving --------------------------------------------------------------------
    @rule(m=msgs, uid=st.sampled_from([None, None, "u1", "u2"]), body=st.sampled_from([True, True, True, False]))
    def from_full_node(self, m, uid, body):
        self.seen.add(m)
        self.send({"type": "MessageFromFullNode", "msg_id": msg_id(m), "time": self.tick(), "uid": uid, "has_body": body})

    @precondition(_has_peers)
    @rule(m=msgs, sender=st.integers(0, 10))
    def catchain_new(self, m, sender):
        self._record(self.peers[sender % len(self.peers)], m, "new", origin=self.session)

    @precondition(lambda self: self.delivered)
    @rule(i=st.integers(0, 1000))
    def catchain_duplicate(self, i):
        rec = dict(self.delivered[i % len(self.delivered)], time=self.tick())
        self.send(rec)

    @precondition(_has_peers)
    @precondition(lambda self: self.session > 0)
    @rule(m=msgs, sender=st.integers(0, 10))
    def older_session_record(self, m, sender):
        self._record(self.peers[sender % len(self.peers)], m, "new", session=self.session - 1, origin=self.session - 1)

    # ---- collation ----------------------------------------------------------------------------
    @precondition(lambda self: not self.handed)
    @rule(k=st.sampled_from([1, 2, 10]))
    def collation_round(self, k):
        out = self.send({"type": "CollationRound", "time": self.tick(), "max_messages": k})
        names = {msg_id(m): m for m in MESSAGES}
        for o in out:
            if o["type"] == "HandToCollator":
                self.handed = [names.get(x, x) for x in o["msg_ids"]]

    @precondition(lambda self: self.handed)
    @rule(results=st.lists(st.sampled_from(["accepted", "accepted", "rejected", "ignored"]), min_size=5, max_size=5))
    def collator_answers(self, results):
        handed, self.handed = self.handed, []
        accepted = [m for m, r in zip(handed, results) if r == "accepted"]
        n = self._new_block(accepted, OWN_VALIDATOR) if accepted else None
        for m, r in zip(handed, results):
            self.send({"type": "CollatorResult", "msg_id": msg_id(m), "result": r, "time": self.tick(),
                       "block": block(n) if r == "accepted" else None, "error": COLLATOR_ERROR if r == "rejected" else None})

    @precondition(_has_peers)
    @rule(m=msgs, sender=st.integers(0, 10))
    def peer_accepts(self, m, sender):
        """A peer's collator put the message into its candidate (an accept record)."""
        by = self.peers[sender % len(self.peers)]
        n = self._new_block([m], by)
        self._record(by, m, "accept", blk=block(n))

    @precondition(_has_peers)
    @rule(m=msgs, sender=st.integers(0, 10))
    def peer_rejects(self, m, sender):
        self._record(self.peers[sender % len(self.peers)], m, "reject", error=PEER_ERROR)

    @precondition(_has_peers)
    @rule(m=msgs)
    def two_thirds_reject(self, m):
        """Enough peers reject the message to stop its collation (ceil(2N/3))."""
        for p in self.peers[: self.n_reject]:
            self._record(p, m, "reject", error=PEER_ERROR)

    # ---- blocks -------------------------------------------------------------------------------
    @precondition(lambda self: self._has("candidate"))
    @rule(i=st.integers(0, 100))
    def shard_accept(self, i):
        c = self._blocks_in("candidate")
        n = c[i % len(c)]
        out = self._block_event("ShardBlockAccepted", n, collated_by=self.blocks[n]["by"])
        self.blocks[n]["st"] = "refused" if any(o["type"] == "BlockRefused" for o in out) else "accepted"
        # the other candidates of the round did not win
        for other in c:
            if other != n and self.blocks[other]["st"] == "candidate" and i % 3 == 0:
                self._block_event("ShardBlockIgnored", other, superseded=True)
                self.blocks[other]["st"] = "ignored"

    @precondition(lambda self: self._has("candidate"))
    @rule(i=st.integers(0, 100), superseded=st.booleans())
    def shard_ignore(self, i, superseded):
        n = self._pick(i, "candidate")
        self._block_event("ShardBlockIgnored", n, superseded=superseded)
        self.blocks[n]["st"] = "ignored"

    @precondition(lambda self: self._has("candidate"))
    @rule(i=st.integers(0, 100))
    def shard_reject(self, i):
        n = self._pick(i, "candidate")
        self._block_event("ShardBlockRejected", n, error="block candidate rejected by validators")
        self.blocks[n]["st"] = "rejected"

    @precondition(lambda self: self._has("accepted"))
    @rule(i=st.integers(0, 100))
    def mc_commit(self, i):
        n = self._pick(i, "accepted")
        self._block_event("MasterchainCommit", n, mc_block=block(n, master=True))
        self.blocks[n]["st"] = "committed"

    @precondition(lambda self: self._has("accepted"))
    @rule(i=st.integers(0, 100))
    def mc_ignore(self, i):
        n = self._pick(i, "accepted")
        self._block_event("MasterchainIgnore", n)
        self.blocks[n]["st"] = "mcignored"

    @precondition(_has_peers)
    @precondition(lambda self: self._has("accepted", "committed"))
    @rule(i=st.integers(0, 100), extra=st.sampled_from([None, None, "m5"]), sender=st.integers(0, 10))
    def replay_block(self, i, extra, sender):
        """A peer's block holds a message already in an accepted or committed block (a replay)."""
        old = self.blocks[self._pick(i, "accepted", "committed")]
        names = [old["msgs"][i % len(old["msgs"])]] + ([extra] if extra and extra not in old["msgs"] else [])
        by = self.peers[sender % len(self.peers)]
        n = self._new_block(names, by)
        out = self._block_event("ShardBlockAccepted", n, collated_by=by)
        self.blocks[n]["st"] = "refused" if any(o["type"] == "BlockRefused" for o in out) else "accepted"

    @precondition(_has_peers)
    @precondition(lambda self: self._has("accepted", "committed"))
    @rule(i=st.integers(0, 100), sender=st.integers(0, 10))
    def replay_after_switch(self, i, sender):
        """The session switches, then a peer of the new session replays a message accepted in the
        previous one: the replay memory must survive the switch."""
        old = self.blocks[self._pick(i, "accepted", "committed")]
        self.session_switch("same", False)
        by = self.peers[sender % len(self.peers)]
        n = self._new_block([old["msgs"][0]], by)
        out = self._block_event("ShardBlockAccepted", n, collated_by=by)
        self.blocks[n]["st"] = "refused" if any(o["type"] == "BlockRefused" for o in out) else "accepted"

    @precondition(lambda self: self._has("ignored", "rejected", "mcignored"))
    @rule(i=st.integers(0, 100))
    def recollate_after_ignore(self, i):
        """After a block was ignored or rejected, the validator collates again (the message must be back)."""
        if not self.handed:
            self.collation_round(10)

    @precondition(_has_peers)
    @precondition(lambda self: any(k in self.final_kinds for k in self.last_kind.values()))
    @rule(i=st.integers(0, 100), sender=st.integers(0, 10), commit=st.booleans())
    def block_after_final(self, i, sender, commit):
        """A message this validator already gave a final status (rejected, timed out) turns up in a
        peer's accepted block: its own final status must stay final."""
        done = sorted(m for m, k in self.last_kind.items() if k in self.final_kinds and m)
        m = done[i % len(done)]
        by = self.peers[sender % len(self.peers)]
        n = self._new_block([m], by)
        if i % 2:
            self._record(by, m, "accept", blk=block(n))
        out = self._block_event("ShardBlockAccepted", n, collated_by=by)
        self.blocks[n]["st"] = "refused" if any(o["type"] == "BlockRefused" for o in out) else "accepted"
        if commit and self.blocks[n]["st"] == "accepted":
            self._block_event("MasterchainCommit", n, mc_block=block(n, master=True))
            self.blocks[n]["st"] = "committed"

    # ---- faulty peers -------------------------------------------------------------------------
    @precondition(_has_peers)
    @rule(m=msgs, sender=st.integers(0, 10), kind=st.sampled_from(["accept", "reject", "digest", "rejected_digest"]))
    def faulty_peer(self, m, sender, kind):
        """A record about a message or block nobody else has seen (a faulty or lagging peer); a
        digest says the message was processed ("accepted", with a block) or finally rejected."""
        by = self.peers[sender % len(self.peers)]
        if kind in ("digest", "rejected_digest"):
            self.send({"type": "ForwardedDigests", "sender": by, "session": self.session,
                       "digests": [_digest(m, kind == "digest", block(900 + sender)["root_hash"], self.session)],
                       "time": self.tick()})
        else:
            self._record(by, m, kind, blk=block(900 + sender) if kind == "accept" else None,
                         error=PEER_ERROR if kind == "reject" else None)

    # ---- sessions -----------------------------------------------------------------------------
    @rule(change=st.sampled_from(["same", "same", "rotate", "leave", "join"]), forward=st.sampled_from([False, True, "rejected"]))
    def session_switch(self, change, forward):
        """The next master session starts (N -> N+1): hand-over, and expiry of N-1's messages (N+2 rule)."""
        prev = self.session
        self.session += 1
        if change == "rotate" and self.peers:
            self.members = [v for v in self.vals if v != self.peers[self.session % len(self.peers)]]
        elif change == "leave" and self.peers:
            self.members = list(self.peers)
        else:
            self.members = list(self.vals)
        self.time = max(self.time + 100, self.session * self.lifetime)
        self.send({"type": "SessionSwitch", "seqno": self.session, "start_time": self.time, "validators": list(self.members)})
        if forward and OWN_VALIDATOR in self.members and self.peers:
            # a peer of the previous session hands over what it had: one message it knows, pending
            # (whole) or, drawn so, finally rejected (a "rejected" digest), and the processed ones
            peer = self.peers[self.session % len(self.peers)]
            done = [(n, b) for n, b in self.blocks.items() if b["st"] in ("accepted", "committed")]
            processed = done[-1][1]["msgs"] if done else []
            first = [m for m in MESSAGES if m in self.seen][:1]
            if forward != "rejected":
                for m in first:
                    self._record(peer, m, "forward", origin=prev)
            digests = [_digest(m, True, block(done[-1][0])["root_hash"], prev) for m in processed]
            if forward == "rejected":
                digests += [_digest(m, False, None, prev) for m in first if m not in processed]
            if digests:
                self.send({"type": "ForwardedDigests", "sender": peer, "session": prev, "time": self.tick(), "digests": digests})

    @rule()
    def short_session_switch(self):
        """The next master session starts long before mc_catchain_lifetime is over (a key block):
        001's exception lets a message outlive N+2 then."""
        self.session += 1
        self.time += 100
        self.send({"type": "SessionSwitch", "seqno": self.session, "start_time": self.time, "validators": list(self.members)})

    @rule(dt=st.sampled_from([1, 100, 2_000, 5_100, 30_000]))
    def time_passes(self, dt):
        self.send({"type": "Tick", "time": self.tick(dt)})

    @precondition(lambda self: self._has("candidate", "accepted"))
    @rule(i=st.integers(0, 100))
    def expiry_edge(self, i):
        """Two switches while a block holding the message is pending: the message turns obsolete
        with its fate still open, then the block is decided."""
        self.session_switch("same", False)
        self.session_switch("same", False)
        n = self._pick(i, "candidate", "accepted")
        if self.blocks[n]["st"] == "candidate":
            self.shard_ignore(i, False) if i % 2 else self.shard_accept(i)
        elif i % 2:
            self.mc_commit(i)
        else:
            self.mc_ignore(i)
