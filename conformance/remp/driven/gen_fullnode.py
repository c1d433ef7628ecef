"""Generated scenarios for the full-node role: users submit messages, validators answer with
receipts, blocks reach the shardchain and the masterchain, sessions switch.

Weighted toward: resubmissions of a message still in processing and of one already finalized
(replays), messages failing pre-evaluation or without a body, too few answers (resends every
retry interval), finalization through an accepted block and its masterchain commit, a second
block claiming an already finalized message, switches announced ahead (sending to both sets) and
the forgetting of obsolete messages (expiry edges), a next set announced while messages arrive.
"""

from __future__ import annotations

from rmkit.conformance.remp.driven.draws import precondition, rule, st

from rmkit.conformance.remp.driven.machine import DrivenMachine
from rmkit.conformance.remp.driven.names import block, msg_id
from rmkit.protocols.remp.model import VALIDATOR, model_for

MESSAGES = [f"m{i}" for i in range(1, 6)]
msgs = st.sampled_from(MESSAGES)


class FullNodeWorld(DrivenMachine):
    def __init__(self):
        super().__init__()
        self.vals = list(self.params["validators"])
        self.lifetime = self.params["lifetime_ms"]
        self.session = 0
        self.members = list(self.vals)
        self.time = 1_000
        self.sent: dict = {}  # message name -> validators it was sent to
        self.blocks: dict[int, dict] = {}
        self.upcoming = None  # the next set, announced and not switched to yet
        m = model_for(self.profile)
        self.v_kinds = sorted(k for k, ki in m.kinds.items() if VALIDATOR in ki.issuers and ki.in_table)
        self.send({"type": "SessionSwitch", "seqno": 0, "start_time": 0, "validators": self.members})

    def tick(self, dt: int = 100) -> int:
        self.time += dt
        return self.time

    def _collect(self, out: list) -> None:
        names = {msg_id(m): m for m in MESSAGES}
        for o in out:
            if o["type"] == "SendToValidator":
                self.sent.setdefault(names.get(o["msg_id"], o["msg_id"]), []).append(o["validator"])

    @rule(m=msgs, verdict=st.sampled_from(["ok", "ok", "ok", "error", "no-body"]), uid=st.sampled_from([None, "u1"]))
    def submit(self, m, verdict, uid):
        ev = {"type": "Submit", "msg_id": msg_id(m), "time": self.tick(), "uid": uid,
              "error": "Message rejected by pre-evaluation" if verdict == "error" else None, "has_body": verdict != "no-body"}
        self._collect(self.send(ev))

    @precondition(lambda self: self.sent)
    @rule(i=st.integers(0, 100))
    def resubmit(self, i):
        """The user sends a message again: still in processing, or already finalized (a replay)."""
        m = sorted(self.sent)[i % len(self.sent)]
        self._collect(self.send({"type": "Submit", "msg_id": msg_id(m), "time": self.tick(), "uid": None, "error": None,
                                 "has_body": True}))

    @precondition(lambda self: self.sent)
    @rule(i=st.integers(0, 100), kinds=st.lists(st.integers(0, 1000), min_size=1, max_size=3), stranger=st.booleans())
    def validator_receipts(self, i, kinds, stranger):
        """A validator's receipts arrive (any kinds of the profile's table, in any order)."""
        m = sorted(self.sent)[i % len(self.sent)]
        v = self.vals[i % len(self.vals)] if stranger else self.sent[m][i % len(self.sent[m])]
        n = max(self.blocks, default=1)
        rs = []
        for k in kinds:
            kind = self.v_kinds[k % len(self.v_kinds)]
            rs.append({"kind": kind, "msg_id": msg_id(m), "source_id": v, "time": self.tick(1), "block": block(n),
                       "mc_block": block(n, master=True) if kind == "Finalized" else None, "error": None,
                       "sent_to": None, "total_validators": None})
        self.send({"type": "ReceiptsFromValidator", "receipts": rs, "time": self.tick()})

    @precondition(lambda self: self.sent)
    @rule(names=st.lists(msgs, min_size=1, max_size=3, unique=True))
    def shard_block(self, names):
        n = len(self.blocks) + 1
        self.blocks[n] = {"msgs": names, "st": "accepted"}
        self.send({"type": "ShardBlockAccepted", "block": block(n), "msg_ids": [msg_id(x) for x in names],
                   "collated_by": self.vals[n % len(self.vals)], "time": self.tick()})

    @precondition(lambda self: any(b["st"] == "accepted" for b in self.blocks.values()))
    @rule(i=st.integers(0, 100), commit=st.sampled_from([True, True, False]))
    def masterchain(self, i, commit):
        c = [n for n, b in self.blocks.items() if b["st"] == "accepted"]
        n = c[i % len(c)]
        b = self.blocks[n]
        ev = {"type": "MasterchainCommit" if commit else "MasterchainIgnore", "block": block(n),
              "msg_ids": [msg_id(x) for x in b["msgs"]], "time": self.tick()}
        if commit:
            ev["mc_block"] = block(n, master=True)
        b["st"] = "committed" if commit else "mcignored"
        self.send(ev)

    @precondition(lambda self: any(b["st"] == "committed" for b in self.blocks.values()))
    @rule(i=st.integers(0, 100))
    def replay_commit(self, i):
        """Another block holding an already finalized message is accepted and committed."""
        c = [n for n, b in self.blocks.items() if b["st"] == "committed"]
        old = self.blocks[c[i % len(c)]]
        n = len(self.blocks) + 1
        self.blocks[n] = {"msgs": [old["msgs"][0]], "st": "committed"}
        ids = [msg_id(old["msgs"][0])]
        self.send({"type": "ShardBlockAccepted", "block": block(n), "msg_ids": ids, "collated_by": self.vals[0], "time": self.tick()})
        self.send({"type": "MasterchainCommit", "block": block(n), "msg_ids": ids, "mc_block": block(n, master=True),
                   "time": self.tick()})

    @precondition(lambda self: self.upcoming is None)
    @rule(change=st.sampled_from(["rotate", "new", "same"]))
    def announce_next(self, change):
        """The next set is announced ahead of the switch: new messages must reach it too (000)."""
        n = len(self.vals)
        nxt = {"same": list(self.vals), "rotate": self.vals[1:] + [f"v{n + 1 + self.session}"],
               "new": [f"w{self.session + 1}_{i}" for i in range(1, n + 1)]}[change]
        self.upcoming = nxt
        self.send({"type": "UpcomingValidators", "seqno": self.session + 1, "validators": nxt, "time": self.tick()})

    @rule(change=st.sampled_from(["same", "rotate"]), announce=st.booleans())
    def session_switch(self, change, announce):
        nxt = list(self.vals) if change == "same" else self.vals[1:] + [f"v{len(self.vals) + 1 + self.session}"]
        if self.upcoming is not None:
            nxt, self.upcoming = self.upcoming, None
        elif announce:
            self.send({"type": "UpcomingValidators", "seqno": self.session + 1, "validators": nxt, "time": self.tick()})
        self.session += 1
        self.vals = nxt
        self.time = max(self.time + 100, self.session * self.lifetime)
        self.send({"type": "SessionSwitch", "seqno": self.session, "start_time": self.time, "validators": nxt})

    @rule(dt=st.sampled_from([1, 1_999, 2_000, 2_001, 10_000, 60_000]))
    def time_passes(self, dt):
        """Resends fall due every retry interval; forgetting after obsolete + grace (edges drawn)."""
        self._collect(self.send({"type": "Tick", "time": self.tick(dt)}))
