"""Read record logs as a stream: JSONL of records, or a Kafka dump (one record per line with
``topic, partition, offset, timestamp, key, value``, or ``kcat -C -J`` envelopes), plain or ``.gz``, a file or ``-`` (stdin).

Nothing is held beyond the current chunk of lines; the caller decodes each line and reports the
ones it cannot read (file and line), never dropping them.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import time
import zlib
from io import BytesIO
from operator import itemgetter
from typing import IO, Any, Iterator

import orjson

from rmkit.errors import InputError

# A record's reference, as a sharded checker receives it: its input's index << REF_LINE_BITS | its
# 1-based line number (the row number for a table format). In ``rmkit audit`` the line number may
# be provisional: it orders a file's records as the log does, and the lines a merged report names
# (evidence, input problems) are renumbered to the real ones afterwards. A checker names a line in
# those fields only (never in an explanation's text) and relies on no gap between two references.
REF_LINE_BITS = 40


class BrokenLine(str):
    """Stands, among a batch's lines, for a line that could not be read at all (an input that
    broke off): its text says why. A reader that deals lines to shares sends it to one share, which
    reports it."""


GZIP_MAGIC = b"\x1f\x8b"
# A chunk read at a time: large enough that a read and a split cost little per line, small
# enough that its lines are still in the processor's cache when they are checked (1 MB chunks
# read and split a log of records a few hundred bytes long a quarter faster than 4 MB ones).
CHUNK_BYTES = 1 << 20
UTF8_BOM = b"\xef\xbb\xbf"
# The longest line any command reads (a record, a message, a scenario line): 16 MiB, a thousand
# times the largest record a real log holds. A longer line is reported unread and the reading goes
# on past it, so that one runaway line can neither hold a command for minutes nor take memory in
# proportion to it (docs/input-limits.md).
MAX_LINE_BYTES = 16 << 20


def line_too_long(size: int | None = None) -> str:
    """The problem of a line past :data:`MAX_LINE_BYTES` (``size``: its length, when known)."""
    found = f" ({size:,} bytes)" if size is not None else ""
    return f"line too long{found}: at most {MAX_LINE_BYTES:,} bytes (16 MiB) are read per line; not read"


def open_input(path: str) -> IO[bytes]:
    """A binary reader of one input; gzip is recognised by its magic bytes, not only by ``.gz``
    (stdin too)."""
    if path == "-":
        if sys.stdin is None:  # started with stdin closed (`<&-`)
            raise InputError("input '-': standard input is closed")
        f = getattr(sys.stdin, "buffer", None)
        if f is None:  # a text stream put in stdin's place (by an embedding program, a test): its text as UTF-8
            f = io.BytesIO(sys.stdin.read().encode("utf-8", "surrogatepass"))
        if not hasattr(f, "peek"):
            f = io.BufferedReader(f)
        if f.peek(2)[:2] == GZIP_MAGIC:
            return gzip.GzipFile(fileobj=f, mode="rb")
        return f
    try:
        f = open(path, "rb", buffering=1 << 20)
        if path.endswith(".gz") or f.peek(2)[:2] == GZIP_MAGIC:
            f.close()  # reopened by gzip, which then owns (and closes) the file
            return gzip.open(path, "rb")
        return f
    except OSError as exc:
        raise InputError(f"cannot open input {path!r}: {exc.strerror or exc}") from None


def iter_line_batches(path: str, chunk_bytes: int = CHUNK_BYTES, on_error=None) -> Iterator[list[bytes]]:
    """Every line of one input, in batches (blank lines included, so that the caller can number
    lines by counting). Reading in chunks (:data:`CHUNK_BYTES`) and splitting is several times
    faster than iterating a file line by line, which matters at millions of records.

    When the input breaks off (a truncated or corrupt gzip, a read error) after it was opened,
    the lines read so far have been yielded; with ``on_error`` the break is reported as
    ``on_error(line number, message)`` (the line that could not be read) and the reading of this
    input ends, so that the caller's report covers what was read; without it, an :class:`InputError`."""
    f = open_input(path)
    try:
        for lines, _ in _line_batches(f, path, chunk_bytes, on_error):
            yield lines
    finally:
        if path != "-":
            f.close()


