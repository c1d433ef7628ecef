"""Reference -> model: does the TLA+ model admit a trace of the reference machines?

Each trace (steps from :mod:`.explore`, with the statuses the reference's receipts gave) becomes a
generated module (:func:`.modules.trace_module`) that TLC runs. Acceptance is TLC finding the
state where every step has been matched; a rejection names the first step the model could not
take with those statuses.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rmkit.tlc import run_tlc
from rmkit.tlc.result import DEADLOCK, INVARIANT, VIOLATION

from . import modules
from .harness import Scenario

ACCEPTED, REJECTED, ERROR = "accepted", "rejected", "error"


@dataclass
class TraceVerdict:
    """``accepted``: the model follows every step. ``rejected``: it cannot take step
    ``first_unmatched`` (1-based) with the recorded statuses. ``error``: TLC gave no verdict."""

    verdict: str
    steps: int
    seconds: float
    first_unmatched: Optional[int] = None
    action: Optional[dict] = None
    statuses: Optional[dict] = None
    message: str = ""

    def render(self) -> str:
        if self.verdict == ACCEPTED:
            return f"accepted: the model admits all {self.steps} steps ({self.seconds:.1f} s)"
        if self.verdict == REJECTED:
            return (f"rejected at step {self.first_unmatched} of {self.steps}: the model cannot take "
                    f"{self.action} reaching statuses {self.statuses}")
        return f"error: {self.message}"


def check_trace(sc: Scenario, steps: list, *, keep: Optional[Path] = None) -> TraceVerdict:
    """Let TLC validate ``steps`` against the model. ``keep``: also write the generated module
    and config there (for a regression or a bug report)."""
    start = time.perf_counter()
    module, cfg = modules.trace_module(sc, steps)
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / "REMPTrace.tla").write_text(module)
        (keep / "REMPTrace.cfg").write_text(cfg)
    with tempfile.TemporaryDirectory(prefix="rmkit-trace-") as tmp:
        folder = Path(tmp)
        modules.write(folder, "REMPTrace", module, cfg)
        result = run_tlc(folder, "REMPTrace", "REMPTrace.cfg", workers=1)
    seconds = time.perf_counter() - start
    if result.verdict == VIOLATION and result.kind == INVARIANT and result.name == "TraceNotMatched":
        return TraceVerdict(ACCEPTED, len(steps), seconds)
    if result.verdict == VIOLATION and result.kind == DEADLOCK:
        matched = result.trace[-1].values.get("i", len(result.trace) - 1) if result.trace else 0
        k = int(matched) + 1
        st = steps[k - 1]
        return TraceVerdict(REJECTED, len(steps), seconds, k, st.action, st.statuses)
    detail = result.error.message if result.error is not None else f"TLC verdict {result.verdict}"
    return TraceVerdict(ERROR, len(steps), seconds, message=detail)
