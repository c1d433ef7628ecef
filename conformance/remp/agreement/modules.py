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
from .tlavalues import SetOf, tla

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


def _observed(step) -> dict:
    """What the reference showed at one step of a walk, as the trace module reads it."""
    rc, fr = step.receipts["rc"], step.receipts["fr"]
    return {"taken": step.taken, "quiet": step.quiet, "pos": step.statuses["pos"], "fn": step.statuses["fn"],
            "rc": SetOf(rc), "fr": SetOf(fr), "nr": len(rc) + len(fr)}


def trace_module(sc: Scenario, steps: list, name: str = "REMPTrace", probe: int = 0,
                 free: frozenset = frozenset()) -> tuple[str, str]:
    """The module and config that make TLC follow ``steps`` (:class:`~.explore.TraceStep`).

    At every event the model says whether it can take it (``Can``: the action with that ``last``
    record is enabled). An event the model can take must have been taken by the reference, and
    the model's step must reach the reference's statuses and send its receipts (kind, block,
    source; the count too, so a receipt sent twice is not one). An event the model cannot take
    is a step of neither: the reference must have refused it or taken it without a trace (no
    receipt, no status changed, no catchain record posted, no copy sent). A Tick (time passing) is no step of the model. ``TraceNotMatched``
    is violated once every event is matched (acceptance); if the model cannot follow, TLC reports
    a deadlock at the last matched step.

    ``probe = k``: follow events 1..k-1 as above, then let the model take event k freely and stop
    (``TraceNotMatched`` becomes ``i < k``): the state TLC reports shows what the model would
    have done there, for the report of a rejected trace. ``free``: more events (1-based) the model
    takes without comparing what it sends (to read the model's receipts of its own steps).
    """
    names = _names(sc)
    actions = ",\n    ".join(tla(s.action, names) for s in steps)
    observed = ",\n    ".join(tla(_observed(s), names) for s in steps)
    stop = f"i < {probe}" if probe else "i < Len(TraceActions)"
    module = f"""---- MODULE {name} ----
\\* GENERATED trace of the REMP reference machines ({len(steps)} events); the model must admit it.
EXTENDS REMPSteps
CONSTANTS {", ".join(sorted(names))}
TraceMembers == {_members(sc)}
TraceActions == <<
    {actions}
  >>
TraceSeen == <<
    {observed}
  >>
VARIABLES i, out
Positions == [w \\in Honest |-> [m \\in Msgs |-> vs[w][m].pos]]
Can(act) == ENABLED (Next /\\ last' = act)
Free == {tla(frozenset(free) | ({probe} if probe else set()), names)}
\\* out: the receipts the model sent at the event just matched, and whether it could take it
TraceInit == Init /\\ i = 0 /\\ out = [rc |-> {{}}, fr |-> {{}}, can |-> TRUE]
TraceNext ==
    /\\ i < Len(TraceActions)
    /\\ LET act == TraceActions[i + 1]
           seen == TraceSeen[i + 1]
           can == act.a # "Tick" /\\ Can(act)
       IN /\\ IF can THEN Next /\\ last' = act ELSE UNCHANGED vars
          /\\ i + 1 \\notin Free =>
                /\\ act.a # "Tick" /\\ ~seen.taken => ~can
                /\\ act.a # "Tick" /\\ ~can => seen.quiet
                /\\ Positions' = seen.pos
                /\\ fn' = seen.fn
                /\\ Emitted = seen.rc
                /\\ FnEmitted = seen.fr
                /\\ Cardinality(Emitted) + Cardinality(FnEmitted) = seen.nr
          /\\ out' = [rc |-> Emitted, fr |-> FnEmitted, can |-> can]
    /\\ i' = i + 1
TraceSpec == TraceInit /\\ [][TraceNext]_<<vars, i, out>>
TraceNotMatched == {stop}
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
VARIABLES n, out
\\* out: the receipts of the step just taken (REMPSteps' Emitted and FnEmitted)
SimInit == Init /\\ n = 0 /\\ out = [rc |-> {{}}, fr |-> {{}}]
SimNext == Next /\\ n' = n + 1 /\\ out' = [rc |-> Emitted, fr |-> FnEmitted]
SimSpec == SimInit /\\ [][SimNext]_<<vars, n, out>>
SimDepthReached == n < {depth}
====
"""
    cfg = _constants(sc, "SimMembers") + "SPECIFICATION SimSpec\nINVARIANT SimDepthReached\n"
    return module, cfg


def write(folder: Path, name: str, module: str, cfg: str) -> None:
    copy_model(folder)
    (folder / f"{name}.tla").write_text(module)
    (folder / f"{name}.cfg").write_text(cfg)