def numbered_batches(idx: int, path: str, *, chunk_bytes: int = CHUNK_BYTES, on_error=None,
                     progress=None, terminated: bool = False) -> Iterator[tuple[range, list[bytes]]]:
    """The lines of input ``idx`` (of a run's inputs) as (refs, lines) batches, each ref the line's
    reference as checkers and their shares know it: ``idx << REF_LINE_BITS | line number`` (from 1,
    blank lines counted). ``progress(idx, bytes of the input read)`` is called after each batch is
    handled; ``on_error`` as for :func:`iter_line_batches`. ``terminated``: each line keeps its
    newline (a last line without one gets one), for a reader that takes the newline as part of
    the record's text (JSON's whitespace): it is spared a copy of every line."""
    for refs, lines, _ in numbered_chunks(idx, path, chunk_bytes=chunk_bytes, on_error=on_error, progress=progress,
                                          terminated=terminated):
        yield refs, lines


def numbered_chunks(idx: int, path: str, *, chunk_bytes: int = CHUNK_BYTES, on_error=None,
                    progress=None, terminated: bool = False) -> Iterator[tuple[range, list[bytes], bytes]]:
    """:func:`numbered_batches` with each batch's text as read: its lines joined by newlines (or,
    ``terminated``, one after the other), which may be followed by more bytes (the start of the
    next line). A reader that scans a batch as one buffer (a ``--jobs`` dealer) gets it without
    joining the lines again."""
    base = idx << REF_LINE_BITS
    lineno = done = 0
    f = open_input(path)
    try:
        for batch, text in _line_batches(f, path, chunk_bytes, on_error, terminated):
            yield range(base | (lineno + 1), base | (lineno + 1 + len(batch))), batch, text
            lineno += len(batch)
            if progress is not None:
                done += sum(map(len, batch)) + (0 if terminated else len(batch))
                progress(idx, done)
    finally:
        if path != "-":
            f.close()


_CHOP = itemgetter(slice(None, -1))  # a line read with its newline -> the line


def split_lines(text: bytes, terminated: bool = False) -> tuple[list[bytes], bytes]:
    """(the complete lines of ``text``, without their newlines unless ``terminated``; what follows
    the last newline): ``text.split(b"\\n")`` with the last piece apart. The lines are found by
    the C library's memchr (BytesIO's readlines, which shares ``text`` instead of copying it)
    instead of bytes.split's byte-by-byte loop: a third of the time on lines a record long, and
    half of that again for lines that keep their newlines."""
    lines = BytesIO(text).readlines()
    rest = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
    return (lines if terminated else list(map(_CHOP, lines))), rest


