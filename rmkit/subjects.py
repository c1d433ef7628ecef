"""The streaming engine of log checks: subjects opened by records, judged and forgotten once the
log's clock has passed their horizon.

Why: a log checker that holds every record until the end of the log needs memory in proportion to
the log, and a production day of logs does not fit. A protocol's rules judge *subjects* (a
request, a message: the records that share one id); each subject has a *horizon*, a time after
which no record can change its verdict (from the protocol's spec: a TTL or deadline plus the grace
the spec states). Once the log's clock has passed a subject's horizon, the subject is judged and
forgotten; memory then follows the subjects still open, not the log.

The interface (protocol-neutral: the protocol supplies the four callables)::

    engine = SubjectEngine(open_subject, add, judge, on_late=None, clock=LogClock(), remember_s=0.0)
    engine.feed(time, key, record, source=None, partition=None)   # per record, in log order
    engine.tick(time, source=None, partition=None)               # a record of no subject: the clock only
    engine.finish()                                              # judge every subject still open

- ``open_subject(key, time, record) -> subject``: a new subject for a key no open subject has.
- ``add(subject, time, record) -> horizon``: the record joins its subject (the protocol keeps what
  it needs of it); returns the subject's horizon as it stands now (it may move on with later
  records, never back; ``None`` or ``math.inf``: it cannot be told yet, judged at the end).
- ``judge(key, subject, at_end) -> memo``: the subject's verdict; ``at_end`` is true when the log
  ended before its horizon was passed (the protocol decides what it can still say). The memo is
  kept, with the key, until the clock is ``remember_s`` past the subject's horizon (``None``
  keeps ``True``).
- ``on_late(key, time, record, memo)``: a record of a subject already judged, at most
  ``remember_s`` after that subject's horizon, or one whose time is past its open subject's
  horizon (which is then judged first): the protocol says what rules still apply to it alone.
  Without it late records are counted only. A record of the key after that opens a new subject.

Time is whatever number the protocol's records carry (seconds, milliseconds); a record without a
time (``None``) joins its subject without moving the clock. The clock is :class:`LogClock`: the
latest time two different sources reached (one wrong timestamp cannot close every open subject;
while the log has shown one source only, its time), held back to the slowest Kafka partition still delivering where records name partitions (a dump
read from a backlog is judged as one read live): the one rule of :mod:`rmkit.logclock`, which every
checker steps, with a partition's idleness counted in records.

Counters for a report: ``opened``, ``judged``, ``late``, ``open`` (now), ``peak_open``.
"""

from __future__ import annotations

import heapq
import math
from typing import Any, Callable, Hashable

from rmkit.logclock import MOVED, PARTITION_IDLE_RECORDS, RecordClock, slowest_partition

try:
    import cython
except ImportError:  # not compiled, and Cython not installed: the annotations below mean nothing
    from rmkit import _cython_shadow as cython

if cython.compiled:  # the clock's C type (rmkit/logclock.pxd): the engine steps the clock by C calls
    from cython.cimports.rmkit.logclock import RecordClock as Clock
else:
    Clock = RecordClock

__all__ = ["LogClock", "SubjectEngine", "PARTITION_IDLE_RECORDS", "slowest_partition"]


@cython.cclass
class LogClock:
    """The log's time as records show it; it never goes back.

    The rule is the one every checker steps (:class:`rmkit.logclock.RecordClock`), in the setting a
    streaming engine needs: while the log has shown a single source only, that source's latest time
    counts (a daemon's own log has one writer), and where records name partitions every record looks
    again for the slowest partition still delivering. Records are numbered here, those with a time
    only (a partition's idleness is counted in them). :meth:`final` is the end-of-log reading: the
    partitions' hold lifted, every partition having delivered all it will.
    """

    # (its fields, rule and seq, and their C types are declared in subjects.pxd, which a compiled
    # caller may cimport; compiled, the engine steps the clock by C calls)

    def __init__(self, partition_idle_records: int = PARTITION_IDLE_RECORDS):
        self.rule = RecordClock(partition_idle_records, single_writer=True, idle_every_record=True)
        self.seq = 0  # records taken

    @property
    def now(self) -> Any:
        """The clock (None until a time is known)."""
        return self.rule.now

    @cython.ccall
    def advance(self, t, source: Hashable = None, partition: Hashable = None) -> cython.bint:
        """Take a record's time (``source``: who wrote it; ``partition``: the Kafka partition, or
        any source of order the input names, it came from). True when the clock moved."""
        self.seq += 1
        return bool(self.rule.advance(t, source, partition, self.seq, None) & MOVED)

    def final(self):
        """The clock at the end of the log: the two-source time (or the one source's), every
        partition's hold lifted; never before :attr:`now`."""
        return self.rule.final()


@cython.cclass
class _Open:
    """An open subject and its horizon as it stands (None: not told yet)."""

    def __init__(self, subject):
        self.subject = subject
        self.horizon = None


