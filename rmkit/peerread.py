"""Reading a log with several worker processes that deal each other its lines, for ``--jobs``.

A ``--jobs N`` check gives every message to one of N workers (its share), and a worker must see
all its messages' lines in log order. With one process reading and dealing the lines, that reader
is a third process on the cores the workers need, and every line is read, split and handed over
by it before a worker splits its share again. When every input is a plain file (seekable, not
compressed), the workers read it themselves instead: the inputs are cut into chunks of
:data:`CHUNK_BYTES`, chunk ``c`` is read by worker ``c % N`` (its owner), which finds every line's
share (the protocol's rule, given as ``deal``) and sends each other worker the lines of its share,
then checks its own. Every worker takes the chunks in order, its own as it read them, the others'
as their owners sent them, so each sees its lines in log order and numbers them as one reader
would (a chunk's message says how many lines it holds).

A chunk holds the lines that start in it (a line starts at the file's start, after a UTF-8 byte
order mark there, or after a newline), so its owner reads from its start to the end of its last
line; the last chunk of a file reads to the end of the file as it is then. The lines are those
:func:`rmkit.logread.numbered_chunks` gives with ``terminated`` (each with its newline), blank
lines included. An input that cannot be read further breaks off at the chunk where that happened:
its owner says so, and every worker drops the input's later chunks, as one reader would stop there
(see :func:`peer_batches` and its ``on_break``).

Between two workers there is one pipe each way. Writes never block: what a pipe cannot take yet
waits in its writer's memory, and a worker waiting for a chunk keeps writing what others wait
for, so no two workers can wait on each other. A worker reads its next own chunk and sends it
as soon as it has checked the previous one, so that the others rarely wait: at most a few
chunks per pair of workers are on their way at any time. A worker that stops (killed, failed)
closes its pipes, and those waiting for it get :class:`PeerStopped` instead of hanging.
"""

from __future__ import annotations

import os
import select
import struct
import sys
from collections import deque
from dataclasses import dataclass
from itertools import compress
from typing import Callable, Iterator

from rmkit.logread import CHUNK_BYTES, GZIP_MAGIC, MAX_LINE_BYTES, UTF8_BOM, line_too_long, split_lines  # (the one reader's chunk size)

# The chunk for a checker whose shares hold each chunk's records as Python objects while they check
# them: a quarter of the one reader's, so that a chunk's records, read a chunk ahead, are still in
# the processor's cache when their turn comes (measured per checker where it passes this; a
# checker that scans a chunk in C before it decodes the records one by one keeps the one reader's).
DECODED_CHUNK_BYTES = 1 << 18
# how far past a chunk's end its last line is first looked for (a log's record lines are far shorter)
_TAIL_BYTES = 1 << 16
# Linux: a pipe's buffer can be raised to hold a whole chunk's message (fcntl's F_SETPIPE_SZ)
_F_SETPIPE_SZ = 1031
# a chunk's message: chunk, lines, length of the lines' text, length of a break's reason, length of
# the chunk's summary; then one byte per line (1: the receiver's), the text, the reason, the summary
_HEADER = struct.Struct("<qqqqq")


class PeerStopped(RuntimeError):
    """Another worker stopped before it sent a chunk this one waits for (its own failure is
    what the run reports)."""


def readable(inputs: list[str]) -> bool:
    """Whether the workers can read these inputs themselves: every input a plain file (not
    standard input, not gzip), and worker processes forked (they inherit the pipes)."""
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods() or not sys.platform.startswith("linux"):
        return False
    for path in inputs:
        if path == "-" or path.endswith(".gz"):
            return False
        try:
            with open(path, "rb") as f:
                if not os.path.isfile(path) or f.read(2) == GZIP_MAGIC:
                    return False
        except OSError:
            return False  # the one reader reports it as it does
    return True


@dataclass(frozen=True)
class Chunk:
    """Bytes ``[start, end)`` of input ``idx`` (``end`` None: to the end of the file); ``span``:
    how many bytes of the file as planned it covers (what progress counts)."""

    idx: int
    start: int
    end: int | None
    span: int


def size_of(path: str) -> int:
    """A plain input's size, as :func:`plan` cuts it."""
    return os.path.getsize(path)


def plan(inputs: list[str], chunk_bytes: int = CHUNK_BYTES) -> list[Chunk]:
    """The chunks of the inputs, in log order (an empty file has one, which holds no line). A
    chunk is longer than a byte order mark, so the file's first line starts in its first chunk."""
    if chunk_bytes <= len(UTF8_BOM):
        raise ValueError(f"chunk_bytes: expected more than {len(UTF8_BOM)}, found {chunk_bytes}")
    chunks = []
    for idx, path in enumerate(inputs):
        size = size_of(path)
        starts = range(0, max(size, 1), chunk_bytes)
        chunks += [Chunk(idx, s, None, size - s) if s == starts[-1] else Chunk(idx, s, s + chunk_bytes, chunk_bytes)
                   for s in starts]
    return chunks


