"""Lines of an RMB message log (rmkit-rmb-log/1) decoded into records, and the record key that
groups them (the request's uid) for the checker and for its shares.

The field table is read from spec/schema/rmb-log.schema.json (one fact, one place); a line that
breaks it is an input problem naming the field, counted and reported, never judged."""

from __future__ import annotations

import functools
import json
from typing import Any

import orjson

from rmkit.specload import spec_root
from rmkit.protocol import RecordKey

_PY_TYPES = {"string": (str,), "number": (int, float), "integer": (int,), "null": (type(None),), "object": (dict,),
             "array": (list,), "boolean": (bool,)}


class Rec:
    """One log line: where it is (ref: input index << REF_LINE_BITS | line) and what it says."""

    __slots__ = ("ref", "time", "who", "twin", "event", "queue", "endpoint", "status", "peer", "uid", "msg", "note")

    def __init__(self, ref: int, obj: dict[str, Any]):
        self.ref = ref
        self.time = float(obj["time"])
        self.who = obj["who"]
        self.twin = twin_of(self.who)
        self.event = obj["event"]
        self.queue = obj["queue"]
        self.endpoint = obj["endpoint"]
        self.status = obj["status"]
        self.peer = obj["peer"]
        self.uid = obj["uid"]
        self.msg = obj["message"]
        self.note = obj["note"]

    def __getstate__(self):
        return tuple(getattr(self, k) for k in self.__slots__)

    def __setstate__(self, state):
        for k, v in zip(self.__slots__, state):
            setattr(self, k, v)


# a twin id is a 32-bit unsigned number: at most 10 decimal digits
TWIN_DIGITS = 10


def twin_number(text: str) -> int | None:
    """``text`` read as a twin id, else None: digits 0-9 only (``str.isdigit`` also takes other
    scripts' digits, which int() refuses), at most TWIN_DIGITS of them (int() refuses a number
    beyond 4,300 digits)."""
    if 0 < len(text) <= TWIN_DIGITS and text.isascii() and text.isdigit():
        return int(text)
    return None


def shown(text: str, n: int = 40) -> str:
    """``text`` as an error message quotes it: its first ``n`` characters, an ellipsis when cut."""
    return repr(text[:n]) + ("…" if len(text) > n else "")


def _twin_of(who: str) -> int | None:
    return twin_number(who[5:]) if who.startswith("twin-") else None


_TWINS: dict[str, int | None] = {}  # writer -> its twin: a log has few writers and many lines


def twin_of(who: str) -> int | None:
    """The twin a line's writer is (``twin-N``), None for a recorder."""
    try:
        return _TWINS[who]
    except KeyError:
        twin = _twin_of(who)
        if len(_TWINS) < 100_000:
            _TWINS[who] = twin
        return twin


def _who_problem(who: str) -> str | None:
    """A writer named as a twin whose number is no twin id (decode refuses the line)."""
    if who.startswith("twin-") and who[5:].isdigit() and _twin_of(who) is None:
        return f"expected twin-N with N a twin id (at most {TWIN_DIGITS} digits 0-9) or a recorder's name, found {shown(who)}"
    return None


def _peer_problem(peer: Any) -> str | None:
    """A peer named as ``N@address`` whose N looks like a number but is no twin id (decode refuses
    the line: the RMB-FWD-001 check compares that N with the copy's destination)."""
    if isinstance(peer, str) and "@" in peer:
        head = peer.split("@", 1)[0]
        if head.isdigit() and twin_number(head) is None:
            return f"expected N@address with N a twin id (at most {TWIN_DIGITS} digits 0-9), found {shown(peer)}"
    return None


def _line_problem(obj: dict) -> tuple[str, str] | None:
    """(error, field) of a record whose fields have their types but name no twin where they should."""
    bad = _who_problem(obj["who"])
    if bad:
        return bad, "who"
    bad = _peer_problem(obj["peer"])
    return (bad, "peer") if bad else None


@functools.lru_cache(maxsize=None)
def _field_table() -> tuple[tuple[str, tuple, frozenset | None], ...]:
    schema = json.loads((spec_root() / "schema" / "rmb-log.schema.json").read_text(encoding="utf-8"))
    out = []
    for name in schema["required"]:
        prop = schema["properties"][name]
        if "const" in prop:
            out.append((name, (), frozenset([prop["const"]])))
        elif "enum" in prop:
            out.append((name, (), frozenset(prop["enum"])))
        else:
            kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
            out.append((name, tuple(t for k in kinds for t in _PY_TYPES[k]), None))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _known_fields() -> frozenset:
    return frozenset(name for name, _, _ in _field_table())


def decode(line: bytes | str) -> tuple[dict | None, str | None, str | None]:
    """(record object, error, field): the object when the line is a valid log record."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON ({exc})"[:200], None
    if type(obj) is not dict:
        return None, f"expected a JSON object (a log record), found {type(obj).__name__}", None
    if obj.keys() == _known_fields():  # the common case: every field there, none else; check the values only
        for name, types, allowed in _field_table():
            value = obj[name]
            if (value not in allowed if allowed is not None and type(value) is str else
                    allowed is not None or type(value) not in types):
                break
        else:
            bad = _line_problem(obj)
            return (None, *bad) if bad else (obj, None, None)
    for name, types, allowed in _field_table():
        if name not in obj:
            return None, f"missing field {name!r} of rmkit-rmb-log/1", name
        value = obj[name]
        if allowed is not None:
            if not isinstance(value, str) or value not in allowed:
                shown = sorted(allowed) if len(allowed) < 4 else "the log schema's list"
                return None, f"expected one of {shown}, found {value!r}"[:200], name
        elif not isinstance(value, types) or (type(value) is bool):
            return None, f"expected {'/'.join(sorted({t.__name__ for t in types}))}, found {type(value).__name__} {value!r}"[:200], name
    extra = obj.keys() - _known_fields()
    if extra:
        name = sorted(extra)[0]
        return None, f"unknown field {name!r} (rmkit-rmb-log/1 has no other fields)", name
    bad = _line_problem(obj)
    return (None, *bad) if bad else (obj, None, None)


# msgspec reads an integer beyond 64 bits as an int, orjson (the general path, which the rules were
# written against) as a float: a message holding one, or holding objects or arrays within arrays
# (not looked into here), takes the general path.
_INT_LOW, _INT_HIGH = -(1 << 63), (1 << 64) - 1


def _plain_message(msg: dict) -> bool:
    """Whether every integer in ``msg`` is within 64 bits (looked for at its top level and in its
    arrays; a nested object makes it not plain)."""
    for v in msg.values():
        t = type(v)
        if t is int:
            if not _INT_LOW <= v <= _INT_HIGH:
                return False
        elif t is list:
            for x in v:
                tx = type(x)
                if tx is int:
                    if not _INT_LOW <= x <= _INT_HIGH:
                        return False
                elif tx is list or tx is dict:
                    return False
        elif t is dict:
            return False
    return True


# the request's uid: the line's, else its message's (a line of a request's life names it); lower case.
# The checker groups records by it and ``--jobs`` and ``rmkit audit`` deal them out by it: one key.
RECORD_KEY = RecordKey((("uid",), ("message", "uid")), fold_case=True)
record_key = RECORD_KEY.of_object