def _line_batches(f, path: str, chunk_bytes: int, on_error, terminated: bool = False) -> Iterator[tuple[list[bytes], bytes]]:
    """(lines, text) batches: the text starts with the lines joined by newlines (``terminated``:
    the lines, each with its newline). A line longer than :data:`MAX_LINE_BYTES` is not kept: it
    is reported (``on_error(its line number, why)``; without ``on_error`` an :class:`InputError`),
    read past without being held, and stands as a blank line so that the lines after it keep their
    numbers. Memory: at most MAX_LINE_BYTES plus a chunk for the line being read."""
    read = f.read1 if hasattr(f, "read1") else f.read
    rest = b""
    nread = 0
    nlines = 0
    skipping = 0  # bytes of an over-long line read past so far (0: none is being read past)
    blank = b"\n" if terminated else b""
    pieces: list[bytes] = []  # of the chunk being read (gzip hands out small pieces)
    failure = None

    def too_long(size: int) -> None:
        if on_error is None:
            raise InputError(f"input {path!r} line {nlines + 1:,}: {line_too_long(size)}")
        on_error(nlines + 1, line_too_long(size))

    while failure is None:
        try:
            size = 0
            while size < chunk_bytes:
                piece = read(chunk_bytes - size)
                if not piece:
                    break
                pieces.append(piece)
                size += len(piece)
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            failure = exc
        chunk = b"".join(pieces)
        pieces.clear()
        if not chunk:
            break
        if not nread and chunk.startswith(UTF8_BOM):
            chunk = chunk[len(UTF8_BOM):]
        nread += len(chunk)
        if skipping:
            end = chunk.find(b"\n")
            if end < 0:
                skipping += len(chunk)
                continue
            too_long(skipping + end)
            nlines += 1
            yield [blank], blank
            skipping, chunk = 0, chunk[end + 1:]
            if not chunk:
                continue
        text = rest + chunk if rest else chunk
        lines, rest = split_lines(text, terminated)
        if len(text) > MAX_LINE_BYTES and lines and max(map(len, lines)) > MAX_LINE_BYTES + terminated:
            for i, line in enumerate(lines):  # complete lines past the limit: reported, each a blank line
                if len(line) > MAX_LINE_BYTES + terminated:
                    nlines += i
                    too_long(len(line) - terminated)
                    nlines -= i
                    lines[i] = blank
            text = (b"" if terminated else b"\n").join(lines) + (b"" if terminated else b"\n")
        nlines += len(lines)
        if lines:
            yield lines, text
        if len(rest) > MAX_LINE_BYTES:  # a line already past the limit: read past it, not held
            skipping, rest = len(rest), b""
    if skipping and failure is None:
        too_long(skipping)
        yield [blank], blank
        return
    if failure is None:
        if rest:
            last = rest + b"\n" if terminated else rest
            yield [last], last
        return
    why = "truncated: the compressed stream ended before its end marker" if isinstance(failure, EOFError) else str(failure)
    message = f"cannot read input {path!r} after {nread:,} bytes ({nlines:,} complete lines): {why}"
    if on_error is None:
        raise InputError(message)
    on_error(nlines + 1, message)  # the partial line at the break is the unreadable one: reported, not checked


def kafka_time_field(rec: dict[str, Any]) -> str | None:
    """The field of a Kafka record's time: ``timestamp``, or ``ts`` in a ``kcat -C -J`` envelope."""
    return "timestamp" if "timestamp" in rec else "ts" if "ts" in rec else None