def read_chunk(fd: int, chunk: Chunk) -> tuple[list[bytes], bytes]:
    """(the lines that start in the chunk, each with its newline (one added to the file's last
    line if it has none, as :func:`rmkit.logread.numbered_chunks` does with ``terminated``); their
    text, the lines one after the other). Raises OSError when the file cannot be read."""
    text = read_chunk_text(fd, chunk)
    return (split_lines(text, terminated=True)[0] if text else []), text


def read_chunk_text(fd: int, chunk: Chunk) -> bytes:
    """The text of the lines that start in the chunk (:func:`read_chunk`), not split."""
    return read_chunk_text_bounded(fd, chunk)[0]


def read_chunk_text_bounded(fd: int, chunk: Chunk) -> tuple[bytes, list[tuple[int, int]]]:
    """:func:`read_chunk_text`, with each line longer than :data:`MAX_LINE_BYTES` a blank line
    (read past, not held), as the one reader has it; and (its index among the chunk's lines, its
    length) of each, for the chunk's owner to report as the one reader does."""
    text, tail = _chunk_text(fd, chunk)
    longs = []
    if tail is not None or len(text) > MAX_LINE_BYTES:
        lines = split_lines(text, terminated=True)[0]
        for i, line in enumerate(lines):
            if len(line) > MAX_LINE_BYTES + 1:
                longs.append((i, len(line) - 1))
                lines[i] = b"\n"
        if tail is not None:
            longs.append((len(lines), tail))
            lines.append(b"\n")
        text = b"".join(lines)
    return text, longs


def _chunk_text(fd: int, chunk: Chunk) -> tuple[bytes, int | None]:
    """(the text of the lines that start in the chunk, the length of its last line when that one
    is longer than MAX_LINE_BYTES: then it is left out of the text, read past in pieces)."""
    start, end = chunk.start, chunk.end
    lo = start - 1 if start else 0  # the byte before the chunk says whether a line starts at its start
    data = _read_to_end(fd, lo) if end is None else os.pread(fd, max(end - lo, len(UTF8_BOM)) + _TAIL_BYTES, lo)
    if start:
        first = data.find(b"\n") + 1  # the first line start at or after the chunk's start
        if not first or (end is not None and lo + first >= end):
            return b"", None  # none: the chunk lies inside a longer line
    else:
        first = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
    if first >= len(data):
        return b"", None  # the end of the file starts no line
    if end is None:
        stop = len(data)
    else:
        stop = data.find(b"\n", end - 1 - lo) + 1  # after the newline ending the line that holds the chunk's last byte
        if not stop:
            last = max(data.rfind(b"\n", first, end - lo), first - 1) + 1  # where the line running past the chunk starts
            tail = [data[last:]]
            size = len(tail[0])
            while True:
                more = os.pread(fd, _TAIL_BYTES if size <= MAX_LINE_BYTES else CHUNK_BYTES, lo + last + size)
                cut = more.find(b"\n")
                if cut >= 0 or not more:
                    size += cut if cut >= 0 else 0
                    if size > MAX_LINE_BYTES:
                        return _terminated(data[first:last]), size
                    tail.append(more[:cut + 1] if cut >= 0 else b"")
                    break
                size += len(more)
                if size <= MAX_LINE_BYTES:
                    tail.append(more)  # held while it may still be a line that is read
                else:
                    tail.clear()
            data = data[:last] + b"".join(tail)
            stop = len(data)
    return _terminated(data[first:stop]), None


def _terminated(text: bytes) -> bytes:
    return text if not text or text.endswith(b"\n") else text + b"\n"


def _read_to_end(fd: int, at: int) -> bytes:
    pieces = []
    while True:
        piece = os.pread(fd, CHUNK_BYTES, at)
        if not piece:
            return b"".join(pieces)
        pieces.append(piece)
        at += len(piece)


class Links:
    """The pipes between N workers: one each way per pair, made before the workers are forked.
    A worker keeps its own ends (:meth:`keep`), the parent none (:meth:`close`)."""

    def __init__(self, n: int):
        import fcntl  # (POSIX: only where readable() holds)

        self.n = n
        self.pipes: dict[tuple[int, int], tuple[int, int]] = {}  # (from, to) -> (read fd, write fd)
        for a in range(n):
            for b in range(n):
                if a != b:
                    r, w = os.pipe()
                    try:
                        fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", _F_SETPIPE_SZ), CHUNK_BYTES)
                    except OSError:
                        pass  # a smaller buffer only means more, smaller writes
                    os.set_blocking(w, False)
                    self.pipes[(a, b)] = (r, w)

    def keep(self, k: int) -> "PeerNet":
        """In worker k: close every end that is not k's, and return k's links."""
        ins, outs = {}, {}
        for (a, b), (r, w) in self.pipes.items():
            if b == k:
                ins[a] = r
            else:
                os.close(r)
            if a == k:
                outs[b] = w
            else:
                os.close(w)
        self.pipes = {}  # (every end is k's now, or closed: close() has nothing left to close)
        return PeerNet(ins, outs)

    def close(self) -> None:
        for r, w in self.pipes.values():
            os.close(r)
            os.close(w)