@cython.cclass
class SubjectEngine:
    """Subjects keyed by id, judged once the clock passes their horizon (see the module's text).

    A record whose time is past its open subject's horizon closes it (judged at once) and is
    late; a record of a judged subject is late up to ``remember_s`` after that subject's horizon
    and opens a new subject of its key after it. The clock says when a subject no record came to
    close is judged, and when a memo is forgotten: so a record whose time is before its subject's
    horizon but which comes after the clock passed it (a time that jumps back) is late, and one
    whose memo the clock forgot opens a new subject. Shares of one log (``--jobs``) therefore cut
    it into the same subjects only where each share's clock is the log's, record by record: each
    share steps its clock with the other shares' records too (:meth:`tick`, in log order)."""

    def __init__(self, open_subject: Callable, add: Callable, judge: Callable, on_late: Callable | None = None,
                 clock: LogClock | None = None, remember_s: float = 0.0):
        self.open_subject, self.add, self.judge, self.on_late = open_subject, add, judge, on_late
        self.clock = clock if clock is not None else LogClock()
        self._log_clock = self.clock if type(self.clock) is LogClock else None  # (feed steps it inline)
        self.remember_s = remember_s
        self.subjects: dict = {}      # key -> _Open (the subject and its horizon)
        self.memos: dict = {}         # key -> (horizon, memo) of a judged subject, while remembered
        self._due: list = []          # heap of (horizon, order, key): a subject's horizon when queued
        self._forget: list = []       # heap of (time to forget, order, key)
        self._order = 0
        self.opened = self.judged = self.late = self.peak_open = 0

    @property
    def open(self) -> int:
        return len(self.subjects)

    @cython.ccall
    @cython.locals(log_clock=LogClock, rule=Clock, entry=_Open)
    def feed(self, t, key: Hashable, record: Any, source: Hashable = None, partition: Hashable = None):
        """One record, in log order: it joins (or opens) its subject; the clock takes its time and
        what the clock passed is judged."""
        entry = self.subjects.get(key)
        if entry is not None:
            h = entry.horizon
            if h is not None and t is not None and t > h:
                del self.subjects[key]  # the record comes after its subject's horizon: the subject is judged now
                self._close(key, entry.subject, False, h)
                entry = None
        if entry is None:
            memo = self.memos.get(key) if self.memos else None
            if memo is not None:
                if t is None or t <= memo[0] + self.remember_s:
                    self.late += 1
                    if self.on_late is not None:
                        self.on_late(key, t, record, memo[1])
                    if t is not None:
                        self.tick(t, source, partition)
                    return
                del self.memos[key]  # long after: a new subject of that key
            entry = self.subjects[key] = _Open(self.open_subject(key, t, record))
            self.opened += 1
            if len(self.subjects) > self.peak_open:
                self.peak_open = len(self.subjects)
        h = self.add(entry.subject, t, record)
        if h is not None:
            was = entry.horizon
            if was is None or h > was:
                if was is None and h != math.inf:
                    self._order += 1
                    heapq.heappush(self._due, (h, self._order, key))
                entry.horizon = h
        if t is None:
            return
        log_clock = self._log_clock
        if log_clock is None:
            moved = self.clock.advance(t, source, partition)
        else:
            rule = log_clock.rule
            if partition is None and rule.sources > 1 and not t > rule.now and not rule.part_wm:
                log_clock.seq += 1  # (RecordClock.advance's early return, inline: the clock cannot move)
                return
            moved = log_clock.advance(t, source, partition)
        if moved:  # (tick, inline: once per record)
            now = self.clock.now
            due, forget = self._due, self._forget
            if (due and due[0][0] < now) or (forget and forget[0][0] < now):
                self._passed(now)

    @cython.ccall
    def tick(self, t, source: Hashable = None, partition: Hashable = None):
        """The clock takes a record's time (a record of a subject, through :meth:`feed`, or one that
        belongs to none); what it passed is judged, and memos past ``remember_s`` forgotten."""
        clock = self.clock
        if clock.advance(t, source, partition):
            self._passed(clock.now)

    @cython.cfunc
    def _passed(self, now):
        """The clock moved to ``now``: judge what it passed, forget memos past ``remember_s``."""
        due = self._due
        if due and due[0][0] < now:
            self._sweep(now)
        forget = self._forget
        while forget and forget[0][0] < now:
            when, _, key = heapq.heappop(forget)
            memo = self.memos.get(key)
            if memo is not None and memo[0] + self.remember_s <= when:  # (not a later memo of that key)
                del self.memos[key]

    @cython.cfunc
    @cython.locals(entry=_Open)
    def _sweep(self, now):
        due, subjects = self._due, self.subjects
        while due and due[0][0] < now:
            _, _, key = heapq.heappop(due)
            entry = subjects.get(key)
            if entry is None:
                continue
            h = entry.horizon
            if h is not None and h >= now:  # its horizon moved on since it was queued (or a new subject of the key)
                if h != math.inf:
                    self._order += 1
                    heapq.heappush(due, (h, self._order, key))
                continue
            del subjects[key]
            self._close(key, entry.subject, False, h)

    @cython.cfunc
    def _close(self, key, subject, at_end: cython.bint, horizon):
        self.judged += 1
        memo = self.judge(key, subject, at_end)
        if self.remember_s > 0 and horizon is not None:  # (at the end of the log nothing comes late)
            self.memos[key] = (horizon, True if memo is None else memo)
            self._order += 1
            heapq.heappush(self._forget, (horizon + self.remember_s, self._order, key))

    def finish(self) -> None:
        """The end of the log: every subject still open is judged, in the order they were opened;
        ``at_end`` for those whose horizon the final clock (:meth:`LogClock.final`) has not passed."""
        end = self.clock.final()
        subjects, self.subjects = self.subjects, {}
        for key, entry in subjects.items():
            h = entry.horizon
            self._close(key, entry.subject, end is None or h is None or not h < end, None)
        self._due.clear()
        self.memos.clear()
        self._forget.clear()
