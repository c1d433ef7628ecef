"""Agreement between the TLA+ model of Corda P2P (``tla/corda``) and the reference machines
(``reference_impl/corda``), model -> reference: TLC's simulation draws random behaviours of the
model (every state records the step just taken in ``last``); each step is applied to a fresh
:class:`~rmkit.reference_impl.corda.System` of the same profile, and after every step both sides'
states (queues, link, the receiver's memory and database, the committed effects, and the
deduplicator's answer) must be equal. The first difference is a :class:`Disagreement`.

The simulation module is generated in a temporary folder: it EXTENDS the one model and adds only
a step counter (TLC 2.15 cannot stop a behaviour at a depth otherwise) and no VIEW, so that every
state of a trace carries its own step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rmkit.reference_impl.corda import StepRefused, System
from rmkit.conformance.disagreement import Disagreement, SimulationFailed
from rmkit.tlc.generated import run_generated
from rmkit.tlc.result import ERROR, STATE

BOUNDS = ("MaxSenderCrash", "MaxRcvCrash", "MaxBrokerRestart", "MaxRollback", "MaxLoss", "MaxDup")


@dataclass(frozen=True)
class Scenario:
    profile: str
    n: int = 2
    bounds: tuple[int, ...] = (1, 1, 1, 1, 1, 1)   # in the order of BOUNDS


def _m(m: dict) -> tuple:
    return (m["k"], m["did"], m["uuid"], m["sq"])


def model_view(values: dict) -> dict:
    """The model's state in the shape of :meth:`System.view`."""
    return {
        "ckpt": values["ckpt"], "produced": values["produced"],
        "out": [(*_m(e["m"]), e["dlv"]) for e in values["out"]],
        "transit": [_m(e["m"]) for e in values["transit"]],
        "acks": len(values["acks"]),
        "inq": [(*_m(e["m"]), e["dlv"]) for e in values["inq"]],
        "proc": [_m(e["m"]) for e in values["proc"]],
        "toack": [_m(e["m"]) for e in values["toack"]],
        "db": sorted((r["did"] for r in values["db"]), key=str),
        "effects": list(values["effects"]),
    }


def replay_behaviour(sc: Scenario, states: list) -> Optional[Disagreement]:
    """Replay one TLC behaviour (its states, the first being initial) into the reference machines."""
    real = [s for s in states if s.marker == STATE]
    system = System.one_session(sc.profile, sc.n)
    done: list = []
    for i, s in enumerate(real[1:], 1):
        last = dict(s.values["last"])
        done.append(last)
        want = model_view(s.values)
        params = {"i": last["i"]} if "i" in last else {}
        try:
            answer = system.step(last["a"], **params)
        except StepRefused as e:
            return Disagreement(i, last, want, None, f"the reference cannot take this step: {e}", done)
        if "ans" in last and getattr(answer, "value", None) != last["ans"]:
            return Disagreement(i, last, want, system.view(), f"the deduplicator answered {answer} where the model answered {last['ans']}", done)
        got = system.view()
        if got != want:
            return Disagreement(i, last, want, got, "states differ", done)
    return None


def simulation_module(sc: Scenario, depth: int) -> tuple[str, str]:
    module = f"""---- MODULE CordaSim ----
\\* GENERATED: the Corda P2P model with a step counter, to draw random behaviours from TLC.
EXTENDS CordaP2P
VARIABLE n
SimInit == InitState /\\ n = 0
SimNext == Next /\\ n' = n + 1
SimSpec == SimInit /\\ [][SimNext]_<<vars, n>>
SimDepthReached == n < {depth}
====
"""
    consts = [f'    Profile = "{sc.profile}"', f"    N = {sc.n}", "    Sessions = 1"] + [f"    {b} = {v}" for b, v in zip(BOUNDS, sc.bounds)]
    cfg = "CONSTANTS\n" + "\n".join(consts) + "\nSPECIFICATION SimSpec\nINVARIANT SimDepthReached\n"
    return module, cfg


def simulate(sc: Scenario, *, traces: int, depth: int, seed: int, timeout: float = 120) -> list:
    """Up to ``traces`` random behaviours of ``depth`` steps (fewer where the model stops)."""
    module, cfg = simulation_module(sc, depth)
    result = run_generated("corda", "CordaSim", module, cfg, simulate_depth=depth + 1, seed=seed,
                           continue_after_violation=True, max_traces=traces, timeout=timeout)
    if result.verdict == ERROR:
        raise SimulationFailed(result.error.message if result.error else "TLC error")
    return result.traces


def agree(sc: Scenario, *, traces: int = 50, depth: int = 30, seed: int = 1) -> tuple[int, int, list[Disagreement]]:
    """Replay ``traces`` simulated behaviours; (behaviours replayed, steps replayed, disagreements)."""
    found, steps, n = [], 0, 0
    for trace in simulate(sc, traces=traces, depth=depth, seed=seed):
        n += 1
        steps += sum(1 for s in trace if s.marker == STATE) - 1
        d = replay_behaviour(sc, trace)
        if d is not None:
            found.append(d)
    return n, steps, found


if __name__ == "__main__":
    import sys

    for profile in sys.argv[1:] or ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]:
        n, steps, bad = agree(Scenario(profile), traces=100, depth=40, seed=7)
        print(f"{profile}: {n} behaviours, {steps} steps replayed, {len(bad)} disagreements")
        for d in bad[:3]:
            print(d.render())
