"""Injectors: each plants one Corda rule's violation into a clean record log (spec/corda/records.yaml,
as a list of record dicts in log order: events, then the processed-ids export), and says what it
planted as (rule, message id) pairs, the ground truth a test compares the checker's findings with.

A planter picks a message the receiver handled plainly (one copy, answered NEW, committed,
acknowledged, its row exported) and changes what the rule is about, leaving everything else as it
was; it returns None where the log (or the profile) offers nothing to plant into, e.g. CORDA-DEDUP-004
where the profile acknowledges an IN_FLIGHT copy on purpose. The rules no planter plants, and why,
are each rule's ``not_planted`` in rules.yaml.
"""

from __future__ import annotations

import random
from typing import Callable

PLANTERS: dict[str, Callable] = {}  # rule id -> planter(lines, rng, spec) -> (lines, planted) | None


def plants(rule: str):
    def register(fn):
        PLANTERS[rule] = fn
        return fn

    return register


def _plain(lines: list[dict], rng: random.Random) -> str | None:
    """A message id the log shows handled plainly on one node: one copy, NEW, one commit, one ack, one
    row (None if no message was)."""
    per: dict[str, list] = {}
    for r in lines:
        if r.get("event") != "sent":
            per.setdefault(r["id"], []).append(r.get("event", "row"))
    plain = [mid for mid, kinds in per.items()
             if sorted(kinds) == ["acked", "committed", "dedup", "received", "row"]
             and len({r["node"] for r in lines if r["id"] == mid and r.get("event") != "sent"}) == 1
             and next(r for r in lines if r["id"] == mid and r.get("event") == "dedup")["verdict"] == "NEW"]
    return rng.choice(sorted(plain)) if plain else None


def _at(lines: list[dict], mid: str, event: str) -> int:
    return next(i for i, r in enumerate(lines) if r["id"] == mid and r.get("event", "row") == event)


def _copy_lines(lines, mid, after: int, delivery: str, verdict: str, then: str | None, **fields) -> list[dict]:
    """A new copy of ``mid`` received after line ``after``: received, answered, then ``then``."""
    rec = lines[_at(lines, mid, "received")]
    t, node = lines[after]["t"], rec["node"]
    new = [{"t": t, "node": node, "event": "received", "id": mid, "delivery": delivery, "sender": rec["sender"],
            "seq": None, "session": rec["session"], **fields},
           {"t": t, "node": node, "event": "dedup", "id": mid, "verdict": verdict, "delivery": delivery}]
    if then:
        new.append({"t": t, "node": node, "event": then, "id": mid, "delivery": delivery})
    return lines[:after + 1] + new + lines[after + 1:]


@plants("CORDA-ID-001")
def bad_id_format(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None:
        return None
    bad = "X-" + mid
    return [{**r, "id": bad} if r["id"] == mid else r for r in lines], [("CORDA-ID-001", bad)]


@plants("CORDA-ID-003")
def sequence_number_reused(lines, rng, spec):
    sends = [i for i, r in enumerate(lines) if r.get("event") == "sent" and r["seq"] is not None]
    pairs = [(i, j) for i in sends for j in sends if i < j and lines[i]["sender"] == lines[j]["sender"]
             and lines[i]["id"] != lines[j]["id"] and lines[i]["seq"] != lines[j]["seq"]]
    if not pairs:
        return None
    i, j = rng.choice(pairs)
    out = list(lines)
    out[j] = {**lines[j], "seq": lines[i]["seq"]}
    return out, [("CORDA-ID-003", lines[j]["id"])]


@plants("CORDA-DEDUP-001")
def committed_twice(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None:
        return None
    i = _at(lines, mid, "committed")
    top = max(r["tx"] for r in lines if "tx" in r)
    return lines[:i + 1] + [{**lines[i], "tx": top + 1}] + lines[i + 1:], [("CORDA-DEDUP-001", mid)]


@plants("CORDA-DEDUP-002")
def lost(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None or not any(r["id"] == mid and r.get("event") == "sent" for r in lines):
        return None
    return [r for r in lines if r["id"] != mid or r.get("event") == "sent"], [("CORDA-DEDUP-002", mid)]


@plants("CORDA-REDELIVER-001")
def never_redelivered(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None:
        return None
    return ([r for r in lines if r["id"] != mid or r.get("event", "row") in ("sent", "received", "dedup")],
            [("CORDA-REDELIVER-001", mid)])


@plants("CORDA-DEDUP-003")
def duplicate_dropped(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None:
        return None
    return _copy_lines(lines, mid, _at(lines, mid, "acked"), "planted-dup", "DUPLICATE", "discarded"), [("CORDA-DEDUP-003", mid)]


@plants("CORDA-DEDUP-004")
def in_flight_acked(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None or spec.consequence["IN_FLIGHT"] != "discard":
        return None
    return _copy_lines(lines, mid, _at(lines, mid, "dedup"), "planted-inflight", "IN_FLIGHT", "acked"), [("CORDA-DEDUP-004", mid)]


@plants("CORDA-DEDUP-005")
def row_missing(lines, rng, spec):
    mid = _plain(lines, rng)
    rows = [r for r in lines if "event" not in r]
    if mid is None or len({r["node"] for r in rows}) != 1 or len(rows) < 2:
        return None  # (with no row left, the export of that node was not given at all: nothing to judge)
    return [r for r in lines if r["id"] != mid or "event" in r], [("CORDA-DEDUP-005", mid)]


@plants("CORDA-DEDUP-006")
def new_without_mark(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None or not spec.fast_path:
        return None
    # a copy under a sender key that never had a commit: the fast path had no mark and answered NEW
    return (_copy_lines(lines, mid, _at(lines, mid, "acked"), "planted-nomark", "NEW", "acked", sender="planted-key", seq=1),
            [("CORDA-DEDUP-006", mid)])


@plants("CORDA-DEDUP-007")
def new_above_mark(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None or not spec.fast_path:
        return None
    rec = lines[_at(lines, mid, "received")]
    if rec["seq"] is None:
        return None
    # a copy of a committed id under its sender's key, numbered above the key's mark: NEW without a read
    return (_copy_lines(lines, mid, _at(lines, mid, "acked"), "planted-above", "NEW", "acked", seq=rec["seq"] + 10**9),
            [("CORDA-DEDUP-007", mid)])


@plants("CORDA-DEDUP-008")
def answered_copy_dropped(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None:
        return None
    i = _at(lines, mid, "acked")
    out = list(lines)
    out[i] = {**lines[i], "event": "discarded"}
    return out, [("CORDA-DEDUP-008", mid)]


@plants("CORDA-ACK-001")
def acked_before_commit(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None:
        return None
    i, j = _at(lines, mid, "committed"), _at(lines, mid, "acked")
    ack = {**lines[j], "t": lines[i]["t"]}
    out = [r for k, r in enumerate(lines) if k != j]
    return out[:i] + [ack] + out[i:], [("CORDA-ACK-001", mid)]


@plants("CORDA-ACK-002")
def row_of_another_transaction(lines, rng, spec):
    mid = _plain(lines, rng)
    if mid is None:
        return None
    i = _at(lines, mid, "row")
    out = list(lines)
    out[i] = {**lines[i], "tx": lines[i]["tx"] + 10**6}
    return out, [("CORDA-ACK-002", mid)]
