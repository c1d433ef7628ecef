"""Agreement between the reference machines and the TLA+ model of Corda P2P, reference -> model
(trace validation): random walks of :class:`~rmkit.reference_impl.corda.System` record its state
after every step; the walks are written as a generated TLA+ module whose spec can take a step only
if the model can take one to the recorded state, and TLC says which walks the model follows to
their end (:func:`rmkit.tlc.generated.trace_module`, shared with RMB).

The walker chooses which step comes next among those the reference takes in its state (a step
the reference refuses is not a move), and spends the scenario's budgets on the adversary's moves
(crashes, rollbacks, losses, duplicates); what each step does is the reference's own decision.
"""

from __future__ import annotations

import copy
import random

from rmkit.conformance.corda.agreement import BOUNDS, Scenario
from rmkit.reference_impl.corda import StepRefused, System
from rmkit.tlc.generated import trace_cfg, trace_module as generated_trace_module, unfollowed_walks

# the adversary's moves and the budget each spends (in the order of agreement.BOUNDS)
COST = {"SenderCrash": "MaxSenderCrash", "ReceiverCrash": "MaxRcvCrash", "BrokerRestart": "MaxBrokerRestart",
        "BridgeRollback": "MaxRollback", "LinkLose": "MaxLoss", "AckLose": "MaxLoss", "LinkDup": "MaxDup"}
PROTOCOL = ("Suspend", "Produce", "Forward", "Resend", "RemoteAccept", "BridgeAck", "Deliver", "Commit", "Ack")


def _candidates(system: System) -> list[dict]:
    view = system.view()
    moves = [{"a": a} for a in PROTOCOL + ("SenderCrash", "ReceiverCrash", "BrokerRestart", "BridgeRollback")]
    moves += [{"a": a, "i": i} for a in ("LinkLose", "LinkDup") for i in range(len(view["transit"]))]
    moves += [{"a": "AckLose", "i": i} for i in range(view["acks"])]
    return moves


def reference_walk(sc: Scenario, *, seed: int, max_steps: int = 30) -> list[dict]:
    """One random walk of the reference machines: the state after each step (the first: initial)."""
    rng = random.Random(seed)
    system = System.one_session(sc.profile, sc.n)
    budget = dict(zip(BOUNDS, sc.bounds))
    views = [system.view()]
    for _ in range(max_steps):
        possible = []
        for move in _candidates(system):
            if move["a"] in COST and budget[COST[move["a"]]] <= 0:
                continue
            trial = copy.deepcopy(system)
            try:
                trial.step(move["a"], **{k: v for k, v in move.items() if k != "a"})
            except StepRefused:
                continue
            possible.append((move, trial))
        if not possible:
            break
        move, system = rng.choice(possible)
        if move["a"] in COST:
            budget[COST[move["a"]]] -= 1
        views.append(system.view())
    return views


def _tla(v) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (tuple, list)):
        return "<<" + ", ".join(_tla(x) for x in v) + ">>"
    return str(v)


def _matches(view: dict, p: str) -> str:
    parts = [f"ckpt{p} = {view['ckpt']}", f"produced{p} = {view['produced']}",
             f"AbsD(out{p}) = {_tla(view['out'])}", f"Abs(transit{p}) = {_tla(view['transit'])}",
             f"Len(acks{p}) = {view['acks']}", f"AbsD(inq{p}) = {_tla(view['inq'])}",
             f"Abs(proc{p}) = {_tla(view['proc'])}", f"Abs(toack{p}) = {_tla(view['toack'])}",
             f"{{r.did : r \\in db{p}}} = {{{', '.join(_tla(d) for d in view['db'])}}}",
             f"effects{p} = {_tla(view['effects'])}"]
    return " /\\ ".join(parts)


DEFS = """Abs(q) == [j \\in DOMAIN q |-> <<q[j].m.k, q[j].m.did, q[j].m.uuid, q[j].m.sq>>]
AbsD(q) == [j \\in DOMAIN q |-> <<q[j].m.k, q[j].m.did, q[j].m.uuid, q[j].m.sq, q[j].dlv>>]"""


def trace_module(sc: Scenario, walks: list[list[dict]]) -> tuple[str, str]:
    module = generated_trace_module("CordaTrace", "CordaP2P", walks, _matches, init="InitState", next_="Next",
                                    vars_="vars", defs=DEFS)
    # the reference's System.one_session: one session
    consts = [f'    Profile = "{sc.profile}"', f"    N = {sc.n}", "    Sessions = 1"] + [f"    {b} = {v}" for b, v in zip(BOUNDS, sc.bounds)]
    return module, trace_cfg(consts)


def validate(sc: Scenario, walks: list[list[dict]], timeout: float = 120) -> list[int]:
    """The walks (numbered from 1) the model could NOT follow to their end; empty: every walk agrees."""
    module, cfg = trace_module(sc, walks)
    return unfollowed_walks("corda", "CordaTrace", module, cfg, len(walks), timeout=timeout)


if __name__ == "__main__":
    import sys

    for profile in sys.argv[1:] or ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]:
        walks = [reference_walk(Scenario(profile), seed=s, max_steps=40) for s in range(40)]
        bad = validate(Scenario(profile), walks)
        print(f"{profile}: {len(walks)} walks, {sum(len(w) - 1 for w in walks)} steps, not followed: {bad or 'none'}")
