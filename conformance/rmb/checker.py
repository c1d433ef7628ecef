# cython: annotation_typing=False
"""``rmkit check --protocol rmb``: the RMB log rules over message logs (a daemon's own log, or a
recorder's between daemons; several files are one log).

Records are grouped by the request's uid (:func:`rmkit.protocols.rmb.records.record_key`); each group is judged as
a whole, in time order (:mod:`.logjudge`), once no record can change its verdict, so one share of
the groups is checked exactly as the whole log is. The same code runs in one process, in ``--jobs`` processes (each keeps the groups
whose key hashes into its share) and on Spark (``rmkit audit --protocol rmb``, :class:`RmbShards`):
the shares' findings merge into one report; a finding that waits for the log to go on is decided
against the whole log's last time. A ``--jobs`` share's clock also takes the other shares' records,
in log order (:meth:`RmbShards._read`): when a request is judged, when a judged uid is forgotten and
when the loose records' window rolls are decided by the log's clock, and a share that ran on its own
records alone would decide them otherwise wherever a line's time jumps back.

Memory follows the requests still open: a request is judged and forgotten once the log's clock has
passed its horizon (:class:`Requests`, on the core's streaming engine :mod:`rmkit.subjects`).
"""

from __future__ import annotations

import copy
import functools
from array import array
import math
from itertools import compress
import operator
import os
import pickle
import stat
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import orjson

from rmkit.clockwalk import with_clock
from rmkit.gctune import paused_collections
from rmkit.logread import GZIP_MAGIC, auto_jobs, numbered_batches
from rmkit.lazy import numpy_module
from rmkit.linescan import pick_table, picks_of
from rmkit.peerread import DECODED_CHUNK_BYTES, Links, peer_batches, readable, size_of
from rmkit.processes import key_share, run_in_processes
from rmkit.protocol import REF_LINE_BITS
from rmkit.rules import OFF
from rmkit.verdict import Evidence, InputProblem, Report, Violation

from rmkit.protocols.rmb.records import RECORD_KEY, Rec, decode, record_key

from rmkit.conformance.rmb.typedread import UNREAD, TypedRecords, typed_records

try:
    import cython
except ImportError:  # not compiled, and Cython not installed: the declarations below mean nothing
    from rmkit import _cython_shadow as cython

if cython.compiled:  # the engine's C type (rmkit/subjects.pxd): the share's loop feeds it by C calls
    from cython.cimports.rmkit.subjects import SubjectEngine as Engine
else:
    Engine = None

LINE_MASK = (1 << REF_LINE_BITS) - 1
NO_DIRECTORY = "no --directory file: give the twin directory (its public keys) to verify signatures"


@dataclass
class Share:
    """One share's partial result: picklable, small (findings, not records)."""

    records: int = 0
    groups: int = 0
    max_time: float | None = None
    min_time: float | None = None
    found: list[tuple] = field(default_factory=list)  # (rule, uid, why, [(ref, event, who)])
    pending: list[tuple] = field(default_factory=list)  # (rule, uid, why, [(ref, event, who)], due)
    problems: list[tuple] = field(default_factory=list)  # (ref, error, field)
    events: Counter = field(default_factory=Counter)
    signed: Any = None  # sigreuse.SignatureIndex: the signed messages seen, for RMB-SIG-007 across shares
    open_peak: int = 0  # the most requests open at once
    late: int = 0  # records of a request already judged


