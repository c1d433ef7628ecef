"""The JSON form of the adapter protocol's events and outputs, read from ``spec/remp/adapter.yaml``.

Why spec-driven: the vocabulary an implementation speaks is the spec's, not this module's. Each
event or output type of the YAML names its fields and their types; this codec turns the reference
machines' frozen values (``protocols/remp/events.py``) into JSON objects and back by those
declarations, and a test keeps the YAML and the dataclasses equal field by field. Decoding is strict:
a missing or mistyped field is a :class:`WireError` that says which type, which field, what was
expected and what was found, so a broken adapter learns exactly what to fix.
"""

from __future__ import annotations

import functools
import re
from dataclasses import fields as dc_fields
from typing import Any

from rmkit.protocols.remp import events as ev
from rmkit.specload import load_protocol_spec

HEX64 = re.compile(r"^[0-9a-f]{64}$")
# the integers the wire can carry: 64 bits, signed or unsigned (a shard is an unsigned 64-bit value);
# a Python implementation can hand over any int, and one beyond these is no JSON the kit can log
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1
INT_EXPECTED = "an integer of at most 64 bits (-2**63 .. 2**64-1)"
# adapter.yaml type name -> the reference machines' class, where the names differ
CLASS_NAMES = {"Outcome": "ConsumerOutcome"}
TYPE_NAMES = {v: k for k, v in CLASS_NAMES.items()}
# the tuple-shaped fields of the machines' values, as JSON objects
FULL_KEYS = ("msg_id", "uid", "origin_session")
DIGEST_KEYS = ("msg_id", "status", "block_root", "origin_session")


class WireError(ValueError):
    """A JSON event or output that does not match the adapter protocol."""


@functools.lru_cache(maxsize=None)
def adapter_spec() -> dict:
    return load_protocol_spec("remp")["adapter"]


@functools.lru_cache(maxsize=None)
def _tables() -> tuple[dict, dict]:
    """(type name -> (class, {field: type})) for events and for outputs."""
    spec = adapter_spec()
    out = []
    for part in ("events", "outputs"):
        table = {}
        for name, decl in spec[part].items():
            cls = getattr(ev, CLASS_NAMES.get(name, name))
            table[name] = (cls, decl["fields"])
        out.append(table)
    return out[0], out[1]


def class_of(name: str):
    ev_t, out_t = _tables()
    return (ev_t.get(name) or out_t.get(name))[0]


def type_name(value) -> str:
    name = type(value).__name__
    return TYPE_NAMES.get(name, name)


# ---- to JSON ------------------------------------------------------------------------------------
def _block_json(b: ev.BlockRef | None):
    if b is None:
        return None
    return {"wc": b.wc, "shard": b.shard, "seqno": b.seqno, "root_hash": b.root_hash, "file_hash": b.file_hash}


def _receipt_json(r: ev.Receipt) -> dict:
    return {"kind": r.kind, "msg_id": r.msg_id, "source_id": r.source_id, "time": r.time,
            "block": _block_json(r.block), "mc_block": _block_json(r.mc_block), "error": r.error,
            "sent_to": r.sent_to, "total_validators": r.total_validators}


def _value_json(ftype: str, v):
    base = ftype.rstrip("?")
    if v is None:
        return None
    if base == "block":
        return _block_json(v)
    if base in ("ids", "strs"):
        return list(v)
    if base == "full":
        return [dict(zip(FULL_KEYS, t)) for t in v]
    if base == "digests":
        return [dict(zip(DIGEST_KEYS, t)) for t in v]
    if base == "receipt":
        return _receipt_json(v)
    if base == "receipts":
        return [_receipt_json(r) for r in v]
    if base == "record":
        return to_json(v)
    return v


def to_json(value) -> dict:
    """An event or output value as its JSON object (``{"type": NAME, field: value, ...}``)."""
    name = type_name(value)
    if isinstance(value, ev.Receipt):  # the Receipt output wraps the machine's receipt value
        return {"type": "Receipt", "receipt": _receipt_json(value)}
    plan = _TO_PLANS.get(name) or _to_plan(name)
    out = {"type": name}
    for f, ftype, plain in plan:
        v = getattr(value, f)
        out[f] = v if plain else _value_json(ftype, v)
    return out


_TO_PLANS: dict = {}  # type name -> ((field, type, whether its value is its JSON), ...)
_PLAIN = frozenset({"int", "int?", "str", "str?", "bool", "bool?", "id", "id?", "object", "object?"})


