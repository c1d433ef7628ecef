"""Reading RMB messages from a file or stdin: one JSON object, a JSON array of them, or JSON
Lines. Lines that are not messages are reported as FILE:LINE and counted; nothing is dropped.

The lines are those `rmkit check` reads (:mod:`rmkit.logread`): split on newline only (a U+2028
or a lone CR inside a line is the line's text), a UTF-8 byte order mark at the start skipped,
gzip recognised, JSON read by orjson as the log checker reads it (nesting deeper than its limit,
non-UTF-8 text: that line is unreadable, the others are read). A line longer than
:data:`rmkit.logread.MAX_LINE_BYTES` is reported unread (docs/input-limits.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from rmkit.errors import InputError
from rmkit.logread import MAX_LINE_BYTES, UTF8_BOM, line_too_long, open_input, split_lines


@dataclass
class ReadResult:
    messages: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (line, message)
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: ..."


def _read_all(path: str, shown: str) -> bytes:
    if path != "-":
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise InputError(f"{shown}: cannot read ({exc.strerror or exc})") from None
    f = open_input(path)  # a closed stdin: an InputError naming it; gzip recognised
    try:
        return f.read()
    except (OSError, EOFError, ValueError) as exc:  # a corrupt gzip, a read error
        raise InputError(f"{shown}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    finally:
        if path != "-":
            f.close()


def _not_json(exc: orjson.JSONDecodeError) -> str:
    return f"not JSON ({str(exc)[:200]})"


def read_messages(path: str) -> ReadResult:
    shown = "<stdin>" if path == "-" else path
    data = _read_all(path, shown)
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    out = ReadResult()
    whole = None
    if len(data) <= MAX_LINE_BYTES:  # one document (object or array) is held to a line's limit
        try:
            whole = orjson.loads(data)
        except orjson.JSONDecodeError:
            whole = None
    if isinstance(whole, dict):
        out.messages.append((1, whole))
        return out
    if isinstance(whole, list):
        for i, m in enumerate(whole):
            if isinstance(m, dict):
                out.messages.append((1, m))
            else:
                out.problems.append(f"{shown}:1: element [{i}]: expected a JSON object, found {type(m).__name__}")
        return out
    lines, rest = split_lines(data)
    if rest:
        lines.append(rest)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            out.problems.append(f"{shown}:{n}: {line_too_long(len(line))}")
            continue
        try:
            m = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            out.problems.append(f"{shown}:{n}: {_not_json(exc)}")
            continue
        if isinstance(m, dict):
            out.messages.append((n, m))
        else:
            out.problems.append(f"{shown}:{n}: expected a JSON object, found {type(m).__name__}")
    if not out.messages and not out.problems:
        out.problems.append(f"{shown}: no message found (empty input)")
    return out
