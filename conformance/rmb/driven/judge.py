"""What the protocol allows a daemon to do in one act, per profile, and the verdicts per rule.

Why a judge of bounds and not a replay of the reference: the documents leave choices
(``spec/rmb/freedoms.yaml``): the uid, the worker count and so the order of deliveries, the order of
replies on ret, the pacing of retries, the words of errors, re-stamping ``now``. The judge derives
from behaviour.yaml what must happen (how many attempts an answer plan allows, which status a
refused request gets, which queue a reply lands on) and checks only that; every check names the
rule it stands for, so per-rule verdicts come from what was seen, never from a declaration.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from rmkit.protocols.rmb.model import message_problems, rmb_spec


@dataclass
class Check:
    """One judged fact of an act: ``rule`` held (ok) or not, with what was found."""

    rule: str
    ok: bool
    detail: str

    def as_dict(self) -> dict:
        return {"rule": self.rule, "ok": self.ok, "detail": self.detail}


@dataclass
class ActResult:
    act: dict
    checks: list[Check] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    def check(self, rule: str, ok: bool, detail: str) -> bool:
        self.checks.append(Check(rule, bool(ok), detail))
        return bool(ok)


class Rules:
    """The rule set's modes for one profile: which rules are judged and which failures fail."""

    def __init__(self, profile: str):
        self.spec = rmb_spec()
        self.profile = profile

    def mode(self, rule: str) -> str:
        return self.spec.mode(rule, self.profile)

    def title(self, rule: str) -> str:
        return self.spec.rules[rule].title

    def advice(self, rule: str) -> str:
        return self.spec.rules[rule].advice

    def severity(self, rule: str) -> str:
        return self.spec.rules[rule].severity


def attempts_allowed(b: dict, tries: int) -> int:
    """try clamped to the profile's bounds (RMB-RETRY-001)."""
    bounds = b["try_bounds"]
    n = max(int(tries or 0), bounds["min"])
    return min(n, bounds["max"]) if bounds["max"] else n


def accepted_answer(answer: str) -> bool:
    return answer in ("accept", "slow")


def retryable(b: dict, answer: str) -> bool:
    """Whether a failed attempt answered so is retried (RMB-RETRY-003: connection errors; rmb-go any)."""
    if accepted_answer(answer):
        return False
    return answer == "close" or b["retry_on"] == "any"


def planned_attempts(b: dict, plan: list[str], tries: int) -> tuple[int, bool]:
    """(attempts the daemon must make, whether the last one is accepted) for an answer plan."""
    total = attempts_allowed(b, tries)
    for k in range(1, total + 1):
        answer = plan[min(k - 1, len(plan) - 1)]
        if accepted_answer(answer):
            return k, True
        if not retryable(b, answer) or k == total:
            return k, False
    return total, False  # unreachable: total >= 1


def sig_rule(problem: str) -> str:
    """The rule a signature problem of a daemon's own POST breaks."""
    return "RMB-SIG-001" if problem.startswith("RMB-SIG-001") else "RMB-SIG-006"


def schema_rule(msg) -> tuple[str, str] | None:
    problems = message_problems(msg)
    if not problems:
        return None
    rule, fld, what = problems[0]
    return rule, f"field {fld}: {what}"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
