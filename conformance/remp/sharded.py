"""The REMP checker as ``rmkit audit`` runs it on Spark: shares of messages by id, merged on one
clock as the shares of ``rmkit check --jobs`` are (:mod:`rmkit.conformance.remp.parallel`).

A share judges its records on the log's clock when it is given the clock events of the whole log
(:meth:`RempShards.clock_events`, one pass over the log; :mod:`rmkit.conformance.remp.clocktrack`
says why); without them its clock is its own records' and lags the log's (docs/check-jobs.md)."""

from __future__ import annotations

import pickle
from bisect import bisect_left, bisect_right
from typing import Any, Iterable

from rmkit.protocol import RecordKey
from rmkit.verdict import Report

from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.conformance.remp.clocktrack import chunk_events, pack
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
        return pack((first, chunk_events(lines, self._fold)))

    def clock_events(self, batches) -> list[bytes]:
        """The clock events of a whole log, from all its (refs, lines) batches in log order: one
        :meth:`clock_block` a batch."""
        return [self.clock_block(refs, lines) for refs, lines in batches if len(refs)]

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
    in log order; each is unpacked when the share reaches it, so a share holds one block of the
    log's events at a time besides its own."""
    blocks = iter(clock)
    held = None  # the block being taken: [its lines' refs, counted, times, writers, partitions]
    for refs, lines in batches:
        if not len(refs):
            continue
        last = refs[-1]
        piece = _NONE
        while True:
            if held is None:
                data = next(blocks, None)
                if data is None:
                    break
                first, (counted, ts, whos, parts) = pickle.loads(data)
                held = [range(first, first + len(counted)) if type(first) is int else first, counted, ts, whos, parts]
            brefs = held[0]
            if not len(brefs) or brefs[0] > last:
                break
            if piece is not _NONE:
                yield [], [], piece
            cut = bisect_right(brefs, last)
            if cut == len(brefs):  # (the whole block: no copy)
                piece = _theirs(*held, refs)
                held = None
                continue
            piece = _theirs(brefs[:cut], held[1][:cut], held[2][:cut], held[3][:cut], held[4][:cut], refs)
            held = [brefs[cut:], held[1][cut:], held[2][cut:], held[3][cut:], held[4][cut:]]
            break
        yield refs, lines, piece
    if held is not None:
        yield [], [], _theirs(*held, ())
    for first, (counted, ts, whos, parts) in map(pickle.loads, blocks):
        yield [], [], (first, counted, ts, whos, parts)


_NONE = ([], b"", [], [], [])  # (no event)


def _theirs(brefs, counted: bytes, ts: list, whos: list, parts: list, own) -> tuple:
    """A piece of the log's events as a block of the other shares' records: a line of the share's
    own (``own``: its refs, ascending) is no record to take here, the feed loop takes it."""
    take = bytearray(counted)
    if len(own) and len(brefs):
        lo, hi = brefs[0], brefs[-1]
        if type(brefs) is range:
            for ref in own[bisect_left(own, lo):bisect_right(own, hi)]:
                take[ref - lo] = 0
        else:
            at = {ref: i for i, ref in enumerate(brefs)}
            for ref in own[bisect_left(own, lo):bisect_right(own, hi)]:
                i = at.get(ref)
                if i is not None:
                    take[i] = 0
    return (brefs.start if type(brefs) is range else list(brefs)), bytes(take), ts, whos, parts
