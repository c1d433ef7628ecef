"""Where a model and a reference implementation part, as the agreement checks (model -> reference)
report it: the step of the behaviour, both sides' states, and the steps that led there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


class SimulationFailed(Exception):
    """TLC gave no behaviours (an error verdict)."""


@dataclass
class Disagreement:
    step: int
    action: dict
    model: dict
    reference: Optional[dict]
    reason: str
    steps: list = field(default_factory=list)

    def render(self) -> str:
        lines = [f"step {self.step}: {self.action}: {self.reason}", "  steps: " + ", ".join(str(s) for s in self.steps)]
        if self.reference is not None:
            for key in self.model:
                mark = "  " if self.model[key] == self.reference.get(key) else "!="
                lines.append(f"  {mark} {key:9} model {self.model[key]}  reference {self.reference.get(key)}")
        return "\n".join(lines)