class Requests:
    """The requests of one share on the core's streaming engine (:mod:`rmkit.subjects`): the
    records of one uid are a subject, judged whole (:class:`.logjudge.Group`) once the log's
    clock has passed its horizon, then forgotten; memory follows the requests still open.

    A request's horizon is the latest of its records' times, or of their backlog lives (the TTL a
    backlog-set states, else the message's exp; in a profile with a scrubber, exp 0 is its default,
    plus its interval), plus the checker's horizon (the wait for an expected follow-up,
    logcheck.yaml) and the clock tolerance: past it no record of the request can come but a late
    or faulty one. Such a late record (its request judged, its uid still remembered) is judged alone
    by the message rules (``late_records`` in the report's metrics). Records that name no request
    (no uid: a client's local message and the error answering it) are judged together in a window
    that follows the clock (:class:`Loose`)."""

    def __init__(self, ctx, share: Share):
        from rmkit.conformance.rmb import handlers
        from rmkit.conformance.rmb.logjudge import Group, backlog_ttl
        from rmkit.conformance.rmb.state import Request
        from rmkit.subjects import SubjectEngine

        self.new_request = Request
        self.new_group, self.judges, self.message_rules = Group, handlers.JUDGES, handlers.messages  # (bound once: judge runs per request)
        self.backlog_ttl = backlog_ttl
        self.decode_again = _typed_reading(typed_records())  # (the held lines: read as the loop read them)
        self.line = None  # the line the record being fed was decoded from by the typed reading (None: another reading)
        self.ctx, self.share = ctx, share
        self.grace = ctx.horizon + ctx.tol
        sc = ctx.b["scrubber"] or {}
        self.interval = float(sc.get("interval_s", 0))
        self.default_life = float(sc["default_exp_s"]) if sc else 0.0
        self.tail = self.interval + self.grace  # what a request's horizon adds to its latest record's life
        self.engine = SubjectEngine(self._open, self._add, self._judge, self._late,
                                    remember_s=REMEMBER_HORIZONS * self.grace)
        self.loose = {None: Loose(self), "": Loose(self)}  # no uid, an empty uid: two groups, as before
        self.next_roll = math.inf
        self.late = 0
        self.min_time, self.max_time = math.inf, -math.inf

    def feed(self, key: str | None, rec: Rec) -> None:
        t = rec.time
        if t > self.max_time:
            self.max_time = t
        if t < self.min_time:
            self.min_time = t
        if key:
            self.engine.feed(t, key, rec, rec.who)
            if self.next_roll != math.inf:
                self.roll_loose()
        else:
            self.feed_loose(key, rec)

    def feed_loose(self, key: str | None, rec: Rec) -> None:
        """A record that names no request (:class:`Loose`); the clock takes its time."""
        loose = self.loose[key]
        loose.add(rec)
        if loose.next_roll < self.next_roll:
            self.next_roll = loose.next_roll
        self.engine.tick(rec.time, rec.who)
        self.roll_loose()

    def roll_loose(self) -> None:
        """Judge what the clock has settled of the records that name no request."""
        now = self.engine.clock.now
        if now is not None and now >= self.next_roll:
            for loose in self.loose.values():
                if now >= loose.next_roll:
                    loose.roll(now)
            self.next_roll = min(loose.next_roll for loose in self.loose.values())

    def _open(self, key, t, rec):
        return self.new_request()

    def _add(self, request, t: float, rec: Rec) -> float:
        msg = rec.msg  # (life_of, inline: once per record)
        if type(msg) is dict:
            exp = msg.get("exp")
            life = exp if type(exp) is int and exp > 0 else self.default_life
        else:
            life = 0.0
        if rec.event == "backlog-set":
            ttl = self.backlog_ttl(rec.note)
            if ttl is not None and ttl > life:
                life = ttl
        line = self.line
        if line is not None:
            request.hold(rec.ref, line, t)  # kept as its line, decoded again at the judgment (state.py)
        else:
            request.append(rec)
        return t + life + self.tail

    def life_of(self, rec: Rec) -> float:
        """How long ``rec``'s request lives from it: its message's exp (else the scrubber's
        default), or the TTL its backlog-set states, whichever is longer."""
        msg = rec.msg
        life = 0.0
        if type(msg) is dict:
            exp = msg.get("exp")
            life = exp if type(exp) is int and exp > 0 else self.default_life
        if rec.event == "backlog-set":
            ttl = self.backlog_ttl(rec.note)
            if ttl is not None and ttl > life:
                life = ttl
        return life

    def _judge(self, key, request, at_end: bool) -> None:
        recs, ordered = request.records(self.decode_again)
        self.judge(recs, ordered=ordered)

    def judge(self, recs: list, keep=None, ordered: bool = False, keep_pending=None, lasting: dict | None = None) -> None:
        """Judge one request's records (``keep``: which findings to report, by their records;
        ``keep_pending``: which of those waiting for a follow-up, when not as ``keep``;
        ``ordered``: they are in time order already; ``lasting``: what holds of a record across
        its judgments, :attr:`.logjudge.Group.lasting`)."""
        share = self.share
        if not ordered:
            recs.sort(key=_time_ref)
        uid = None  # the first record's that names one: its uid, else its message's
        for r in recs:
            if r.uid is not None:
                uid = r.uid
                break
            if isinstance(r.msg, dict):
                uid = r.msg.get("uid")
                break
        out = self.new_group(self.ctx, recs, lasting).judge(self.judges)
        for rule, why, evid in out.found:
            if keep is None or keep(evid):
                share.found.append((rule, uid, why, [(r.ref, r.event, r.who) for r in evid]))
        if keep_pending is None:
            keep_pending = keep
        for rule, why, evid, due in out.pending:
            if keep_pending is None or keep_pending(evid):
                share.pending.append((rule, uid, why, [(r.ref, r.event, r.who) for r in evid], due))

    def _late(self, key, t, rec: Rec, memo) -> None:
        """A record of a request judged already: the rules of the message it carries."""
        self.late += 1
        g = self.new_group(self.ctx, [rec])
        self.message_rules(g)
        uid = rec.uid if rec.uid is not None else rec.msg.get("uid") if isinstance(rec.msg, dict) else None
        for rule, why, evid in g.out.found:
            self.share.found.append((rule, uid, why, [(r.ref, r.event, r.who) for r in evid]))

    def finish(self) -> None:
        engine = self.engine
        engine.finish()
        for loose in self.loose.values():
            loose.roll(None)
        share = self.share
        share.groups = engine.opened + self.loose[""].seen  # (records without a uid are no group)
        if self.max_time >= self.min_time:  # (a record was read)
            share.min_time, share.max_time = self.min_time, self.max_time
        share.open_peak = engine.peak_open
        share.late = self.late


# the events whose note the checker reads (Ctx.note_problem)
NOTED_EVENTS = frozenset(["backlog-set", "forward-job"])


def key_of_message(msg) -> str | None:
    """:data:`RECORD_KEY` of a line without a uid of its own: its message's uid (as
    :meth:`rmkit.protocol.RecordKey.of_object` reads it)."""
    if type(msg) is not dict:
        return None
    uid = msg.get("uid")
    if uid is None:
        return None
    return (uid if type(uid) is str else orjson.dumps(uid).decode()).lower()


_time_ref = operator.attrgetter("time", "ref")  # a record's place in the log: time, then position


# how long a judged request's uid is remembered (in its grace periods): a record of it within that
# time is late (judged alone), after it a new request of that uid
REMEMBER_HORIZONS = 10