class PeerNet:
    """One worker's ends: it sends chunk messages without blocking and waits for one peer's next
    message while writing what its other peers wait for."""

    def __init__(self, ins: dict[int, int], outs: dict[int, int]):
        self.ins, self.outs = ins, outs
        self.pending: dict[int, deque] = {j: deque() for j in outs}
        self.peer_of_fd = {fd: j for j, fd in outs.items()}

    def send(self, j: int, parts: tuple) -> None:
        self.pending[j].extend(memoryview(p) for p in parts if len(p))
        self._flush(j)

    def _flush(self, j: int) -> None:
        queue, fd = self.pending[j], self.outs[j]
        while queue:
            try:
                written = os.write(fd, queue[0])
            except BlockingIOError:
                return
            except BrokenPipeError:
                raise PeerStopped(f"worker {j} stopped before it took its lines") from None
            if written == len(queue[0]):
                queue.popleft()
            else:
                queue[0] = queue[0][written:]
                return

    def recv(self, j: int):
        """Peer j's next chunk message: (chunk, lines, pick, text, break reason or None, summary).
        Each part is read from the pipe as it is (one copy)."""
        chunk, nlines, ntext, nerror, nsummary = _HEADER.unpack(self._read(j, _HEADER.size))
        pick, text, reason, summary = self._read(j, nlines), self._read(j, ntext), self._read(j, nerror), self._read(j, nsummary)
        return chunk, nlines, pick, text, reason.decode() or None, summary

    def _read(self, j: int, size: int) -> bytes:
        """``size`` bytes from peer j, writing to the others meanwhile whatever they can take."""
        fd, pieces, got = self.ins[j], [], 0
        while got < size:
            writing = [self.outs[p] for p, q in self.pending.items() if q]
            ready, can_write, _ = select.select([fd], writing, [])
            for w in can_write:
                self._flush(self.peer_of_fd[w])
            if ready:
                piece = os.read(fd, size - got)
                if not piece:
                    raise PeerStopped(f"worker {j} stopped before it sent its lines")
                pieces.append(piece)
                got += len(piece)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def close(self) -> None:
        """Close this worker's ends (a worker in a process that goes on after its share: the
        parent's own share). Its peers waiting for it then stop with :class:`PeerStopped`."""
        for fd in (*self.ins.values(), *self.outs.values()):
            os.close(fd)
        self.ins, self.outs, self.pending, self.peer_of_fd = {}, {}, {}, {}

    def drain(self) -> None:
        """Wait until every peer has taken what was sent to it."""
        while True:
            writing = [self.outs[p] for p, q in self.pending.items() if q]
            if not writing:
                return
            _, can_write, _ = select.select([], writing, [])
            for w in can_write:
                self._flush(self.peer_of_fd[w])


def message(chunk: int, nlines: int, pick: bytes, text: bytes, error: str | None = None, summary: bytes = b"") -> tuple:
    reason = (error or "").encode()
    return (_HEADER.pack(chunk, nlines, len(text), len(reason), len(summary)), pick, text, reason, summary)


