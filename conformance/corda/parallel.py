"""``rmkit check --protocol corda --jobs N``: the shares of :class:`CordaLogChecker` in N processes.

Each worker gets the records whose message id hashes into its share (as Spark's shuffle by key
does for ``rmkit audit``, by the same :class:`RecordKey`); a line that is not JSON, or has no id,
goes to share 0, so every record is read by exactly one share. A line is keyed without parsing it
where it can be (:func:`share_of`). Plain files checked exactly are read by the workers
themselves, chunk by chunk, each chunk's reader dealing the others their lines of it (the core's
:mod:`rmkit.peerread`, as REMP's ``--jobs`` reads); standard input, gzip and a check under a
declared bound have each worker read every input and keep its own lines. The parent merges the shares' results
with the same :meth:`CordaLogChecker.merge` the audit uses. The parent checks share 0 itself while
the other shares run (each process holds an interpreter and the checker's modules, about 40 MB:
N processes rather than N + 1, which at ten million records decides whether two shares stay
under the exact check's memory bound). Under a declared bound each share reads
the inputs in step (one reader per input) and judges its tracks as the clock passes them; the facts
across ids go to the merge.
"""

from __future__ import annotations

import os
import time
from itertools import compress

from rmkit.gctune import paused_collections
from rmkit.lazy import numpy_module
from rmkit.linescan import pick_table, picks_of
from rmkit.logread import BrokenLine
from rmkit.peerread import DECODED_CHUNK_BYTES, Links, peer_batches, readable
from rmkit.processes import key_bytes_share, key_share, run_in_processes
from rmkit.protocol import REF_LINE_BITS, RecordKey
from rmkit.verdict import Report


def share_of(line, n: int, key: RecordKey) -> int:
    """Which of ``n`` shares a raw record belongs to: by the checker's record key, read as
    ``rmkit audit`` reads it (:meth:`RecordKey.of_line`), so both deal records out alike."""
    return keyer(key, n)(line)


def keyer(key: RecordKey, n: int):
    """:func:`share_of` for many lines: line -> its share.

    Parsing every line for its key cost each share about as much as checking its own records, so a
    line is keyed without parsing where its text settles the key: the quoted key name occurs in it
    once, as ``"id":"<value>"``, the value without a backslash (so its bytes are the key's UTF-8).
    A line whose top-level object has the key then gets the parsed key's share; any other line is
    parsed. (A line that matches so but has no top-level key, such as a nested one, is unreadable
    without an id: it is reported by whichever share gets it, and nothing else depends on where.)"""
    def parsed(line) -> int:
        return key_share(key.of_line(line), n)

    fast = _fast_key(key)
    if fast is None:
        return parsed
    name, needle = fast
    skip = len(needle)

    def share(line) -> int:
        if type(line) is bytes and line.count(name) == 1:
            i = line.find(needle)
            if i >= 0:
                i += skip
                j = line.find(b'"', i)
                if j >= 0:
                    value = line[i:j]
                    if b"\\" not in value:
                        return key_bytes_share(value, n)
        return parsed(line)

    return share


def _fast_key(key: RecordKey) -> tuple[bytes, bytes] | None:
    """(the quoted key name, ``"name":"``) where a line's text can settle ``key``: one top-level
    name, no case folding, no values read as text; else None."""
    if len(key.paths) == 1 and len(key.paths[0]) == 1 and not key.fold_case and not key.text_values:
        name = key.paths[0][0]
        if '"' not in name and "\\" not in name:
            quoted = b'"' + name.encode() + b'"'
            return quoted, quoted + b':"'
    return None


