"""``rmkit check --protocol corda --jobs N``: the shares of :class:`CordaLogChecker` in N processes.

Each worker reads every input and keeps the records whose message id hashes into its share (as
Spark's shuffle by key does for ``rmkit audit``, by the same :class:`RecordKey`); a line that is
not JSON, or has no id, goes to share 0, so every record is read by exactly one share. The parent merges the shares' results
with the same :meth:`CordaLogChecker.merge` the audit uses. Under a declared bound each share reads
the inputs in step (one reader per input) and judges its tracks as the clock passes them; the facts
across ids go to the merge.
"""

from __future__ import annotations

import time

from rmkit.logread import BrokenLine
from rmkit.processes import key_share, run_in_processes
from rmkit.protocol import RecordKey
from rmkit.verdict import Report


def share_of(line, n: int, key: RecordKey) -> int:
    """Which of ``n`` shares a raw record belongs to: by the checker's record key, read as
    ``rmkit audit`` reads it (:meth:`RecordKey.of_line`), so both deal records out alike."""
    return key_share(key.of_line(line), n)


def _own_batches(checker, inputs: list[str], k: int, n: int, batches=None):
    key = checker.key
    for refs, lines in checker.file_batches(inputs) if batches is None else batches:
        mine_refs, mine = [], []
        for ref, line in zip(refs, lines):
            if isinstance(line, BrokenLine):  # an input that broke off: share 0 reports it
                if k == 0:
                    mine_refs.append(ref)
                    mine.append(line)
                continue
            if not line.strip():
                continue
            if share_of(line, n, key) == k:
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
    shares = run_in_processes(_check_share, [(checker, inputs, k, jobs) for k in range(jobs)])
    report = checker.merge(inputs, shares)
    elapsed = time.perf_counter() - started
    report.metrics.update(jobs=jobs, elapsed_s=round(elapsed, 3),
                          receipts_per_s=round(report.records / elapsed) if elapsed > 0 else None)
    return report
