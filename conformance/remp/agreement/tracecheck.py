"""Reference -> model: does the TLA+ model admit a trace of the reference machines?

Each trace (events from :mod:`.explore`, with whether the reference took each one, the statuses
and the receipts it sent) becomes a generated module (:func:`.modules.trace_module`) that TLC runs.
Acceptance is TLC finding the state where every event has been matched. A rejection names the
first event where the two sides part; a second run lets the model take that event freely, so the
report shows what each side did there: the events that led to it with their receipts, each side's
receipts at it, and the first difference.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rmkit.tlc import run_tlc
from rmkit.tlc.result import DEADLOCK, INVARIANT, VIOLATION

from . import modules, receipts
from .harness import Scenario
from .replay import model_statuses

ACCEPTED, REJECTED, ERROR = "accepted", "rejected", "error"


@dataclass
class TraceVerdict:
    """``accepted``: the model follows every event. ``rejected``: the sides part at event
    ``first_unmatched`` (1-based). ``error``: TLC gave no verdict."""

    verdict: str
    steps: int
    seconds: float
    first_unmatched: Optional[int] = None
    action: Optional[dict] = None
    statuses: Optional[dict] = None
    message: str = ""
    trace: tuple = ()  # the walk's events up to the rejected one (TraceStep)
    model_can: Optional[bool] = None  # whether the model can take the rejected event
    model_receipts: Optional[dict] = None  # what it sends there, if it can
    model_statuses: Optional[dict] = None

    def render(self) -> str:
        if self.verdict == ACCEPTED:
            return f"accepted: the model admits all {self.steps} events ({self.seconds:.1f} s)"
        if self.verdict == ERROR:
            return f"error: {self.message}"
        k = self.first_unmatched
        last = self.trace[-1] if self.trace else None
        lines = [f"rejected at event {k} of {self.steps}: {receipts.event(self.action)}"]
        if last is not None:
            ref = "took it" if last.taken else "refused it"
            mod = {True: "can take it", False: "cannot take it", None: "(not probed)"}[self.model_can]
            lines.append(f"  the reference {ref}; the model {mod}")
            if last.taken and not last.quiet and self.model_can is not True:
                lines.append("  the reference posted a catchain record or sent a copy at it")
            lines.append("  events, with the receipts sent (both sides agree before the last):")
            for n, st in enumerate(self.trace, 1):
                flag = "" if st.taken else "  [refused by the reference]"
                lines.append(f"    {n:3} {receipts.event(st.action)}{flag}")
                lines.append(f"        reference: {receipts.listing(st.receipts if st.taken else None)}")
            if self.model_can is not None:
                mine = self.model_receipts if self.model_can else None
                lines.append(f"        model:     {receipts.listing(mine)}")
                if self.model_can and last.taken:
                    diff = receipts.first_difference(self.model_receipts, last.receipts)
                    if diff == "none" and self.model_statuses is not None:
                        diff = _status_difference(self.model_statuses, last.statuses)
                    lines.append(f"  first difference: {diff}")
        return "\n".join(lines)


def _status_difference(model: dict, reference: dict) -> str:
    for m, pos in model["fn"].items():
        if reference["fn"].get(m) != pos:
            return f"full node's status of {m}: model {pos}, reference {reference['fn'].get(m)}"
    for v, ms in model["pos"].items():
        for m, pos in ms.items():
            if reference["pos"].get(v, {}).get(m) != pos:
                return f"{v}'s status of {m}: model {pos}, reference {reference['pos'].get(v, {}).get(m)}"
    return "none (the receipts and statuses agree: a count differs)"


def _run(sc: Scenario, steps: list, probe: int = 0, keep: Optional[Path] = None, profile: str = "spec"):
    module, cfg = modules.trace_module(sc, steps, probe=probe, profile=profile)
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / "REMPTrace.tla").write_text(module)
        (keep / "REMPTrace.cfg").write_text(cfg)
    with tempfile.TemporaryDirectory(prefix="rmkit-trace-") as tmp:
        folder = Path(tmp)
        modules.write(folder, "REMPTrace", module, cfg, profile)
        return run_tlc(folder, "REMPTrace", "REMPTrace.cfg", workers=1)


def check_trace(sc: Scenario, steps: list, *, keep: Optional[Path] = None, probe: bool = True,
                profile: str = "spec") -> TraceVerdict:
    """Let TLC validate ``steps`` (a walk of ``profile``'s machines) against the model.
    ``keep``: also write the generated module and config there (for a regression or a bug
    report). ``probe``: on a rejection, ask the model what it does at the rejected event (one
    more TLC run)."""
    start = time.perf_counter()
    result = _run(sc, steps, keep=keep, profile=profile)
    if result.verdict == VIOLATION and result.kind == INVARIANT and result.name == "TraceNotMatched":
        return TraceVerdict(ACCEPTED, len(steps), time.perf_counter() - start)
    if result.verdict == VIOLATION and result.kind == DEADLOCK:
        matched = result.trace[-1].values.get("i", len(result.trace) - 1) if result.trace else 0
        k = int(matched) + 1
        st = steps[k - 1]
        v = TraceVerdict(REJECTED, len(steps), 0.0, k, st.action, st.statuses, trace=tuple(steps[:k]))
        if probe:
            _probe(sc, steps, k, v, profile)
        v.seconds = time.perf_counter() - start
        return v
    detail = result.error.message if result.error is not None else f"TLC verdict {result.verdict}"
    return TraceVerdict(ERROR, len(steps), time.perf_counter() - start, message=detail)


def _probe(sc: Scenario, steps: list, k: int, v: TraceVerdict, profile: str = "spec") -> None:
    """Fill in what the model does at event ``k`` (it follows events 1..k-1, then takes ``k`` freely)."""
    result = _run(sc, steps, probe=k, profile=profile)
    if not (result.verdict == VIOLATION and result.kind == INVARIANT and result.trace):
        return
    values = result.trace[-1].values
    out = values.get("out") or {}
    v.model_can = bool(out.get("can", False))
    v.model_receipts = receipts.from_tlc(out)
    v.model_statuses = model_statuses(values, sc)