def _to_plan(name: str) -> tuple:
    ev_t, out_t = _tables()
    entry = ev_t.get(name) or out_t.get(name)
    if entry is None:
        raise WireError(f"{name}: not a type of the adapter protocol (spec/remp/adapter.yaml)")
    plan = _TO_PLANS[name] = tuple((f, ftype, ftype in _PLAIN) for f, ftype in entry[1].items())
    return plan


# ---- from JSON ----------------------------------------------------------------------------------
def _fail(where: str, expected: str, found) -> WireError:
    shown = repr(found) if not isinstance(found, (dict, list)) or len(repr(found)) < 80 else repr(found)[:77] + "..."
    return WireError(f"{where}: expected {expected}, found {shown}")


def _block(where: str, v) -> ev.BlockRef:
    if not isinstance(v, dict):
        raise _fail(where, "a block {wc, shard, seqno, root_hash, file_hash}", v)
    for k in ("wc", "shard", "seqno"):
        if not isinstance(v.get(k), int) or isinstance(v.get(k), bool):
            raise _fail(f"{where}.{k}", "an integer", v.get(k))
        if not INT_MIN <= v[k] <= INT_MAX:
            raise _fail(f"{where}.{k}", INT_EXPECTED, v[k])
    for k in ("root_hash", "file_hash"):
        if not isinstance(v.get(k), str) or not HEX64.match(v[k]):
            raise _fail(f"{where}.{k}", "64 lowercase hex digits", v.get(k))
    return ev.BlockRef(v["wc"], v["shard"], v["seqno"], v["root_hash"], v["file_hash"])


def _receipt(where: str, v) -> ev.Receipt:
    if not isinstance(v, dict):
        raise _fail(where, "a receipt object {kind, msg_id, source_id, time, ...}", v)
    args = []  # in the declared order, the class's
    for f, ftype, simple in _receipt_plan():
        x = v.get(f)
        if simple is not None and (type(x) is simple and (simple is not int or INT_MIN <= x <= INT_MAX)
                                   or (x is None and ftype[-1] == "?")):
            args.append(x)
        elif (fast := _FAST.get(ftype)) is not None and (y := fast(x)) is not _SLOW:
            args.append(y)
        else:
            args.append(_field(f"{where}.{f}", ftype, x, f in v))
    return ev.Receipt(*args)


@functools.lru_cache(maxsize=None)
def _receipt_plan() -> tuple:
    return tuple((f, ftype, _SIMPLE.get(ftype)) for f, ftype in adapter_spec()["types"]["Receipt"].items())


def _tuples(where: str, v, keys: tuple) -> tuple:
    if not isinstance(v, list):
        raise _fail(where, f"a list of {{{', '.join(keys)}}}", v)
    out = []
    for i, item in enumerate(v):
        if not isinstance(item, dict) or "msg_id" not in item:
            raise _fail(f"{where}[{i}]", f"an object {{{', '.join(keys)}}}", item)
        out.append(tuple(item.get(k) for k in keys))
    return tuple(out)


def _field(where: str, ftype: str, v, present: bool):
    optional = ftype.endswith("?")
    base = ftype.rstrip("?")
    if v is None:
        if optional:
            return None
        if not present:
            raise WireError(f"{where}: missing (expected {base})")
        raise _fail(where, base, v)
    if base == "int":
        if not isinstance(v, int) or isinstance(v, bool):
            raise _fail(where, "an integer", v)
        if not INT_MIN <= v <= INT_MAX:
            raise _fail(where, INT_EXPECTED, v)
        return v
    if base == "str":
        if not isinstance(v, str):
            raise _fail(where, "a string", v)
        return v
    if base == "bool":
        if not isinstance(v, bool):
            raise _fail(where, "true or false", v)
        return v
    if base == "id":
        if not isinstance(v, str) or not HEX64.match(v):
            raise _fail(where, "an id of 64 lowercase hex digits", v)
        return v
    if base in ("ids", "strs"):
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise _fail(where, "a list of strings", v)
        return tuple(v)
    if base == "block":
        return _block(where, v)
    if base == "full":
        return _tuples(where, v, FULL_KEYS)
    if base == "digests":
        return _tuples(where, v, DIGEST_KEYS)
    if base == "receipt":
        return _receipt(where, v)
    if base == "receipts":
        if not isinstance(v, list):
            raise _fail(where, "a list of receipts", v)
        return tuple(_receipt(f"{where}[{i}]", r) for i, r in enumerate(v))
    if base == "record":
        return from_json(v, where=where, part="events", only="CatchainRecord")
    if base == "object":
        if not isinstance(v, dict):
            raise _fail(where, "a JSON object", v)
        return v
    raise WireError(f"{where}: unknown field type {ftype!r} in spec/remp/adapter.yaml")


