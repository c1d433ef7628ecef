"""The log's clock: the one rule by which a log checker's decisions follow the time its records show.

Why one rule in one place: a checker closes a subject, calls a record late and forgets what it
judged when the *log's* clock passes a point; the shares of a ``--jobs`` run must take exactly the
steps one process takes, record by record, or they report otherwise. So the one-process loop, the
shares (which also take the times of the other shares' records, in log order) and any later user
step one clock, :class:`RecordClock`.

The rule: the latest time two different writers have reached (one writer whose clock runs ahead
moves nothing alone; with ``single_writer``, while the log has shown one writer only, its latest
time counts), held back to the watermark of the slowest Kafka partition still delivering
(:func:`slowest_partition`), a partition idle for ``partition_idle`` records holding nothing until
it delivers again. It never goes back. A record moves the clock only when its time passes the
clock (the partition it came from is taken in any case). :meth:`RecordClock.final` reads the clock
at the log's end: the partitions' hold lifted, each having delivered all it will.

This file is compiled where a C compiler is found (``setup.py`` builds it with Cython: the clock is
then a C type, and :meth:`RecordClock.advance_queued` a C loop over the other shares' records);
elsewhere the same code runs as Python, with the same results (``tests/core/test_logclock.py``
holds them equal). Nothing here names a protocol: a record is a time, a writer, a partition and a
reference the caller gives.
"""

from __future__ import annotations

try:
    import cython
except ImportError:  # not compiled, and Cython not installed: the annotations below mean nothing
    from rmkit import _cython_shadow as cython

# A Kafka partition that delivered nothing while the log delivered this many records is idle: it no
# longer holds the clock. Far above the records a consumer catching up reads from one partition
# before it turns to the next (500 a poll by default, times the partitions), small against a day.
PARTITION_IDLE_RECORDS = 100_000

# What :meth:`RecordClock.advance` reports, as bits: the clock moved; the record is the latest yet
MOVED, TOP = 1, 2
# Why :meth:`RecordClock.advance_queued` stopped before the reference it was given
PASSED, COUNTED = 1, 2
# references at or beyond this are compared as Python numbers (below it as C ones, in take_queued)
_REF_END = (1 << 63) - 1


def slowest_partition(watermarks: dict, last_seen: dict, idle_before) -> tuple:
    """(its watermark, the partition) of the slowest partition still delivering, (None, None) when
    none is: the least watermark over the partitions whose last record came at or after record
    number ``idle_before`` (a partition that ended or went quiet holds nothing; it joins again
    when it delivers, and the clock never goes back). The log's clock is held back to this
    watermark, as stream processors keep a watermark per partition and take the least (Kafka
    Streams, Flink): a log read from a backlog (a consumer catching up reads hundreds of records of
    one partition, then of the next) is so judged as one read live, a partition that runs ahead
    closing nothing of the others'."""
    low = holder = None
    for p, w in watermarks.items():
        if last_seen[p] >= idle_before and (low is None or w < low):
            low, holder = w, p
    return low, holder