def _compiled_line_shares():
    """The compiled :func:`._keyshares.line_shares` (each line's share on :func:`keyer`'s fast
    reading, a batch in one call), or None where it was not built or ``RMKIT_PURE_PYTHON=1``."""
    if os.environ.get("RMKIT_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from rmkit.conformance.corda._keyshares import line_shares
    except ImportError:  # not built (no C compiler at install): keyer's reading, line by line
        return None
    return line_shares


_LINE_SHARES = _compiled_line_shares()
_NOT_READ = 255  # line_shares' mark of a line its fast reading does not settle


def _dealer(checker, n: int):
    """``shares(lines)``: each line's share (of ``n``, fewer than :data:`_NOT_READ`), a byte a
    line, :data:`_NOT_READ` for a blank line (no share's: every reader numbers it, none reads it).
    A batch whose every line the compiled fast reading settles is dealt in one call; a blank,
    broken or odd line of a batch by :func:`keyer`'s reading, with the same answers."""
    share = keyer(checker.key, n)
    fast = _fast_key(checker.key) if _LINE_SHARES is not None else None

    def shares(lines) -> bytes:
        if fast is not None and type(lines) is list:
            got = _LINE_SHARES(lines, *fast, n)
            if _NOT_READ not in got:
                return got
            got = bytearray(got)
        else:
            got = bytearray([_NOT_READ]) * len(lines)
        at = got.find(_NOT_READ)
        while at >= 0:
            line = lines[at]
            if isinstance(line, BrokenLine):  # an input that broke off: share 0 reports it
                got[at] = 0
            elif line and not line.isspace():
                got[at] = share(line)
            at = got.find(_NOT_READ, at + 1)
        return got

    return shares


def _own_batches(checker, inputs: list[str], k: int, n: int, batches=None):
    """Share k's (refs, lines) of every line of the inputs (or of ``batches``), read by this
    process: each share reads the whole log and keeps its own lines."""
    shares, pick = _dealer(checker, n), pick_table(k)
    for refs, lines in checker.file_batches(inputs) if batches is None else batches:
        picked = shares(lines).translate(pick)
        mine = list(compress(lines, picked))
        if mine:
            yield list(compress(refs, picked)), mine


def _read_by_peers(checker, inputs: list[str], k: int, n: int, net):
    """Share k's (refs, lines), read by the shares themselves (:mod:`rmkit.peerread`): each reads
    its chunks of the inputs and deals the others their lines of them, so a line is read, split and
    dealt once in the run instead of once per share. An input that breaks off is reported by the
    share that owns the chunk where it broke (one reader's share 0 reports it: the merge sorts the
    problems by line); share 0 reports the progress of the whole log, as the one reader does."""
    shares = _dealer(checker, n)
    broken: list[tuple[int, str]] = []

    def deal(refs, lines, n, text) -> list[bytes]:
        return picks_of(shares(lines), n)

    def on_break(idx: int, line: int, why: str) -> None:
        broken.append(((idx << REF_LINE_BITS) | line, why))

    # (256 KB chunks, not 1 MB: two shares took 0.77 to 0.89 of the wall time and 0.79 to 0.89 of the
    # CPU on the bench's short and peers shapes, 1,000,000 records, three alternated runs)
    for refs, lines in peer_batches(k, n, inputs, net, deal, REF_LINE_BITS, on_break=on_break,
                                    progress=checker.progress if k == 0 else None,
                                    chunk_bytes=DECODED_CHUNK_BYTES):
        yield refs, lines
        if broken:
            yield [ref for ref, _ in broken], [BrokenLine(why) for _, why in broken]
            broken.clear()
    if broken:
        yield [ref for ref, _ in broken], [BrokenLine(why) for _, why in broken]


def _check_share(checker, inputs: list[str], k: int, n: int, links: Links | None = None):
    """Share k of n; ``links``: the shares' pipes where they read the inputs themselves."""
    if checker.bound_ms is not None:  # under a declared bound: each input apart, read in step (stream.py)
        streams = [_own_batches(checker, inputs, k, n, checker.input_batches(i, p)) for i, p in enumerate(inputs)]
        return checker.check_streams(inputs, streams, spanning=False)
    if links is None:
        return checker.check_share(inputs, _own_batches(checker, inputs, k, n))
    net = links.keep(k)
    try:
        return checker.check_share(inputs, _read_by_peers(checker, inputs, k, n, net))
    finally:
        net.close()


def run_parallel(checker, inputs: list[str], jobs: int) -> Report:
    started = time.perf_counter()
    # share 0 here (see the module's docstring); then numpy, the merge's and no share's (its checks
    # across ids), imported while the other shares still run rather than after the last
    # plain files, checked exactly: the shares read them (rmkit.peerread); else each reads them whole
    links = Links(jobs) if checker.bound_ms is None and jobs < _NOT_READ and readable(inputs) else None
    try:
        with paused_collections():  # the shares' results, unpickled, and the merge hold no cycles (see rmkit.gctune)
            shares = run_in_processes(_check_share, [(checker, inputs, k, jobs, links) for k in range(jobs)], first_here=True,
                                      while_waiting=numpy_module)
            report = checker.merge(inputs, shares)
    finally:
        if links is not None:
            links.close()  # (what share 0, here, did not keep: nothing once it ran)
    elapsed = time.perf_counter() - started
    report.metrics.update(jobs=jobs, elapsed_s=round(elapsed, 3),
                          receipts_per_s=round(report.records / elapsed) if elapsed > 0 else None)
    return report
