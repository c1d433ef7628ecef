"""Agreement between the reference daemon and the TLA+ model of RMB, reference -> model (trace
validation): random walks of the reference daemons through the environment of
:mod:`rmkit.conformance.rmb.agreement` (the same harness: real Redis, real HTTP, a virtual clock)
record the state after every step; the walk is written as a generated TLA+ module whose spec can
take a step only if the model can take one to the recorded state. TLC then says whether the
whole walk is a behaviour of the model.

The walker chooses among the environment's moves only: which queue a daemon task serves next,
when a parked worker goes on, what the network does with an exchange (deliver, lose, fail, within
the scenario's budgets), when a handler answers, a crash, a second passing (freely when nothing is
pending, else within the delay budget: the model's assumption that a daemon's own steps take less
than a second). What the daemon does with each move is its own decision, recorded as observed.
"""

from __future__ import annotations

import asyncio
import random

from rmkit.conformance.rmb.agreement_harness import ABSENT, BUDGETS, Harness, Scenario, _virtual_environment
from rmkit.tlc.generated import trace_cfg, unfollowed_walks
from rmkit.tlc.generated import trace_module as generated_trace_module


def _moves(h: Harness, view: dict, used: dict, budget: dict, crossed: set) -> list[dict]:
    """The environment's possible moves in the observed state (never the daemon's own guards).
    ``crossed``: destinations whose request has been on the wire since before the last second (the
    network holds a request across one second at most: no second passes until it arrives or is lost)."""
    moves = []
    if view["local"]:
        moves.append({"a": "Dispatch"})
    if view["fwd"]:
        moves.append({"a": "Take"})
    for d in h.dests:
        task = h.tasks.get(d)
        if d in view["rq"] and not (task and not task.done()):
            moves.append({"a": "RetryTake", "d": d})
        if task and not task.done() and task in h.sched.parked:
            moves.append({"a": "Post", "d": d})          # the worker goes on: it posts or gives up, as it decides
        ex = view["ex"][d]
        waiting = h.ex[d].fut is not None and not h.ex[d].fut.done()
        if ex in ("accepted", "refused", "failed", "lost"):
            moves.append({"a": "React" if waiting else "Orphan", "d": d})
        if ex == "sent":
            moves.append({"a": "Arrive", "d": d})
            if used["fail"] < budget["fail"]:
                moves.append({"a": "Fail", "d": d})
        if ex in ("sent", "accepted", "refused", "failed") and used["loss"] < budget["loss"]:
            moves.append({"a": "Lose", "d": d})
        if view["todo"][d]:
            moves.append({"a": "HandlerReply", "d": d})
        if view["rp"][d]:
            moves.append({"a": "ReplyArrive", "d": d})
            if used["rloss"] < budget["rloss"]:
                moves.append({"a": "ReplyLose", "d": d})
            if used["dup"] < budget["dup"]:
                moves.append({"a": "ReplyDup", "d": d})
    if used["crash"] < budget["crash"]:
        moves.append({"a": "Crash"})
    quiet = (not view["local"] and not view["fwd"] and not view["held"] and not view["rq"]
             and all(view["ex"][d] == "idle" and not view["todo"][d] and not view["rp"][d] for d in h.dests))
    on_wire = any(view["ex"][d] == "sent" for d in crossed)
    if view["clock"] < h.sc.max_time and not on_wire and (quiet or used["delay"] < budget["delay"]):
        moves.append({"a": "Tick", "quiet": quiet})
    return moves


COST = {"Fail": "fail", "Lose": "loss", "ReplyLose": "rloss", "ReplyDup": "dup", "Crash": "crash"}


async def _walk(sc: Scenario, redis_port: int, rng: random.Random, max_steps: int) -> list[dict]:
    h = Harness(sc, redis_port)
    budget = dict(zip(("loss", "fail", "rloss", "dup", "crash", "delay"), sc.budgets))
    used = {k: 0 for k in budget}
    crossed: set = set()
    with _virtual_environment(h.clock, h.sched):
        await h.start()
        try:
            views = [await h.view()]
            for _ in range(max_steps):
                crossed &= {d for d in h.dests if views[-1]["ex"][d] == "sent"}
                moves = _moves(h, views[-1], used, budget, crossed)
                if not moves:
                    break
                move = rng.choice(moves)
                if move["a"] in COST:
                    used[COST[move["a"]]] += 1
                if move["a"] == "Tick" and not move.pop("quiet"):
                    used["delay"] += 1
                move.pop("quiet", None)
                if move["a"] == "Tick":
                    crossed = {d for d in h.dests if views[-1]["ex"][d] == "sent"}
                await h.step(move)
                views.append({**await h.view(), "step": move["a"]})
        finally:
            await h.stop()
    return views


def reference_walk(sc: Scenario, redis_port: int, *, seed: int, max_steps: int = 30) -> list[dict]:
    """One random walk of the reference daemons: the observed state after each step (the first: initial)."""
    return asyncio.run(_walk(sc, redis_port, random.Random(seed), max_steps))


def _tla(v) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def _matches(view: dict, dests: list[int], prime: str) -> str:
    p = prime
    parts = [f"clock{p} = {view['clock']}", f"local{p} = {_tla(view['local'])}", f"bl{p}.on = {_tla(view['bl'])}",
             f"hash{p}.on = {_tla(view['hash'])}", f"fwd{p} = <<{', '.join(map(str, view['fwd']))}>>",
             f"{{d \\in Dst : w{p}[d] > 0}} = {{{', '.join(map(str, view['held']))}}}",
             "out" + p + " = {" + ", ".join(f'[d |-> {d}, k |-> "{k}", t |-> {t}]' for d, k, t in view["out"]) + "}",
             "got" + p + " = {" + ", ".join(f"[d |-> {d}, t |-> {t}]" for d, t in view["got"]) + "}"]
    for d in dests:
        ex = view["ex"][d]
        parts += [f'ex{p}[{d}] \\in OnWire' if ex == "sent" else f'ex{p}[{d}] = "{ex}"', f"todo{p}[{d}] = {view['todo'][d]}", f"rp{p}[{d}] = {view['rp'][d]}",
                  f"posts{p}[{d}] = {view['posts'][d]}", f"rq{p}[{d}] = {view['rq'].get(d, 0)}"]
    return " /\\ ".join(parts)


def trace_module(sc: Scenario, walks: list[list[dict]]) -> tuple[str, str]:
    """The walks as a TLA+ module (:func:`rmkit.tlc.generated.trace_module`) and its cfg."""
    dests = [d + 2 for d in range(sc.dests)]
    module = generated_trace_module("RMBTrace", "RMB", walks, lambda v, p: _matches(v, dests, p),
                                    init="Init", next_="Next", vars_="vars")
    consts = [f'    Profile = "{sc.profile}"', f"    Dests = {sc.dests}", f"    Try = {sc.tries}", f"    Exp = {sc.exp}",
              f"    MaxTime = {sc.max_time}"] + [f"    {b} = {v}" for b, v in zip(BUDGETS, sc.budgets)] + list(ABSENT)
    return module, trace_cfg(consts)


def validate(sc: Scenario, walks: list[list[dict]], timeout: float = 120) -> list[int]:
    """The walks (numbered from 1) the model could NOT follow to their end; empty: every walk agrees."""
    module, cfg = trace_module(sc, walks)
    return unfollowed_walks("rmb", "RMBTrace", module, cfg, len(walks), timeout=timeout)