class Loose:
    """The records that name no request (no uid, or an empty one: a client's local message before
    the daemon gives it a uid, the error answering it on ret, a POST without uid), judged together
    as one group, in a window that follows the clock. A record is *settled* once the clock is a
    grace period past its time; each judgment covers the window and reports the findings whose
    first record (by time, then position) was settled since the last judgment; records a grace
    period older than the cut are then dropped, the rest kept as the next judgment's context.

    A finding that waits for a follow-up (an error on a bad local message's ret) waits as long as a
    request's would: until its first record's horizon (its exp, or the scrubber's default, and the
    grace; as :class:`Requests` holds a request). Its record is kept with what came a grace period
    before it and every record after it up to that horizon (not in the window, which moves on), and
    judged again with them once the clock has passed the horizon: the finding stands if no
    follow-up within the horizon answers it. So a follow-up is read whenever it comes within its
    cause's horizon, in one process or in shares. (One after the horizon is late, but where the
    horizon is shorter than two grace periods the window may still hold it when the cause
    settles: a follow-up within two grace periods of its cause is read, as before the wait.)"""

    def __init__(self, owner: Requests):
        self.owner = owner
        self.recs: list[Rec] = []
        self.done: set[int] = set()  # refs of the window's records settled at an earlier judgment
        self.waiting: dict[int, tuple[float, list[Rec]]] = {}  # first record's ref -> (its horizon, its records)
        self.lasting: dict = {}  # (what, ref) -> what holds of a record of the window across judgments
        self.next_roll = math.inf
        self.seen = 0  # 1 once a record of this key was read

    def add(self, rec: Rec) -> None:
        self.recs.append(rec)
        self.seen = 1
        if self.next_roll == math.inf:
            self.next_roll = rec.time + 2 * self.owner.grace
        if self.waiting:
            t = rec.time
            for until, recs in self.waiting.values():  # (few: the findings that wait)
                if t <= until:
                    recs.append(rec)

    def roll(self, now) -> None:
        """Judge what is settled at clock ``now`` (None: the end of the log, everything is)."""
        owner = self.owner
        grace = owner.grace
        recs = self.recs
        final = now is None
        cut = math.inf if final else now - grace
        done, waiting = self.done, self.waiting
        settled = {r.ref for r in recs if r.time < cut and r.ref not in done}
        if settled:
            def keep(evid) -> bool:
                return min(evid, key=_time_ref).ref in settled if evid else final

            def keep_pending(evid) -> bool:
                if not evid:
                    return final
                first = min(evid, key=_time_ref)
                if first.ref not in settled:
                    return False
                until = first.time + owner.life_of(first) + owner.interval + grace
                if final:
                    return True
                if first.ref not in waiting:  # judged again once the clock has passed its horizon
                    waiting[first.ref] = (until, [r for r in recs if r.time >= first.time - grace and r.time <= until])
                return False

            owner.judge(recs, keep, keep_pending=keep_pending, lasting=self.lasting)  # (sorts them)
            done |= settled
        for ref in [ref for ref, (until, _) in waiting.items() if final or until < cut]:
            _, context = waiting.pop(ref)
            owner.judge(context, _never, keep_pending=lambda evid, ref=ref: bool(evid) and min(evid, key=_time_ref).ref == ref)
        self.recs = [r for r in recs if r.time >= cut - grace or r.ref not in done]
        self.done = {r.ref for r in self.recs if r.ref in done}
        if self.lasting:
            kept = {r.ref for r in self.recs}
            self.lasting = {k: v for k, v in self.lasting.items() if k[1] in kept}
        self.next_roll = (now + grace) if (self.recs or waiting) and not final else math.inf


def _never(evid) -> bool:
    return False