def kafka_time_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with a Kafka record's time (:func:`kafka_time_field`: unix ms, an integer),
    or None when it is usable or absent (0: no time, as a record's own 0). A damaged one is an
    input problem, not a silent "no time": rules that need time would otherwise pass unjudged."""
    name = kafka_time_field(rec)
    if name is None:
        return None
    ts = rec[name]
    if type(ts) is int and ts >= 0:
        return None
    return f"Kafka record {name}: expected an integer >= 0 (unix ms), found {type(ts).__name__} {ts!r}"[:200]


def kafka_value_field(rec: dict[str, Any]) -> str | None:
    """The field holding the log's record when ``rec`` is a Kafka record (``value``) or a ``kcat -C -J``
    envelope (``payload``) rather than the record itself (which has a ``kind``); None for the record itself."""
    if "kind" in rec:
        return None
    return "value" if "value" in rec else "payload" if "payload" in rec else None


def unwrap_kafka(rec: dict[str, Any]):
    """(the record it holds, the Kafka record's time, the held record's text, error, field) of a Kafka record; ``kcat -C -J`` names
    the value ``payload`` and the time ``ts``."""
    field = kafka_value_field(rec) or "value"
    value = rec.get(field)
    ts = rec.get(kafka_time_field(rec) or "timestamp")
    ts = ts if type(ts) is int and ts > 0 else None
    if isinstance(value, str):
        try:
            inner = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            return None, ts, None, f"Kafka record {field} is a string but not JSON: {exc}", field
        text: bytes | str = value
    elif type(value) is dict:
        inner, text = value, orjson.dumps(value)
    elif value is None:
        return None, ts, None, None, None  # a tombstone: the caller counts it, it holds no record
    else:
        found = type(value).__name__
        return None, ts, None, f"Kafka record {field}: expected a JSON object or a string holding one, found {found}", field
    if type(inner) is not dict:
        return None, ts, None, f"Kafka record {field}: expected a JSON object, found {type(inner).__name__}", field
    return inner, ts, text, None, None


# Below this many bytes of input one process is faster than starting several.
MIN_PARALLEL_BYTES = 32 << 20


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _cpu_ticks(cpus: set[int] | None) -> tuple[int, int] | None:
    """(idle, all) clock ticks the kernel counted on ``cpus`` (None: all of them), from /proc/stat."""
    idle = total = 0
    with open("/proc/stat", "rb") as f:
        for line in f:
            if not line.startswith(b"cpu") or line[3:4] == b" ":
                continue  # (the first line sums every CPU: each is counted on its own line)
            name, *ticks = line.split()
            if cpus is not None and int(name[3:]) not in cpus:
                continue
            ticks = [int(x) for x in ticks]
            idle += ticks[3] + ticks[4]  # idle, iowait
            total += sum(ticks[:8])      # user nice system idle iowait irq softirq steal
    return (idle, total) if total else None


def _affinity() -> set[int] | None:
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None


def _mark() -> tuple | None:
    """(monotonic time, this process's CPU seconds, the kernel's ticks) now, None where unreadable."""
    try:
        return time.monotonic(), time.process_time(), _cpu_ticks(_affinity())
    except (OSError, ValueError, IndexError):
        return None


# Taken when the kit's reading is imported: the window over which idle_cores looks at the cores
# then starts at the command's start instead of at the decision, so that it is mostly over by then
# (a default run waited the whole window before its first line).
_IMPORTED = _mark()
_MARK_MAX_AGE_S = 2.0  # an older mark says nothing about the cores now (a long-lived process)


def idle_cores(cores: int, window_s: float = 0.2) -> float:
    """How many of this process's cores are idle now: the kernel's idle time on them over a short
    window (Linux), else the cores less the one-minute load average, else ``cores``. The window
    starts when this module was imported, where that was less than a few seconds ago (waiting
    only for what is left of it); the CPU this process spent meanwhile (its start) is counted as
    idle, since it is the core the check itself then runs on, not other work."""
    cpus = _affinity()
    try:
        mark = _IMPORTED if window_s > 0 else None
        if mark is None or mark[2] is None or time.monotonic() - mark[0] > _MARK_MAX_AGE_S:
            mark = (time.monotonic(), time.process_time(), _cpu_ticks(cpus))
            own_counts = False
        else:
            own_counts = True
        wait = window_s - (time.monotonic() - mark[0])
        if wait > 0:
            time.sleep(wait)
        before, after = mark[2], _cpu_ticks(cpus)
        if before and after and after[1] > before[1]:
            idle = after[0] - before[0]
            if own_counts:
                idle = min(idle + (time.process_time() - mark[1]) * os.sysconf("SC_CLK_TCK"), after[1] - before[1])
            return cores * idle / (after[1] - before[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        return max(0.0, cores - os.getloadavg()[0])
    except (OSError, AttributeError):
        return float(cores)


def auto_jobs(inputs: list[str]) -> int:
    """How many processes ``rmkit check`` uses by default: one per idle core (at most 8) for logs
    over MIN_PARALLEL_BYTES; one for stdin and small logs, and where fewer than two cores are idle.

    Why idle cores: the shares split the work well (all of them together spend a few percent more
    CPU than one process), so they win where they get cores of their own, and lose where other
    work holds the cores: there they only add their start and their merge (docs/check-jobs.md has
    the figures)."""
    if any(p == "-" for p in inputs):
        return 1
    try:
        size = sum(os.path.getsize(p) for p in inputs)
    except OSError:
        return 1
    if size < MIN_PARALLEL_BYTES:
        return 1
    cores = usable_cores()
    if cores < 2:
        return 1
    return max(1, min(8, cores, int(idle_cores(cores) + 0.5)))
