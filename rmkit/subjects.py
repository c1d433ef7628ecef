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
read from a backlog is judged as one read live); the rule is the one the documents' page on the
partition clock states, with its idleness counted in records.

Counters for a report: ``opened``, ``judged``, ``late``, ``open`` (now), ``peak_open``.
"""

from __future__ import annotations

import heapq
import math
from typing import Any, Callable, Hashable

# A Kafka partition that delivered nothing while the log delivered this many records is idle: it no
# longer holds the clock. Far above the records a consumer catching up reads from one partition
# before it turns to the next (500 a poll by default, times the partitions), small against a day.
PARTITION_IDLE_RECORDS = 100_000


def slowest_partition(watermarks: dict, last_seen: dict, idle_before: int) -> tuple:
    """(its watermark, the partition) of the slowest partition still delivering, (None, None) when
    none is: the least watermark over the partitions whose last record came at or after record
    number ``idle_before`` (a partition that ended or went quiet holds nothing; it joins again
    when it delivers, and the clock never goes back). The log's clock is held back to this
    watermark, as stream processors keep a watermark per partition and take the least (Kafka
    Streams, Flink): a log read from a backlog (a consumer catching up reads hundreds of records of
    one partition, then of the next) is so judged as one read live, a partition that runs ahead
    closing nothing of the others'. Every checker with a partition-held clock uses this one rule."""
    low = holder = None
    for p, w in watermarks.items():
        if last_seen[p] >= idle_before and (low is None or w < low):
            low, holder = w, p
    return low, holder


class LogClock:
    """The log's time as records show it; it never goes back.

    Without partitions: the latest time two different sources have reached (a source whose clock
    runs ahead moves nothing alone); while the log has shown a single source only, that source's
    latest time (a daemon's own log has one writer). With partitions (``partition`` given to
    :meth:`advance`): that time held back to the watermark of the slowest partition still
    delivering (:func:`slowest_partition`), a partition idle for ``partition_idle_records``
    records holding nothing until it delivers again. :meth:`final` is the end-of-log reading: the
    partitions' hold lifted, every partition having delivered all it will.
    """

    __slots__ = ("now", "top", "top_source", "pair", "sources", "seq", "part_wm", "part_seen", "low", "holder",
                 "partition_idle")

    def __init__(self, partition_idle_records: int = PARTITION_IDLE_RECORDS):
        self.now: Any = None          # the clock (None until a time is known)
        self.top: Any = None          # the latest time any source reached, and that source
        self.top_source: Any = None
        self.pair: Any = None         # the two-source time
        self.sources = 0              # distinct sources seen, counted up to 2
        self.seq = 0                  # records seen (partitions' idleness counts in records)
        self.part_wm: dict = {}       # partition -> its watermark (the latest time it delivered)
        self.part_seen: dict = {}     # partition -> self.seq at its last record
        self.low: Any = None          # the slowest partition's watermark, and that partition
        self.holder: Any = None       # (None: to be found again)
        self.partition_idle = partition_idle_records

    def advance(self, t, source: Hashable = None, partition: Hashable = None) -> bool:
        """Take a record's time (``source``: who wrote it; ``partition``: the Kafka partition, or
        any source of order the input names, it came from). True when the clock moved."""
        self.seq += 1
        if partition is None and self.sources > 1 and t <= self.now and not self.part_wm:
            return False  # (neither the latest time nor the two-source time can move)
        if partition is not None:
            self._partition(t, partition)
        top = self.top
        if top is None or t > top:
            if top is not None and self.top_source != source:
                if self.pair is None or top > self.pair:  # (_pair, inline: once per record)
                    self.pair = top
                self.sources = 2
            self.top, self.top_source = t, source
        elif self.top_source != source:
            if self.pair is None or t > self.pair:
                self.pair = t
            self.sources = 2
        now = self.pair if self.sources > 1 else self.top
        if self.part_wm and now is not None:
            seq, idle = self.seq, self.partition_idle
            if self.holder is None or seq - self.part_seen[self.holder] > idle:
                self.low, self.holder = slowest_partition(self.part_wm, self.part_seen, seq - idle)
            if self.low is not None and self.low < now:
                now = self.low
        if now is not None and (self.now is None or now > self.now):
            self.now = now
            return True
        return False

    def _partition(self, t, part: Hashable) -> None:
        wm = self.part_wm
        w = wm.get(part)
        if w is None or self.seq - self.part_seen[part] > self.partition_idle:  # new, or back from idle
            if w is None or t > w:
                wm[part] = t
            self.holder = None
        elif t > w:
            wm[part] = t
            if part == self.holder:  # the slowest moved on
                self.holder = None
        self.part_seen[part] = self.seq

    def final(self):
        """The clock at the end of the log: the two-source time (or the one source's), every
        partition's hold lifted; never before :attr:`now`."""
        end = self.pair if self.sources > 1 else self.top
        if self.now is not None and (end is None or self.now > end):
            end = self.now
        return end


class _Open:
    """An open subject and its horizon as it stands (None: not told yet)."""

    __slots__ = ("subject", "horizon")

    def __init__(self, subject):
        self.subject = subject
        self.horizon = None


class SubjectEngine:
    """Subjects keyed by id, judged once the clock passes their horizon (see the module's text).

    Which subject a record belongs to is decided by the record's own time against the horizon,
    not by the clock, so that every reading of one log (one process, or shares that each see
    some subjects and so run clocks of their own) cuts it into the same subjects: a record whose
    time is past its open subject's horizon closes it (judged at once) and is late; a record of a
    judged subject is late up to ``remember_s`` after that subject's horizon and opens a new
    subject of its key after it. The clock only says when a subject no record came to close is
    judged, and when a memo is forgotten."""

    def __init__(self, open_subject: Callable, add: Callable, judge: Callable, on_late: Callable | None = None,
                 clock: LogClock | None = None, remember_s: float = 0.0):
        self.open_subject, self.add, self.judge, self.on_late = open_subject, add, judge, on_late
        self.clock = clock if clock is not None else LogClock()
        self._plain_clock = type(self.clock) is LogClock  # (feed may take its early return inline)
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

    def feed(self, t, key: Hashable, record: Any, source: Hashable = None, partition: Hashable = None) -> None:
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
        clock = self.clock
        if self._plain_clock and partition is None and clock.sources > 1 and t <= clock.now and not clock.part_wm:
            clock.seq += 1  # (LogClock.advance's early return, inline: the clock cannot move)
        elif clock.advance(t, source, partition):  # (tick, inline: once per record)
            now = clock.now
            due, forget = self._due, self._forget
            if (due and due[0][0] < now) or (forget and forget[0][0] < now):
                self._passed(now)

    def tick(self, t, source: Hashable = None, partition: Hashable = None) -> None:
        """The clock takes a record's time (a record of a subject, through :meth:`feed`, or one that
        belongs to none); what it passed is judged, and memos past ``remember_s`` forgotten."""
        clock = self.clock
        if clock.advance(t, source, partition):
            self._passed(clock.now)

    def _passed(self, now) -> None:
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

    def _sweep(self, now) -> None:
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

    def _close(self, key, subject, at_end: bool, horizon) -> None:
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
