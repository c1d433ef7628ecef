"""REMP receipts in their exact TL form: JSON receipt <-> ``tonNode.rempReceipt``, the bytes a
source signs, signed receipts, and the key id that names a source.

Why this module: a receipt's Ed25519 signature covers its TL serialization, not its JSON. To check
a signature, the JSON a log carries must be turned back into exactly the bytes the node signed.
Everything protocol-specific comes from the spec: the schema lines and ids (``spec/remp/tl.yaml``),
which TL status and level each JSON kind stands for, which JSON field maps to which TL field
(``tl.yaml`` + ``kinds.yaml``) and how each JSON format encodes its TL value. The byte rules come
from the protocol-independent :mod:`rmkit.tl`.

Two paths give the same bytes: :func:`receipt_to_tl` + :func:`rmkit.tl.serialize` (the reference,
checks every field and explains every failure) and a per-kind function compiled from the same
tables (:func:`signed_bytes`' fast path: one ``struct`` call, no recursion) that hands anything
unusual to the reference path, so that both accept and reject the same receipts.

Field-name styles: a receipt written in the seed documents' style or the node's style converts
alike. The seed's Finalized example repeats ``block_file_hash`` for the master block where the node
writes ``mc_block_file_hash``; a dict keeps only one of the repeated keys (the shard block's, for a
JSON reader keeps the last), so the master block's file hash is then absent and taken as zero
(``mc_block_file_hash`` is optional in its group). :func:`receipt_from_pairs` recovers it from
the key/value pairs of the JSON text. Output always writes ``mc_block_file_hash`` (one dict key
per field), in both profiles, and hex in lower case; so JSON -> TL -> JSON gives back every
canonical receipt (lower-case hex, a block group present only when it is not the default block id).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Any, Callable

from rmkit.errors import SpecError, UsageError
from rmkit.specload import load_protocol_spec, spec_line
from rmkit.tl import Schema, TlError, parse_line, serialize
from rmkit.tl.codec import deserialize
from rmkit.tl.wire import INT_RANGES, pack_bytes

__all__ = ["ReceiptConversionError", "decode_signature", "parse_signed_receipt", "pub_key_id", "receipt_from_pairs",
           "receipt_to_tl", "signed_bytes", "signed_receipt_bytes", "tl_form", "tl_schema", "tl_to_receipt"]

PROTOCOL = "remp"


class ReceiptConversionError(ValueError):
    """A receipt cannot be converted. ``field`` names the receipt field (or ``kind``/``status``);
    the message says what was expected and what was found."""

    def __init__(self, field: str, expected: str, found: str):
        self.field, self.expected, self.found = field, expected, found
        super().__init__(f"{field}: expected {expected}, found {found}")


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


# -- the tables, compiled once from the spec ----------------------------------------------------

@dataclass(frozen=True)
class _Value:
    """One JSON field carried by a TL field: how to read/write it."""

    json: str
    tl: str
    encoding: str  # hex | hex_u64 | integer | text
    tl_type: str  # the TL built-in type
    size: int  # bytes for hex; 0 otherwise
    required: bool  # absent is an error (else: zero value)


@dataclass(frozen=True)
class _Group:
    name: str
    tl_field: str
    values: tuple[_Value, ...]  # in kinds.yaml's field order
    fixed: dict[str, int]  # block id fields the JSON does not carry


@dataclass(frozen=True)
class _Kind:
    name: str
    status: str  # status constructor name
    level: str | None  # level constructor name, None when the status has no level field
    values: tuple[_Value, ...]  # per-kind fields (error, sent_to, ...)
    groups: tuple[_Group, ...]
    default_blocks: tuple[str, ...]  # block id fields of the status the kind leaves at the default
    forbidden: frozenset[str]  # receipt field names of other kinds, which this kind cannot carry


class _Tables:
    """Everything the conversions need, checked against each other at load."""

    def __init__(self) -> None:
        spec = load_protocol_spec(PROTOCOL)
        self.spec = spec
        tl = spec["tl"]

        def fail(path: list, message: str):
            shown, line = spec_line(spec, "tl", path)
            raise SpecError(shown, ".".join(map(str, path)), message, line=line)

        self._fail = fail
        ctors = []
        for name, entry in tl["constructors"].items():
            ctors.append(self._constructor(["constructors", name], name, entry))
        try:
            self.schema = Schema(ctors)
        except TlError as exc:
            fail(["constructors"], str(exc))
        legacy = {}
        for name, entry in (tl.get("superseded") or {}).items():
            if name not in self.schema:
                fail(["superseded", name], f"expected the name of a constructor in `constructors`, found {name!r}")
            old = self._constructor(["superseded", name], name, entry)
            legacy[old.id] = Schema([old if c.name == name else c for c in self.schema.by_name.values()])
        self.legacy_schemas = legacy
        r = tl.get("receipt")
        if r is None:
            fail([], "expected a `receipt` section")
        for key in ("record", "signed", "public_key", "block"):
            if r[key] not in self.schema:
                fail(["receipt", key], f"expected a constructor of `constructors`, found {r[key]!r}")
        sch = self.schema
        self.record = sch[r["record"]]
        self.signed = sch[r["signed"]]
        self.public_key = sch[r["public_key"]]
        self.block = sch[r["block"]]
        rec_fields = {f.name: f.type for f in self.record.fields}
        if r["status_field"] not in rec_fields or rec_fields[r["status_field"]].kind != "boxed":
            fail(["receipt", "status_field"], f"expected a boxed field of {self.record.name}, found {r['status_field']!r}")
        self.status_field = r["status_field"]
        status_type = rec_fields[self.status_field].name
        self.level_field = r["level_field"]
        sig_fields = [f.name for f in self.signed.fields]
        if [f.type.name for f in self.signed.fields] != ["bytes", "int512"]:
            fail(["receipt", "signed"], f"expected a constructor with fields receipt:bytes signature:int512, found {self.signed.line!r}")
        self.signed_fields = sig_fields
        if [f.type.name for f in self.public_key.fields] != ["int256"]:
            fail(["receipt", "public_key"], f"expected a constructor with one int256 field, found {self.public_key.line!r}")
        block_types = {f.name: f.type.name for f in self.block.fields}

        manifest = spec["protocol"]
        kinds_spec = spec["kinds"]
        profiles = list(manifest["profiles"])
        self.profiles = profiles
        # statuses and levels
        if set(r["statuses"]) != set(manifest["statuses"]):
            fail(["receipt", "statuses"], f"expected one entry for each status of protocol.yaml {manifest['statuses']}, found {sorted(r['statuses'])}")
        for st, cname in r["statuses"].items():
            c = sch.by_name.get(cname)
            if c is None or c.result != status_type:
                fail(["receipt", "statuses", st], f"expected a constructor of type {status_type}, found {cname!r}")
        level_type = None
        if set(r["levels"]) != set(manifest["levels"]):
            fail(["receipt", "levels"], f"expected one entry for each level of protocol.yaml {sorted(manifest['levels'])}, found {sorted(r['levels'])}")
        for lv, cname in r["levels"].items():
            c = sch.by_name.get(cname)
            if c is None or c.fields or (level_type is not None and c.result != level_type):
                fail(["receipt", "levels", lv], f"expected a field-less constructor of one level type, found {cname!r}")
            level_type = c.result
        # encodings of JSON formats
        enc = r["encodings"]
        fits = {"hex": ("int128", "int256", "int512"), "hex_u64": ("long",), "integer": ("int", "long"), "text": ("string",)}
        sizes = {"int128": 16, "int256": 32, "int512": 64}

        def value(path: list, json_name: str, entry: dict, tl_name: str, tl_type: str, required: bool) -> _Value:
            fmt = entry["format"]
            if fmt not in enc:
                fail(["receipt", "encodings"], f"expected an encoding for format {fmt!r} (field {json_name})")
            if tl_type not in fits[enc[fmt]]:
                fail(path, f"JSON field {json_name} (format {fmt}, encoding {enc[fmt]}) cannot carry TL type {tl_type} of {tl_name}")
            return _Value(json_name, tl_name, enc[fmt], tl_type, sizes.get(tl_type, 0), required)

        common = []
        for jname, tname in r["common"].items():
            if jname not in kinds_spec["common_fields"] or tname not in rec_fields or rec_fields[tname].kind != "builtin":
                fail(["receipt", "common", jname], f"expected a common field of kinds.yaml mapped to a built-in field of {self.record.name}")
            common.append(value(["receipt", "common", jname], jname, kinds_spec["common_fields"][jname], tname, rec_fields[tname].name, True))
        if {v.tl for v in common} | {self.status_field} != set(rec_fields):
            fail(["receipt", "common"], f"expected every field of {self.record.name} but {self.status_field} to be mapped, found {sorted(r['common'])}")
        self.common = tuple(common)
        sig = r["signature"]
        if sig["field"] not in kinds_spec["common_fields"] or set(sig["encoding"]) != set(profiles):
            fail(["receipt", "signature"], f"expected a common field of kinds.yaml and an encoding for each profile {profiles}")
        self.signature_field, self.signature_size, self.signature_encoding = sig["field"], sig["bytes"], sig["encoding"]
        if self.signature_size != 64:
            fail(["receipt", "signature", "bytes"], f"expected 64 (the int512 of {self.signed.name}), found {self.signature_size}")
        # groups
        groups: dict[str, tuple[list, dict, dict]] = {}
        for gname, g in r["groups"].items():
            if gname not in kinds_spec["field_groups"]:
                fail(["receipt", "groups", gname], f"expected a field group of kinds.yaml {sorted(kinds_spec['field_groups'])}")
            gspec = kinds_spec["field_groups"][gname]
            if set(g["fields"]) != set(gspec):
                fail(["receipt", "groups", gname, "fields"], f"expected exactly the fields of group {gname} in kinds.yaml {sorted(gspec)}")
            fixed = {}
            for bname, v in (g.get("fixed") or {}).items():
                if bname not in block_types:
                    fail(["receipt", "groups", gname, "fixed", bname], f"expected a field of {self.block.name}")
                fixed[bname] = self._literal(["receipt", "groups", gname, "fixed", bname], block_types[bname], v)
            covered = set(g["fields"].values()) | set(fixed)
            if covered != set(block_types) or len(g["fields"].values()) != len(set(g["fields"].values())):
                fail(["receipt", "groups", gname], f"expected the group's fields and `fixed` to cover each field of {self.block.name} once, found {sorted(covered)}")
            vals = []
            for jname, entry in gspec.items():
                tname = g["fields"][jname]
                vals.append(value(["receipt", "groups", gname, "fields", jname], jname, entry, tname, block_types[tname],
                                  not entry.get("optional_in_group", False)))
            groups[gname] = (g["tl_field"], tuple(vals), fixed)
        dflt = r["default_block"]["values"]
        self.default_block = {"@type": self.block.name}
        for f in self.block.fields:
            if f.type.name in sizes:
                self.default_block[f.name] = bytes(sizes[f.type.name])
            elif f.name in dflt:
                self.default_block[f.name] = self._literal(["receipt", "default_block", "values", f.name], f.type.name, dflt[f.name])
            else:
                fail(["receipt", "default_block", "values"], f"expected a value for {f.name} ({f.type.name})")
        # kinds
        all_names = set()
        for k in kinds_spec["kinds"].values():
            all_names |= set(k.get("fields") or {})
            for gname in k.get("groups") or {}:
                all_names |= set(kinds_spec["field_groups"][gname])
        self.kinds: dict[str, _Kind] = {}
        self.by_form: dict[tuple[str, str | None], str] = {}
        for kname, k in kinds_spec["kinds"].items():
            kpath = ["kinds", kname]
            status = sch[r["statuses"][k["status"]]]
            sfields = {f.name: f.type for f in status.fields}
            level = r["levels"][k["level"]] if self.level_field in sfields else None
            if level is not None and sfields[self.level_field].name != level_type:
                fail(["receipt", "level_field"], f"expected field {self.level_field} of {status.name} to be of type {level_type}, "
                                                 f"found {sfields[self.level_field]}")
            used = {self.level_field} & set(sfields)
            vals = []
            names = set()
            for fname, entry in (k.get("fields") or {}).items():
                tname = r["fields"].get(fname)
                if tname is None or tname not in sfields or sfields[tname].kind != "builtin":
                    shown, line = spec_line(spec, "kinds", kpath + ["fields", fname])
                    raise SpecError(shown, ".".join(kpath + ["fields", fname]),
                                    f"field {fname} of kind {kname} has no built-in field of {status.name} to go to "
                                    f"(tl.yaml receipt.fields maps it to {tname!r})", line=line)
                required = all(entry["required"].get(p, False) for p in profiles)
                vals.append(value(["receipt", "fields", fname], fname, entry, tname, sfields[tname].name, required))
                used.add(tname)
                names.add(fname)
            kgroups = []
            for gname in (k.get("groups") or {}):
                if gname not in groups or groups[gname][0] not in sfields or sfields[groups[gname][0]].name != self.block.name:
                    shown, line = spec_line(spec, "kinds", kpath + ["groups", gname])
                    raise SpecError(shown, ".".join(kpath + ["groups", gname]),
                                    f"group {gname} of kind {kname} has no {self.block.name} field of {status.name} to go to", line=line)
                tl_field, gvals, fixed = groups[gname]
                kgroups.append(_Group(gname, tl_field, gvals, fixed))
                used.add(tl_field)
                names |= {v.json for v in gvals}
            rest = [f for f in status.fields if f.name not in used]
            for f in rest:
                if f.type.name != self.block.name:
                    shown, line = spec_line(spec, "kinds", kpath)
                    raise SpecError(shown, ".".join(kpath), f"kind {kname} carries no field for {f.name} ({f.type}) of {status.name}", line=line)
            form = (status.name, level)
            if form in self.by_form:
                fail(["receipt", "statuses", k["status"]], f"kinds {self.by_form[form]} and {kname} map to the same TL form {form}")
            self.by_form[form] = kname
            self.kinds[kname] = _Kind(kname, status.name, level, tuple(vals), tuple(kgroups), tuple(f.name for f in rest),
                                      frozenset(all_names - names))
        self.seed_names = {alias: kname for kname, k in kinds_spec["kinds"].items() for alias in k.get("seed_names", ())}
        self.fast = {name: _compile_fast(self, k) for name, k in self.kinds.items()}

    def _constructor(self, path: list, name: str, entry: dict):
        try:
            c = parse_line(entry["line"])
        except TlError as exc:
            self._fail(path + ["line"], str(exc))
        if c.name != name:
            self._fail(path + ["line"], f"expected a line for constructor {name}, found one for {c.name}")
        if c.line != entry["line"]:
            self._fail(path + ["line"], f"expected the normalized line {c.line!r}, found {entry['line']!r}")
        if c.id_hex != entry["id"]:
            self._fail(path + ["id"], f"the line's CRC32 is {c.id_hex}, the stated id is {entry['id']}: the line is not "
                                      f"the one the id was computed from")
        return c

    def _literal(self, path: list, tl_type: str, v: Any) -> int:
        """A block id value written in tl.yaml: an integer, or a long as 16 hex digits (unsigned)."""
        if tl_type == "long" and isinstance(v, str):
            try:
                raw = bytes.fromhex(v)
            except ValueError:
                raw = b""
            if len(v) != 16 or len(raw) != 8:
                self._fail(path, f"expected 16 hex digits, found {v!r}")
            return int.from_bytes(raw, "big", signed=True)
        if tl_type in INT_RANGES and isinstance(v, int) and INT_RANGES[tl_type][0] <= v <= INT_RANGES[tl_type][1]:
            return v
        self._fail(path, f"expected a value of TL type {tl_type}, found {v!r}")


@functools.lru_cache(maxsize=1)
def _tables() -> _Tables:
    return _Tables()


def tl_schema() -> Schema:
    """The TL schema of REMP receipts (``spec/remp/tl.yaml``), every id checked against its line."""
    return _tables().schema


def tl_form(kind: str) -> tuple[str, str | None, tuple[str, ...]]:
    """(status constructor, level constructor or None, TL block id fields filled from the JSON)
    of a kind of kinds.yaml."""
    k = _tables().kinds[kind]
    return k.status, k.level, tuple(f"{g.tl_field} ({g.name})" for g in k.groups)


def clear_cache() -> None:
    """Forget the compiled tables (after the spec changed, e.g. in tests)."""
    _tables.cache_clear()
    _FAST.clear()


# -- JSON values <-> TL values ------------------------------------------------------------------

def _from_json(v: _Value, raw: Any) -> Any:
    enc = v.encoding
    if enc == "hex":
        if not isinstance(raw, str) or len(raw) != 2 * v.size:
            raise ReceiptConversionError(v.json, f"{2 * v.size} hex digits ({v.size} bytes)",
                                         f"{len(raw)} characters {_show(raw)}" if isinstance(raw, str) else _show(raw))
        try:
            out = bytes.fromhex(raw)
        except ValueError:
            out = b""
        if len(out) != v.size:
            raise ReceiptConversionError(v.json, f"{2 * v.size} hex digits ({v.size} bytes)", f"non-hex characters in {_show(raw)}")
        return out
    if enc == "hex_u64":
        try:
            ok = isinstance(raw, str) and len(raw) == 16 and len(bytes.fromhex(raw)) == 8
        except ValueError:
            ok = False
        if not ok:
            raise ReceiptConversionError(v.json, "16 hex digits (a 64-bit value)", _show(raw))
        return int.from_bytes(bytes.fromhex(raw), "big", signed=True)
    if enc == "integer":
        lo, hi = INT_RANGES[v.tl_type]
        if not isinstance(raw, int) or isinstance(raw, bool):
            big = isinstance(raw, float) and raw.is_integer() and abs(raw) >= 2 ** 63  # the JSON reader's float
            raise ReceiptConversionError(v.json, f"an integer in [{lo}, {hi}] (TL {v.tl_type})" if big else "an integer",
                                         f"{_show(raw)}, a number beyond 64 bits" if big else _show(raw))
        if not lo <= raw <= hi:
            raise ReceiptConversionError(v.json, f"an integer in [{lo}, {hi}] (TL {v.tl_type})", str(raw))
        return int(raw)
    if not isinstance(raw, str):
        raise ReceiptConversionError(v.json, "a string", _show(raw))
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ReceiptConversionError(v.json, "text that UTF-8 can encode", f"{exc.reason} at character {exc.start}") from None
    return raw


def _to_json(v: _Value, val: Any) -> Any:
    enc = v.encoding
    if enc == "hex":
        return val.hex()
    if enc == "hex_u64":
        return (val & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big").hex()
    return val


def _zero(v: _Value) -> Any:
    return bytes(v.size) if v.encoding == "hex" else ("" if v.encoding == "text" else 0)


def _kind_of(t: _Tables, receipt: Any) -> _Kind:
    if not isinstance(receipt, dict):
        raise ReceiptConversionError("receipt", "a JSON object (dict)", type(receipt).__name__)
    name = receipt.get("kind")
    k = t.kinds.get(name) if isinstance(name, str) else None
    if k is None:
        if "kind" not in receipt:
            raise ReceiptConversionError("kind", f"one of the kinds of kinds.yaml ({len(t.kinds)})", "no kind field")
        hint = f" (did you mean {t.seed_names[name]}?)" if isinstance(name, str) and name in t.seed_names else ""
        raise ReceiptConversionError("kind", f"one of the kinds of kinds.yaml ({', '.join(t.kinds)})", _show(name) + hint)
    return k


def receipt_to_tl(receipt: dict) -> dict:
    """The ``tonNode.rempReceipt`` object (a dict for :mod:`rmkit.tl`) of a JSON receipt.

    Any kind of kinds.yaml, in either profile's field-name style. The signature (and any field
    that is no receipt field at all) is ignored; a receipt field that belongs to other kinds only
    is an error, for the TL form has no place for it. An absent block group is the default block id.
    """
    t = _tables()
    k = _kind_of(t, receipt)
    for name in k.forbidden:
        if name in receipt:
            raise ReceiptConversionError(name, f"no {name} on {k.name} (kinds.yaml gives this kind no such field, "
                                               f"so its TL form {k.status} does not carry it)", _show(receipt[name]))
    common = {}
    for v in t.common:
        if v.json not in receipt:
            raise ReceiptConversionError(v.json, "a value (required for every receipt)", "no such field")
        common[v.tl] = _from_json(v, receipt[v.json])
    status: dict[str, Any] = {}
    if k.level is not None:
        status[t.level_field] = {"@type": k.level}
    for v in k.values:
        if v.json in receipt:
            status[v.tl] = _from_json(v, receipt[v.json])
        elif v.required:
            raise ReceiptConversionError(v.json, f"a value (required for {k.name})", "no such field")
        else:
            status[v.tl] = _zero(v)
    for g in k.groups:
        if not any(v.json in receipt for v in g.values):
            status[g.tl_field] = dict(t.default_block)
            continue
        block = dict(g.fixed)
        for v in g.values:
            if v.json in receipt:
                block[v.tl] = _from_json(v, receipt[v.json])
            elif v.required:
                present = ", ".join(x.json for x in g.values if x.json in receipt)
                raise ReceiptConversionError(v.json, f"a value (the {g.name} group of {k.name} is present: {present})", "no such field")
            else:
                block[v.tl] = _zero(v)
        status[g.tl_field] = {"@type": t.block.name, **{f.name: block[f.name] for f in t.block.fields}}
    for name in k.default_blocks:
        status[name] = dict(t.default_block)
    common[t.status_field] = {"@type": k.status, **{f.name: status[f.name] for f in t.schema[k.status].fields}}
    return {"@type": t.record.name, **{f.name: common[f.name] for f in t.record.fields}}


def tl_to_receipt(tl: dict, *, profile: str = "spec", signature: bytes | None = None) -> dict:
    """The JSON receipt of a ``tonNode.rempReceipt`` object, in ``profile``'s style.

    ``signature`` (64 bytes) is written hex (spec) or base64 (ever-node); without one the field is
    the empty string. Block groups equal to the default block id are left out. A TL object that
    carries something its kind's JSON cannot (a block on a kind without block fields, a master
    block outside workchain -1) is an error, never silently dropped.
    """
    t = _tables()
    if profile not in t.signature_encoding:
        raise UsageError(f"unknown REMP profile {profile!r}; expected one of {', '.join(t.profiles)}")
    try:
        serialize(t.schema, tl)  # the object must be a well-formed TL value
    except TlError as exc:
        raise ReceiptConversionError(exc.path or "@type", exc.expected, exc.found) from None
    if tl["@type"] != t.record.name:
        raise ReceiptConversionError("@type", t.record.name, _show(tl["@type"]))
    status = tl[t.status_field]
    level = status.get(t.level_field, {}).get("@type") if t.level_field in status else None
    name = t.by_form.get((status["@type"], level))
    if name is None:
        raise ReceiptConversionError(t.status_field, "a status/level pair of a kind in kinds.yaml",
                                     f"{status['@type']}" + (f" with level {level}" if level else ""))
    k = t.kinds[name]
    out: dict[str, Any] = {"kind": name}
    for v in t.common:
        out[v.json] = _to_json(v, tl[v.tl])
    out[t.signature_field] = _encode_signature(t, signature, profile)
    for bname in k.default_blocks:
        if not _is_default(t, status[bname]):
            raise ReceiptConversionError(f"{t.status_field}.{bname}", f"the default block id (kind {name} has no block fields)",
                                         _show_block(status[bname]))
    for g in k.groups:
        block = status[g.tl_field]
        if _is_default(t, block):
            continue
        for bname, want in g.fixed.items():
            if block[bname] != want:
                raise ReceiptConversionError(f"{t.status_field}.{g.tl_field}.{bname}",
                                             f"{want} (the JSON of group {g.name} cannot carry another)", str(block[bname]))
        for v in g.values:
            out[v.json] = _to_json(v, block[v.tl])
    for v in k.values:
        out[v.json] = _to_json(v, status[v.tl])
    return out


def _is_default(t: _Tables, block: dict) -> bool:
    default = t.default_block
    return all(block[f.name] == default[f.name] for f in t.block.fields)


def _show_block(b: dict) -> str:
    return f"workchain {b['workchain']} shard {b['shard'] & 0xFFFFFFFFFFFFFFFF:016x} seqno {b['seqno']}"


# -- signatures ---------------------------------------------------------------------------------

def _encode_signature(t: _Tables, signature: bytes | None, profile: str) -> str:
    if signature is None:
        return ""
    if not isinstance(signature, (bytes, bytearray)) or len(signature) != t.signature_size:
        found = f"{len(signature)} bytes" if isinstance(signature, (bytes, bytearray)) else type(signature).__name__
        raise ReceiptConversionError(t.signature_field, f"{t.signature_size} bytes", found)
    if t.signature_encoding[profile] == "hex":
        return bytes(signature).hex()
    return base64.b64encode(bytes(signature)).decode("ascii")


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def decode_signature(receipt: dict) -> bytes | None:
    """The signature bytes of a JSON receipt, from hex (seed documents) or base64 (the node).

    None when the field is absent or empty (an unsigned receipt). A value that is neither
    encoding, or that does not hold exactly 64 bytes, is a :class:`ReceiptConversionError`.
    """
    t = _tables()
    name, size = t.signature_field, t.signature_size
    if not isinstance(receipt, dict):
        raise ReceiptConversionError("receipt", "a JSON object (dict)", type(receipt).__name__)
    raw = receipt.get(name)
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise ReceiptConversionError(name, f"a string (hex or base64 of {size} bytes)", _show(raw))
    if raw.isascii() and all(c in _HEX_DIGITS for c in raw):  # base64 of 64 bytes ends in "==": never all hex
        if len(raw) % 2:
            raise ReceiptConversionError(name, f"{2 * size} hex digits ({size} bytes)", f"{len(raw)} hex digits")
        data = bytes.fromhex(raw)
        if len(data) != size:
            raise ReceiptConversionError(name, f"{size} bytes ({2 * size} hex digits)", f"{len(data)} bytes of hex")
        return data
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise ReceiptConversionError(name, f"{2 * size} hex digits or base64 of {size} bytes",
                                     f"{len(raw)} characters, neither encoding: {_show(raw)}") from None
    if base64.b64encode(data).decode("ascii") != raw:
        raise ReceiptConversionError(name, "canonical base64 (padded, unused bits zero)", _show(raw))
    if len(data) != size:
        hint = (f" (as long as {size} bytes of hex, but with a character that is not a hex digit)"
                if len(raw) == 2 * size else "")
        raise ReceiptConversionError(name, f"{size} bytes (base64)", f"{len(data)} bytes of base64{hint}")
    return data


# -- bytes --------------------------------------------------------------------------------------

def signed_bytes(receipt: dict) -> bytes:
    """The bytes a receipt's Ed25519 signature covers: its ``tonNode.rempReceipt``, boxed.

    Raises :class:`ReceiptConversionError` for a receipt that cannot be converted. Fast: a
    per-kind compiled function; the reference path (:func:`receipt_to_tl` + :func:`rmkit.tl.serialize`)
    decides whatever that function does not plainly accept, so both give the same bytes and errors.
    """
    try:
        out = _FAST[receipt["kind"]](receipt)
    except (KeyError, TypeError):
        out = None
    if out is not None:
        return out
    t = _tables()
    if not _FAST:
        _FAST.update(t.fast)
    try:
        return serialize(t.schema, receipt_to_tl(receipt))
    except TlError as exc:  # receipt_to_tl checked every value: not expected
        raise ReceiptConversionError(exc.path or "receipt", exc.expected, exc.found) from None


def signed_receipt_bytes(receipt: dict, signature: bytes) -> bytes:
    """A boxed ``tonNode.rempSignedReceipt``: the boxed receipt as ``receipt:bytes`` and the
    64-byte signature."""
    t = _tables()
    if not isinstance(signature, (bytes, bytearray)) or len(signature) != t.signature_size:
        found = f"{len(signature)} bytes" if isinstance(signature, (bytes, bytearray)) else type(signature).__name__
        raise ReceiptConversionError(t.signature_field, f"{t.signature_size} bytes", found)
    return struct.pack("<I", t.signed.id) + pack_bytes(signed_bytes(receipt)) + bytes(signature)


def parse_signed_receipt(data: bytes) -> tuple[dict, bytes]:
    """Decode a boxed ``tonNode.rempSignedReceipt`` into (the ``tonNode.rempReceipt`` object,
    the 64 signature bytes). The 2022 form (``signature:bytes``) is accepted too.

    Strict: :class:`rmkit.tl.TlError` (a ``ValueError``) names the field and byte offset of any
    malformation, inside the embedded receipt as well (offsets count from the start of ``data``).
    """
    t = _tables()
    buf = bytes(data)
    cid = struct.unpack_from("<I", buf)[0] if len(buf) >= 4 else None
    schema = t.legacy_schemas.get(cid, t.schema)
    outer = deserialize(schema, buf, t.signed.result)
    rec_name, sig_name = t.signed_fields
    sig = outer[sig_name]
    if len(sig) != t.signature_size:
        raise TlError(f"{t.signature_size} signature bytes", f"{len(sig)} bytes", path=f"{outer['@type']}.{sig_name}")
    inner = outer[rec_name]
    start = 4 + (1 if buf[4] < 254 else 4)  # the receipt's data: after the id and its (canonical) length prefix
    try:
        receipt = deserialize(t.schema, inner, t.record.result)
    except TlError as exc:
        raise TlError(exc.expected, exc.found, offset=None if exc.offset is None else start + exc.offset,
                      path=f"{outer['@type']}.{rec_name}: {exc.path}") from None
    return receipt, bytes(sig)


def pub_key_id(public_key: bytes) -> bytes:
    """The 32-byte key id of an Ed25519 public key: SHA-256 of the boxed ``pub.ed25519`` object.
    A receipt's ``source_id`` is ``pub_key_id(key).hex()``."""
    t = _tables()
    if not isinstance(public_key, (bytes, bytearray)) or len(public_key) != 32:
        found = f"{len(public_key)} bytes" if isinstance(public_key, (bytes, bytearray)) else type(public_key).__name__
        raise ReceiptConversionError("public_key", "32 bytes (an Ed25519 public key)", found)
    return hashlib.sha256(struct.pack("<I", t.public_key.id) + bytes(public_key)).digest()


