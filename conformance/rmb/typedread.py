"""The RMB log checker's common reading: a line decoded by msgspec straight into the record the
rules read (:class:`RmbRecord`: the attributes of :class:`rmkit.protocols.rmb.records.Rec`), so
that a clean line costs one decode and no copy.

The Struct is built from spec/schema/rmb-log.schema.json (the fields, their types, the format's
constant, the enums; no field missing, none else). Its ``message`` is typed so that msgspec
itself refuses what the general reading (:func:`rmkit.protocols.rmb.records.decode`, orjson)
would read otherwise: an integer beyond 64 signed bits (orjson reads one beyond 64 unsigned bits
as a float), an object within the message, an array within an array. Such a line, and every line
this path refuses for any reason, is read by the general path, which says what is wrong with it
or reads it as it always has; so the records the rules see are the same either way
(tests/rmb/test_rmb_stream.py reads every rule fixture both ways).

The record also carries ``ref`` (where the line is) and ``twin`` (its writer's twin), which the
reader sets after the decode. They are Struct fields under names no log line should have, whose
default is a marker no JSON value decodes to: a line that names them keeps no marker and is read
by the general path (which refuses the unknown field).
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any, Literal, Optional, Union

from rmkit.specload import spec_root

# the general reading's limits on a message's integers (records._plain_message): 64 bits
_INT_LOW, _INT_HIGH = -(1 << 63), (1 << 63) - 1

UNREAD = type("Unread", (), {"__repr__": lambda self: "UNREAD", "__slots__": ()})()  # ref, twin before they are set


def _message_value():
    """The type of a message's value in the typed reading (a scalar, or an array of scalars)."""
    import msgspec

    whole = Annotated[int, msgspec.Meta(ge=_INT_LOW, le=_INT_HIGH)]
    scalar = Union[whole, float, str, bool, None]
    return Union[whole, float, str, bool, None, list[scalar]]


def _message_type():
    return dict[str, _message_value()]


@functools.lru_cache(maxsize=None)
def record_struct():
    """The Struct of one log line, as the rules read it (attribute ``msg`` for the ``message``)."""
    import msgspec

    schema = json.loads((spec_root() / "schema" / "rmb-log.schema.json").read_text(encoding="utf-8"))
    scalar = {"string": str, "number": float, "null": type(None), "boolean": bool,
              "integer": Annotated[int, msgspec.Meta(ge=_INT_LOW, le=_INT_HIGH)]}
    fields: list[tuple] = []
    for name in schema["required"]:
        prop = schema["properties"][name]
        if "const" in prop:
            kind: Any = Literal[prop["const"]]
        elif "enum" in prop:
            kind = Literal[tuple(prop["enum"])]
        else:
            kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
            if name == "message":
                if set(kinds) - {"object", "null"}:
                    raise ValueError(f"rmb-log schema: message of type {kinds}: the typed reading takes an object or null")
                kind = Optional[_message_type()] if "null" in kinds else _message_type()
            else:
                types = [scalar[k] for k in kinds]
                kind = types[0] if len(types) == 1 else Union[tuple(types)]
        if name == "message":
            fields.append(("msg", kind, msgspec.field(name="message")))
        else:
            fields.append((name, kind))
    fields += [("ref", Any, msgspec.field(default=UNREAD, name="rmkit:ref")),
               ("twin", Any, msgspec.field(default=UNREAD, name="rmkit:twin"))]
    return msgspec.defstruct("RmbRecord", fields, forbid_unknown_fields=True, gc=False)