@cython.cclass
class RecordClock:
    """The log's time as its records show it (the module's text states the rule).

    The caller numbers the records (``seq``: the log's record number, every record counted, those
    without a time too: partitions' idleness is counted in it) and gives each its reference
    (``ref``, kept for the latest record: :attr:`top_ref`).

    Two settings: ``single_writer``, one writer's time counts while the log has shown no other (a
    daemon's own log has one writer); ``idle_every_record``, where records name partitions, every
    record (not only one whose time passes the clock) looks again for the slowest partition still
    delivering, so that one that went idle lets the clock move on at that record.
    :class:`rmkit.subjects.LogClock` steps as ``RecordClock(single_writer=True,
    idle_every_record=True)`` numbering only records with a time (``tests/core/test_logclock.py``)."""

    # (its fields and their C types are declared in logclock.pxd, which a compiled caller cimports:
    # now, top, top_who, top_ref, pair, sources, part_wm, part_seen, low, holder, partition_idle,
    # single_writer, idle_every_record, pending, _block, _line, and take_queued's q_seq, q_taken, q_next)

    def __init__(self, partition_idle: int = PARTITION_IDLE_RECORDS, single_writer: bool = False,
                 idle_every_record: bool = False):
        self.now = self.top = self.top_who = self.top_ref = self.pair = None
        self.sources = 0
        self.part_wm = {}
        self.part_seen = {}
        self.low = self.holder = None
        self.partition_idle = partition_idle
        self.single_writer = single_writer
        self.idle_every_record = idle_every_record
        self.pending = []
        self._block = self._line = 0
        self.q_seq = self.q_taken = 0
        self.q_next = None

    def __reduce__(self):  # (a share's state travels between processes)
        return _rebuilt, (self.partition_idle, self.single_writer, self.idle_every_record, (
            self.now, self.top, self.top_who, self.top_ref, self.pair, self.sources, self.part_wm, self.part_seen,
            self.low, self.holder, self.pending[self._block:], self._line))

    @cython.ccall
    @cython.locals(seq=cython.longlong)
    def advance(self, t, who, part, seq, ref) -> cython.int:
        """Take record number ``seq``'s time ``t`` (not None), written by ``who``, from Kafka
        partition ``part`` (None: none). Returns :data:`MOVED` | :data:`TOP` as they apply."""
        out: cython.int = 0
        if part is not None:
            self._partition(t, part, seq)
        now = self.now
        if now is not None and not t > now and not (self.single_writer and self.sources < 2 and who != self.top_who) \
                and not (self.idle_every_record and self.part_wm):
            return 0  # (neither the latest time nor the two-writer time can move)
        top = self.top
        if top is None or t > top:
            if top is not None and self.top_who != who:
                if self.pair is None or top > self.pair:
                    self.pair = top
                self.sources = 2
            self.top, self.top_who, self.top_ref = t, who, ref
            out = TOP
        elif self.top_who != who:
            if self.pair is None or t > self.pair:
                self.pair = t
            self.sources = 2
        clock = self.pair if self.sources > 1 or not self.single_writer else self.top
        if self.part_wm and clock is not None:
            if self.holder is None or seq - cython.cast(cython.longlong, self.part_seen[self.holder]) > self.partition_idle:
                self.low, self.holder = slowest_partition(self.part_wm, self.part_seen, seq - self.partition_idle)
            if self.low is not None and self.low < clock:
                clock = self.low
        if clock is not None and (now is None or clock > now):
            self.now = clock
            out |= MOVED
        return out

    @cython.cfunc
    @cython.locals(seq=cython.longlong)
    def _partition(self, t, part, seq) -> cython.void:
        wm = self.part_wm
        w = wm.get(part)
        if w is None or seq - cython.cast(cython.longlong, self.part_seen[part]) > self.partition_idle:
            if w is None or t > w:  # a partition new, or back from idle
                wm[part] = t
            self.holder = None
        elif t > w:
            wm[part] = t
            if part == self.holder:  # the slowest moved on
                self.holder = None
        self.part_seen[part] = seq

    def queue(self, refs, take: bytes, ts: list, whos: list, parts: list) -> None:
        """Queue a block of records to be taken later, in log order, by :meth:`advance_queued`
        (a share's view of the records other processes judge): a line each, ``take`` a byte per
        line (1: a record to take), ``ts``, ``whos``, ``parts`` its time (None: none), writer and
        partition; ``refs`` the first line's reference (the others' follow one by one) or a list
        of each line's."""
        self.pending.append((refs, take, ts, whos, parts))

    @cython.locals(at=cython.Py_ssize_t, i=cython.Py_ssize_t, n=cython.Py_ssize_t)
    def next_queued(self):
        """The reference of the next queued record, None when none is queued."""
        pending = self.pending
        at, i = self._block, self._line
        while at < len(pending):
            refs, take, _, _, _ = pending[at]
            n = len(take)
            while i < n:
                if take[i]:
                    return refs + i if type(refs) is int else refs[i]
                i += 1
            at += 1
            i = 0
        return None

    def advance_queued(self, before, seq, passing, every) -> tuple:
        """Take the queued records (:meth:`queue`) before reference ``before``, numbering them
        from ``seq + 1``. Returns (the last record number, why it stopped: 0 at ``before`` or the
        end of the queue, else :data:`PASSED` when the clock moved to ``passing`` or beyond, |
        :data:`COUNTED` when the record number is a multiple of ``every`` (a power of two), each
        after the record that made it so, for the caller to act on before it calls again; the
        records taken; the reference of the next queued record, None when none is known)."""
        why = self.take_queued(before, seq, passing, every)
        return self.q_seq, why, self.q_taken, self.q_next

    @cython.ccall
    @cython.locals(at=cython.Py_ssize_t, i=cython.Py_ssize_t, n=cython.Py_ssize_t, seq=cython.longlong,
                   every=cython.longlong, mask=cython.longlong, taken=cython.longlong, why=cython.int,
                   first=cython.bint, take=bytes, ts=list, whos=list, parts=list, base=cython.longlong,
                   limit=cython.longlong, r=cython.longlong)
    def take_queued(self, before, seq, passing, every) -> cython.int:
        """:meth:`advance_queued` for a compiled caller (a C call where the caller cimports
        logclock.pxd): returns why it stopped and leaves the last record number, the records taken
        and the next queued reference in :attr:`q_seq`, :attr:`q_taken` and :attr:`q_next` (no
        tuple, no Python call per run of the other shares' records)."""
        pending = self.pending
        at, i = self._block, self._line
        mask = every - 1
        taken = 0
        why = 0
        nxt = None
        # a reference beyond every record's (the caller's "none") is compared as the largest C one
        limit = before if before < _REF_END else _REF_END
        while at < len(pending):
            refs, take, ts, whos, parts = pending[at]
            first = type(refs) is int and refs < _REF_END - len(take)
            base = refs if first else 0
            n = len(take)
            while i < n:
                if not take[i]:
                    i += 1
                    continue
                if first:  # (the block's references follow one by one: compared as C numbers)
                    r = base + i
                    if r >= limit:
                        nxt = r
                        break
                    ref = None
                else:
                    ref = refs[i]
                    if ref >= before:
                        nxt = ref
                        break
                seq += 1
                taken += 1
                t = ts[i]
                if t is not None:
                    if first:
                        ref = base + i
                    if self.advance(t, whos[i], parts[i], seq, ref) & MOVED and not self.now < passing:
                        why = PASSED
                if not seq & mask:
                    why |= COUNTED
                i += 1
                if why:
                    break
            if nxt is not None or why:
                break
            at += 1
            i = 0
        if at > 64:  # (the blocks taken are dropped now and then, not one at a time)
            del pending[:at]
            at = 0
        self._block, self._line = at, i
        self.q_seq, self.q_taken, self.q_next = seq, taken, nxt
        return why

    def restart(self, line) -> None:  # (the unpickled: its first block's first line not taken)
        self._block, self._line = 0, line

    def final(self):
        """The clock at the end of the log: the two-writer time (or, ``single_writer``, the one
        writer's), every partition's hold lifted; never before :attr:`now`."""
        end = self.pair if self.sources > 1 or not self.single_writer else self.top
        if self.now is not None and (end is None or self.now > end):
            end = self.now
        return end


def _rebuilt(partition_idle, single_writer, idle_every_record, state) -> RecordClock:
    c = RecordClock(partition_idle, single_writer, idle_every_record)
    (c.now, c.top, c.top_who, c.top_ref, c.pair, c.sources, c.part_wm, c.part_seen, c.low, c.holder, c.pending,
     line) = state
    c.restart(line)
    return c


COMPILED = cython.compiled  # whether this module runs compiled