def receipt_from_pairs(pairs: list[tuple[str, Any]]) -> dict:
    """A receipt dict from the key/value pairs of its JSON text (``json.loads(text,
    object_pairs_hook=receipt_from_pairs)``), keeping the seed's repeated ``block_file_hash``:
    when it occurs twice on a receipt with master block fields and no ``mc_block_file_hash``,
    the occurrence among the ``mc_*`` fields (else the first) is the master block's."""
    names = [k for k, _ in pairs]
    if names.count("block_file_hash") != 2 or "mc_block_file_hash" in names or "mc_block_id" not in names:
        return dict(pairs)
    where = [i for i, n in enumerate(names) if n == "block_file_hash"]

    def mc_neighbours(i: int) -> int:
        return (i > 0 and names[i - 1].startswith("mc_")) + (i + 1 < len(names) and names[i + 1].startswith("mc_"))

    # the occurrence with more mc_* neighbours is the master block's (a tie: the first)
    master = max(where, key=lambda i: (mc_neighbours(i), -i))
    out: dict[str, Any] = {}
    for i, (k, v) in enumerate(pairs):
        out["mc_block_file_hash" if i == master else k] = v
    return out


def recover_master_file_hash(obj: dict, text) -> dict:
    """``obj`` as parsed from ``text`` (bytes or str) by a reader that keeps the last of repeated
    keys; when the text repeats ``block_file_hash`` in the seed's way (master block fields and no
    ``mc_block_file_hash``), the receipt parsed again with :func:`receipt_from_pairs`, so that the
    master block's file hash is not lost. Cheap for every other receipt: one key lookup."""
    if "mc_block_file_hash" in obj or "mc_block_id" not in obj or "block_file_hash" not in obj:
        return obj
    needle = b'"block_file_hash"' if isinstance(text, (bytes, bytearray)) else '"block_file_hash"'
    if text.count(needle) < 2:
        return obj
    try:
        parsed = json.loads(text, object_pairs_hook=receipt_from_pairs)
    except (RecursionError, ValueError):  # nested deeper than json's recursion allows: keep orjson's view,
        return obj                        # whose fields the schema checks then report
    if isinstance(parsed, dict) and "kind" not in parsed and isinstance(parsed.get("value"), dict):
        parsed = parsed["value"]  # a Kafka record whose value is the receipt object
    return parsed if isinstance(parsed, dict) else obj


