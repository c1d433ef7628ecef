"""Generate the TLA+ modules that bind the REMP model to one scenario: a trace to validate, or a
simulation to draw behaviours from.

Why generated, in a temporary folder: a trace is data, not a second spec; each module EXTENDS the
step-level model (``tla/remp/REMPSteps.tla``) and adds only the scenario's constants and, for a trace, the
steps it must follow. TLC 2.15 reads no JSON, so the trace is written as TLA+ sequences.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rmkit.tlc.manifest import tla_root

from .harness import Scenario
from .tlavalues import tla

MODEL = "remp"


def model_dir() -> Path:
    return tla_root() / MODEL


def copy_model(into: Path) -> None:
    """Copy the model's modules (not its configs) into ``into``, beside the generated ones."""
    for f in model_dir().glob("*.tla"):
        if not f.name.startswith("MC"):
            shutil.copy(f, into / f.name)


def _names(sc: Scenario) -> frozenset:
    return frozenset(sc.validators) | frozenset(sc.msgs)


def _constants(sc: Scenario, members_op: str) -> str:
    names = sorted(_names(sc))
    lines = ["CONSTANTS", "    " + "  ".join(f"{n} = {n}" for n in names),
             f"    Validators = {tla(frozenset(sc.validators), _names(sc))}",
             f"    Faulty = {tla(frozenset(sc.faulty), _names(sc))}",
             f"    Msgs = {tla(frozenset(sc.msgs), _names(sc))}",
             f"    MaxSession = {sc.max_session}",
             f"    MinFanout = {sc.min_fanout}",
             f"    Members <- {members_op}"]
    return "\n".join(lines) + "\n"


def _members(sc: Scenario) -> str:
    names = _names(sc)
    return "(" + " @@ ".join(f"{s} :> {tla(frozenset(m), names)}" for s, m in enumerate(sc.members)) + ")"


def trace_module(sc: Scenario, steps: list, name: str = "REMPTrace") -> tuple[str, str]:
    """The module and config that make TLC follow ``steps`` (:class:`~.explore.TraceStep`).

    The spec takes a step only when the model can take the recorded action (its ``last`` record)
    and reach the recorded statuses; ``TraceNotMatched`` is violated once every step is matched
    (acceptance). If the model cannot follow, TLC reports a deadlock at the last matched step.
    """
    names = _names(sc)
    actions = ",\n    ".join(tla(s.action, names) for s in steps)
    statuses = ",\n    ".join(tla(s.statuses, names) for s in steps)
    module = f"""---- MODULE {name} ----
\\* GENERATED trace of the REMP reference machines ({len(steps)} steps); the model must admit it.
EXTENDS REMPSteps
CONSTANTS {", ".join(sorted(names))}
TraceMembers == {_members(sc)}
TraceActions == <<
    {actions}
  >>
TraceStatus == <<
    {statuses}
  >>
VARIABLE i
Positions == [w \\in Honest |-> [m \\in Msgs |-> vs[w][m].pos]]
TraceInit == Init /\\ i = 0
TraceNext ==
    /\\ i < Len(TraceActions)
    \\* a Tick of the reference (time passing) is no step of the model: its statuses must stay
    /\\ IF TraceActions[i + 1].a = "Tick" THEN UNCHANGED vars
       ELSE Next /\\ last' = TraceActions[i + 1]
    /\\ Positions' = TraceStatus[i + 1].pos
    /\\ fn' = TraceStatus[i + 1].fn
    /\\ i' = i + 1
TraceSpec == TraceInit /\\ [][TraceNext]_<<vars, i>>
TraceNotMatched == i < Len(TraceActions)
====
"""
    cfg = _constants(sc, "TraceMembers") + "SPECIFICATION TraceSpec\nINVARIANT TraceNotMatched\n"
    return module, cfg


def simulation_module(sc: Scenario, depth: int, name: str = "REMPSim") -> tuple[str, str]:
    """A module whose every behaviour ends, for TLC's simulation mode, after ``depth`` steps
    (``SimDepthReached`` violated) or where the model can go no further (a deadlock)."""
    module = f"""---- MODULE {name} ----
\\* GENERATED: the REMP model with a step counter, to draw random behaviours from TLC.
EXTENDS REMPSteps
CONSTANTS {", ".join(sorted(_names(sc)))}
SimMembers == {_members(sc)}
VARIABLE n
SimInit == Init /\\ n = 0
SimNext == Next /\\ n' = n + 1
SimSpec == SimInit /\\ [][SimNext]_<<vars, n>>
SimDepthReached == n < {depth}
====
"""
    cfg = _constants(sc, "SimMembers") + "SPECIFICATION SimSpec\nINVARIANT SimDepthReached\n"
    return module, cfg


def write(folder: Path, name: str, module: str, cfg: str) -> None:
    copy_model(folder)
    (folder / f"{name}.tla").write_text(module)
    (folder / f"{name}.cfg").write_text(cfg)
