"""``rmkit check --protocol corda --jobs N``: the shares of :class:`CordaLogChecker` in N processes.

Each worker reads every input and keeps the records whose message id hashes into its share (as
Spark's shuffle by key does for ``rmkit audit``, by the same :class:`RecordKey`); a line that is
not JSON, or has no id, goes to share 0, so every record is read by exactly one share. A line is
keyed without parsing it where it can be (:func:`share_of`). The parent merges the shares' results
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
from rmkit.linescan import pick_table
from rmkit.logread import BrokenLine
from rmkit.processes import key_bytes_share, key_share, run_in_processes
from rmkit.protocol import RecordKey
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


def _own_batches(checker, inputs: list[str], k: int, n: int, batches=None):
    share = keyer(checker.key, n)
    fast = _fast_key(checker.key) if _LINE_SHARES is not None and n < _NOT_READ else None
    pick = pick_table(k)
    for refs, lines in checker.file_batches(inputs) if batches is None else batches:
        if fast is not None and type(lines) is list:
            # a batch whose every line the fast reading settles is dealt in one call; any other
            # (a blank, broken or odd line in it) line by line below, with the same answers
            shares = _LINE_SHARES(lines, *fast, n)
            if _NOT_READ not in shares:
                picked = shares.translate(pick)
                mine = list(compress(lines, picked))
                if mine:
                    yield list(compress(refs, picked)), mine
                continue
        mine_refs, mine = [], []
        for ref, line in zip(refs, lines):
            if isinstance(line, BrokenLine):  # an input that broke off: share 0 reports it
                if k == 0:
                    mine_refs.append(ref)
                    mine.append(line)
                continue
            if not line or line.isspace():
                continue
            if share(line) == k:
                mine_refs.append(ref)
                mine.append(line)
        if mine:
            yield mine_refs, mine


def _check_share(checker, inputs: list[str], k: int, n: int):
    if checker.bound_ms is not None:  # under a declared bound: each input apart, read in step (stream.py)
        streams = [_own_batches(checker, inputs, k, n, checker.input_batches(i, p)) for i, p in enumerate(inputs)]
        return checker.check_streams(inputs, streams, spanning=False)
    return checker.check_share(inputs, _own_batches(checker, inputs, k, n))


def run_parallel(checker, inputs: list[str], jobs: int) -> Report:
    started = time.perf_counter()
    # share 0 here (see the module's docstring); then numpy, the merge's and no share's (its checks
    # across ids), imported while the other shares still run rather than after the last
    with paused_collections():  # the shares' results, unpickled, and the merge hold no cycles (see rmkit.gctune)
        shares = run_in_processes(_check_share, [(checker, inputs, k, jobs) for k in range(jobs)], first_here=True,
                                  while_waiting=numpy_module)
        report = checker.merge(inputs, shares)
    elapsed = time.perf_counter() - started
    report.metrics.update(jobs=jobs, elapsed_s=round(elapsed, 3),
                          receipts_per_s=round(report.records / elapsed) if elapsed > 0 else None)
    return report