# -- the compiled fast path ----------------------------------------------------------------------

#: kind -> compiled function; filled on the first call of :func:`signed_bytes`
_FAST: dict[str, Callable[[dict], bytes | None]] = {}


_FMT = {"int": "i", "long": "q", "int128": "16s", "int256": "32s", "int512": "64s"}
_CACHE_LIMIT = 50_000  # decoded ids kept per size (about 10 MB at most)
_FAST_ERRORS = "(KeyError, ValueError, TypeError, AttributeError, OverflowError, struct_error)"


def _compile_fast(t: _Tables, k: _Kind) -> Callable[[dict], bytes | None]:
    """A function giving the boxed receipt bytes of one kind in one ``struct`` call (two around a
    string), or None whenever anything is not plainly valid, so that the reference path decides
    (and explains). Generated code: one statement per field, no recursion, no calls but
    ``fromhex`` and ``pack``. Integers need no range check: ``struct`` raises on overflow.
    """
    env: dict[str, Any] = {"fromhex": bytes.fromhex, "from_bytes": int.from_bytes, "pack_bytes": pack_bytes,
                           "forbidden": k.forbidden, "struct_error": struct.error,
                           "DEFAULT_BLOCK": tuple(t.default_block[bf.name] for bf in t.block.fields)}
    body = ["def fast(r):", "    try:", "        if not forbidden.isdisjoint(r): return None"]
    chunks: list[tuple[list[str], list[str]] | str] = [([], [])]  # struct runs, and pre-packed strings
    counter = iter(range(1, 1000))

    def read(v: _Value, indent: str, optional: bool = False) -> str:
        """Lines reading JSON field ``v`` of ``r`` into a fresh variable, whose name is returned."""
        var = f"x{next(counter)}"
        ind = indent + "    " if optional else indent
        if optional:
            body.append(f"{indent}if {v.json!r} in r:")
        if v.encoding not in ("hex", "hex_u64"):
            body.append(f"{ind}{var} = r[{v.json!r}]")
        if v.encoding in ("hex", "hex_u64"):
            # ids repeat across a log (sources, blocks, a message's receipts): a hit in the cache of
            # strings already decoded skips fromhex; only valid strings ever enter the cache
            size = v.size if v.encoding == "hex" else 8
            cache, get = f"C_{v.encoding}{size}", f"G_{v.encoding}{size}"
            env.setdefault(cache, {})
            env.setdefault(get, env[cache].get)
            body.append(f"{ind}{var}_s = r[{v.json!r}]")
            body.append(f"{ind}{var} = {get}({var}_s)")
            body.append(f"{ind}if {var} is None:")
            body.append(f"{ind}    if type({var}_s) is not str or len({var}_s) != {2 * size}: return None")
            body.append(f"{ind}    {var} = fromhex({var}_s)")
            body.append(f"{ind}    if len({var}) != {size}: return None")
            if v.encoding == "hex_u64":
                body.append(f"{ind}    {var} = from_bytes({var}, 'big', signed=True)")
            body.append(f"{ind}    if len({cache}) >= {_CACHE_LIMIT}: {cache}.clear()")
            body.append(f"{ind}    {cache}[{var}_s] = {var}")
        elif v.encoding == "integer":
            body.append(f"{ind}if type({var}) is not int: return None")
        else:
            body.append(f"{ind}if type({var}) is not str: return None")
        if optional:
            body.append(f"{indent}else:")
            body.append(f"{indent}    {var} = {_zero(v)!r}")
        return var

    def add(fmt: str, expr: str) -> None:
        run = chunks[-1]
        if isinstance(run, str):
            run = ([], [])
            chunks.append(run)
        run[0].append(fmt)
        run[1].append(expr)

    status = t.schema[k.status]
    common = {v.tl: v for v in t.common}
    values = {v.tl: v for v in k.values}
    groups = {g.tl_field: g for g in k.groups}
    block_fields = [bf.name for bf in t.block.fields]
    add("I", str(t.record.id))
    for f in t.record.fields:
        if f.name != t.status_field:
            add(_FMT[common[f.name].tl_type], read(common[f.name], "        "))
            continue
        add("I", str(status.id))
        for sf in status.fields:
            if sf.name == t.level_field:
                add("I", str(t.schema[k.level].id))
            elif sf.name in values:
                v = values[sf.name]
                var = read(v, "        ", optional=not v.required)
                if v.encoding == "text":
                    body.append(f"        {var} = pack_bytes({var}.encode())")
                    chunks.append(var)
                else:
                    add(_FMT[v.tl_type], var)
            elif sf.name in groups:
                g = groups[sf.name]
                blk = f"b{next(counter)}"
                body.append(f"        if {' or '.join(f'{v.json!r} in r' for v in g.values)}:")
                parts = {v.tl: read(v, "            ", optional=not v.required) for v in g.values}
                parts.update({name: repr(lit) for name, lit in g.fixed.items()})
                body.append(f"            {blk} = ({', '.join(parts[name] for name in block_fields)},)")
                body.append("        else:")
                body.append(f"            {blk} = DEFAULT_BLOCK")
                add("".join(_FMT[bf.type.name] for bf in t.block.fields), f"*{blk}")
            else:  # a block id the kind leaves at the default
                add("".join(_FMT[bf.type.name] for bf in t.block.fields), "*DEFAULT_BLOCK")
    exprs = []
    for i, chunk in enumerate(chunks):
        if isinstance(chunk, str):
            exprs.append(chunk)
        elif chunk[0]:
            env[f"S{i}"] = struct.Struct("<" + "".join(chunk[0])).pack
            exprs.append(f"S{i}({', '.join(chunk[1])})")
    body.append(f"        return {' + '.join(exprs)}")
    body.append(f"    except {_FAST_ERRORS}:")
    body.append("        return None")
    exec("\n".join(body), env)  # noqa: S102 - generated from the spec's own tables
    fast = env["fast"]
    fast.source = "\n".join(body)
    return fast
