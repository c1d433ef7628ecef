"""TL schema lines parsed into constructors, and their ids.

Why parse lines at all instead of hand-writing byte layouts: a TL constructor id is the CRC32 of
its normalized schema line, so the line is the single source of truth. Parsing the line gives the
field list (and so the byte layout) and the id at once, and a line that does not reproduce the id a
reference states is caught as a wrong line, not hidden in a table of magic numbers.

Supported subset (what receipts and keys need): constructors ``name field:type ... = Result``,
field types ``int``, ``long``, ``int128``, ``int256``, ``int512``, ``string``, ``bytes``, a boxed
type (last name component capitalized, e.g. ``PublicKey``: the value carries its
constructor id), a bare constructor (last component lower case, e.g. ``tonNode.blockIdExt``: no
id on the wire) and a bare ``vector T`` (a count, then the elements). Not supported: type
parameters ``{X:Type}``, conditional fields ``flags.N?T``, the boxed ``Vector``.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

from rmkit.tl.errors import TlError

#: Built-in types: name -> fixed size in bytes (None: length-prefixed).
BUILTINS: dict[str, int | None] = {"int": 4, "long": 8, "int128": 16, "int256": 32, "int512": 64,
                                   "string": None, "bytes": None}

_NAME = r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*"
_LINE = re.compile(rf"^(?P<name>{_NAME})(?:#(?P<explicit>[0-9a-fA-F]{{1,8}}))?"
                   rf"(?P<fields>(?:\s+[A-Za-z_][A-Za-z0-9_]*:(?:\(\s*vector\s+{_NAME}\s*\)|vector\s+{_NAME}|{_NAME}))*)"
                   rf"\s*=\s*(?P<result>{_NAME})$")
_FIELD = re.compile(rf"([A-Za-z_][A-Za-z0-9_]*):(\(\s*vector\s+({_NAME})\s*\)|vector\s+({_NAME})|({_NAME}))")


@dataclass(frozen=True)
class TypeRef:
    """A field's type. ``kind``: ``builtin`` | ``boxed`` | ``bare`` | ``vector`` (then ``item``)."""

    name: str
    kind: str
    item: "TypeRef | None" = None

    def __str__(self) -> str:
        return f"vector {self.item}" if self.kind == "vector" else self.name


@dataclass(frozen=True)
class Field:
    name: str
    type: TypeRef


@dataclass(frozen=True)
class Constructor:
    """One TL combinator: ``name`` (e.g. ``pub.ed25519``), its ``fields`` in wire order,
    the boxed ``result`` type, the normalized ``line`` and its 32-bit ``id``."""

    name: str
    fields: tuple[Field, ...]
    result: str
    line: str
    id: int
    field_names: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "field_names", frozenset(f.name for f in self.fields))

    @property
    def id_hex(self) -> str:
        return f"{self.id:08x}"


def type_ref(text: str) -> TypeRef:
    """Classify a type expression: a built-in, ``vector T``, a boxed type or a bare constructor."""
    text = " ".join(text.replace("(", " ").replace(")", " ").split())
    if text.startswith("vector "):
        return TypeRef("vector", "vector", type_ref(text[len("vector "):]))
    if text in BUILTINS:
        return TypeRef(text, "builtin")
    last = text.rsplit(".", 1)[-1]
    return TypeRef(text, "boxed" if last[:1].isupper() else "bare")


def normalize(line: str) -> str:
    """The text whose CRC32 is the constructor id: comments and the final ``;`` removed, an
    explicit ``#id`` dropped, the parentheses around ``vector T`` removed, whitespace collapsed."""
    text = re.sub(r"//.*", "", line)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = text.strip().removesuffix(";")
    text = re.sub(r"\(\s*(vector\s+[^()\s]+)\s*\)", r"\1", text)
    text = re.sub(rf"^({_NAME})#[0-9a-fA-F]{{1,8}}", r"\1", " ".join(text.split()))
    return " ".join(text.replace("=", " = ").split())


def constructor_id(normalized_line: str) -> int:
    """CRC32 (IEEE, as :func:`zlib.crc32`) of the normalized line, as an unsigned 32-bit int."""
    return zlib.crc32(normalized_line.encode("utf-8")) & 0xFFFFFFFF


def parse_line(line: str) -> Constructor:
    """Parse one schema line; the id is the line's CRC32 unless the line states ``name#id``."""
    text = " ".join(re.sub(r"//.*", "", line).strip().removesuffix(";").split())
    m = _LINE.match(text.replace(" = ", "=").replace("=", " = "))
    if m is None:
        raise TlError("a TL constructor line 'name field:type ... = Type'", repr(line))
    name, result = m.group("name"), m.group("result")
    if not name.rsplit(".", 1)[-1][:1].islower():
        raise TlError("a constructor name whose last component starts lower case", repr(name), path=name)
    if not result.rsplit(".", 1)[-1][:1].isupper():
        raise TlError("a result type whose last component starts upper case", repr(result), path=name)
    fields = []
    for fm in _FIELD.finditer(m.group("fields")):
        fname, whole = fm.group(1), fm.group(2)
        if any(f.name == fname for f in fields):
            raise TlError("unique field names", f"{fname!r} twice", path=name)
        fields.append(Field(fname, type_ref(whole)))
    norm = normalize(line)
    cid = int(m.group("explicit"), 16) if m.group("explicit") else constructor_id(norm)
    return Constructor(name, tuple(fields), result, norm, cid)


class Schema:
    """A set of constructors with every referenced type resolved.

    ``by_name`` (constructor name -> constructor), ``by_id`` (id -> constructor) and ``by_type``
    (boxed type -> its constructors). Two constructors with one id, a field naming an unknown type
    or constructor, or a bare reference to a constructor name that does not exist are errors.
    """

    def __init__(self, lines_or_constructors):
        self.by_name: dict[str, Constructor] = {}
        self.by_id: dict[int, Constructor] = {}
        self.by_type: dict[str, list[Constructor]] = {}
        for item in lines_or_constructors:
            c = item if isinstance(item, Constructor) else parse_line(item)
            if c.name in self.by_name:
                raise TlError("unique constructor names", f"{c.name} twice", path=c.name)
            if c.id in self.by_id:
                raise TlError("unique constructor ids", f"{c.id:#010x} for {self.by_id[c.id].name} and {c.name}", path=c.name)
            self.by_name[c.name] = c
            self.by_id[c.id] = c
            self.by_type.setdefault(c.result, []).append(c)
        for c in self.by_name.values():
            for f in c.fields:
                self._check_type(c, f.name, f.type)

    def _check_type(self, c: Constructor, fname: str, t: TypeRef) -> None:
        if t.kind == "vector":
            self._check_type(c, fname, t.item)
        elif t.kind == "boxed" and t.name not in self.by_type:
            raise TlError(f"a known boxed type (one of {sorted(self.by_type)})", repr(t.name), path=f"{c.name}.{fname}")
        elif t.kind == "bare" and t.name not in self.by_name:
            raise TlError("a known constructor for a bare type", repr(t.name), path=f"{c.name}.{fname}")

    def __getitem__(self, name: str) -> Constructor:
        return self.by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self.by_name
