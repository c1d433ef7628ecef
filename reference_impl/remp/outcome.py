"""The client-side outcome rules of ``spec/remp/outcomes.yaml``, evaluated.

Shared by the receipt consumer (the SDK-side reference machine) and the log checker, so both
conclude the same thing from the same receipts.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Collection, Iterable


def evaluate_outcome(outcome_rules, kinds_seen: Collection[str], queued_positions: Iterable[str],
                     set_size: int | None = None) -> tuple[str, bool]:
    """(outcome name, final?) for one message.

    ``outcome_rules``: the compiled list of ``(name, final, when)`` of a REMP model;
    ``kinds_seen``: kinds of every receipt seen for the message, as names, or as an int of
    ``KindInfo.bit`` flags (the checker's compact form; rules then carry an ``any_mask``);
    ``queued_positions``: current position of each validator that reported PutIntoQueue;
    ``set_size``: the size of the validator set where the client knows it (a rule with ``of_set``
    then needs every validator of the set among those counted: 000/001 "All validators must
    reject the message before it is finally rejected").
    """
    queued = list(queued_positions)
    for name, final, when in outcome_rules:
        if "any_kind" in when:
            if type(kinds_seen) is int:
                if not kinds_seen & when["any_mask"]:
                    continue
            elif not any(k in kinds_seen for k in when["any_kind"]):
                continue
        if "queued_all_in" in when:
            allowed = when["queued_all_in"]
            if not queued or not all(p in allowed for p in queued):
                continue
            if set_size and when.get("of_set") and len(queued) < set_size:
                continue
        if "queued_fraction_in" in when:
            q = when["queued_fraction_in"]
            if not queued:
                continue
            share = Fraction(sum(1 for p in queued if p in q["positions"]), len(queued))
            if share < q["at_least"]:
                continue
        return name, final
    return "pending", False
