"""Writing receipt logs: JSON Lines, and Kafka dumps as the checker reads them.

Why separate from the simulator: any receipt source (the simulator, a test, a converter) writes
logs the same way. A Kafka dump has one record per line, ``{"topic", "partition", "offset",
"timestamp", "key", "value"}``: ``key`` the message id (document 000: "The key is a message ID
while value is a json with one status"), ``timestamp`` the time the record was produced (the only
time an ever-node validator receipt has, as its own timestamp is 0). ``.gz`` paths are compressed.
"""

from __future__ import annotations

import gzip
import os
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


def _open(path: str, compress: bool):
    """A binary file to write: ``-`` is standard output."""
    if path == "-":
        return _Stdout()
    if compress:
        return _ReproducibleGzip(path)
    return open(path, "wb", buffering=1 << 20)


class _ReproducibleGzip:
    """A gzip file whose header holds neither a time nor a file name (``gzip -n``): the log is
    written under a temporary name and at some time, and neither may change its bytes, which the
    seed alone decides."""

    def __init__(self, path: str):
        self.raw = open(path, "wb", buffering=1 << 20)
        self.gz = gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, compresslevel=3, mtime=0)

    def __enter__(self):
        return self.gz

    def __exit__(self, *exc):
        try:
            self.gz.close()
        finally:
            self.raw.close()
        return False


def _write_lines(path: str, lines: Iterable[bytes]) -> int:
    """Write already-encoded lines in chunks (``.gz`` paths compressed); return how many.

    A file is written under a temporary name beside it and renamed when complete, so that a
    source failing midway (a key set too small for the run) leaves no truncated log that looks
    whole, and an older file of that name stays until then. What is not a regular file (stdout, a
    pipe, a device, a symbolic link) is written in place."""
    compress = path.endswith(".gz")
    if path == "-" or os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
        return _write_chunks(_open(path, compress), lines)
    folder, name = os.path.split(path)
    partial = os.path.join(folder, f".{name}.partial-{os.getpid()}")
    try:
        n = _write_chunks(_open(partial, compress), lines)
        os.replace(partial, path)
    except BaseException:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise
    return n


def _write_chunks(out, lines: Iterable[bytes]) -> int:
    n = 0
    buf: list = []
    with out as f:
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
