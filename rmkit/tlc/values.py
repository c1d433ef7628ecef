"""Read TLA+ values as TLC prints them (in error traces) into Python values, and print them back.

Why a parser of our own: TLC 2.15 cannot write traces as JSON (no ``-dumpTrace``, no ``Json``
module), so the text trace is the only witness there is. The mapping keeps plain Python types,
so a trace can be compared, diffed and dumped as JSON without special cases, while subclasses
remember which TLA+ form a value came from (the text rendering prints TLA+ notation back):

================================  ==========================================================
TLA+ text                         Python
================================  ==========================================================
``42``, ``-7``                    ``int``
``TRUE`` / ``FALSE``              ``bool``
``"a\\"b"``                       ``str`` (escapes ``\\"``, ``\\\\``, ``\\n``, ``\\t``, ... decoded)
``m1`` (model value)              :class:`ModelValue` (a ``str``)
``<<1, 2>>``, ``<< >>``           :class:`TlaSeq` (a ``list``): sequences and tuples
``{1, 2}``, ``{}``                :class:`TlaSet` (a ``list``, in the order TLC printed it,
                                  which is TLC's normal order, so equal sets print equally)
``1..3``                          :class:`TlaSet` ``[1, 2, 3]`` (kept as :class:`TlaText` when
                                  larger than :data:`MAX_INTERVAL`)
``[a |-> 1, b |-> "x"]``          :class:`TlaRecord` (a ``dict`` with ``str`` keys)
``(k1 :> v1 @@ k2 :> v2)``        :class:`TlaFunction` (a ``dict``); keys that are ints, strings,
                                  booleans or model values stay as they are; compound keys
                                  (tuples, records, sets) become their TLA+ text as
                                  :class:`TlaText`, a stable string rendering
anything else                     :class:`TlaText` (a ``str``): the text verbatim
================================  ==========================================================

In JSON, sets and sequences are both arrays, and function keys are strings.
"""

from __future__ import annotations

import re
from typing import Any

MAX_INTERVAL = 10_000


class ModelValue(str):
    """A TLC model value (a bare identifier such as ``m1``)."""

    __slots__ = ()


class TlaText(str):
    """TLA+ text kept verbatim: a compound function key, or a value form this parser does not read."""

    __slots__ = ()


class TlaSeq(list):
    """A sequence or tuple ``<<...>>``."""

    __slots__ = ()


class TlaSet(list):
    """A set ``{...}``, elements in the order TLC printed them."""

    __slots__ = ()


class TlaRecord(dict):
    """A record ``[field |-> value, ...]``."""

    __slots__ = ()


class TlaFunction(dict):
    """A function ``(key :> value @@ ...)``."""

    __slots__ = ()


