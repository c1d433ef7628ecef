"""Typed decoding of Corda records: one msgspec Struct per event kind of spec/corda/records.yaml (the
``event`` field is the tag) and one for a processed-ids row, built from the format's fields.

The checker's hot path (as REMP's ``protocols/remp/records.py`` is REMP's). Decoding straight into
the Struct of its kind settles what the checker would otherwise test field by field on a dict: the
line is JSON, an object, of a known kind, carrying every field its kind requires, every integer an
integer within the field's bounds, every string a non-empty string, null only where the field
allows it, a verdict one of the spellings the format reads. A field its kind does not check is
ignored, as records.yaml says.

A batch of lines is decoded as one JSON array of events (one call into msgspec instead of one per
line), else as one array of rows (an export); a batch that is neither is decoded line by line, and
a line neither Struct takes is read the general way (orjson into a dict,
:meth:`RecordFormat.read`), which says what is wrong with it. Both ways accept the same records
(``tests/corda/test_corda_decode.py`` holds them equal), so a finding never depends on the way a line took.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

import msgspec
from msgspec import UNSET, UnsetType

from rmkit.protocols.corda.records import EVENT, ROW, FieldRule, RecordFormat, record_format

# orjson reads an integer within 64 bits as an int (unsigned too) and a larger one as a float, which
# the general reading refuses; msgspec bounds an int to 64 signed bits. Beyond that the typed
# reading refuses the line and the general one takes it.
_INT_MAX = (1 << 63) - 1
_INT_MIN = -(1 << 63)


def _typ(rule: FieldRule):
    if rule.type == "string":
        base = Annotated[str, msgspec.Meta(min_length=1)]
    else:
        lo = _INT_MIN if rule.minimum is None else max(rule.minimum, _INT_MIN)
        base = Annotated[int, msgspec.Meta(ge=lo, le=_INT_MAX)]
    return Optional[base] if rule.nullable else base


def _fields(names, rules: dict[str, FieldRule], required, verdicts=()) -> list[tuple]:
    out = []
    for name in names:
        typ = Literal[tuple(verdicts)] if name == "verdict" and verdicts else _typ(rules[name])
        out.append((name, typ) if name in required else (name, Union[typ, UnsetType], UNSET))
    return out


class TypedRecords:
    """``decode_batch(lines)`` -> the typed record of each line (None: read it the general way);
    ``kind[type(record)]`` -> (EVENT, event name) or (ROW, None); ``from_dict(obj, kind, event)``
    -> the typed record of a line the general reading found usable."""

    def __init__(self, fmt: RecordFormat | None = None):
        self.fmt = fmt = fmt or record_format()
        self.events: dict[str, type] = {}
        self.kind: dict[type, tuple[str, str | None]] = {}
        for ev in fmt.required:
            names = [n for n in fmt.checked[ev] if n != "event"]
            required = {*fmt.always, *fmt.required[ev]}
            cls = msgspec.defstruct(f"Corda_{ev}", _fields(names, fmt.event_fields, required, fmt.verdicts),
                                    tag_field="event", tag=ev, gc=False, kw_only=True)
            self.events[ev] = cls
            self.kind[cls] = (EVENT, ev)
        # a line with an ``event`` field is an event whatever its value (records.yaml): never a row
        self.Row = msgspec.defstruct("CordaRow", [*_fields(fmt.row_required, fmt.row_fields, set(fmt.row_required)),
                                                  ("event", UnsetType, UNSET)], gc=False, kw_only=True)
        self.kind[self.Row] = (ROW, None)
        union = Union[tuple(self.events.values())]
        self._event = msgspec.json.Decoder(union).decode
        self._events = msgspec.json.Decoder(list[union]).decode
        self._row = msgspec.json.Decoder(self.Row).decode
        self._rows = msgspec.json.Decoder(list[self.Row]).decode

    def decode_batch(self, lines: list) -> list:
        """The typed record of each line, None where neither Struct takes it. The batch as one JSON
        array of events, else of rows; else line by line."""
        if not lines or type(lines[0]) is not bytes:
            return self._each(lines)
        try:
            whole = b"[" + b",".join(lines) + b"]"
        except TypeError:  # a line that is not bytes (a BrokenLine)
            return self._each(lines)
        for many in (self._events, self._rows):
            try:
                out = many(whole)
            except (msgspec.DecodeError, TypeError):
                continue
            if len(out) == len(lines):  # (a line holding two values, "{...},{...}", would shift the rest)
                return out
            break
        return self._each(lines)

    def _each(self, lines) -> list:
        event, row = self._event, self._row
        out = []
        for line in lines:
            try:
                out.append(event(line))
                continue
            except (msgspec.DecodeError, TypeError):
                pass
            try:
                out.append(row(line))
            except (msgspec.DecodeError, TypeError):
                out.append(None)
        return out

    def from_dict(self, obj: dict, kind: str):
        """A line the general reading accepted (``kind`` EVENT or ROW), as its Struct."""
        cls = self.events[obj["event"]] if kind == EVENT else self.Row
        return cls(**{k: obj[k] for k in cls.__struct_fields__ if k in obj and k != "event"})
