"""Run TLC on a module generated beside a shipped model (a simulation module with a step counter,
a trace to validate): the model's own modules (not its ``MC*`` roots) are copied with the
generated module and cfg into a temporary folder, so nothing is ever written into ``tla/``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rmkit.tlc.manifest import tla_root
from rmkit.tlc.result import TlcResult
from rmkit.tlc.runner import run_tlc


def run_generated(model_path: str, name: str, module: str, cfg: str, **run_kwargs) -> TlcResult:
    """Check (or simulate) the generated module ``name`` (text ``module``, config ``cfg``) against
    the modules of ``tla/<model_path>``; ``run_kwargs`` go to :func:`run_tlc`."""
    with tempfile.TemporaryDirectory(prefix=f"rmkit-{name.lower()}-") as tmp:
        folder = Path(tmp)
        for f in (tla_root() / model_path).glob("*.tla"):
            if not f.name.startswith("MC"):
                shutil.copy(f, folder / f.name)
        (folder / f"{name}.tla").write_text(module)
        (folder / f"{name}.cfg").write_text(cfg)
        return run_tlc(folder, name, f"{name}.cfg", **run_kwargs)


# ---- trace validation: walks of a reference implementation followed by TLC -------------------------
def trace_module(name: str, extends: str, walks: list[list[dict]], matches, *, init: str, next_: str, vars_: str,
                 defs: str = "") -> str:
    """A module whose spec starts in the initial state of one walk (``twalk``) and must take each
    recorded step: the model's ``next_`` to a state for which ``matches(view, "'")`` holds.
    ``TraceEnd`` is violated in every walk the model followed to its end (TLC 2.15 has no
    postconditions, so acceptance is a violation). ``matches(view, prime)``: a TLA+ formula saying
    the model's (primed or unprimed) variables equal the recorded view."""
    inits = "\n    [] ".join(f"wk = {j} -> {matches(walk[0], '')}" for j, walk in enumerate(walks, 1))
    arms = [f"wk = {j} /\\ k = {k} -> {matches(v, chr(39))}" for j, walk in enumerate(walks, 1) for k, v in enumerate(walk[1:], 2)]
    steps = "\n    [] ".join(arms + ["OTHER -> FALSE"])
    lengths = "<<" + ", ".join(str(len(w)) for w in walks) + ">>"
    return f"""---- MODULE {name} ----
\\* GENERATED: {len(walks)} walk(s) of the reference; TLC finds the model taking them or not.
EXTENDS {extends}
VARIABLES twalk, tstep
{defs}
Lengths == {lengths}
InitOf(wk) ==
    CASE {inits}
StepTo(wk, k) ==
    CASE {steps}
TraceInit == twalk \\in 1..{len(walks)} /\\ tstep = 1 /\\ {init} /\\ InitOf(twalk)
TraceNext == tstep < Lengths[twalk] /\\ {next_} /\\ tstep' = tstep + 1 /\\ UNCHANGED twalk /\\ StepTo(twalk, tstep + 1)
TraceSpec == TraceInit /\\ [][TraceNext]_<<{vars_}, twalk, tstep>>
TraceEnd == tstep < Lengths[twalk]
====
"""


def trace_cfg(constants: list[str]) -> str:
    """The cfg of a :func:`trace_module`: ``constants`` are ``    Name = value`` lines."""
    return "CONSTANTS\n" + "\n".join(constants) + "\nSPECIFICATION TraceSpec\nINVARIANT TraceEnd\n"


def unfollowed_walks(model_path: str, name: str, module: str, cfg: str, count: int, *, timeout: float = 120,
                     java_opts=("-XX:TieredStopAtLevel=1",)) -> list[int]:
    """The walks (numbered from 1) the model could NOT follow to their end; empty: every walk agrees."""
    from rmkit.tlc.result import ERROR
    result = run_generated(model_path, name, module, cfg, deadlock_check=False, timeout=timeout,
                           continue_after_violation=True, max_traces=None, java_opts=java_opts)
    if result.verdict == ERROR or not result.complete:
        raise RuntimeError(result.error.message if result.error else "TLC did not finish")
    followed = {cex.states[-1].values["twalk"] for cex in result.counterexamples}
    return [j for j in range(1, count + 1) if j not in followed]
