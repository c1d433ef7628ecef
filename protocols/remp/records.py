"""Typed decoding of REMP receipts: one msgspec Struct per receipt kind, built from the spec.

The checker's hot path. Decoding a line straight into the Struct of its kind (the ``kind`` field
is the tag) is cheaper than building a dict, and it settles on the way what the checker would
otherwise test field by field: the line is JSON, an object, of a known kind, with no field the
spec does not know, every integer an integer and every string a string.

Only a receipt that passes all of that is decoded here. Anything else (unknown kind, unknown or
misspelt field, a string where a number belongs, an integer below its field's minimum or beyond 64
bits, bad JSON) makes :meth:`TypedDecoder.decode` raise, and the checker reads
the line the general way (orjson into a dict), which says what is wrong. String formats (hex
patterns) are not judged here: the checker runs the same compiled field checks on the typed
receipt as on a dict (``KindInfo.validate_typed``, which leaves out what the decoder settled), so a
finding's text does not depend on the path a line took. ``tests/remp/test_typed_decode.py`` holds both
paths equal on every fixture.

A Kafka dump's record (``{"topic", "partition", "offset", "timestamp", "key", "value"}``, as
:mod:`rmkit.reference_impl.remp.dump` writes it and a consumer dumps it) is typed the same way
(:meth:`TypedDecoder.decode_records`): the envelope with its receipt as ``value``, a usable record
time and a string key. A record that differs (a kcat envelope, extra fields, a value held as a
string, a tombstone, a time of 0) is read the general way, which unwraps and judges it.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, Union

import msgspec


# The integers both decoders read alike: orjson turns a larger literal into a float, msgspec
# into an int. Beyond 64 signed bits a line takes the general path.
INT_RANGE = msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)
MASTER_FILE_HASH = "mc_block_file_hash"


def _base_type(fmt: dict[str, Any]):
    """The type a field of this format holds: an integer within 64 bits and at least the format's
    minimum (a receipt below it is refused here, and the general reading reports the field), or a
    string."""
    if fmt["type"] != "integer":
        return str
    lo = fmt.get("minimum")
    return Annotated[int, INT_RANGE if lo is None else msgspec.Meta(ge=max(int(lo), -(1 << 63)), le=(1 << 63) - 1)]


def _field_type(fmt: dict[str, Any]):
    return Optional[_base_type(fmt)]  # missing and null read alike (None), as dict.get gives them


def _own_field(fc) -> tuple:
    """A kind's own field in its typed receipt. A required field is required here too (no
    default, no null): a receipt that lacks it is refused and read in general, which says so, and
    the typed validator (``compile_validator(typed=True)``) need not look for it. The master
    block's file hash is required for another reason: a receipt without it may need it recovered
    from its text (tlreceipt.recover_master_file_hash), which the general reading does."""
    if fc.required or fc.name == MASTER_FILE_HASH:
        return (fc.name, _base_type(fc.fmt))
    return (fc.name, _field_type(fc.fmt), None)


class TypedDecoder:
    """``decode(line)`` -> the typed receipt of the line's kind; raises on anything else.
    ``kind_of[type(receipt)]`` is the kind's :class:`~rmkit.protocols.remp.model.KindInfo`;
    :meth:`decode_lines` types a batch of lines at once. Built by the compiled spec it reads
    (:meth:`~rmkit.protocols.remp.model.RempModel.typed_decoder`), which it does not import."""

    def __init__(self, model):
        spec = model.spec["kinds"]
        formats = model.spec["formats"]["formats"]
        structs = []
        self.kind_of: dict[type, Any] = {}
        for name, ki in model.kinds.items():
            own = [_own_field(fc) for fc in ki.fields]
            common = [(f, _field_type(formats[entry["format"]][model.profile]), None)
                      for f, entry in spec["common_fields"].items() if f not in {o[0] for o in own}]
            names = [f[0] for f in common + own]
            if "kind" in names or len(set(names)) != len(names):
                raise ValueError(f"kind {name}: field names {names} cannot form a typed receipt")
            cls = msgspec.defstruct(f"Typed{name}", common + own, tag_field="kind", tag=name,
                                    forbid_unknown_fields=True, gc=False, kw_only=True, namespace={"get": _get})
            structs.append(cls)
            self.kind_of[cls] = ki
        receipt = Union[tuple(structs)]
        self.decode = msgspec.json.Decoder(receipt).decode
        record = msgspec.defstruct("TypedKafkaRecord", [
            ("value", receipt),
            ("timestamp", Annotated[int, msgspec.Meta(ge=1, le=(1 << 63) - 1)]),  # (0 or none: no time, read in general)
            ("key", str),  # (a null key is REMP-INPUT-002's finding, a missing one nothing to judge: read in general)
            ("topic", Any, None), ("partition", Any, None), ("offset", Any, None),
        ], forbid_unknown_fields=True, gc=False, kw_only=True)
        self.decode_record = msgspec.json.Decoder(record).decode

    def decode_lines(self, lines: list) -> tuple[list, int]:
        """(the typed receipt of each line, None where :meth:`decode` refuses the line (the
        general reading takes it); how many it refused). The batch is decoded by one C loop
        (``map``) that goes on after a refused line from the next one: a refusal costs its
        exception only."""
        out: list = []
        return self._decode_all(self.decode, lines)

    def decode_records(self, lines: list) -> tuple[list, int]:
        """As :meth:`decode_lines`, for lines of Kafka records: (the typed record of each line
        (its receipt: ``.value``), None where the line is read in general; how many those are)."""
        return self._decode_all(self.decode_record, lines)

    @staticmethod
    def _decode_all(decode, lines: list) -> tuple[list, int]:
        out: list = []
        typed = map(decode, lines)
        refused = 0
        while True:
            try:
                out.extend(typed)  # (what was typed before a refusal stays in ``out``)
                return out, refused
            except Exception:  # noqa: BLE001 - whatever it cannot type, the general reading explains
                out.append(None)
                refused += 1


def _get(self, name: str, default=None):
    """Read a field as from the dict a receipt would be (the checker's colder paths use ``get``)."""
    return getattr(self, name, default)
