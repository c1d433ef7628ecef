"""Read receipt logs as a stream: JSONL of receipts, or a Kafka dump (one record per line with
``topic, partition, offset, timestamp, key, value``), plain or ``.gz``, a file or ``-`` (stdin).

Nothing is held beyond the current line; unreadable lines are returned as errors for the caller to
count and report (file and line), never dropped.
"""

from __future__ import annotations

import gzip
import io
import sys
from typing import IO, Any, Iterator

import orjson

from rmkit.errors import InputError

KAFKA_FIELDS = ("topic", "partition", "offset")


def open_input(path: str) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    try:
        if path.endswith(".gz"):
            return io.BufferedReader(gzip.open(path, "rb"), buffer_size=1 << 20)
        return open(path, "rb", buffering=1 << 20)
    except OSError as exc:
        raise InputError(f"cannot open input {path!r}: {exc.strerror or exc}") from None


def iter_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw line) for every non-blank line of one input."""
    f = open_input(path)
    try:
        lineno = 0
        for lineno, line in enumerate(f, 1):
            if line.strip():
                yield lineno, line
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"cannot read input {path!r} after line {lineno}: {exc}") from None
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def decode_line(line: bytes) -> tuple[dict | None, int | None, bytes | str | None, str | None, str | None]:
    """Decode one line into ``(receipt, kafka_timestamp, receipt_text, error, error_field)``.

    ``receipt_text`` identifies the receipt's exact content (to recognise redelivered copies).
    A Kafka record's value may be a JSON object or a string holding one.
    """
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return None, None, None, f"not JSON: {exc}", None
    if type(obj) is not dict:
        return None, None, None, f"expected a JSON object, found {type(obj).__name__}", None
    if "kind" in obj or "value" not in obj:
        return obj, None, line, None, None
    return unwrap_kafka(obj)


def unwrap_kafka(rec: dict[str, Any]):
    value = rec.get("value")
    ts = rec.get("timestamp")
    ts = ts if type(ts) is int and ts > 0 else None
    if isinstance(value, str):
        try:
            inner = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            return None, ts, None, f"Kafka record value is a string but not JSON: {exc}", "value"
        text: bytes | str = value
    elif type(value) is dict:
        inner, text = value, orjson.dumps(value)
    else:
        found = "null (a tombstone record?)" if value is None else type(value).__name__
        return None, ts, None, f"Kafka record value: expected a JSON object or a string holding one, found {found}", "value"
    if type(inner) is not dict:
        return None, ts, None, f"Kafka record value: expected a JSON object, found {type(inner).__name__}", "value"
    return inner, ts, text, None, None