class RmbShards:
    """The RMB log checker as a :class:`rmkit.protocol.ShardedChecker`."""

    key = RECORD_KEY

    def __init__(self, profile: str = "spec", directory: str | None = None, max_examples: int = 1000,
                 horizon_s: float | None = None):
        self.profile, self.directory_path, self.max_examples, self.horizon_s = profile, directory, max_examples, horizon_s
        self.started = time.time()  # one clock for every share (pickled with the checker): a line's time is judged alike
        self.spill: str | None = None  # where a share writes its signature index as it grows (None: kept in memory)
        self._ctx = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_ctx"} | {"_ctx": None}

    def ctx(self):
        if self._ctx is None:
            from rmkit.protocols.rmb.keys import Directory
            from rmkit.conformance.rmb.logjudge import Ctx
            from rmkit.protocols.rmb.model import rmb_spec

            spec = rmb_spec()
            settings = dict(spec.raw["logcheck"]["settings"])
            if self.horizon_s is not None:
                settings["horizon_s"] = self.horizon_s
            directory = Directory.load(self.directory_path) if self.directory_path else None
            self._ctx = Ctx(spec.behaviour(self.profile), settings, directory, self.profile, self.started)
        return self._ctx

    # -- a share ----------------------------------------------------------------------------
    def check_share(self, inputs: list[str], batches: Iterable, clock: Iterable[bytes] | None = None) -> Share:
        """One share: its (refs, lines) batches in log order (a ``--jobs`` share's carry the other
        shares' lines too, :func:`_dealt`). ``clock``: the whole log's clock events,
        :meth:`clock_block`'s in log order (the share's own lines among them), which the share's
        clock takes between its own records as one process's clock takes every record (``rmkit
        audit``); without it (and without others' lines) the share's clock is its own records'."""
        from rmkit.protocols.rmb.model import rmb_spec
        from rmkit.conformance.rmb.sigreuse import SignatureIndex

        share = Share(signed=SignatureIndex(rmb_spec().raw["signature"]["challenge"]["pieces"], self.spill))
        requests = Requests(self.ctx(), share)
        with paused_collections():  # the records hold no cycles: reference counting frees them (gctune)
            share.records = self._read(batches if clock is None else _with_clock(batches, clock), requests, share)
            requests.finish()
        return share

    def clock_block(self, refs, lines) -> bytes:
        """What the clock takes of one batch of a log's lines (every line, in log order): (ref,
        time, writer) of each line that is a record as the share's loop reads it (not blank, not an
        input problem), packed for :meth:`check_share`'s ``clock``. ``rmkit audit`` reads each file
        split once for them (``spark_checks/job.py``)."""
        clock_of = self._clock_reader()
        out_refs, times, whos = [], [], []
        for ref, line in zip(refs, lines):
            rec = clock_of(line, ref)
            if rec is not None:
                out_refs.append(ref)
                times.append(rec.time)
                whos.append(rec.who)
        return pickle.dumps((out_refs, times, whos), pickle.HIGHEST_PROTOCOL)

    def _record_reader(self):
        """``record_of(line, ref)``: the record a line is, as the share's loop reads it (None: none,
        or an input problem): the one reading both the loop's clock and :meth:`clock_block` use."""
        read = self._line_reader()

        def record_of(line, ref):
            item = read(line, ref)
            return item[0] if type(item) is tuple else item

        return record_of

    def _line_reader(self):
        """``read(line, ref)``: what the share's loop takes of a line: its typed record (the common
        line, :func:`_typed_reading`, its few checks here); else, read the general way, (record,
        its key) or (None, error, field) for an input problem; None for a blank line."""
        ctx = self.ctx()
        line_problem = ctx.line_problem
        key_of = record_key

        def general(line, ref):
            if not line.strip():
                return None
            if line[-1:] == b"\n":  # (a line read with its newline, as shares that read the log themselves give
                line = line[:-1]  # it: an input problem's text is the one reader's)
            obj, error, fld = decode(line)
            if obj is not None:
                error, fld = line_problem(obj) or (None, None)
                if error is None:
                    return Rec(ref, obj), key_of(obj)
            return None, error, fld

        return self._typed_first(_typed_reading(typed_records()), general)

    def _clock_reader(self):
        """``clock_of(line, ref)``: what the clock takes of a line (its ``time`` and ``who``),
        exactly when :meth:`_record_reader` reads the line as a record (None otherwise): read
        without building its message (:meth:`.typedread.TypedRecords.clock_event`) where that
        reading settles the line, else by the record reading itself. A ``--jobs`` share reads
        every other share's line so; a line decoded whole costs about three times as much."""
        return self._typed_first(_typed_reading(typed_records(), clock=True), self._record_reader())

    def _typed_first(self, typed, otherwise):
        """``read(line, ref)``: ``typed``'s record of the line where the typed reading settles it
        (a plausible time, a note its event may carry), else what ``otherwise`` makes of the line."""
        from rmkit.conformance.rmb.logjudge import backlog_ttl

        ctx = self.ctx()
        note_problem = ctx.note_problem
        low, ahead = ctx.settings["plausible_unix_s"]
        high = ctx.started + ahead  # (Ctx.time_ok)

        def read(line, ref):
            rec = typed(line, ref) if type(line) is bytes else None
            if rec is not None and low <= rec.time <= high and (
                    (event := rec.event) not in NOTED_EVENTS
                    or (event == "backlog-set" and (rec.note is None or backlog_ttl(rec.note) is not None))
                    or note_problem(event, rec.note) is None):
                return rec
            return otherwise(line, ref)

        return read

    @cython.locals(engine=Engine)
    def _read(self, batches: Iterable, requests: Requests, share: Share) -> int:
        """Every line into its request: the records read."""
        from rmkit.conformance.rmb.sigreuse import SIGNED_EVENTS

        feed, engine, clock, INF = requests.feed, requests.engine, requests.engine.clock, math.inf
        tick = requests.engine.tick  # (not engine.tick: Cython takes no bound method of a typed cpdef as an object)
        min_time, max_time = requests.min_time, requests.max_time
        add_signed, problems = share.signed.add, share.problems
        read = self._line_reader()
        signed = frozenset(SIGNED_EVENTS)
        events: dict[str, int] = {}
        count = events.get
        records = 0

        clock_of = self._clock_reader()  # (the other shares' lines: what the clock takes of them)

        def tick_and_roll(t, who) -> None:
            """The clock takes another share's record, as one process's clock takes it between
            this share's: every decision the clock makes (a request judged, a judged one's uid
            forgotten, the loose records' window) is then made at the same record as in one
            process."""
            tick(t, who)
            if requests.next_roll != INF and clock.now >= requests.next_roll:
                requests.roll_loose()

        def take_others(orefs, olines, i: int, before) -> int:
            """The clock takes the other shares' lines before ``before`` (from the ``i``-th);
            returns the first not taken."""
            n = len(orefs)
            while i < n and orefs[i] < before:
                rec = clock_of(olines[i], orefs[i])
                if rec is not None:
                    tick_and_roll(rec.time, rec.who)
                i += 1
            return i

        def take_events(orefs, events, i: int, before) -> int:
            """take_others, for the other shares' records read already (``events``: their times
            and their writers, :meth:`clock_block`, :class:`_ChunkClock`)."""
            n = len(orefs)
            times, whos = events
            while i < n and orefs[i] < before:
                tick_and_roll(times[i], whos[i])
                i += 1
            return i

        for batch in batches:
            refs, lines = batch[0], batch[1]
            orefs, olines = (batch[2], batch[3]) if len(batch) > 2 else ((), ())
            take = take_others if len(batch) < 5 else take_events  # (5: _with_clock's and the peers' batches)
            read_ahead = batch[4] if len(batch) > 4 else None  # (the lines read already, :class:`_ChunkClock`)
            oi = 0
            next_other = orefs[0] if orefs else INF
            for ref, line, item in zip(refs, lines, map(read, lines, refs) if read_ahead is None else read_ahead):
                if next_other < ref:
                    oi = take(orefs, olines, oi, ref)
                    next_other = orefs[oi] if oi < len(orefs) else INF
                if type(item) is not tuple:
                    if item is None:  # a blank line
                        continue
                    # the common case: decoded at C speed into the record (typedread)
                    rec = item
                    uid = rec.uid
                    key = uid.lower() if uid is not None else key_of_message(rec.msg)
                    requests.line = line
                else:
                    rec = item[0]
                    if rec is None:
                        problems.append((ref, item[1], item[2]))
                        continue
                    key = item[1]
                    requests.line = None
                if read_ahead is not None:
                    rec.ref = ref  # (read before its chunk's place in the log was known)
                records += 1
                event = rec.event
                events[event] = count(event, 0) + 1
                if event in signed:
                    add_signed(ref, event, rec.msg)
                if key:  # (Requests.feed, inline)
                    t = rec.time
                    if t > max_time:
                        max_time = t
                    if t < min_time:
                        min_time = t
                    engine.feed(t, key, rec, rec.who)
                    if requests.next_roll != INF and clock.now >= requests.next_roll:
                        requests.roll_loose()
                else:
                    feed(key, rec)
                    min_time, max_time = min(min_time, requests.min_time), max(max_time, requests.max_time)
            if next_other != INF:
                take(orefs, olines, oi, INF)
        requests.min_time, requests.max_time = min(min_time, requests.min_time), max(max_time, requests.max_time)
        share.events.update(events)
        return records

    # -- the report -------------------------------------------------------------------------
    def merge(self, inputs: list[str], shares: list[Share]) -> Report:
        from rmkit.protocols.rmb.model import rmb_spec

        spec = rmb_spec()
        lc = spec.raw["logcheck"]
        modes = {r.id: r.mode(self.profile) for r in spec.rules}
        not_checked = {rid: f"no log shows it: {why}" for rid, why in lc["not_loggable"].items() if modes[rid] != OFF}
        if self.directory_path is None:
            not_checked.update({rid: NO_DIRECTORY for rid in lc["needs_directory"] if modes[rid] != OFF})
        rep = Report(protocol="rmb", profile=self.profile, inputs=list(inputs), rules=modes,
                     shown_per_rule=self.max_examples, not_checked=not_checked)
        times = [s.max_time for s in shares if s.max_time is not None]
        end = max(times) if times else None
        found = [f for s in shares for f in s.found]
        from rmkit.conformance.rmb.handlers import ACROSS_LOG

        for handler in ACROSS_LOG:  # the rules judged over the whole log (a signature reused anywhere)
            found += [(rule, None, why, evid) for rule, why, evid in handler(shares)]
        waited: Counter[str] = Counter()
        for s in shares:
            for rule, uid, why, evid, due in s.pending:
                if end is not None and due <= end:
                    found.append((rule, uid, why, evid))
                else:
                    waited[rule] += 1
        found.sort(key=lambda f: (min((e[0] for e in f[3]), default=0), f[0], f[2]))
        kept: Counter[str] = Counter()
        for rule, uid, why, evid in found:
            mode = modes.get(rule, OFF)
            if mode == OFF or rule in not_checked:
                continue
            rep.count(rule, mode)
            if self.max_examples and kept[rule] >= self.max_examples:
                continue
            kept[rule] += 1
            ev = [Evidence(ref & LINE_MASK, event, who, inputs[ref >> REF_LINE_BITS]) for ref, event, who in _unique(evid)]
            rep.violations.append(Violation(rule, spec.rules[rule].severity, mode, uid, why, ev))
        for rule, n in sorted(waited.items()):
            if modes.get(rule, OFF) != OFF and rule not in not_checked:
                rep.add_not_judged(rule, n, f"the log ends less than {self.ctx().horizon:g} s after the cause")
        problems = sorted(p for s in shares for p in s.problems)
        rep.unreadable = len(problems)
        rep.input_problems = [InputProblem(inputs[ref >> REF_LINE_BITS], ref & LINE_MASK, err, fld)
                              for ref, err, fld in problems[: self.max_examples or None]]
        rep.records = sum(s.records for s in shares)
        rep.subjects = sum(s.groups for s in shares)
        events: Counter = Counter()
        for s in shares:
            events.update(s.events)
        starts = [s.min_time for s in shares if s.min_time is not None]
        span = round(end - min(starts), 3) if starts and end is not None else None
        rep.metrics = {"records_per_event": dict(events.most_common()), "log_time_span_s": span, "jobs": len(shares),
                       "loggable_rules": len(lc["checked"]), "not_loggable_rules": len(lc["not_loggable"]),
                       # memory follows these: the requests open at once (summed over the shares), and the
                       # records that came after their request was judged (judged alone, see Requests)
                       "peak_open_requests": sum(s.open_peak for s in shares), "late_records": sum(s.late for s in shares)}
        rep.decide()
        return rep


