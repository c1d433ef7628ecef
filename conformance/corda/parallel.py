"""``rmkit check --protocol corda --jobs N``: the shares of :class:`CordaLogChecker` in N processes.

Each worker reads every input and keeps the records whose message id hashes into its share (as
Spark's shuffle by key does for ``rmkit audit``); a line that is not JSON, or has no string id, goes
to share 0, so every record is read by exactly one share. The parent merges the shares' results
with the same :meth:`CordaLogChecker.merge` the audit uses.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import zlib

import orjson

from rmkit.verdict import Report

from rmkit.conformance.corda.checker import BrokenLine


def share_of(line, n: int, key: str = "id") -> int:
    """Which of ``n`` shares a raw record belongs to, by its message id (share 0 when it has none)."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return 0
    mid = obj.get(key) if type(obj) is dict else None
    if type(mid) is not str:
        return 0
    return zlib.crc32(mid.encode("utf-8", "surrogatepass")) % n


def _own_batches(checker, inputs: list[str], k: int, n: int):
    key = checker.key.paths[0][0]
    for refs, lines in checker.file_batches(inputs):
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


def _worker(conn, checker, inputs: list[str], k: int, n: int) -> None:
    try:
        conn.send(("done", checker.check_share(inputs, _own_batches(checker, inputs, k, n))))
    except BaseException as exc:  # report any failure to the parent instead of hanging it
        conn.send(("error", exc))
    finally:
        conn.close()


def run_parallel(checker, inputs: list[str], jobs: int) -> Report:
    started = time.perf_counter()
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    pipes, procs = [], []
    for k in range(jobs):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, checker, inputs, k, jobs), daemon=True)
        proc.start()
        child.close()
        pipes.append(parent)
        procs.append(proc)
    try:
        results = [p.recv() for p in pipes]
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
    for kind, value in results:
        if kind == "error":
            raise value
    report = checker.merge(inputs, [value for _, value in results])
    elapsed = time.perf_counter() - started
    report.metrics.update(jobs=jobs, elapsed_s=round(elapsed, 3),
                          receipts_per_s=round(report.receipts / elapsed) if elapsed > 0 else None)
    return report
