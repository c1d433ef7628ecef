"""The REMP checker as ``rmkit audit`` runs it on Spark: shares of messages by id, merged on one
clock as the shares of ``rmkit check --jobs`` are (:mod:`rmkit.conformance.remp.parallel`).

A share judges its records on the log's clock when it is given the clock events of the whole log
(:meth:`RempShards.clock_events`, one pass over the log; :mod:`rmkit.conformance.remp.clocktrack`
says why); without them its clock is its own records' and lags the log's (docs/check-jobs.md)."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from rmkit.protocol import RecordKey
from rmkit.verdict import Report

from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.conformance.remp.clocktrack import block, chunk_events, numbered
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

    def clock_events(self, batches) -> list[tuple]:
        """The clock events of a log's records, (ref, time, who, partition) in log order, from all
        its (refs, lines) batches in log order: what a share needs of the others' lines."""
        fold = RempLogChecker(**self.kwargs).model.ids_fold_case
        out: list[tuple] = []
        for refs, lines in batches:
            if len(refs) and refs[-1] - refs[0] == len(refs) - 1:  # (consecutive lines, as a log's are read)
                out += numbered(chunk_events(lines, fold), refs[0])
            else:
                out += [(refs[i], t, who, part) for i, t, who, part in numbered(chunk_events(lines, fold), 0)]
        return out

    def check_share(self, inputs: list[str], batches, clock: list[tuple] | None = None) -> RempLogChecker:
        """The share's checker after its (refs, lines) batches, in log order. ``clock``: the whole
        log's clock events (:meth:`clock_events`), which the share's clock then runs on, as one
        process's does; without it the share's clock is its own records'."""
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


def _with_others(batches, clock: list[tuple]):
    """(refs, lines, the clock events of the other shares' records up to the batch's last) for
    each of a share's batches, then the events after its last record."""
    at = 0
    keys = None
    for refs, lines in batches:
        if not len(refs):
            continue
        if keys is None:
            keys = [e[0] for e in clock]
        end = bisect_right(keys, refs[-1], at)
        own = set(refs)
        yield refs, lines, block([e for e in clock[at:end] if e[0] not in own])
        at = end
    yield [], [], block(clock[at:])
