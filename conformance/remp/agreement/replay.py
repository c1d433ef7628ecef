"""Model -> reference: replay behaviours of the TLA+ model into the reference machines.

TLC's simulation mode draws random behaviours of the model bound to a scenario
(:func:`.modules.simulation_module`); every state records the step just taken (the model's
``last`` variable). Each step is applied to the reference machines through the :mod:`.harness`,
and every honest validator's status and the full node's must then equal the model's. The first
difference is a :class:`Disagreement`: the step, both sides' statuses, and a JSON fixture that
:func:`replay_fixture` reruns without TLC.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from rmkit.conformance.disagreement import Disagreement as BaseDisagreement
from rmkit.tlc import run_tlc
from rmkit.tlc.result import ERROR, STATE

from . import modules, receipts
from .harness import Harness, Scenario, StepMismatch


class SimulationFailed(Exception):
    """TLC gave no behaviours (an error verdict)."""


def _plain(v):
    if isinstance(v, bool):
        return v
    return int(v) if isinstance(v, int) else str(v)


def normalize_step(last: dict) -> dict:
    """The model's ``last`` record as the harness takes it: plain strings and ints, ``to`` as a
    frozenset, ``res`` as a dict (TLC prints the empty function as ``<<>>``)."""
    step = {}
    for k, v in last.items():
        if k == "res":
            step[k] = {str(a): str(b) for a, b in v.items()} if isinstance(v, dict) else {}
        elif k == "to":
            step[k] = frozenset(str(x) for x in v)
        elif k == "r":
            step[k] = {str(a): _plain(b) for a, b in v.items()}
        else:
            step[k] = _plain(v)
    return step


def model_statuses(values: dict, sc: Scenario) -> dict:
    vs, fn = values["vs"], values["fn"]
    return {"pos": {v: {m: str(vs[v][m]["pos"]) for m in sc.msgs} for v in sc.honest},
            "fn": {m: str(fn[m]) for m in sc.msgs}}


@dataclass
class Disagreement(BaseDisagreement):
    """The reference machines and the model part at ``step`` (1-based) of a behaviour; REMP's
    also keeps the model's statuses and receipts after each of the steps that led there, and the
    receipts the reference sent at each."""

    expected: list = field(default_factory=list)  # the model's statuses (and receipts) after each step
    sent: list = field(default_factory=list)  # the reference's receipts at each step (None: refused)

    def render(self) -> str:
        lines = [f"step {self.step}: {receipts.event(self.action)}", f"  {self.reason}",
                 "  events, with the receipts each side sent:"]
        for n, (st, want) in enumerate(zip(self.steps, self.expected), 1):
            got = self.sent[n - 1] if n - 1 < len(self.sent) else None
            mine = want.get("receipts")
            same = mine is not None and got is not None and mine == got
            lines.append(f"    {n:3} {receipts.event(st)}")
            if same:
                lines.append(f"        both:      {receipts.listing(mine)}")
            else:
                lines.append(f"        model:     {receipts.listing(mine) if mine is not None else '(not recorded)'}")
                lines.append(f"        reference: {receipts.listing(got)}")
        mine = self.model.get("receipts")
        got = self.sent[-1] if len(self.sent) == self.step else None
        if mine is not None and got is not None and mine != got:
            lines.append(f"  first difference: {receipts.first_difference(mine, got)}")
        if self.reference is not None:
            for who in sorted(set(self.model["pos"]) | {"fn"}):
                mod = self.model["fn"] if who == "fn" else self.model["pos"][who]
                ref = self.reference["fn"] if who == "fn" else self.reference["pos"].get(who)
                mark = "  " if mod == ref else "!="
                lines.append(f"  {mark} {who:9} model {mod}  reference {ref}")
        return "\n".join(lines)

    def fixture(self, sc: Scenario, profile: str = "spec") -> dict:
        return {"scenario": {"validators": list(sc.validators), "faulty": list(sc.faulty), "msgs": list(sc.msgs),
                             "members": [list(m) for m in sc.members], "min_fanout": sc.min_fanout},
                "profile": profile,
                "steps": [_jsonable(s) for s in self.steps], "expected": self.expected, "reason": self.reason}


def _jsonable(step: dict) -> dict:
    return {k: sorted(v) if isinstance(v, frozenset) else v for k, v in step.items()}


def replay(sc: Scenario, steps: list, expected: list, profile: str = "spec") -> Optional[Disagreement]:
    """Apply ``steps`` to fresh reference machines of ``profile``; after each, compare the
    statuses and the receipts the step sent (kind, block, source) with ``expected`` (``{"pos",
    "fn", "receipts"}``, the model's)."""
    h = Harness(sc, profile=profile)
    sent: list = []
    for i, (step, want) in enumerate(zip(steps, expected), 1):
        try:
            h.apply(step)
        except StepMismatch as e:
            sent.append(None)
            return Disagreement(i, step, want, None, f"the reference cannot take this step: {e}", steps[:i],
                                expected[:i], sent)
        got = h.statuses()
        said = h.step_receipts()
        sent.append(said)
        if said != want["receipts"]:
            return Disagreement(i, step, want, got, "receipts differ", steps[:i], expected[:i], sent)
        if got != {"pos": want["pos"], "fn": want["fn"]}:
            return Disagreement(i, step, want, got, "statuses differ", steps[:i], expected[:i], sent)
    return None


def steps_of(states: list) -> list:
    """The model's steps of one TLC behaviour (its ``last`` records, the initial state left out)."""
    return [normalize_step(s.values["last"]) for s in states if s.marker == STATE][1:]


def replay_behaviour(sc: Scenario, states: list, profile: str = "spec") -> Optional[Disagreement]:
    """Replay one TLC behaviour (its states, the first being initial) into ``profile``'s machines."""
    real = [s for s in states if s.marker == STATE]
    steps = steps_of(states)
    expected = [dict(model_statuses(s.values, sc), receipts=receipts.from_tlc(s.values.get("out")))
                for s in real[1:]]
    return replay(sc, steps, expected, profile)


def simulate(sc: Scenario, *, traces: int, depth: int, seed: int, timeout: float = 300,
             profile: str = "spec") -> list:
    """Draw up to ``traces`` random behaviours of ``depth`` steps (fewer if the model stops)."""
    return [c.trace for c in draw(sc, traces=traces, depth=depth, seed=seed, timeout=timeout, profile=profile)]


def draw(sc: Scenario, *, traces: int, depth: int, seed: int, timeout: float = 300, profile: str = "spec",
         extra: str = "", invariants: tuple = ()) -> list:
    """The behaviours as TLC's counterexamples (each names what ended it: the depth, a deadlock,
    or one of ``invariants``, defined in ``extra``, broken on the way)."""
    module, cfg = modules.simulation_module(sc, depth, profile=profile, extra=extra, invariants=invariants)
    with tempfile.TemporaryDirectory(prefix="rmkit-sim-") as tmp:
        folder = Path(tmp)
        modules.write(folder, "REMPSim", module, cfg, profile)
        result = run_tlc(folder, "REMPSim", "REMPSim.cfg", simulate_depth=depth + 1, seed=seed,
                         continue_after_violation=True, max_traces=traces, timeout=timeout)
    if result.verdict == ERROR:
        raise SimulationFailed(result.error.message if result.error else "TLC error")
    return result.counterexamples


def replay_fixture(path: Path) -> Optional[Disagreement]:
    """Rerun a saved disagreement (or any saved behaviour) against the reference machines."""
    doc = json.loads(Path(path).read_text())
    s = doc["scenario"]
    sc = Scenario(tuple(s["validators"]), tuple(s["faulty"]), tuple(s["msgs"]),
                  tuple(tuple(m) for m in s["members"]), s["min_fanout"])
    steps = [{k: frozenset(v) if k == "to" else v for k, v in st.items()} for st in doc["steps"]]
    return replay(sc, steps, doc["expected"], doc.get("profile", "spec"))
