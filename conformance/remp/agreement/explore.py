"""Random walks of the reference machines (reference -> model), chosen without the model.

Why: to check that the model admits what the reference machines do, the steps must be chosen
without the model, and without its guards copied into Python. At each step the walker proposes
an event from the whole vocabulary of the environment -- submit or pre-reject any message, lose
or hand over any copy in flight, deliver any catchain record posted, a collation round on any
honest validator (with random collator verdicts for what it is handed), any fate for any block, a
session switch, time passing -- whether or not it is allowed now. The reference side says whether
it takes the event: the machines decide (what the collator is handed, which receipts are sent,
which records are posted, whether validators refuse a block), and the harness keeps the rules of
the environment the machines do not keep (a copy or record is delivered once, the chain decides a
block once, in its session, at its height). A refused event leaves the reference as it was.

Each step keeps the event, whether the reference took it, the statuses and the receipts it sent;
the trace check (:mod:`.tracecheck`) asks the model the same question of every step: a step the
model can take must send the same receipts; one it cannot take must be refused by the reference
or change nothing there.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

from .harness import Harness, Scenario, StepMismatch


@dataclass(frozen=True)
class TraceStep:
    """One event: the model's action record, whether the reference took it, the statuses after
    it, the receipts it sent (:meth:`.harness.Harness.step_receipts`) and whether it sent
    nothing else either (no catchain record, no copy to a validator)."""

    action: dict
    statuses: dict
    taken: bool = True
    receipts: dict = field(default_factory=lambda: {"rc": [], "fr": []})
    quiet: bool = True


# Events of the whole vocabulary are proposed with these weights (the default is 1); Switch and a
# pre-rejection end a walk's interest early.
WEIGHTS = {"Submit": 0.5, "Collate": 0.6, "Switch": 0.15, "Lose": 0.3, "RejectByFullNode": 0.1, "ShardAccept": 0.8,
           "ShardIgnore": 0.25, "ShardReject": 0.2, "McCommit": 0.6, "McIgnore": 0.2, "Tick": 0.5, "Announce": 0.2}


def proposals(h: Harness, rng: random.Random) -> list:
    """Every event of the vocabulary, allowed now or not. Copies and records are those in the
    environment's inventory (a delivery of something never sent names nothing)."""
    sc = h.scenario
    steps: list = []
    for m in sc.msgs:  # the full node picks the validators (the step records whom it sent copies to)
        steps.append({"a": "Submit", "m": m})
        steps.append({"a": "RejectByFullNode", "m": m})
    steps.append({"a": "Announce"})  # the next session's validators become known
    for m, v in sorted(h.net):
        steps.append({"a": "Lose", "m": m, "v": v})
        steps.append({"a": "Withhold" if v in sc.faulty else "Receive", "m": m, "v": v})
    for rec, to in h.cc:
        steps.append({"a": "DeliverRecord", "r": dict(rec), "to": to})
    for v in sc.honest:
        steps.append({"a": "Collate", "v": v})
    if h.blocks:  # every fate of one block drawn at random (so that old blocks do not crowd the walk)
        b = rng.randint(1, len(h.blocks))
        for a in ("ShardAccept", "ShardIgnore", "ShardReject", "McCommit", "McIgnore"):
            steps.append({"a": a, "b": b})
    steps.append({"a": "Switch", "s": h.session + 1})
    steps.append({"a": "Tick"})  # time passes: the machines' timers run, the model takes no step
    return steps


def _try(h: Harness, step: dict, rng: random.Random) -> tuple[dict, bool]:
    """Offer ``step`` to the reference; a refused one is rolled back. Returns the step as taken
    (a collation round with the verdicts drawn for what the collator was handed) and whether
    the reference took it.

    The harness refuses an event before it changes anything, but for a block the validators
    refuse once they see it (ShardAccept): that one, once the chain could accept it, is tried
    on a copy of the state."""
    saved = None
    logged = len(h.log)
    try:
        if step["a"] == "ShardAccept":
            h.shard_candidate(step)
            saved = {k: copy.deepcopy(v) for k, v in vars(h).items() if k not in ("scenario", "log")}
        if step["a"] == "Submit":
            h.time += 1
            h.said, h.sent = [], 0
            return {"a": "Submit", "m": step["m"], "to": h.submit(step["m"])}, True
        if step["a"] == "Collate":
            h.time += 1
            res = h.collate(step["v"], lambda taken: {m: rng.choice(("acc", "acc", "rej", "ign")) for m in taken})
            return {"a": "Collate", "v": step["v"], "res": res}, True
        h.apply(step)
        return step, True
    except StepMismatch:
        if saved is not None:
            vars(h).update(saved)
        del h.log[logged:]
        h.said, h.sent = [], 0
        return step, False


# A walk ends once this many events in a row have left no trace (every message resolved or gone).
IDLE_END = 200


def explore(scenario: Scenario, seed: int, max_steps: int = 40, max_receipts: int | None = None,
            profile: str = "spec", harness: Harness | None = None) -> list[TraceStep]:
    """A random walk of ``max_steps`` proposed events (or until ``max_receipts`` receipts, or
    :data:`IDLE_END` events in a row without a trace). ``harness``: walk these machines (to read
    their receipt log afterwards)."""
    rng = random.Random(seed)
    h = harness if harness is not None else Harness(scenario, profile=profile)
    trace: list[TraceStep] = []
    idle = 0
    while len(trace) < max_steps and (max_receipts is None or h.receipts < max_receipts) and idle < IDLE_END:
        options = proposals(h, rng)
        step = rng.choices(options, [WEIGHTS.get(o["a"], 1.0) for o in options])[0]
        before = h.statuses()
        trace.append(offer(h, step, rng))
        last = trace[-1]
        idle = idle + 1 if last.quiet and not last.receipts["rc"] and not last.receipts["fr"] and last.statuses == before else 0
    return trace


def offer(h: Harness, step: dict, rng: random.Random) -> TraceStep:
    """Offer one event to the reference machines and record what they did."""
    taken, ok = _try(h, step, rng)
    return TraceStep(taken, h.statuses(), ok, h.step_receipts(), h.sent == 0)


def follow(scenario: Scenario, events: list, seed: int = 0, profile: str = "spec") -> list[TraceStep]:
    """A walk of given events (a Submit without ``to``: the full node picks), as :func:`explore`
    records them: to show the model a chosen sequence of the reference's events."""
    rng = random.Random(seed)
    h = Harness(scenario, profile=profile)
    return [offer(h, dict(e), rng) for e in events]