def from_json(obj: Any, where: str = "", part: str = "", only: str | None = None):
    """The value a JSON event or output stands for; ``part``: ``events`` or ``outputs`` (both when
    empty). Raises :class:`WireError` naming the type and field at fault."""
    if not isinstance(obj, dict):
        raise _fail(where or "value", 'a JSON object with a "type"', obj)
    name = obj.get("type") if only is None else only
    try:
        cls, plan = _PLANS[(part, name)]
    except (KeyError, TypeError):
        cls, plan = _plan_for(part, name, where)
    where = where or str(name)
    if plan is None:  # a Receipt output wraps its receipt
        return _receipt(f"{where}.receipt", obj.get("receipt"))
    args = []  # in the declared order, which is the class's (a test holds the two equal)
    add = args.append
    for f, ftype, simple in plan:
        v = obj.get(f)
        if simple is not None and (type(v) is simple and (simple is not int or INT_MIN <= v <= INT_MAX)
                                   or (v is None and ftype[-1] == "?")):
            add(v)  # the common case, checked at once (the same verdict _field gives it)
        elif (fast := _FAST.get(ftype)) is not None and (x := fast(v)) is not _SLOW:
            add(x)
        else:
            add(_field(f"{where}.{f}", ftype, v, f in obj))
    return cls(*args)


_PLANS: dict = {}  # (part, type name) -> (class, plan): decoding runs for every event and output of every step


def _plan_for(part: str, name, where: str) -> tuple:
    ev_t, out_t = _tables()
    tables = {"events": (ev_t,), "outputs": (out_t,)}.get(part, (ev_t, out_t))
    entry = next((t[name] for t in tables if name in t), None) if isinstance(name, str) else None
    if entry is None:
        known = sorted(k for t in tables for k in t)
        raise _fail(f"{where or name}.type", f"one of {', '.join(known)}", name)
    cls, decl = entry
    plan = None if cls is ev.Receipt and part != "events" else \
        tuple((f, ftype, _SIMPLE.get(ftype)) for f, ftype in decl.items())
    _PLANS[(part, name)] = (cls, plan)
    return cls, plan


_SLOW = object()
_SEEN_MAX = 4096  # ids and blocks remembered as well-formed (a scenario uses a few dozen)
_seen_ids: set = set()
_seen_blocks: dict = {}


def _fast_id(v):
    """``v`` when it is an id already seen well-formed, or is one; else _SLOW (:func:`_field` then
    says what is wrong): ids recur in every step, and the pattern is the dearest part of a check."""
    if type(v) is not str:
        return _SLOW
    if v not in _seen_ids:
        if not HEX64.match(v):
            return _SLOW
        if len(_seen_ids) >= _SEEN_MAX:
            _seen_ids.clear()
        _seen_ids.add(v)
    return v


def _fast_block(v):
    """The BlockRef of a block already seen well-formed (the same value :func:`_block` makes, which
    is immutable, so it is shared), or None; else _SLOW."""
    if v is None:
        return None
    if type(v) is not dict or len(v) != 5:
        return _SLOW
    key = (v.get("wc"), v.get("shard"), v.get("seqno"), v.get("root_hash"), v.get("file_hash"))
    try:
        b = _seen_blocks.get(key)
    except TypeError:  # an unhashable field: not a block
        return _SLOW
    if b is None or type(key[0]) is not int or type(key[1]) is not int or type(key[2]) is not int:
        if b is not None:
            return _SLOW  # equal to a block seen, yet of other types (True == 1)
        try:
            b = _block("", v)
        except WireError:
            return _SLOW
        if len(_seen_blocks) >= _SEEN_MAX:
            _seen_blocks.clear()
        _seen_blocks[key] = b
    return b


def _fast_block_required(v):
    return _SLOW if v is None else _fast_block(v)


def _fast_strs(v):
    if type(v) is not list:
        return _SLOW
    for x in v:
        if type(x) is not str:
            return _SLOW
    return tuple(v)


_FAST = {"id": _fast_id, "block?": _fast_block, "block": _fast_block_required, "ids": _fast_strs, "strs": _fast_strs}
_SIMPLE = {"int": int, "int?": int, "str": str, "str?": str, "bool": bool, "bool?": bool}