def peer_batches(k: int, n: int, inputs: list[str], net: PeerNet, deal: Callable, ref_bits: int,
                 on_break: Callable[[int, int, str], None], on_read: Callable[[int, int], None] | None = None,
                 chunk_bytes: int = CHUNK_BYTES, deal_text: Callable | None = None,
                 summary: tuple[Callable, Callable] | None = None,
                 progress: Callable[[int, int], None] | None = None) -> Iterator[tuple]:
    """Worker k's (refs, lines) batches of its share, in log order, numbered as the one reader's
    :func:`rmkit.logread.numbered_chunks` numbers them (refs: ``input index << ref_bits | line
    number``), each with its newline. ``deal(refs, lines, n, text)`` gives, per worker, a byte
    per line (1: that worker's); the refs it is given number the lines within their chunk.
    ``on_break(idx, line, message)`` is called by the owner of the chunk where an input could not
    be read further (the line that could not be read, as the one reader reports it);
    ``on_read(idx, its span)`` after each own chunk is read; ``progress(idx, bytes of it taken so
    far)`` as each chunk, own or not, is taken in log order (the whole log's progress, as the one
    reader reports it). ``deal_text(text, n)``, when given,
    deals a chunk's text at once: (the picks ``deal`` would give, each worker's lines one after the
    other), or None to have the chunk split and dealt by ``deal``; the owner then splits only its
    own lines.

    ``summary``: (make, pack, unpack, take), when every worker needs something of every line
    besides its own lines (a protocol's clock, say, which every record moves): ``make(text, lines,
    pick)`` is called by a chunk's owner on all the chunk's lines (their text; the lines split, or
    None where the chunk was dealt from its text and they were not; the owner's pick of them, so
    that it may read its own lines ahead), ``pack`` turns what it made into bytes,
    sent to every other worker with its lines, and ``unpack`` turns them back; ``take(what was made,
    the chunk's first ref, this worker's pick)`` gives what each worker's batch of the chunk then
    carries as a third part, (refs, lines, taken). The owner takes what it made as it made it (no
    round trip through bytes). With it, a worker gets a batch for every chunk that holds a line,
    its own lines or none."""
    chunks = plan(inputs, chunk_bytes)
    fds: dict[int, int] = {}
    ahead: dict[int, tuple] = {}  # own chunks read ahead: chunk -> (how many lines it holds, this worker's pick and lines of it, break reason)
    broken: set[int] = set()  # inputs that broke off: their later chunks are dropped

    def load(c: int) -> None:
        """Read own chunk c and send every peer its lines (nothing to read after a break)."""
        if c >= len(chunks):
            return
        ch = chunks[c]
        text, error, longs = b"", None, []
        if ch.idx not in broken:
            try:
                if ch.idx not in fds:
                    fds[ch.idx] = os.open(inputs[ch.idx], os.O_RDONLY)
                text, longs = read_chunk_text_bounded(fds[ch.idx], ch)
            except OSError as exc:
                error = exc.strerror or str(exc)
        dealt = deal_text(text, n) if text and deal_text is not None else None
        lines = None
        if dealt is not None:
            picks, texts = dealt
            nlines = len(picks[0])
        else:
            lines = split_lines(text, terminated=True)[0] if text else []
            nlines = len(lines)
            picks = deal(range(1, nlines + 1), lines, n, text) if lines else [b""] * n
            texts = {j: b"".join(compress(lines, picks[j])) for j in net.outs}
        made = summary[0](text, lines, picks[k]) if summary is not None and nlines else None
        sent = summary[1](made) if made is not None else b""
        for j in net.outs:
            net.send(j, message(c, nlines, picks[j], texts[j], error, sent))
        # this worker's lines, split after the peers have theirs (or kept from the split above)
        if lines is None:
            mine = split_lines(texts[k], terminated=True)[0] if texts[k] else []
        else:
            mine = list(compress(lines, picks[k]))
        ahead[c] = (nlines, picks[k], mine, error, longs, made)
        if on_read is not None and ch.span:
            on_read(ch.idx, ch.span)

    base: dict[int, int] = {}  # input -> its lines before the chunk being taken
    taken: dict[int, int] = {}  # input -> its bytes in the chunks taken (progress)
    try:
        load(k)
        for c, ch in enumerate(chunks):
            if c % n == k:
                nlines, pick, mine, error, longs, made = ahead.pop(c)
                load(c + n)  # read ahead: the others get it while this worker checks this one
            else:
                got, nlines, pick, text, error, sent = net.recv(c % n)
                if got != c:
                    raise RuntimeError(f"worker {c % n} sent chunk {got} where chunk {c} was due")
                made = summary[2](sent) if summary is not None and nlines else None
                mine = split_lines(text, terminated=True)[0] if text else []
                longs = []
            if progress is not None and ch.span:
                taken[ch.idx] = taken.get(ch.idx, 0) + ch.span
                progress(ch.idx, taken[ch.idx])
            if ch.idx in broken:
                continue
            before = base.get(ch.idx, 0)
            for i, size in longs:  # reported by the chunk's owner, as a break is; the lines after are read
                on_break(ch.idx, before + i + 1, line_too_long(size))
            if error is not None:
                broken.add(ch.idx)
                if c % n == k:
                    on_break(ch.idx, before + 1, f"cannot read input {inputs[ch.idx]!r} after {ch.start:,} bytes "
                                                 f"({before:,} complete lines): {error}")
                continue
            first = (ch.idx << ref_bits) | (before + 1)
            if summary is not None:
                if nlines:
                    yield list(compress(range(first, first + nlines), pick)), mine, summary[3](made, first, pick)
            elif mine:
                yield list(compress(range(first, first + nlines), pick)), mine
            base[ch.idx] = before + nlines
        net.drain()
    finally:
        for fd in fds.values():
            os.close(fd)
