"""Reading RMB messages from a file or stdin: one JSON object, a JSON array of them, or JSON
Lines. Lines that are not messages are reported as FILE:LINE and counted; nothing is dropped."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from rmkit.errors import InputError


@dataclass
class ReadResult:
    messages: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (line, message)
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: ..."


def read_messages(path: str) -> ReadResult:
    shown = "<stdin>" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{shown}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    out = ReadResult()
    try:
        whole = json.loads(text)
    except ValueError:
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
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            m = json.loads(line)
        except ValueError as exc:
            out.problems.append(f"{shown}:{n}: not JSON ({exc})")
            continue
        if isinstance(m, dict):
            out.messages.append((n, m))
        else:
            out.problems.append(f"{shown}:{n}: expected a JSON object, found {type(m).__name__}")
    if not out.messages and not out.problems:
        out.problems.append(f"{shown}: no message found (empty input)")
    return out
