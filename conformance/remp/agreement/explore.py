"""Random walks of the reference machines through the model's environment (reference -> model).

Why: to check that the model admits what the reference machines do, the steps must be chosen
without the model. The explorer picks, at random among those the environment allows, the next
step (a submission, a delivery, a collation round with per-message collator verdicts, a block's
fate, a session switch); the reference machines decide everything else -- what the collator is
handed, which receipts are sent, which records are posted -- and the explorer records each step
with the statuses the receipts gave. Guards that depend on a validator's knowledge (the collator's
queue; a block that an honest validator would refuse as a replay) are read from the reference.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .harness import Harness, Scenario


@dataclass(frozen=True)
class TraceStep:
    """One step: the model's action record and the statuses after it."""

    action: dict
    statuses: dict


# Rare steps end a walk's interest early (a switch, a lost copy, a message refused up front).
WEIGHTS = {"Collate": 0.6, "Switch": 0.15, "Lose": 0.3, "RejectByFullNode": 0.1, "ShardReject": 0.4, "McIgnore": 0.5,
           "Tick": 0.5}


def _collate(h: Harness, v: str, rng: random.Random) -> dict:
    """Run a collation round on ``v`` (it may find nothing to collate) with random verdicts."""
    res = h.collate(v, lambda taken: {m: rng.choice(("acc", "acc", "rej", "ign")) for m in taken})
    return {"a": "Collate", "v": v, "res": res}


def enabled(h: Harness, rng: random.Random) -> list:
    """The steps the environment allows now (collation rounds are tried when picked)."""
    sc = h.scenario
    steps: list = []
    for m in sc.msgs:
        if h.fn[m] == "none":
            members = list(sc.members[h.session])
            k = rng.randint(sc.min_fanout, len(members))
            steps.append({"a": "Submit", "m": m, "to": frozenset(rng.sample(members, k))})
            steps.append({"a": "RejectByFullNode", "m": m})
    for m, v in sorted(h.net):
        steps.append({"a": "Lose", "m": m, "v": v})
        steps.append({"a": "Withhold" if v in sc.faulty else "Receive", "m": m, "v": v})
    for rec, to in h.cc:
        steps.append({"a": "DeliverRecord", "r": dict(rec), "to": to})
    for v in sc.honest_members(h.session):
        steps.append({"a": "Collate", "v": v})
    for b, blk in enumerate(h.blocks, 1):
        if blk.st == "candidate":
            if blk.ses == h.session and blk.h == h.height() and not h.refused_by(b):
                steps.append({"a": "ShardAccept", "b": b})
            steps.append({"a": "ShardIgnore", "b": b})
            steps.append({"a": "ShardReject", "b": b})
        elif blk.st == "accepted":
            steps.append({"a": "McCommit", "b": b})
            steps.append({"a": "McIgnore", "b": b})
    if h.session < sc.max_session:
        steps.append({"a": "Switch", "s": h.session + 1})
    steps.append({"a": "Tick"})  # time passes: the machines' timers run, the model takes no step
    return steps


def explore(scenario: Scenario, seed: int, max_steps: int = 40, max_receipts: int | None = None,
            profile: str = "spec", harness: Harness | None = None) -> list[TraceStep]:
    """A random walk of at most ``max_steps`` steps (or until ``max_receipts`` receipts).
    ``harness``: walk these machines (to read their receipt log afterwards)."""
    rng = random.Random(seed)
    h = harness if harness is not None else Harness(scenario, profile=profile)
    trace: list[TraceStep] = []
    while len(trace) < max_steps and (max_receipts is None or h.receipts < max_receipts):
        options = enabled(h, rng)
        taken = None
        while options:
            step = rng.choices(options, [WEIGHTS.get(o["a"], 1.0) for o in options])[0]
            options.remove(step)
            if step["a"] == "Collate":
                h.time += 1
                taken = _collate(h, step["v"], rng)
            else:
                h.apply(step)
                taken = step
            break
        if taken is None:
            break
        if taken["a"] == "Collate" and not taken["res"] and all(o["a"] == "Collate" for o in options):
            trace.append(TraceStep(taken, h.statuses()))
            break  # only idle collation rounds are left: the walk is over
        trace.append(TraceStep(taken, h.statuses()))
    return trace
