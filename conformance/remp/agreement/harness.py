"""Drive the REMP reference machines with the TLA+ model's steps and read back their statuses.

Why a harness: the model abstracts the environment (network, catchain, blocks, sessions) the
same way for both directions of the agreement check. The harness keeps that environment's
bookkeeping (copies in flight, catchain records posted but not delivered, candidate blocks) and
turns each abstract step -- the ``last`` record of the model, e.g. ``{"a": "Collate", "v": "v1",
"res": {"m1": "acc"}}`` -- into the events the reference validators and full node take. Statuses
are read from the receipts the machines emit (the position each receipt moves its source to, by
the spec's transition table), never from their internals: that is what an implementation shows.

Names: validators and messages are the model's names (``v1``, ``m1``); blocks are numbered from 1
as in the model's ``blocks`` sequence.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Optional

from rmkit.protocols.remp.events import (ACCEPT, ACCEPTED, DIGEST, FORWARD, IGNORED, NEW, REJECT, REJECTED,
                                         BlockRef, BlockRefused, CatchainBroadcast, CatchainRecord,
                                         CollationRound, CollatorResult, Forwarded, ForwardedDigests,
                                         HandToCollator, MasterchainCommit, MasterchainIgnore,
                                         MessageFromFullNode, Publish, Receipt, ReceiptsFromValidator,
                                         SendToValidator, SessionSwitch, ShardBlockAccepted,
                                         ShardBlockIgnored, ShardBlockRejected, Submit, Tick,
                                         UpcomingValidators)
from rmkit.reference_impl.remp.fullnode import FullNode, FullNodeConfig
from rmkit.reference_impl.remp.profile import traits
from rmkit.reference_impl.remp.validator import Validator, ValidatorConfig

FULLNODE_ID = "fullnode"  # the model's FullNode: the source of the full node's receipts on both sides
LIFETIME_MS = 250_000
PRE_EVALUATION_ERROR = "Message rejected by pre-evaluation"
COLLATOR_ERROR = "rejected by collator"
NO_BLOCK = 0
TICK_MS = 700  # time a Tick step moves the clock on (the full node's resend interval is 2 s)
RESULTS = {"acc": ACCEPTED, "rej": REJECTED, "ign": IGNORED}

# What the full node takes at each step of the model (and at a Tick): the event it is stepped
# with, or None where no news of the step reaches it but the receipts the step makes validators
# send (ReceiptsFromValidator, at every step whose validators send one). Each entry says why;
# a test checks that every action of REMPSteps' Next is listed and that each step stepped the
# full node with the event listed.
FULLNODE_TAKES = {
    "Submit": (Submit, "the user's message reaches it first (000: SentToValidators)"),
    "RejectByFullNode": (Submit, "a submission that fails its pre-evaluation (000: RejectedByNode)"),
    "Announce": (UpcomingValidators, "it addresses the next set too once announced (000: 'in case of session switching')"),
    "Lose": (None, "a copy lost in the network: nobody tells it (its Tick resends answer for it)"),
    "Withhold": (None, "a faulty validator keeps a copy: nobody tells it"),
    "Receive": (None, "it hears the validator's PutIntoQueue (relayed receipts)"),
    "DeliverRecord": (None, "the catchain is the validators' own; it hears their receipts"),
    "Collate": (None, "a collation round is the validator's own; it hears the collator's receipts"),
    "ShardAccept": (ShardBlockAccepted, "it follows the shard chain (the block awaits the masterchain)"),
    "ShardIgnore": (ShardBlockIgnored, "a candidate that did not become a block: its messages stay open there"),
    "ShardReject": (ShardBlockRejected, "a candidate the validators rejected: its messages stay open there"),
    "McCommit": (MasterchainCommit, "it issues Finalized in the documents' profile (000)"),
    "McIgnore": (MasterchainIgnore, "the block it awaited will not reach the masterchain"),
    "Switch": (SessionSwitch, "it addresses the new set and forgets obsolete messages (001: N -> N+2)"),
    "Tick": (Tick, "its resend and forgetting timers"),
}


class StepMismatch(Exception):
    """The reference machines cannot take a step the model took (e.g. a validator hands its
    collator other messages than the model's round, or refuses a block the model accepts)."""


@dataclass(frozen=True)
class Scenario:
    """The model's constants for one run: who validates in which session, who is faulty."""

    validators: tuple
    faulty: tuple
    msgs: tuple
    members: tuple  # per session 0..max_session: tuple of validator names
    min_fanout: int

    @property
    def honest(self) -> tuple:
        return tuple(v for v in self.validators if v not in self.faulty)

    @property
    def max_session(self) -> int:
        return len(self.members) - 1

    def honest_members(self, s: int) -> tuple:
        return tuple(v for v in self.honest if v in self.members[s])


SMALL = Scenario(validators=("v1", "v2"), faulty=(), msgs=("m1",), members=(("v1", "v2"),) * 3, min_fanout=1)
DEEP = Scenario(validators=("v1", "v2", "v3", "v4"), faulty=("v4",), msgs=("m1",),
                members=(("v1", "v2", "v3", "v4"),) * 3, min_fanout=2)


# Five validators, four per session with one leaving at each switch, one faulty; two messages.
ROTATING = Scenario(validators=("v1", "v2", "v3", "v4", "v5"), faulty=("v4",), msgs=("m1", "m2"),
                    members=(("v1", "v2", "v3", "v4"), ("v2", "v3", "v4", "v5"), ("v1", "v2", "v3", "v4")),
                    min_fanout=2)
SCENARIOS = {"small": SMALL, "deep": DEEP, "rotating": ROTATING}


def block_ref(b: int) -> BlockRef:
    return BlockRef(0, 0xA000000000000000, b, f"{b:064x}", f"{b:064x}")


def block_number(ref: Optional[BlockRef]) -> int:
    return NO_BLOCK if ref is None else int(ref.root_hash, 16)


@dataclass
class Block:
    by: str
    msgs: tuple
    st: str
    ses: int
    h: int
    shard: bool = False


@dataclass
class Harness:
    """The reference machines of one scenario plus the environment the model abstracts."""

    scenario: Scenario
    profile: str = "spec"
    session: int = 0
    time: int = 1_000
    net: set = field(default_factory=set)
    cc: dict = field(default_factory=dict)  # (abstract record, recipients) -> concrete delivery
    blocks: list = field(default_factory=list)
    pos: dict = field(default_factory=dict)  # (validator, msg) -> position
    fn: dict = field(default_factory=dict)  # msg -> the full node's position
    receipts: int = 0  # receipts the machines sent so far
    resends: int = 0  # copies the full node sent again on a Tick (the model has no resend: lost copies)
    log: list = field(default_factory=list)  # (receipt, role) in the order they were sent
    fn_events: list = field(default_factory=list)  # (the model's action, event type) the full node took
    action: str = "Init"  # the model's action being applied
    announced: bool = False  # the next session's set was announced in this session
    said: list = field(default_factory=list)  # the receipts of the step being applied, abstract (step_receipts)
    sent: int = 0  # catchain records posted and copies sent by the step being applied

    def __post_init__(self):
        # reference message ids are 64 hex digits; the model's names map to them and back
        self.ref_id = {m: hashlib.sha256(m.encode()).hexdigest() for m in self.scenario.msgs}
        self.name = {v: k for k, v in self.ref_id.items()}
        t = traits(self.profile)
        self._vto = {k: to for k, (to, _) in t.validator_transitions.items()}
        self._fto = {k: to for k, (to, _) in t.fullnode_transitions.items()}
        sc = self.scenario
        vconf = ValidatorConfig(profile=self.profile, lifetime_ms=LIFETIME_MS, paced=False)
        self.validators = {v: Validator(v, vconf) for v in sc.honest}
        self.fullnode = FullNode(FULLNODE_ID, FullNodeConfig(profile=self.profile, lifetime_ms=LIFETIME_MS))
        for v in sc.honest:
            for m in sc.msgs:
                self.pos[(v, m)] = "none"
        for m in sc.msgs:
            self.fn[m] = "none"
        switch = SessionSwitch(0, self.time, sc.members[0])
        for machine in (*self.validators.values(), self.fullnode):
            self._absorb(machine.step(switch))

    # ---- statuses -------------------------------------------------------------------------------
    def statuses(self) -> dict:
        """``{"pos": {v: {m: position}}, "fn": {m: position}}`` as the receipts so far say."""
        sc = self.scenario
        return {"pos": {v: {m: self.pos[(v, m)] for m in sc.msgs} for v in sc.honest},
                "fn": dict(self.fn)}

    def step_receipts(self) -> dict:
        """The receipts the last step sent, abstract as the model's Emitted and FnEmitted:
        ``{"rc": [validators' {src, m, k, b}], "fr": [the full node's {src, m, k, b}]}``, sorted.
        Receipts the full node relays for validators are theirs, counted once."""
        return receipts_of(self.said)

    # ---- outputs --------------------------------------------------------------------------------
    def _absorb(self, outputs: list) -> list:
        """Apply receipts to the statuses and post catchain records; return the other outputs.
        Validators' receipts also go to the full node (ReceiptsFromValidator), as they do in the
        protocol: the full node is stepped on every event it takes."""
        rest = []
        relay = []
        for o in outputs:
            kind = type(o)
            if kind is Receipt:
                self.receipts += 1
                self.log.append((o, "validator"))
                self.pos[(o.source_id, self.name[o.msg_id])] = self._vto[o.kind]
                self.said.append(("rc", {"src": o.source_id, "m": self.name[o.msg_id], "k": o.kind,
                                         "b": block_number(o.block)}))
                relay.append(o)
            elif kind is Publish:
                if o.role == "fullnode":
                    self.receipts += 1
                    self.log.append((o.receipt, "fullnode"))
                    self.fn[self.name[o.receipt.msg_id]] = self._fto[o.receipt.kind]
                    self.said.append(("fr", {"src": o.receipt.source_id, "m": self.name[o.receipt.msg_id],
                                             "k": o.receipt.kind, "b": block_number(o.receipt.block)}))
            elif kind is CatchainBroadcast:
                self._post(o.record.sender, self._abstract(o.record), o.record, self.session)
            elif kind is Forwarded:
                for mid, uid, origin in o.full:
                    rec = CatchainRecord(o.sender, mid, o.to_session, FORWARD, self.time, uid, origin)
                    self._post(o.sender, {"k": "new", "m": self.name[mid], "s": o.session}, rec, o.to_session)
                for mid, status, root, origin in o.digests:
                    b = int(root, 16) if status == ACCEPTED and root is not None else NO_BLOCK
                    ev = ForwardedDigests(o.sender, o.session, ((mid, status, root, origin),), self.time)
                    self._post(o.sender, {"k": "digest", "m": self.name[mid], "b": b}, ev, o.to_session)
            else:
                rest.append(o)
        if relay:
            rest += self._fullnode(ReceiptsFromValidator(tuple(relay), self.time))
        return rest

    def _fullnode(self, event) -> list:
        """Step the full node (recording which event it took at which action, for the audit)."""
        self.fn_events.append((self.action, type(event)))
        return self._absorb(self.fullnode.step(event))

    def _abstract(self, rec: CatchainRecord) -> dict:
        m = self.name[rec.msg_id]
        if rec.kind in (NEW, FORWARD):
            return {"k": "new", "m": m, "s": rec.session}
        if rec.kind == ACCEPT:
            return {"k": "accept", "m": m, "b": block_number(rec.block)}
        if rec.kind == REJECT:
            return {"k": "reject", "m": m, "from": rec.sender}
        if rec.kind == DIGEST:
            return {"k": "digest", "m": m, "b": block_number(rec.block)}
        raise ValueError(f"unknown catchain record kind {rec.kind!r}")

    def _post(self, sender: str, rec: dict, event, s: int) -> None:
        to = frozenset(self.scenario.honest_members(s)) - {sender}
        if to:
            self.cc.setdefault(record_key(rec, to), event)
            self.sent += 1

    # ---- the model's steps ---------------------------------------------------------------------
    def apply(self, step: dict) -> None:
        """Apply one model step (the model's ``last`` record) to the reference machines."""
        self.time += 1
        self.said, self.sent = [], 0
        self.action = step["a"]
        handler = getattr(self, "_do_" + step["a"], None)
        if handler is None:
            raise StepMismatch(f"no reference counterpart for the model's step {step['a']!r}")
        handler(step)

    def _each(self, event, who=None) -> list:
        out = []
        for v in (who if who is not None else self.scenario.honest):
            out += self._absorb(self.validators[v].step(event))
        return out

    def submit(self, m: str, to=None) -> frozenset:
        """The user submits ``m``; ``to``: the fan-out to impose (the model's choice), None: the
        full node's own. The full node sends the copies (a message it already knows goes nowhere
        again). Returns the validators it sent a copy to."""
        self.action = "Submit"
        self.fullnode.choose = {self.ref_id[m]: tuple(sorted(to))} if to is not None else None
        try:
            outs = self._fullnode(Submit(self.ref_id[m], self.time))
        finally:
            self.fullnode.choose = None
        copies = {(m, o.validator) for o in outs if isinstance(o, SendToValidator)}
        self.net |= copies
        self.sent += len(copies)
        return frozenset(v for _, v in copies)

    def _do_Submit(self, step):
        self.submit(step["m"], step.get("to"))

    def _do_RejectByFullNode(self, step):
        self._fullnode(Submit(self.ref_id[step["m"]], self.time, error=PRE_EVALUATION_ERROR))

    def _do_Announce(self, step):
        """The next session's validator set becomes known (once a session; the environment's rule)."""
        s = self.session + 1
        if self.announced or s >= len(self.scenario.members):
            raise StepMismatch(f"session {s}'s validators are announced already or there is no session {s}")
        self.announced = True
        self._fullnode(UpcomingValidators(s, self.scenario.members[s], self.time))

    def _take(self, step) -> None:
        key = (step["m"], step["v"])
        if key not in self.net:
            raise StepMismatch(f"no copy of {step['m']} in flight to {step['v']}")
        self.net.discard(key)

    def _do_Lose(self, step):
        self._take(step)

    _do_Withhold = _do_Lose

    def _do_Receive(self, step):
        self._take(step)
        v = step["v"]
        self._absorb(self.validators[v].step(MessageFromFullNode(self.ref_id[step["m"]], self.time)))

    def _do_DeliverRecord(self, step):
        key = record_key(step["r"], frozenset(step["to"]))
        event = self.cc.pop(key, None)
        if event is None:
            raise StepMismatch(f"the reference posted no catchain record {step['r']} for {sorted(step['to'])}")
        if isinstance(event, CatchainRecord):
            event = CatchainRecord(event.sender, event.msg_id, event.session, event.kind, self.time, event.uid,
                                   event.origin_session, event.block, event.error, event.status)
        for v in sorted(step["to"]):
            self._absorb(self.validators[v].step(event))

    def collate(self, v: str, choose) -> dict:
        """A collation round on ``v``: its collator is handed what the reference queue gives, and
        ``choose(taken)`` (the names handed, sorted) says what the collator did with each message
        (``{name: "acc" | "rej" | "ign"}``); the accepted ones make a candidate block. Returns it."""
        self.said, self.sent = [], 0
        self.action = "Collate"
        outs = self._absorb(self.validators[v].step(CollationRound(self.time, 1_000_000)))
        handed = [o for o in outs if isinstance(o, HandToCollator)]
        taken = sorted(self.name[x] for x in handed[0].msg_ids) if handed else []
        res = choose(taken)
        accepted = tuple(m for m in taken if res[m] == "acc")
        b = len(self.blocks) + 1
        if accepted:
            self.blocks.append(Block(v, accepted, "candidate", self.session, self.height()))
        for m in taken:
            r = RESULTS[res[m]]
            ev = CollatorResult(self.ref_id[m], r, self.time, block=block_ref(b) if r == ACCEPTED else None,
                                error=COLLATOR_ERROR if r == REJECTED else None)
            self._absorb(self.validators[v].step(ev))
        return res

    def _do_Collate(self, step):
        v, res = step["v"], step["res"]

        def the_models(taken: list) -> dict:
            if set(taken) != set(res):
                raise StepMismatch(f"{v}'s collator was handed {taken}, the model's round takes {sorted(res)}")
            return res

        self.collate(v, the_models)

    def ids(self, names) -> tuple:
        return tuple(self.ref_id[m] for m in names)

    def height(self) -> int:
        return sum(1 for blk in self.blocks if blk.shard)

    def _block(self, step, state: str) -> tuple[int, Block]:
        """Block ``b`` of the step, which the chain decides once: the shard chain a candidate, the
        masterchain an accepted shard block (the environment's rules, which the reference
        machines do not keep)."""
        b = step["b"]
        if not 1 <= b <= len(self.blocks):
            raise StepMismatch(f"no block {b}")
        blk = self.blocks[b - 1]
        if blk.st != state:
            raise StepMismatch(f"block {b} is {blk.st}, not {state}")
        return b, blk

    def shard_candidate(self, step) -> tuple[int, Block]:
        """The block of a ShardAccept step, if the shard chain can accept it: a candidate of this
        session made at the chain's height (whether validators sign it is theirs to say)."""
        b, blk = self._block(step, "candidate")
        if blk.ses != self.session or blk.h != self.height():
            raise StepMismatch(f"block {b} was made in session {blk.ses} at height {blk.h}; the shard chain "
                               f"is in session {self.session} at height {self.height()}")
        return b, blk

    def _do_ShardAccept(self, step):
        b, blk = self.shard_candidate(step)
        event = ShardBlockAccepted(block_ref(b), self.ids(blk.msgs), blk.by, self.time)
        refused = [o for o in self._each(event) if isinstance(o, BlockRefused)]
        self._fullnode(event)
        blk.st, blk.shard = "accepted", True
        if refused:
            raise StepMismatch(f"{', '.join(sorted(o.validator for o in refused))} refused block {b} "
                               "(it holds a message already in another accepted block)")

    def _do_ShardIgnore(self, step):
        b, blk = self._block(step, "candidate")
        # superseded: a block was accepted at the height it was made for (another of its round won)
        event = ShardBlockIgnored(block_ref(b), self.ids(blk.msgs), self.time, superseded=blk.h < self.height())
        self._each(event)
        self._fullnode(event)
        blk.st = "ignored"

    def _do_ShardReject(self, step):
        b, blk = self._block(step, "candidate")
        event = ShardBlockRejected(block_ref(b), self.ids(blk.msgs), self.time)
        self._each(event)
        self._fullnode(event)
        blk.st = "rejected"

    def _do_McCommit(self, step):
        b, blk = self._block(step, "accepted")
        event = MasterchainCommit(block_ref(b), self.ids(blk.msgs), block_ref(10_000 + b), self.time)
        self._each(event)
        self._fullnode(event)
        blk.st = "committed"

    def _do_McIgnore(self, step):
        b, blk = self._block(step, "accepted")
        event = MasterchainIgnore(block_ref(b), self.ids(blk.msgs), self.time)
        self._each(event)
        self._fullnode(event)
        blk.st = "mcignored"

    def _do_Tick(self, step):
        """Time passes (no step of the model: the statuses must not change). Every machine is
        stepped with a Tick; copies the full node sends again are lost (the model has no resend)."""
        self.time += TICK_MS
        event = Tick(self.time)
        self.action = "Tick"
        rest = self._each(event) + self._fullnode(event)
        self.resends += sum(1 for o in rest if isinstance(o, SendToValidator))

    def _do_Switch(self, step):
        s = step["s"]
        if s != self.session + 1 or s >= len(self.scenario.members):
            raise StepMismatch(f"switch to session {s} from session {self.session} "
                               f"(the scenario has sessions 0..{self.scenario.max_session})")
        self.session = s
        self.announced = False
        event = SessionSwitch(s, s * LIFETIME_MS + 1_000, self.scenario.members[s])
        self._each(event)
        self._fullnode(event)
        self.net.clear()


def record_key(rec: dict, to: frozenset) -> tuple:
    """A hashable key for an abstract catchain record and its recipients."""
    return (tuple(sorted(rec.items())), to)


def receipts_of(said: list) -> dict:
    """Abstract receipts ``(role, {src, m, k, b})``, role ``rc`` for a validator's and ``fr`` for
    the full node's, as two sorted lists, so that two sides' receipts of a step compare as lists."""
    key = lambda r: (r["src"], r["m"], r["k"], r["b"])  # noqa: E731
    return {role: sorted((r for kind, r in said if kind == role), key=key) for role in ("rc", "fr")}
