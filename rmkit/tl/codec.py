"""The generic TL codec: objects as dicts, serialized and deserialized by walking the schema.

Why generic and recursive: this is the reference. It follows the schema line by line and checks
every value, so that hand-compiled fast paths for hot objects (a protocol's records) can be tested
against it byte for byte.

Values: an object is a dict ``{"@type": constructor name, field: value, ...}`` (a bare object's
``@type`` may be left out when serializing; decoding always sets it); ``int`` and ``long`` are
Python ints in the signed 32/64-bit range; ``int128``/``int256``/``int512`` are ``bytes`` of
exactly 16/32/64 bytes; ``string`` is a ``str`` (UTF-8 on the wire; decoding rejects invalid
UTF-8); ``bytes`` is ``bytes``; ``vector T`` is a list.

Decoding is strict: input must end exactly where the object ends; a boxed value's id must be a
constructor of the expected type; lengths, padding and length prefixes must be canonical. Every
error is a :class:`~rmkit.tl.errors.TlError` naming the field path and the byte offset.
"""

from __future__ import annotations

import struct
from typing import Any

from rmkit.tl.errors import TlError
from rmkit.tl.schema import BUILTINS, Constructor, Schema, TypeRef, type_ref
from rmkit.tl.wire import INT_RANGES, pack_bytes, unpack_bytes

_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")


def _type_name(v: Any) -> str:
    return type(v).__name__


# -- serialize ---------------------------------------------------------------------------------

def serialize(schema: Schema, obj: dict, *, boxed: bool = True) -> bytes:
    """The TL bytes of ``obj`` (a dict with ``@type``), with its constructor id when ``boxed``."""
    if not isinstance(obj, dict) or "@type" not in obj:
        raise TlError("a dict with an '@type' key naming a constructor", _type_name(obj))
    name = obj["@type"]
    c = schema.by_name.get(name)
    if c is None:
        raise TlError("a constructor of the schema", repr(name), path="@type")
    out: list[bytes] = []
    if boxed:
        out.append(_U32.pack(c.id))
    _write_fields(schema, c, obj, out, name)
    return b"".join(out)


def _write_fields(schema: Schema, c: Constructor, obj: dict, out: list[bytes], path: str) -> None:
    extra = [k for k in obj if k != "@type" and k not in c.field_names]
    if extra:
        raise TlError(f"only the fields of {c.name} ({', '.join(f.name for f in c.fields) or 'none'})",
                      f"unknown field(s) {', '.join(map(repr, extra))}", path=path)
    for f in c.fields:
        if f.name not in obj:
            raise TlError(f"field {f.name!r} ({f.type})", "no such key", path=path)
        _write(schema, f.type, obj[f.name], out, f"{path}.{f.name}")


def _write(schema: Schema, t: TypeRef, v: Any, out: list[bytes], path: str) -> None:
    kind = t.kind
    if kind == "builtin":
        name = t.name
        if name in INT_RANGES:
            lo, hi = INT_RANGES[name]
            if type(v) is not int and not (isinstance(v, int) and not isinstance(v, bool)):
                raise TlError(f"an {name} (Python int)", _type_name(v), path=path)
            if not lo <= v <= hi:
                raise TlError(f"an {name} in [{lo}, {hi}]", str(v), path=path)
            out.append((_I32 if name == "int" else _I64).pack(v))
        elif name == "string":
            if not isinstance(v, str):
                raise TlError("a str (string)", _type_name(v), path=path)
            try:
                data = v.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise TlError("text that UTF-8 can encode (string)", f"{exc.reason} at character {exc.start}", path=path) from None
            out.append(_pack(data, path))
        elif name == "bytes":
            if not isinstance(v, (bytes, bytearray)):
                raise TlError("bytes", _type_name(v), path=path)
            out.append(_pack(bytes(v), path))
        else:
            size = BUILTINS[name]
            if not isinstance(v, (bytes, bytearray)) or len(v) != size:
                found = f"{len(v)} bytes" if isinstance(v, (bytes, bytearray)) else _type_name(v)
                raise TlError(f"{size} bytes ({name})", found, path=path)
            out.append(bytes(v))
    elif kind == "vector":
        if not isinstance(v, (list, tuple)):
            raise TlError(f"a list ({t})", _type_name(v), path=path)
        out.append(_I32.pack(len(v)))
        for i, item in enumerate(v):
            _write(schema, t.item, item, out, f"{path}[{i}]")
    else:
        if not isinstance(v, dict):
            raise TlError(f"a dict ({t})", _type_name(v), path=path)
        if kind == "boxed":
            name = v.get("@type")
            c = schema.by_name.get(name) if isinstance(name, str) else None
            if c is None or c.result != t.name:
                allowed = ", ".join(x.name for x in schema.by_type[t.name])
                raise TlError(f"'@type' one of {allowed} (type {t.name})", repr(name), path=path)
            out.append(_U32.pack(c.id))
        else:
            c = schema.by_name[t.name]
            if v.get("@type", c.name) != c.name:
                raise TlError(f"'@type' {c.name} (bare) or none", repr(v.get("@type")), path=path)
        _write_fields(schema, c, v, out, path)


