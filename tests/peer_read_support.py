"""Test tooling for every protocol's ``--jobs`` on plain files, where the shares read the log
themselves (rmkit/peerread.py): the odd inputs a chunk boundary could break, smaller chunks, and a
read error planted at one chunk. Each protocol's tests hold its shares' report to one process's."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import rmkit.peerread as peerread
from rmkit.logread import UTF8_BOM


def with_chunk(fn, chunk: int, calls: list | None = None):
    """``fn`` (peer_batches) reading chunks of ``chunk`` bytes, whatever its caller asks; each call
    noted in ``calls``."""
    def batches(*args, **kwargs):
        if calls is not None:
            calls.append(1)
        return fn(*args, **{**kwargs, "chunk_bytes": chunk})
    return batches


def odd_inputs(d: Path, lines: list[bytes], long_line: bytes) -> list[str]:
    """``lines`` cut into three inputs with what a chunk boundary could break: a byte order mark,
    blank lines, an empty file, a line that is not JSON, a line cut short, ``long_line`` (longer
    than a test's chunks), a last line without a newline."""
    half = len(lines) // 2
    first = d / "first.jsonl"
    first.write_bytes(UTF8_BOM + b"\n".join(lines[:half]) + b"\n\n\nnot json\n")
    empty = d / "empty.jsonl"
    empty.write_bytes(b"")
    rest = d / "rest.jsonl"
    cut = lines[half][: len(lines[half]) // 2]
    rest.write_bytes(b"\n".join([cut, *lines[half:half + 40], b"", long_line, *lines[half + 40:]]))  # no newline at the end
    return [str(first), str(empty), str(rest)]


def break_at(monkeypatch, path: Path, chunk: int, at: int = 5) -> tuple[peerread.Chunk, int]:
    """Make the ``at``-th chunk (of ``chunk`` bytes) of the input ``path`` fail to read, as a disk
    error would: (that chunk, the lines before it)."""
    plan = peerread.plan([str(path)], chunk)
    assert len(plan) > at + 1
    broken = plan[at]
    real = peerread.read_chunk_text_bounded  # what a share reads its chunks with

    def failing(fd, ch):
        if ch.idx == 0 and ch.start == broken.start:
            raise OSError(errno.EIO, "Input/output error")
        return real(fd, ch)

    fd = os.open(path, os.O_RDONLY)
    before = sum(len(peerread.read_chunk(fd, ch)[0]) for ch in plan[:at])
    os.close(fd)
    monkeypatch.setattr(peerread, "read_chunk_text_bounded", failing)
    return broken, before


def the_break(broken: peerread.Chunk, before: int) -> str:
    """What the report says of the break :func:`break_at` planted."""
    return f"after {broken.start:,} bytes ({before:,} complete lines): Input/output error"
