"""The REMP checker as ``rmkit audit`` runs it on Spark: shares of messages by id, merged on one
clock as the shares of ``rmkit check --jobs`` are (:mod:`rmkit.conformance.remp.parallel`).

A share judges its records on the log's clock when it is given the clock events of the whole log
(:meth:`RempShards.clock_block` of each file split, one pass over the log; :mod:`rmkit.conformance.remp.clocktrack`
says why); without them its clock is its own records' and lags the log's (docs/check-jobs.md)."""

from __future__ import annotations

import pickle
from typing import Any, Iterable

from rmkit.clockwalk import with_clock
from rmkit.protocol import RecordKey
from rmkit.verdict import Report

from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.conformance.remp.clocktrack import as_events, chunk_events, chunk_summary, pack
from rmkit.conformance.remp.figures import latest_receipt
from rmkit.conformance.remp.parallel import _merge, first_roles


class RempShards:
    """The REMP checker as a :class:`rmkit.protocol.ShardedChecker` (``rmkit audit`` runs it on
    Spark): a share is the checker after reading every receipt of its messages in log order; the
    shares finish on one clock and merge as ``--jobs`` shares do (:func:`_merge`)."""

    # the message id: a receipt's, or that of the receipt a Kafka record (or kcat envelope) holds
    key = RecordKey((("message_id",), ("value", "message_id"), ("payload", "message_id")), fold_case=True,
                    text_values=True)

    def __init__(self, kwargs: dict[str, Any]):
        self.kwargs = kwargs
        self._fold = None  # whether ids compare case-folded (the checker's model says; read once)

    def clock_block(self, refs, lines) -> bytes:
        """The clock events of one batch of a log's lines, in log order (``refs``: their references;
        every line of the batch, those that hold no record too), packed: what a share needs of the
        others' lines (:mod:`rmkit.conformance.remp.clocktrack`). ``rmkit audit`` reads each file
        split once for them (``spark_checks/job.py``)."""
        if self._fold is None:
            self._fold = RempLogChecker(**self.kwargs).model.ids_fold_case
        lines = list(lines)
        n = len(lines)
        first = refs[0] if n and refs[-1] - refs[0] == n - 1 else list(refs)  # (consecutive lines: the first's alone)
        return pack((first, _summary(lines, self._fold)))

    def check_share(self, inputs: list[str], batches, clock: Iterable[bytes] | None = None) -> RempLogChecker:
        """The share's checker after its (refs, lines) batches, in log order. ``clock``: the whole
        log's clock events, :meth:`clock_block`'s in log order (the share's own lines among them),
        which the share's clock then takes between its own records, as one process's clock takes
        every record; without it the share's clock is its own records' and lags the log's."""
        checker = RempLogChecker(**self.kwargs)
        checker.begin(inputs, shared=True)
        checker.feed(batches if clock is None else _with_others(batches, clock))
        return checker

    def merge(self, inputs: list[str], shares: list[RempLogChecker]) -> Report:
        """Judge every share's open messages on the log's final clock, then merge the reports."""
        end = shares[0].end_clock([c.end_mark for c in shares], [c.top_mark for c in shares])
        latest_ref = latest_receipt([c.top_mark for c in shares])
        roles = first_roles([c._roles for c in shares])
        reports = []
        for c in shares:
            c.settle_roles(roles)
            reports.append(c.finish(end, latest_ref))
        return _merge(RempLogChecker, self.kwargs, inputs, reports, [c.lat for c in shares], [c._roles for c in shares],
                      [c.per_source for c in shares], [c.seconds_first for c in shares])


def _with_others(batches, clock: Iterable[bytes]):
    """A share's (refs, lines) batches, each with a third part: a block of the clock events of the
    other shares' records before its last line, for :meth:`rmkit.logclock.RecordClock.queue`
    (several blocks before one batch come as batches without lines of their own); then the
    events after its last record. ``clock``: the log's packed blocks (:meth:`RempShards.clock_block`)
    in log order, walked by :func:`rmkit.clockwalk.with_clock` (a share holds one block of the
    log's events at a time besides its own)."""
    for refs, lines, pieces in with_clock(batches, clock, _unpack, _theirs):
        for piece in pieces[:-1]:
            yield [], [], piece
        yield (refs, lines, pieces[-1]) if pieces else (refs, lines)


def _summary(lines: list, fold: bool) -> tuple:
    """A batch's events as a ``--jobs`` reader sends them (:func:`clocktrack.chunk_summary`: packed
    where the compiled reading reads them), where its lines are bytes that make one line each;
    else :func:`clocktrack.chunk_events`."""
    if all(type(x) is bytes for x in lines):
        summary = chunk_summary(b"".join(x if x[-1:] == b"\n" else x + b"\n" for x in lines), fold)
        if len(summary[0]) == len(lines):  # (no line held a newline of its own)
            return summary
    return chunk_events(lines, fold)


def _unpack(data: bytes) -> tuple:
    """A packed block (:meth:`RempShards.clock_block`) as (its lines' refs, (counted, times,
    writers, partitions))."""
    first, events = pickle.loads(data)
    return (range(first, first + len(events[0])) if type(first) is int else first), as_events(events)


def _theirs(brefs, events: tuple, own: list) -> tuple:
    """A piece of the log's events as a block of the other shares' records: a line of the share's
    own (``own``: its positions in the piece) is no record to take here, the feed loop takes it."""
    counted, ts, whos, parts = events
    if own:
        take = bytearray(counted)
        for i in own:
            take[i] = 0
        counted = bytes(take)
    return (brefs.start if type(brefs) is range else brefs), counted, ts, whos, parts