class TlaParseError(ValueError):
    """The text is not a TLA+ value as TLC prints it; says where (character offset) and what."""


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<int>-?\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><<|>>|\|->|:>|@@|\.\.|[\[\](){},])
""", re.VERBOSE | re.DOTALL)

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f"}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), body, flags=re.DOTALL)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise TlaParseError(f"unexpected character {text[pos]!r} at offset {pos}")
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group(), pos))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, k: int = 0) -> tuple[str, str, int] | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def expect(self, value: str) -> None:
        tok = self.peek()
        if tok is None or tok[1] != value:
            found = "end of text" if tok is None else f"{tok[1]!r} at offset {tok[2]}"
            raise TlaParseError(f"expected {value!r}, found {found}")
        self.i += 1

    def at(self, value: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[0] == "op" and tok[1] == value

    def value(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise TlaParseError("expected a value, found end of text")
        kind, text, pos = tok
        self.i += 1
        if kind == "int":
            n = int(text)
            if self.at(".."):
                self.i += 1
                hi_tok = self.peek()
                if hi_tok is None or hi_tok[0] != "int":
                    raise TlaParseError(f"expected an integer after '..' at offset {pos}")
                self.i += 1
                hi = int(hi_tok[1])
                if hi - n + 1 > MAX_INTERVAL:
                    return TlaText(f"{n}..{hi}")
                return TlaSet(range(n, hi + 1))
            return n
        if kind == "str":
            return _unescape(text[1:-1])
        if kind == "ident":
            if text == "TRUE":
                return True
            if text == "FALSE":
                return False
            return ModelValue(text)
        if text == "<<":
            return TlaSeq(self.items(">>"))
        if text == "{":
            return TlaSet(self.items("}"))
        if text == "[":
            return self.record()
        if text == "(":
            return self.function()
        raise TlaParseError(f"unexpected {text!r} at offset {pos}")

    def items(self, close: str) -> list[Any]:
        out: list[Any] = []
        if self.at(close):
            self.i += 1
            return out
        while True:
            out.append(self.value())
            if self.at(","):
                self.i += 1
                continue
            self.expect(close)
            return out

    def record(self) -> TlaRecord:
        rec = TlaRecord()
        if self.at("]"):  # not printed by TLC, but harmless
            self.i += 1
            return rec
        while True:
            tok = self.peek()
            if tok is None or tok[0] != "ident":
                found = "end of text" if tok is None else f"{tok[1]!r} at offset {tok[2]}"
                raise TlaParseError(f"expected a record field name, found {found}")
            self.i += 1
            self.expect("|->")
            rec[tok[1]] = self.value()
            if self.at(","):
                self.i += 1
                continue
            self.expect("]")
            return rec

    def function(self) -> Any:
        start = self.i
        first = self.value()
        if self.at(")"):  # a parenthesised value, not a function
            self.i += 1
            return first
        fn = TlaFunction()
        self.i = start
        while True:
            key = self.value()
            self.expect(":>")
            fn[function_key(key)] = self.value()
            if self.at("@@"):
                self.i += 1
                continue
            self.expect(")")
            return fn


def function_key(key: Any) -> Any:
    """A dict key for a TLA+ function argument: scalars as they are, compound values as TLA+ text."""
    if isinstance(key, (list, dict)):
        return TlaText(format_value(key))
    return key


def parse_value(text: str) -> Any:
    """Parse one TLA+ value; raise :class:`TlaParseError` when ``text`` is not exactly one value."""
    p = _Parser(text)
    v = p.value()
    if p.peek() is not None:
        tok = p.peek()
        raise TlaParseError(f"unexpected {tok[1]!r} at offset {tok[2]} after a complete value")
    return v


def parse_value_lenient(text: str) -> Any:
    """Like :func:`parse_value`, but text it cannot read comes back verbatim as :class:`TlaText`."""
    try:
        return parse_value(text)
    except TlaParseError:
        return TlaText(" ".join(text.split()))


_STATE_VAR = re.compile(r"^(?:/\\\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*", re.DOTALL)


def parse_state(text: str) -> dict[str, Any]:
    """Variables of one state as TLC prints it: ``/\\ x = 1`` lines, or ``x = 1`` for a single variable.
    A value may continue on indented lines; a line starting ``/\\`` begins the next variable."""
    values: dict[str, Any] = {}
    for chunk in re.split(r"(?m)^(?=/\\ )", text.strip("\n")):
        if not chunk.strip():
            continue
        m = _STATE_VAR.match(chunk.strip())
        if m is None:
            continue
        values[m.group(1)] = parse_value_lenient(chunk.strip()[m.end():].strip())
    return values


# -- printing back ------------------------------------------------------------------------------
def _string(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f'"{out}"'


def _key(k: Any) -> str:
    return str(k) if isinstance(k, TlaText) else format_value(k)


def format_value(v: Any) -> str:
    """TLA+ text of a parsed value (one line); inverse of :func:`parse_value` up to whitespace."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (ModelValue, TlaText)):
        return str(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, TlaSet):
        return "{" + ", ".join(format_value(x) for x in v) + "}"
    if isinstance(v, list):
        return "<<" + ", ".join(format_value(x) for x in v) + ">>"
    if isinstance(v, TlaRecord):
        return "[" + ", ".join(f"{k} |-> {format_value(x)}" for k, x in v.items()) + "]"
    if isinstance(v, dict):
        if not v:
            return "<<>>"
        return "(" + " @@ ".join(f"{_key(k)} :> {format_value(x)}" for k, x in v.items()) + ")"
    return str(v)


def pretty_value(v: Any, width: int = 88, indent: int = 0) -> str:
    """TLA+ text of a value, one element per line (recursively) when longer than ``width``;
    ``indent`` is the column the value starts at, continuation lines align under it."""
    flat = format_value(v)
    if len(flat) + indent <= width or not isinstance(v, (list, dict)) or not v:
        return flat
    if isinstance(v, TlaRecord):
        parts = [f"{k} |-> {pretty_value(x, width, indent + 2 + len(k) + 5)}" for k, x in v.items()]
        return "[ " + (",\n" + " " * (indent + 2)).join(parts) + " ]"
    if isinstance(v, dict):
        parts = []
        for k, x in v.items():
            ks = _key(k)
            parts.append(f"{ks} :> {pretty_value(x, width, indent + 3 + len(ks) + 4)}")
        return "( " + ("\n" + " " * indent + "@@ ").join(parts) + " )"
    open_, close, step = ("{ ", " }", 2) if isinstance(v, TlaSet) else ("<< ", " >>", 3)
    parts = [pretty_value(x, width, indent + step) for x in v]
    return open_ + (",\n" + " " * (indent + step)).join(parts) + close