def _with_clock(batches, clock: Iterable[bytes]):
    """A share's (refs, lines) batches, each with the other shares' records up to its last line
    as the clock takes them ((refs, (time, writer)) of each, :meth:`RmbShards.clock_block`), then
    batches of those after the share's last line: the batches :meth:`RmbShards._read` takes for
    ``rmkit audit``. ``clock``: the log's packed blocks in log order, walked by
    :func:`rmkit.clockwalk.with_clock` (a share holds one block of the log's events at a time
    besides its own)."""
    for refs, lines, pieces in with_clock(batches, clock, _unpack_clock, _others):
        if len(pieces) == 1:
            orefs, events = pieces[0]
        else:
            orefs = [ref for p in pieces for ref in p[0]]
            events = ([t for p in pieces for t in p[1][0]], [who for p in pieces for who in p[1][1]])
        yield refs, lines, orefs, events, None


def _unpack_clock(data: bytes) -> tuple:
    """A packed block (:meth:`RmbShards.clock_block`) as (its records' refs, (times, writers))."""
    refs, times, whos = pickle.loads(data)
    return refs, (times, whos)


def _others(refs: list, columns: tuple, own: list) -> tuple:
    """A piece of a block as the other shares' records: (their refs, (their times, their
    writers)); a line of the share's own (``own``: its positions in the piece) is left to the
    share's loop."""
    if own:
        keep = bytearray(b"\1") * len(refs)
        for i in own:
            keep[i] = 0
        times, whos = columns
        return list(compress(refs, keep)), (list(compress(times, keep)), list(compress(whos, keep)))
    return refs, columns


def _typed_reading(reader, clock: bool = False):
    """``read(line, ref)``: ``reader``'s :meth:`~.typedread.TypedRecords.decode` (``clock``: its
    :meth:`~.typedread.TypedRecords.clock_event`) as a function of this module, compiled where
    it is: the Struct decoded and its writer and peer found in the reading's caches here, a
    writer or peer not seen yet (or one that names no twin) settled by the reading itself. The
    share loop reads every line so, once. A reading of another kind is called as it is."""
    if type(reader) is not TypedRecords:
        if clock:
            return lambda line, ref: reader.clock_event(line)
        return reader.decode
    struct_decode = reader._clock_decode if clock else reader._decode
    errors = reader._errors
    twins, peers_ok, settle = reader._twins, reader._peers_ok, reader._twin
    unseen = twins  # (a marker no twin is)

    def read(line, ref):
        try:
            rec = struct_decode(line)
        except errors:
            return None
        if rec.ref is not UNREAD or rec.twin is not UNREAD:
            return None
        twin = twins.get(rec.who, unseen)
        peer = rec.peer
        if twin is unseen or twin is UNREAD or (peer is not None and "@" in peer and peers_ok.get(peer) is not True):
            twin = settle(rec)
            if twin is UNREAD:
                return None
        if not clock:
            rec.ref, rec.twin = ref, twin
        return rec

    return read


