"""Writing receipt logs: JSON Lines, and Kafka dumps as the checker reads them.

Why separate from the simulator: any receipt source (the simulator, a test, a converter) writes
logs the same way. A Kafka dump has one record per line, ``{"topic", "partition", "offset",
"timestamp", "key", "value"}``: ``key`` the message id (document 000: "The key is a message ID
while value is a json with one status"), ``timestamp`` the time the record was produced (the only
time an ever-node validator receipt has, as its own timestamp is 0). ``.gz`` paths are compressed.
"""

from __future__ import annotations

import gzip
import sys
from typing import Iterable

import orjson

_CHUNK = 4096


class _Stdout:
    """Standard output as a binary file that a ``with`` block does not close."""

    def __enter__(self):
        return sys.stdout.buffer

    def __exit__(self, *exc):
        sys.stdout.buffer.flush()
        return False


def _open(path: str):
    """A binary file to write: ``-`` is standard output, ``.gz`` is compressed."""
    if path == "-":
        return _Stdout()
    if path.endswith(".gz"):
        return gzip.open(path, "wb", compresslevel=3)
    return open(path, "wb", buffering=1 << 20)


def _write_lines(path: str, lines: Iterable[bytes]) -> int:
    """Write already-encoded lines in chunks; return how many were written."""
    n = 0
    buf: list = []
    with _open(path) as f:
        for line in lines:
            buf.append(line)
            if len(buf) >= _CHUNK:
                f.write(b"".join(buf))
                n += len(buf)
                buf.clear()
        if buf:
            f.write(b"".join(buf))
            n += len(buf)
    return n


def write_jsonl(path: str, receipts: Iterable[dict]) -> int:
    """Write one receipt object per line; return the number written."""
    dumps, opt = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    return _write_lines(path, (dumps(r, option=opt) for r in receipts))


def write_kafka_dump(path: str, timed_receipts: Iterable, topic: str = "remp-receipts", partitions: int = 1) -> int:
    """Write ``(kafka_time_ms, receipt)`` pairs as Kafka records (partition by key, offsets per
    partition in order); return the number written."""
    if partitions < 1:
        raise ValueError("partitions must be >= 1")
    dumps, opt = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    offsets = [0] * partitions

    def records():
        for ts, r in timed_receipts:
            key = r.get("message_id")
            p = int(key[:8], 16) % partitions if partitions > 1 and isinstance(key, str) and len(key) >= 8 else 0
            yield dumps({"topic": topic, "partition": p, "offset": offsets[p], "timestamp": ts, "key": key, "value": r}, option=opt)
            offsets[p] += 1

    return _write_lines(path, records())