@functools.lru_cache(maxsize=None)
def clock_struct():
    """:func:`record_struct` with its message read into a Struct of the message's fields (those of
    spec/rmb/message.yaml, each of the typed reading's value type, no other field), for the clock
    of a ``--jobs`` share (:meth:`TypedRecords.clock_event`): a line this Struct decodes, the
    typed reading decodes too, to the same top-level fields (its message, a dict of those
    values, is the one thing built otherwise), so the clock takes the line exactly when the
    record reading would; and the Struct builds no dict and no key of the message."""
    import msgspec

    from rmkit.protocols.rmb.model import rmb_spec

    value = _message_value()
    message = msgspec.defstruct("RmbClockMessage", [(name, value, None) for name in rmb_spec().fields],
                                forbid_unknown_fields=True, gc=False)
    record = record_struct()
    fields: list[tuple] = []
    for name, encoded, kind, default in zip(record.__struct_fields__, record.__struct_encode_fields__,
                                            _struct_types(record), _struct_defaults(record)):
        if name == "msg":
            kind = Optional[message]
        fields.append((name, kind, msgspec.field(name=encoded) if default is _NO_DEFAULT
                       else msgspec.field(default=default, name=encoded)))
    return msgspec.defstruct("RmbClockRecord", fields, forbid_unknown_fields=True, gc=False)


_NO_DEFAULT = object()


def _struct_types(struct) -> list:
    import typing

    hints = typing.get_type_hints(struct, include_extras=True)
    return [hints[name] for name in struct.__struct_fields__]


def _struct_defaults(struct) -> list:
    defaults = struct.__struct_defaults__
    return [_NO_DEFAULT] * (len(struct.__struct_fields__) - len(defaults)) + list(defaults)


class TypedRecords:
    """:meth:`decode`: a line's :class:`RmbRecord` (its ``ref`` and ``twin`` set), or None for a
    line this path does not settle (not JSON, a field missing, unknown or of another type, a
    message the general reading reads otherwise, a writer or peer that names no twin)."""

    def __init__(self):
        import msgspec

        from rmkit.protocols.rmb.records import _peer_problem, _who_problem, twin_of

        self.struct = record_struct()
        self._decode = msgspec.json.Decoder(self.struct).decode
        self._errors = (msgspec.ValidationError, msgspec.DecodeError)
        self._who_problem, self._peer_problem, self._twin_of = _who_problem, _peer_problem, twin_of
        self._twins: dict[str, Any] = {}  # writer -> its twin (None: a recorder), UNREAD: no twin id
        self._peers_ok: dict[str, bool] = {}  # a peer N@address -> whether N is a twin id (a log has few peers)
        self._clock_decode = msgspec.json.Decoder(clock_struct()).decode

    def decode(self, line: bytes, ref: int):
        try:
            rec = self._decode(line)
        except self._errors:
            return None
        if rec.ref is not UNREAD or rec.twin is not UNREAD:
            return None
        twin = self._twin(rec)
        if twin is UNREAD:
            return None
        rec.ref, rec.twin = ref, twin
        return rec

    def _twin(self, rec):
        """The twin of a decoded line's writer (None: a recorder), or UNREAD where its writer or
        peer names no twin (the general path says which)."""
        who = rec.who
        twin = self._twins.get(who, self)
        if twin is self:
            twin = UNREAD if self._who_problem(who) is not None else self._twin_of(who)
            if len(self._twins) < 100_000:
                self._twins[who] = twin
        if twin is UNREAD:
            return UNREAD
        peer = rec.peer
        if peer is not None and "@" in peer:
            ok = self._peers_ok.get(peer)
            if ok is None:
                ok = self._peer_problem(peer) is None
                if len(self._peers_ok) < 100_000:
                    self._peers_ok[peer] = ok
            if not ok:
                return UNREAD
        return twin

    def clock_event(self, line: bytes):
        """The line as :meth:`decode` reads it, for a share's clock (its ``time``, ``who``,
        ``event`` and ``note``; the message not built), or None where :meth:`decode` would not
        settle it, or this reading cannot tell (a message holding fields the message spec does
        not name): the caller reads such a line as a record (:func:`clock_struct`)."""
        try:
            rec = self._clock_decode(line)
        except self._errors:
            return None
        if rec.ref is not UNREAD or rec.twin is not UNREAD:
            return None
        return rec if self._twin(rec) is not UNREAD else None


@functools.lru_cache(maxsize=None)
def typed_records() -> TypedRecords:
    return TypedRecords()
