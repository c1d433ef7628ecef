"""Receipts as the agreement compares them, and how a difference reads.

A receipt is abstracted to what both sides can say of it: its source (a validator's name, or the
full node), its message, its kind and the block it names (``0`` for none). The model's receipts of
a step are REMPSteps' ``Emitted`` and ``FnEmitted`` (TLC prints them in the generated modules'
``out`` variable); the reference's are what the machines sent (:meth:`.harness.Harness.step_receipts`).
Both are ``{"rc": [validators' receipts], "fr": [the full node's]}``, sorted; the full node's
source is the model's ``FullNode`` name, which the reference full node also goes by.
"""

from __future__ import annotations

from typing import Optional

from .harness import receipts_of

NONE: dict = {"rc": [], "fr": []}


def from_tlc(out: Optional[dict]) -> dict:
    """The model's receipts of a step from TLC's ``out`` value (plain strings and ints)."""
    if not out:
        return {"rc": [], "fr": []}
    return receipts_of([(role, {"src": str(r["src"]), "m": str(r["m"]), "k": str(r["k"]), "b": int(r["b"])})
                        for role in ("rc", "fr") for r in out[role]])


def line(r: dict) -> str:
    block = f" block {r['b']}" if r["b"] else ""
    return f"{r['src']} {r['k']} {r['m']}{block}"


def listing(receipts: Optional[dict]) -> str:
    if receipts is None:
        return "(did not take the event)"
    rs = receipts["rc"] + receipts["fr"]
    return "; ".join(line(r) for r in rs) if rs else "(none)"


def first_difference(model: dict, reference: dict) -> str:
    """The first receipt one side sent and the other did not, in the sorted order."""
    for key in ("rc", "fr"):
        a = [line(r) for r in model[key]]
        b = [line(r) for r in reference[key]]
        for x, y in zip(a, b):
            if x != y:
                return f"model {x}, reference {y}"
        if len(a) != len(b):
            extra = a[len(b)] if len(a) > len(b) else b[len(a)]
            who = "model" if len(a) > len(b) else "reference"
            return f"only the {who} sent {extra}"
    return "none"


def event(step: dict) -> str:
    """One event, short: ``Collate v1 {m1: acc}``."""
    rest = []
    for k, v in step.items():
        if k == "a":
            continue
        if isinstance(v, (set, frozenset)):
            v = "{" + ",".join(sorted(v)) + "}"
        rest.append(f"{k}={v}")
    return step["a"] + (" " + " ".join(rest) if rest else "")