def _pack(data: bytes, path: str) -> bytes:
    try:
        return pack_bytes(data)
    except TlError as exc:
        raise TlError(exc.expected, exc.found, path=path) from None


# -- deserialize -------------------------------------------------------------------------------

def deserialize(schema: Schema, data: bytes | bytearray | memoryview, type_name: str) -> dict:
    """Decode ``data`` as one value of ``type_name`` and nothing else.

    ``type_name`` is a boxed type (``PublicKey``: the input starts with a constructor id of that
    type) or a constructor name (``pub.ed25519``: bare, no id). The input must
    end exactly where the value ends.
    """
    buf = bytes(data)
    t = type_ref(type_name)
    if t.kind == "boxed" and t.name not in schema.by_type:
        raise TlError("a boxed type of the schema", repr(type_name))
    if t.kind == "bare" and t.name not in schema.by_name:
        raise TlError("a constructor of the schema", repr(type_name))
    value, end = _read(schema, t, buf, 0, "")
    if end != len(buf):
        raise TlError(f"the end of the input after {value.get('@type', type_name)} ({end} bytes)",
                      f"{len(buf) - end} trailing byte(s)", offset=end, path=value.get("@type", type_name))
    return value


def _need(buf: bytes, offset: int, n: int, what: str, path: str) -> None:
    if offset + n > len(buf):
        raise TlError(f"{n} bytes ({what})", f"{len(buf) - offset} bytes before the end", offset=offset, path=path)


def _read(schema: Schema, t: TypeRef, buf: bytes, off: int, path: str) -> tuple[Any, int]:
    """One value of type ``t`` at ``off``: (value, offset after it). ``path`` is the field path so
    far ("" at the top, where an object's path starts with its constructor's name)."""
    kind = t.kind
    if not path and kind not in ("boxed", "bare"):
        path = str(t)
    if kind == "builtin":
        name = t.name
        if name == "int":
            _need(buf, off, 4, name, path)
            return _I32.unpack_from(buf, off)[0], off + 4
        if name == "long":
            _need(buf, off, 8, name, path)
            return _I64.unpack_from(buf, off)[0], off + 8
        if name in ("string", "bytes"):
            data, end = unpack_bytes(buf, off, path)
            if name == "bytes":
                return data, end
            try:
                return data.decode("utf-8"), end
            except UnicodeDecodeError as exc:
                raise TlError("UTF-8 text (string)", f"invalid UTF-8 ({exc.reason})",
                              offset=off + (4 if buf[off] == 254 else 1) + exc.start, path=path) from None
        size = BUILTINS[name]
        _need(buf, off, size, name, path)
        return buf[off:off + size], off + size
    if kind == "vector":
        _need(buf, off, 4, "vector count", path)
        n = _I32.unpack_from(buf, off)[0]
        if n < 0:
            raise TlError("a vector count >= 0", str(n), offset=off, path=path)
        off += 4
        items = []
        for i in range(n):
            item, off = _read(schema, t.item, buf, off, f"{path}[{i}]")
            items.append(item)
        return items, off
    if kind == "boxed":
        _need(buf, off, 4, f"constructor id of {t.name}", path or t.name)
        cid = _U32.unpack_from(buf, off)[0]
        c = schema.by_id.get(cid)
        if c is None or c.result != t.name:
            allowed = ", ".join(f"{x.name} {x.id:#010x}" for x in schema.by_type[t.name])
            what = "an unknown id" if c is None else f"the id of {c.name} (type {c.result})"
            raise TlError(f"a constructor id of {t.name} ({allowed})", f"{what} {cid:#010x}", offset=off, path=path or t.name)
        off += 4
    else:
        c = schema.by_name[t.name]
    obj: dict[str, Any] = {"@type": c.name}
    path = path or c.name
    for f in c.fields:
        obj[f.name], off = _read(schema, f.type, buf, off, f"{path}.{f.name}")
    return obj, off
