"""The REMP checker as ``rmkit audit`` runs it on Spark: shares of messages by id, merged on one
clock as the shares of ``rmkit check --jobs`` are (:mod:`rmkit.conformance.remp.parallel`)."""

from __future__ import annotations

from typing import Any

from rmkit.protocol import RecordKey
from rmkit.verdict import Report

from rmkit.conformance.remp.checker import RempLogChecker
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

    def check_share(self, inputs: list[str], batches) -> RempLogChecker:
        checker = RempLogChecker(**self.kwargs)
        checker.begin(inputs, shared=True)
        checker.feed(batches)
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
