# cython: annotation_typing=False
"""What the RMB log checker keeps of a request while it is open (:class:`Request`).

Memory follows the requests still open (:mod:`.checker`). A record decoded (its message a dict of
a dozen fields, each a Python object) costs three to four times the line it was read from, and
by the time its request is judged (a grace period after its last record) it has left the
processor's caches: the rules then read it at the speed of memory. So a record is kept as its
line and decoded again, by the same typed reading (:mod:`.typedread`), when its request is
judged: the rules see the record they would have seen, fresh from the decode, for one more decode
of each line (the share is faster so, and an open request smaller: docs/rmb-check.md). Lines the
typed reading does not settle (read by the general path) are kept decoded.
"""

from __future__ import annotations

import math
import operator
from array import array

_time_ref = operator.attrgetter("time", "ref")  # a record's place in the log: time, then position

class Request:
    """The records of one open request (one uid): those kept decoded, in the order read, whether
    that is their order in the log (time, then position: a reader in position order sees them so
    unless a time goes back); and the lines kept to be decoded at the judgment, with their refs."""

    __slots__ = ("recs", "last", "last_ref", "ordered", "lines", "line_refs")

    def __init__(self):
        self.recs: list = []
        self.last, self.last_ref = -math.inf, -1  # the place of the last record read
        self.ordered = True
        self.lines: list[bytes] | None = None  # the lines held undecoded (None: none)
        self.line_refs = None

    def append(self, rec) -> None:
        """Add ``rec`` as read."""
        self.recs.append(rec)
        self._placed(rec.time, rec.ref)

    def hold(self, ref: int, line: bytes, t: float) -> None:
        """Keep a record as the line it was read from (``decode`` gives it back, :meth:`records`;
        ``t``: its time)."""
        if self.lines is None:
            self.lines, self.line_refs = [], array("Q")  # (a ref: an input's index and a line number, 64 bits)
        self.lines.append(line)
        self.line_refs.append(ref)
        self._placed(t, ref)

    def _placed(self, t: float, ref: int) -> None:
        """Keep :attr:`ordered` true while the records come in log order (this one at ``t``, ``ref``)."""
        if t > self.last:
            self.last, self.last_ref = t, ref
        elif t == self.last and ref > self.last_ref:
            self.last_ref = ref
        else:
            self.ordered = False

    def records(self, decode) -> tuple[list, bool]:
        """(every record, whether they are in log order): the lines held decoded by ``decode(line,
        ref)`` (the typed reading that read them first) and joined with the records kept."""
        if self.lines is None:
            return self.recs, self.ordered
        held = [decode(line, ref) for line, ref in zip(self.lines, self.line_refs)]
        if not self.recs:
            return held, self.ordered
        recs = self.recs + held
        recs.sort(key=_time_ref)
        return recs, True
