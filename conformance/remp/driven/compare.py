"""Compare one step's outputs with the reference's, up to what ``spec/remp/adapter.yaml`` leaves free.

Why a spec-level comparison: an implementation stamps its own clock, words its own error texts and
may emit the outputs of one event in another order; none of that is a conformance failure. What
stays is compared exactly: output types, receipts' kinds, sources, blocks, counts; collation order.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

import orjson

from rmkit.protocols.remp.adapterwire import adapter_spec

PRESENT = "<present>"


@functools.lru_cache(maxsize=None)
def _rules() -> tuple[frozenset, dict, dict]:
    cmp = adapter_spec()["comparison"]
    free = {t: tuple(tuple(p.split(".")) for p in paths) for t, paths in cmp["free"].items()}
    return frozenset(cmp["unordered"]), free, {t: tuple(f) for t, f in cmp["sets"].items()}


def normalize(output: dict) -> dict:
    """The output with its free fields reduced to presence and its set fields sorted."""
    _, free, sets = _rules()
    t = output.get("type")
    out = dict(output)
    for path in free.get(t, ()):
        holder = out
        for key in path[:-1]:
            inner = holder.get(key)
            if not isinstance(inner, dict):
                holder = None
                break
            holder[key] = inner = dict(inner)
            holder = inner
        if holder is not None and path[-1] in holder:
            holder[path[-1]] = PRESENT if holder[path[-1]] is not None else None
    for f in sets.get(t, ()):
        if isinstance(out.get(f), list):
            out[f] = sorted(out[f], key=lambda x: orjson.dumps(x, option=orjson.OPT_SORT_KEYS))
    return out


def _key(o: dict) -> bytes:
    return orjson.dumps(o, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True)
class Difference:
    """What one step's outputs lack (``missing``: the reference's) and add (``extra``: the
    implementation's), normalized; ``order``: the ordered outputs differ only in order."""

    missing: tuple
    extra: tuple
    order: bool = False

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.order)

    def summary(self) -> str:
        parts = []
        pairs = _pairs(self.missing, self.extra)
        if pairs:
            parts.extend(pairs)
        elif self.missing:
            parts.append("missing " + ", ".join(describe(o) for o in self.missing))
        if self.extra:
            parts.append("unexpected " + ", ".join(describe(o) for o in self.extra))
        if self.order:
            parts.append("outputs in another order than the spec prescribes (collation takes the oldest first)")
        return "; ".join(parts)


def describe(o: dict) -> str:
    """A short name of an output for messages: ``Receipt IncludedIntoBlock``, ``BlockRefused``..."""
    t = o.get("type", "?")
    if t in ("Receipt", "Publish") and isinstance(o.get("receipt"), dict):
        r = o["receipt"]
        return f"{t} {r.get('kind')} of {str(r.get('msg_id'))[:8]} from {r.get('source_id')}"
    if t == "CatchainBroadcast" and isinstance(o.get("record"), dict):
        return f"CatchainBroadcast {o['record'].get('kind')} of {str(o['record'].get('msg_id'))[:8]}"
    if t == "HandToCollator":
        return f"HandToCollator [{', '.join(str(m)[:8] for m in o.get('msg_ids') or [])}]"
    if t == "SendToValidator":
        return f"SendToValidator {str(o.get('msg_id'))[:8]} to {o.get('validator')}"
    if t == "BlockRefused":
        return f"BlockRefused of block {(o.get('block') or {}).get('seqno')} for [{', '.join(str(m)[:8] for m in o.get('msg_ids') or [])}]"
    if t == "Forwarded":
        full = ", ".join(str(x.get("msg_id"))[:8] for x in o.get("full") or [] if isinstance(x, dict))
        dig = ", ".join(str(x.get("msg_id"))[:8] for x in o.get("digests") or [] if isinstance(x, dict))
        return f"Forwarded {o.get('session')}->{o.get('to_session')} whole [{full}] as ids [{dig}]"
    if t == "Outcome":
        return f"Outcome {o.get('name')} (final={o.get('final')}, lost={o.get('lost')})"
    if "msg_id" in o:
        return f"{t} {str(o['msg_id'])[:8]}"
    return t


def _flat(o, prefix=""):
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _flat(v, f"{prefix}{k}.")
    else:
        yield prefix[:-1], o


def _pairs(missing, extra) -> list:
    """When one output of a type is missing and one of the same type came instead, the fields that
    differ (e.g. the validator of a SendToValidator), not two lines that look alike."""
    if len(missing) != 1 or len(extra) != 1 or missing[0].get("type") != extra[0].get("type"):
        return []
    e, a = dict(_flat(missing[0])), dict(_flat(extra[0]))
    diffs = [f"{k}: expected {e.get(k)!r}, found {a.get(k)!r}" for k in sorted(set(e) | set(a)) if e.get(k) != a.get(k)]
    return [f"{missing[0].get('type')} differs in " + "; ".join(diffs)] if diffs else []


NO_DIFFERENCE = Difference((), (), False)


def compare(expected: list, actual: list) -> Difference:
    """The difference between the reference's outputs and the implementation's for one step."""
    if expected == actual:
        return NO_DIFFERENCE  # equal outputs, in the same order: nothing to normalise
    unordered, _, _ = _rules()
    exp = [normalize(o) for o in expected]
    act = [normalize(o) for o in actual]
    e_bag = Counter(_key(o) for o in exp if o.get("type") in unordered)
    a_bag = Counter(_key(o) for o in act if o.get("type") in unordered)
    e_seq = [_key(o) for o in exp if o.get("type") not in unordered]
    a_seq = [_key(o) for o in act if o.get("type") not in unordered]
    missing = list((e_bag - a_bag).elements())
    extra = list((a_bag - e_bag).elements())
    order = False
    if e_seq != a_seq:
        ce, ca = Counter(e_seq), Counter(a_seq)
        missing += list((ce - ca).elements())
        extra += list((ca - ce).elements())
        order = ce == ca
    return Difference(tuple(orjson.loads(k) for k in missing), tuple(orjson.loads(k) for k in extra), order)