def _unique(evid: list[tuple]) -> list[tuple]:
    seen, out = set(), []
    for e in sorted(evid):
        if e[0] not in seen:
            seen.add(e[0])
            out.append(e)
    return out


class RmbLogChecker:
    """``rmkit check --protocol rmb``: :class:`RmbShards` over local files, in one or more processes."""

    def __init__(self, shards: RmbShards, jobs: int | None = 1):
        self.shards, self.jobs = shards, jobs
        self.progress = None  # progress(input index, bytes of it read), as the one reader reports them (share 0's)

    def run(self, inputs: list[str]) -> Report:
        started = time.perf_counter()
        jobs = default_jobs(inputs) if self.jobs is None else self.jobs
        # the shares' signature indexes go to files as they grow (sigreuse): the memory a check
        # holds then follows the requests open, not the signed messages of the log
        with tempfile.TemporaryDirectory(prefix="rmkit-rmb-") as spill, paused_collections():  # (no cycles: see rmkit.gctune)
            shards = copy.copy(self.shards)
            shards.spill = spill
            if jobs > 1 and "-" not in inputs:
                shares = _run_processes(shards, inputs, jobs, spill, self.progress)
            else:
                problems: list[tuple] = []
                share = shards.check_share(inputs, _file_batches(inputs, problems, progress=self.progress))
                share.problems += problems
                shares = [share]
            rep = shards.merge(inputs, shares)
        elapsed = time.perf_counter() - started
        rep.metrics["elapsed_s"] = round(elapsed, 3)
        rep.metrics["records_per_s"] = round(rep.records / elapsed) if elapsed > 0 else None
        return rep


def default_jobs(inputs: list[str]) -> int:
    """The processes ``rmkit check --protocol rmb`` uses when ``--jobs`` is not given: as
    :func:`rmkit.logread.auto_jobs` decides (one per idle core, one where fewer than two are idle).
    Each share's clock takes the other shares' records too (:meth:`RmbShards._read`), so two
    shares spend more CPU than one process (bench/bench_rmb_check.py); on two idle cores they still
    take about 0.6 of one process's wall time, and on a busy machine auto_jobs picks one."""
    return auto_jobs(inputs)


def _file_batches(inputs: list[str], problems: list, k: int = 0, n: int = 1, progress=None):
    """(refs, lines) of every input in order; with a share ``k`` of ``n``, its groups' lines (a
    line that is not JSON goes to share 0, which reports it), then the (refs, lines) of the other
    shares' lines, for its clock (:func:`_dealt`: by the table :func:`share_table` makes of a
    sample of the first input, :func:`_sample`; without one, a short log or a stream, by
    :func:`key_share` of ``n``). ``progress(input index, bytes of it read)`` as they are read."""
    import orjson

    table = None  # the buckets' shares (share_table, of the first input's sample; b"": none, by key_share of n)
    for idx, path in enumerate(inputs):
        base = idx << REF_LINE_BITS

        def broke(line: int, why: str, base=base) -> None:
            if k == 0:
                problems.append((base | line, why, None))

        shares_of: dict[str, int] = {}
        for refs, batch in numbered_batches(idx, path, on_error=broke, progress=progress):
            if n == 1:
                yield refs, batch
                continue
            if table is None:
                table = _table_of(path, n)
            yield _dealt(refs, batch, k, n, shares_of, table or None)


# the uids whose share a --jobs reader remembers (a request's lines come close together in a log)
SHARES_REMEMBERED = 4096

# the buckets a --jobs run deals lines into by their key (key_share of BUCKETS), then the buckets
# into shares (share_table): at most 254, what the compiled scanner deals into at once
BUCKETS = 250


SAMPLE_BYTES = 1 << 20


def _sample(path: str) -> list[bytes] | None:
    """The whole lines of :data:`SAMPLE_BYTES` from the middle of the file ``path`` (None: not a
    regular file, a compressed or short one, or one that cannot be read): what
    :func:`share_table` deals by. A log's middle shows the mix of lines it goes on with; its
    first lines may not (where requests live long, their answers come minutes after the first
    requests)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size < 4 * SAMPLE_BYTES:
            return None
        with open(path, "rb") as f:
            if f.read(2) == GZIP_MAGIC:
                return None
            f.seek(st.st_size // 2 - SAMPLE_BYTES // 2)
            f.readline()  # (the rest of a line begun before)
            lines = f.read(SAMPLE_BYTES).split(b"\n")[:-1]  # (the last one may be cut)
    except (OSError, ValueError):
        return None
    return [line + b"\n" for line in lines] or None


def _table_of(path: str, n: int) -> bytes:
    """:func:`share_table` of ``n`` of a sample of the file ``path`` (:func:`_sample`); b"" where
    there is none (a short log, a stream): lines are then dealt by :func:`key_share` of ``n``."""
    sample = _sample(path)
    return share_table(_shares(sample, BUCKETS, {}), n) if sample else b""


def share_table(buckets: bytes, n: int) -> bytes:
    """The share of ``n`` of each bucket (of :data:`BUCKETS`), as a :meth:`bytes.translate` table
    (UNSETTLED kept), from the buckets of a sample of the log's lines (``buckets``, those of
    :func:`_sample`: every share reads the same sample, so every share makes the same table).

    Bucket 0 holds the lines that name no request (key None or the empty uid, whose crc32 is 0),
    which one share judges together (:class:`Loose`), and goes to share 0; the other buckets
    (alike, as a hash deals keys) are dealt so that each share has about 1/n of the lines, share
    0 counting those of bucket 0: on a log whose lines are one tenth a client's messages before
    the daemon gives them a uid, share 0 no longer has more lines than the others. Any table
    gives the same report (every line of a request in one share, each share's clock the log's);
    only the work each share does changes."""
    total = len(buckets)
    loose = buckets.count(0)
    rest = BUCKETS - 1
    if total and n > 1:
        want = max(0.0, total / n - loose) / max(total - loose, 1)  # share 0's part of the other buckets' lines
        first = min(rest, round(want * rest))
    else:
        first = rest // n
    table = bytearray(range(256))
    table[0] = 0
    for b in range(1, 1 + first):
        table[b] = 0
    others = rest - first
    for i in range(others):
        table[1 + first + i] = 1 + i * (n - 1) // others if n > 1 else 0
    return bytes(table)


def _shares(batch: list, n: int, shares_of: dict):
    """:func:`key_share` of ``n`` of each line's :func:`line_key`, a byte a line. The compiled
    scanner (``_uidscan``, where it was built) finds that of every line with a uid of its own in
    one pass; the others, and every line where it was not built, take :func:`_line_share`."""
    shares = _uid_shares(batch, n) if _uid_shares is not None else None
    if shares is None:
        return bytes([_line_share(line, n, shares_of) for line in batch])
    if UNSETTLED in shares:
        shares = bytearray(shares)
        at = shares.find(UNSETTLED)
        while at >= 0:
            shares[at] = _line_share(batch[at], n, shares_of)
            at = shares.find(UNSETTLED, at + 1)
    return shares


def _dealt(refs, batch: list, k: int, n: int, shares_of: dict, table: bytes | None = None) -> tuple[list, list, list, list]:
    """The (refs, lines) of a batch that are share ``k``'s of ``n``, then those that are the other
    shares' (the share's clock takes their times too, :meth:`RmbShards._read`): each line's share by
    :func:`key_share` of its :func:`line_key` (of ``n``; with a ``table``, of :data:`BUCKETS`,
    then the table's share of that bucket, :func:`share_table`)."""
    pick = _dealt_shares(batch, n, shares_of, table).translate(pick_table(k))
    other = pick.translate(_OTHER)
    return list(compress(refs, pick)), list(compress(batch, pick)), list(compress(refs, other)), list(compress(batch, other))


def _dealt_shares(batch: list, n: int, shares_of: dict, table: bytes | None) -> bytes:
    """Each line's share of ``n``, a byte a line (:func:`_dealt`'s rule: of :data:`BUCKETS`, then
    the ``table``'s share of that bucket; without a table, :func:`key_share` of ``n``)."""
    if table is None:
        return _shares(batch, n, shares_of)
    return _shares(batch, BUCKETS, shares_of).translate(table)


_OTHER = bytes([1, 0]) + bytes(254)  # (a share's pick turned over: its lines 0, the others' 1)


def _line_share(line: bytes | str, n: int, shares_of: dict) -> int:
    """:func:`key_share` of the line's :func:`line_key`, for the common line (a uid of its own)
    read by msgspec alone, the share of each uid as read (case and all) kept in ``shares_of``
    for the next lines of its request."""
    try:
        got = _key_decoder()(line)
    except _KEY_ERRORS:
        got = None
    uid = got.uid if got is not None else None
    if type(uid) is not str:
        return key_share(line_key(line), n)
    share = shares_of.get(uid)  # (line_key's first case)
    if share is None:
        share = key_share(uid.lower(), n)
        if len(shares_of) >= SHARES_REMEMBERED:
            shares_of.clear()
        shares_of[uid] = share
    return share


def _compiled_uid_shares():
    """``_uidscan.uid_shares``, or None where it was not built (or RMKIT_PURE_PYTHON is set)."""
    if os.environ.get("RMKIT_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from rmkit.conformance.rmb._uidscan import uid_shares
    except ImportError:  # not built (no C compiler at install): every line is read in Python
        return None
    return uid_shares


_uid_shares = _compiled_uid_shares()
UNSETTLED = 255  # _uidscan's share of a line it leaves to the Python reading


def line_key(line: bytes | str) -> str | None:
    """:data:`RECORD_KEY` of a raw line (None: none, or not JSON): what ``--jobs`` deals lines out
    by. Read by msgspec into the two fields the key needs (the rest skipped, nothing built); a
    line that is not of that shape is read whole."""
    try:
        got = _key_decoder()(line)
    except _KEY_ERRORS:
        got = None
    if got is not None:
        if type(got.uid) is str:
            return got.uid.lower()
        if got.uid is None and (got.message is None or type(got.message.uid) is str or got.message.uid is None):
            uid = got.message.uid if got.message is not None else None
            return uid.lower() if uid is not None else None
    try:
        return record_key(orjson.loads(line)) if line.strip() else None
    except orjson.JSONDecodeError:
        return None


@functools.lru_cache(maxsize=None)
def _key_decoder():
    import msgspec

    message = msgspec.defstruct("MessageUid", [("uid", Any, None)], gc=False)
    line = msgspec.defstruct("LineKey", [("uid", Any, None), ("message", Optional[message], None)], gc=False)
    return msgspec.json.Decoder(line).decode


def _key_errors() -> tuple:
    import msgspec

    return (msgspec.ValidationError, msgspec.DecodeError)


_KEY_ERRORS = _key_errors()


def _read_by_peers(shards: RmbShards, inputs: list[str], k: int, n: int, net, problems: list, progress=None):
    """Share k's batches of plain files, read by the shares themselves (:mod:`rmkit.peerread`,
    as REMP's shares read): each reads its chunks of the inputs, finds every line's share (as
    :func:`_dealt` does, by the same table) and sends each other share its lines, with the
    clock's events of the chunk (:class:`_ChunkClock`). So a line is read, split and dealt once in
    the run, and read for the clock once, by its chunk's reader, instead of by every other share;
    the reader's own lines are read once, for the clock and for the check. Each batch is (refs,
    lines, the other shares' records' refs, their (time, writer), the lines read ahead or None),
    as :meth:`RmbShards._read` takes it. A line too long or an input that breaks off is reported
    by the share that owns the chunk (in ``problems``). ``progress(input index, bytes of it read)``
    as the chunks are taken, every share's in log order."""
    table = next((_table_of(path, n) for path in inputs if size_of(path)), b"") or None
    shares_of: dict[str, int] = {}

    def deal(refs, lines, n, text) -> list[bytes]:
        return picks_of(_dealt_shares(lines, n, shares_of, table), n)

    def on_break(idx: int, line: int, why: str) -> None:
        problems.append(((idx << REF_LINE_BITS) | line, why, None))

    # (256 KB chunks, not 1 MB: two shares took 0.86 to 0.93 of the wall time and 0.85 to 0.93 of the
    # CPU on the bench's short and long-TTL shapes, 1,000,000 lines, three alternated runs)
    clock = _ChunkClock(shards)
    for refs, lines, (orefs, events, ahead) in peer_batches(k, n, inputs, net, deal, REF_LINE_BITS, on_break=on_break,
                                                            summary=(clock.make, clock.pack, clock.unpack, clock.take),
                                                            progress=progress, chunk_bytes=DECODED_CHUNK_BYTES):
        yield refs, lines, orefs, events, ahead


class _ChunkClock:
    """What a chunk's reader sends the other shares with their lines (:func:`_read_by_peers`): the
    clock's event, (time, writer), of each of the chunk's lines that is a record, as the share's
    loop reads it. The reader reads its own lines of the chunk whole (the share's loop then takes
    them as read, :meth:`RmbShards._read`) and the others' for the clock alone
    (:meth:`RmbShards._clock_reader`); each share's clock takes every record that is not its own."""

    def __init__(self, shards: RmbShards):
        self.read, self.clock_of = shards._line_reader(), shards._clock_reader()

    def make(self, text: bytes, lines: list, pick: bytes) -> tuple:
        """(a byte per line of the chunk, 1 for a record; each line's time and writer, 0.0 and
        None for a line that is not a record; the reader's own lines as read) (``pick``: the
        reader's lines)."""
        read, clock_of = self.read, self.clock_of
        n = len(lines)
        is_record, times, whos = bytearray(n), array("d", bytes(8 * n)), [None] * n
        names: dict[str, str] = {}  # (one string per writer: pickled once per chunk)
        ahead = []
        for i, (line, mine) in enumerate(zip(lines, pick)):
            if mine:
                item = read(line, 0)  # (its ref is set when the chunk is taken)
                ahead.append(item)
                rec = item[0] if type(item) is tuple else item
            else:
                rec = clock_of(line, 0)
            if rec is not None:
                is_record[i] = 1
                times[i] = rec.time
                whos[i] = names.setdefault(rec.who, rec.who)
        return bytes(is_record), times, whos, ahead

    @staticmethod
    def pack(made: tuple) -> bytes:
        is_record, times, whos, _ = made
        return pickle.dumps((is_record, times.tobytes(), whos), pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def unpack(data: bytes) -> tuple:
        is_record, times, whos = pickle.loads(data)
        return is_record, array("d", times), whos, None

    @staticmethod
    def take(made: tuple, first: int, pick: bytes) -> tuple:
        """(refs, (times, writers)) of the chunk's records that are not this share's (``pick``),
        and the lines read ahead (the reader's own, in its batch's order; None for another's
        chunk)."""
        is_record, times, whos, ahead = made
        n = len(is_record)
        keep = (int.from_bytes(is_record, "little") & int.from_bytes(pick.translate(_OTHER), "little")).to_bytes(n, "little")
        return list(compress(range(first, first + n), keep)), (list(compress(times, keep)), list(compress(whos, keep))), ahead


def _check_share(shards: RmbShards, inputs: list[str], k: int, n: int, spill: str | None = None,
                 links: Links | None = None, progress=None) -> Share:
    """Share ``k`` of ``n`` of the check, in its own process; its signature index written to a file
    in ``spill`` (:meth:`.sigreuse.SignatureIndex.spill`) where given. ``links``: the shares' pipes
    where they read the inputs themselves (:func:`_read_by_peers`), else each reads them whole;
    ``progress``: where the share reports what it has read (share 0's, in the parent)."""
    problems: list[tuple] = []
    if links is None:
        share = shards.check_share(inputs, _file_batches(inputs, problems, k, n, progress))
    else:
        net = links.keep(k)
        try:
            share = shards.check_share(inputs, _read_by_peers(shards, inputs, k, n, net, problems, progress))
        finally:
            net.close()
    share.problems += problems
    if spill is not None and share.signed is not None:
        share.signed = share.signed.spill(spill)
    return share


def _run_processes(shards: RmbShards, inputs: list[str], jobs: int, spill: str | None = None, progress=None) -> list[Share]:
    """The shares, share 0 in this process (a process fewer: each holds an interpreter and the
    checker's modules), which then imports numpy for the merge's RMB-SIG-007 index while the
    others still run; share 0 reports the ``progress``."""
    links = Links(jobs) if jobs < UNSETTLED and readable(inputs) else None  # (plain files: the shares read them)
    try:
        return run_in_processes(_check_share, [(shards, inputs, k, jobs, spill, links, progress if k == 0 else None)
                                               for k in range(jobs)], first_here=True, while_waiting=numpy_module)
    finally:
        if links is not None:
            links.close()  # (what share 0, here, did not keep: nothing once it ran)


def make_checker(profile: str, args: Any) -> RmbLogChecker:
    return RmbLogChecker(sharded_checker(profile, args), jobs=getattr(args, "jobs", None))


def sharded_checker(profile: str, args: Any) -> RmbShards:
    from rmkit.errors import UsageError

    directory = getattr(args, "directory", None)
    if directory is not None and directory != "-" and not os.path.isfile(directory):
        raise UsageError(f"--directory {directory!r}: no such file")
    horizon = getattr(args, "horizon", None)
    if horizon is not None and not horizon > 0:
        raise UsageError(f"--horizon: expected a number of seconds > 0, found {horizon}")
    shards = RmbShards(profile, directory, max_examples=getattr(args, "max_examples", 1000), horizon_s=horizon)
    shards.ctx()  # a broken directory file is a usage error before any reading
    return shards
