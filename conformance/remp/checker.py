# cython: annotation_typing=False
"""Streaming checker of REMP receipt logs (``rmkit check --protocol remp``).

One pass, in log order. Memory is proportional to the messages still open: a message is judged
and dropped once the log's time has moved a horizon past its first receipt (or, for receipts that
carry no time at all, once it has been idle for ``idle_receipts`` receipts); a small tombstone of
each judged message stays for one more horizon, so that late receipts are recognised as late and
still checked for replay.

This module is the engine: reading (files, Kafka envelopes), interning, the log's clock, sweeps,
tombstones, and what each receipt tells about its message and its source (:mod:`.state`). The rules
are judged by their handlers (:mod:`.handlers`, one per rule id of ``spec/remp/rules.yaml``), which
the engine calls at the moments their rules can be decided (``self.hooks``); whether a rule runs,
and whether it fails the run, is the profile's mode for it.
"""

from __future__ import annotations

import difflib
import time
from collections import Counter, deque
from itertools import repeat
from operator import attrgetter
from typing import Any

import orjson
from msgspec.structs import astuple

try:
    import cython
except ImportError:  # not compiled, and Cython not installed: the one declaration below means nothing
    from rmkit import _cython_shadow as cython

from rmkit.gctune import paused_collections
from rmkit.logread import (auto_jobs, kafka_time_field, kafka_time_problem, kafka_value_field, numbered_batches,
                           unwrap_kafka)
from rmkit.conformance.remp.metrics import LatencyHistogram
from rmkit.conformance.remp.figures import latency_entry, per_source_metrics, violation_order
from rmkit.protocol import REF_LINE_BITS
from rmkit.logclock import COUNTED, MOVED, PARTITION_IDLE_RECORDS, PASSED, TOP, RecordClock
from rmkit.linescan import line_hashes  # each line's hash, by which a redelivered (identical) receipt line is known
from rmkit.rules import OFF
from rmkit.verdict import Evidence, InputProblem, Report, Violation
from rmkit.conformance.remp.handlers import INCLUSION_KINDS, RELEASE_KINDS, Hooks
from rmkit.protocols.remp.model import VALIDATOR, RempModel, model_for
from rmkit.conformance.remp.state import NEVER, BlockState, Final, MessageState, SourceState, Tomb
from rmkit.reference_impl.remp.outcome import evaluate_outcome

if cython.compiled:  # the clock's C type (rmkit/logclock.pxd): the feed loop steps the clock by C calls
    from cython.cimports.rmkit.logclock import RecordClock as Clock
    # the state's C types (state.pxd): a receipt's message and source read as struct fields
    from cython.cimports.rmkit.conformance.remp.state import BlockState as BlockT, Final as FinalT, \
        MessageState as MessageT, SourceState as SourceT, Tomb as TombT
    from cython.cimports.rmkit.conformance.remp.metrics import LatencyHistogram as HistogramT
    # a message's seen hashes (an array of "q"), searched and grown in C
    from cython.cimports.cpython.array import array as SeenT, resize_smart
else:
    Clock = RecordClock
    BlockT = FinalT = MessageT = SourceT = TombT = HistogramT = SeenT = None

def final_clock(clocks: list, tops: list, clock_jump_ms: int) -> int | None:
    """A log's final clock: the latest time two sources reached, or a later single latest time
    when it is within the jump limit of that (the log's last receipt). Shared by the streaming
    checker, ``--jobs`` and the Spark audit, from each share's own clock and latest receipt
    (:attr:`RempLogChecker.top_mark`; one share: the whole log). Exact: the two sources that reach
    the log's clock last either both have receipts in one share, whose own clock then reaches
    it, or each leads a share, which its latest receipt shows."""
    known = [c for c in clocks if c is not None]
    end = max(known) if known else None
    best: dict = {}  # source (or message, for a receipt without one) -> its latest time over the shares' tops
    for top in tops:
        if top is not None and best.get(top[2], top[0]) <= top[0]:
            best[top[2]] = top[0]
    if len(best) > 1:
        second = sorted(best.values())[-2]
        if end is None or second > end:
            end = second
    latest = max(best.values(), default=None)
    if latest is not None and (end is None or 0 < latest - end <= clock_jump_ms):
        end = latest
    return end


LINE_BITS = REF_LINE_BITS  # a receipt reference is (input index << LINE_BITS) | line number
LINE_MASK = (1 << LINE_BITS) - 1
SWEEP_EVERY = 4096
NEWLINE = b"\n"
NO_REF = 1 << 126  # beyond every record's reference
# messages a share holds back for roles it has not seen (beyond: judged on the share's roles)
MAX_DEFERRED = 20_000  # a few KB each: memory stays bounded when a source never shows its role
# Kinds that open a message's life: one arriving later than the expiry bound after the first
# receipt is a new submission of the same id (the documents: a message is forgotten once obsolete).
START_KINDS = ("SentToValidators", "PutIntoQueue")
BLOCK_EVENT_KINDS = INCLUSION_KINDS + RELEASE_KINDS + ("RejectedByCollator",)
# What the feed loop does with a receipt of each kind, as bits: one lookup per receipt instead of a
# chain of name tests (kinds with none of these get 0); C numbers where compiled, as the loop's act is
_PUT = cython.declare(cython.int, 1 << 0)
_SENT = cython.declare(cython.int, 1 << 1)
_FN_REJECT = cython.declare(cython.int, 1 << 2)
_TIMEOUT = cython.declare(cython.int, 1 << 3)
_INCLUSION = cython.declare(cython.int, 1 << 4)
_FINAL = cython.declare(cython.int, 1 << 5)
_BLOCK_EVENT = cython.declare(cython.int, 1 << 6)
_START = cython.declare(cython.int, 1 << 7)
_COLLATED = cython.declare(cython.int, 1 << 8)
_PER_MESSAGE = cython.declare(cython.int, _PUT | _SENT | _FN_REJECT | _TIMEOUT)
_USES_BLOCK = cython.declare(cython.int, _INCLUSION | _FINAL | _BLOCK_EVENT)
KIND_ACTS: dict[str, int] = {}
for _kinds, _bit in ((("PutIntoQueue",), _PUT), (("SentToValidators",), _SENT), (("RejectedByFullnode",), _FN_REJECT),
                     (("Timeout",), _TIMEOUT), (INCLUSION_KINDS, _INCLUSION), (("Finalized",), _FINAL),
                     (BLOCK_EVENT_KINDS, _BLOCK_EVENT), (START_KINDS, _START),
                     (("IncludedIntoBlock",), _COLLATED)):
    for _k in _kinds:
        KIND_ACTS[_k] = KIND_ACTS.get(_k, 0) | _bit
_SOURCE, _TIMESTAMP, _SIGNATURE = attrgetter("source_id"), attrgetter("timestamp"), attrgetter("signature")  # of typed receipts
NO_TIME = ("no usable time: receipt timestamp 0 or missing and no Kafka record timestamp; "
           "give the checker Kafka dumps with their record timestamps")
# signature verification outcomes counted in the metrics (with a validator set that has keys)
SIG_COUNTS = ("valid", "invalid", "unsigned", "malformed", "unknown_source", "outside_session")


# The typed decoder reads a batch a piece at a time: a piece's receipts are decoded together and
# then judged while still in the processor's cache (a whole 4 MB batch decoded first was a fifth slower).
PIECE = 256


def _pieces(batches):
    """(refs, lines) batches cut into pieces of at most :data:`PIECE` lines, in order."""
    for refs, lines in batches:
        if len(lines) <= PIECE:
            yield refs, lines
        else:
            for i in range(0, len(lines), PIECE):
                yield refs[i:i + PIECE], lines[i:i + PIECE]


@cython.cfunc
@cython.locals(seen=SeenT, h=cython.longlong, i=cython.Py_ssize_t)
def _holds(seen, h) -> cython.bint:
    """Whether a message's seen hashes (an array of 64-bit numbers) hold ``h``: a C loop compiled."""
    if cython.compiled:
        for i in range(len(seen)):
            if seen.data.as_longlongs[i] == h:
                return True
        return False
    return h in seen


@cython.cfunc
@cython.locals(seen=SeenT, h=cython.longlong, n=cython.Py_ssize_t)
def _remember(seen, h) -> None:
    """Add ``h`` to a message's seen hashes: grown and written in C compiled (no Python call)."""
    if cython.compiled:
        n = len(seen)
        resize_smart(seen, n + 1)
        seen.data.as_longlongs[n] = h
    else:
        seen.append(h)


class RempLogChecker:
    """Check REMP receipt logs against one profile of the spec.

    ``roles``: optional ``source_id -> "fullnode" | "validator"`` (from ``--validators``); without
    it, each source's role is inferred from the first kind it issues that only one role may issue.

    ``typed``: read well-formed receipts with the typed decoder (:mod:`rmkit.protocols.remp.records`); the findings are
    the same either way (False reads every line into a dict, the general path).

    ``validator_set``: the ``--validators`` file loaded (:mod:`rmkit.protocols.remp.keys`); its roles are used when
    ``roles`` is not given, and when it carries public keys the signature rules (those that
    ``require`` validator_keys: every signature verified, every source a member of the validator
    set of its session) are checked. Without keys those rules are reported as not checked.
    """

    def __init__(self, profile: str = "spec", *, lifetime_s: float | None = None,
                 horizon_s: float | None = None, roles: dict[str, str] | None = None,
                 max_examples: int = 1000, idle_receipts: int = 2_000_000, jobs: int | None = 1,
                 model: RempModel | None = None, progress=None, validator_set=None, typed: bool = True,
                 partition_idle_receipts: int = PARTITION_IDLE_RECORDS):
        self.model = model or model_for(profile)
        m = self.model
        self.profile = m.profile
        self.lifetime_s = lifetime_s if lifetime_s is not None else m.default_lifetime_s
        self.horizon_s = horizon_s if horizon_s is not None else m.default_horizon_s(self.lifetime_s)
        self.expiry_ms = m.expiry_bound_ms(self.lifetime_s)
        self.horizon_ms = int(self.horizon_s * 1000)
        self.close_after_ms = self.horizon_ms + 60_000
        # a latest timestamp this far ahead of every other source's is an outlier (REMP-TIME-001)
        self.clock_jump_ms = self.horizon_ms
        if roles is None and validator_set is not None:
            roles = validator_set.roles
        self.declared_roles = dict(roles) if roles else None
        self.validator_set = validator_set
        self.keyed = validator_set is not None and validator_set.has_keys
        # with session start times, expiry is judged by master session (REMP-EXPIRY-003/004) and the
        # time proxies (REMP-EXPIRY-001/002) step aside, each where its session rule is active
        timed = validator_set is not None and validator_set.timed
        self._obsolete_by_session = timed and m.mode("REMP-EXPIRY-003") != OFF
        self._timeout_by_session = timed and m.mode("REMP-EXPIRY-004") != OFF
        self.max_examples = max_examples
        self.idle_receipts = idle_receipts
        self.partition_idle_receipts = partition_idle_receipts
        self.modes = {r.id: r.mode(self.profile) for r in m.rules}
        self.jobs = jobs  # None: one process per idle core for large files (see logread.auto_jobs)
        self.progress = progress  # called with (input index, bytes read so far) after each chunk
        self._known_fields = None
        self._near_cache: dict = {}
        self.typed = typed  # read well-formed receipts with the typed decoder (records.py); False: orjson dicts only
        self._collator_reject_bit = m.kinds["RejectedByCollator"].bit
        self._kwargs = dict(profile=self.profile, lifetime_s=self.lifetime_s, horizon_s=self.horizon_s, roles=roles,
                            max_examples=max_examples, idle_receipts=idle_receipts, validator_set=validator_set,
                            typed=typed, partition_idle_receipts=partition_idle_receipts)

    def __getstate__(self) -> dict:
        """A share's state travels between processes (see :class:`sharded.RempShards`) without
        the compiled model, which is rebuilt from the profile, or the progress callback."""
        state = dict(self.__dict__)
        state["model"] = None
        state["progress"] = None
        state.pop("hooks", None)  # (bound to this checker: built again where the state arrives)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.model = model_for(self.profile)
        if "_rep" in state:  # a share that has begun: its handlers, bound to it
            self.hooks = Hooks(self)

    # ------------------------------------------------------------------------------------------
    def run(self, inputs: list[str]) -> Report:
        """Check ``inputs`` (paths, or ``-`` for stdin) in one pass and return the report."""
        jobs = auto_jobs(inputs) if self.jobs is None else self.jobs
        if jobs > 1 and "-" not in inputs:
            from rmkit.conformance.remp import parallel  # (and numpy, which one process does without)

            return parallel.run_parallel(type(self), self._kwargs, inputs, jobs, progress=self.progress)
        with paused_collections():  # one pause from the first receipt to the report (see rmkit.gctune)
            self.begin(inputs)
            for idx, path in enumerate(inputs):
                self._run_file(idx, path)
            return self.finish(self.end_clock([self.end_mark], [self.top_mark]))

    @property
    def top_mark(self) -> tuple | None:
        """(time, ref, source) of the latest receipt seen (the source: the message id when the
        receipt names none), which the final clock of a sharded run is reconciled from."""
        c = self.clock
        return (c.top, c.top_ref, c.top_who) if c.top is not None else None

    @property
    def end_mark(self) -> int | None:
        """This run's clock as the log's end is judged by it (:meth:`end_clock`): the two-source
        time. Where Kafka partitions held the running clock back (:func:`rmkit.logclock.slowest_partition`),
        the hold ends with the log: every partition has delivered all it will."""
        return self.clock.final()

    def end_clock(self, clocks: list, tops: list) -> int | None:
        return final_clock(clocks, tops, self.clock_jump_ms)

    def begin(self, inputs: list[str], partition: tuple[int, int] | None = None, shared: bool = False) -> None:
        """Reset for a run. With ``partition=(k, n)`` only the messages whose id falls into
        share k of n are checked (see :mod:`rmkit.conformance.remp.parallel`); ``shared``: the
        caller feeds one share's records (:meth:`feed`) and merges the shares."""
        self._started = time.perf_counter()
        self.partition = partition
        self._rep = Report(protocol="remp", profile=self.profile, inputs=list(inputs),
                           rules=dict(self.modes), shown_per_rule=self.max_examples, input_rule="REMP-INPUT-001")
        if not self.keyed:
            why = ("the --validators file lists source ids only, no public keys" if self.validator_set is not None
                   else "no --validators file") + ": give one with the validators' and full nodes' public keys"
            self._rep.not_checked = {r.id: why for r in self.model.rules
                                     if "validator_keys" in r.requires and self.modes[r.id] != OFF}
        if self.validator_set is None or not self.validator_set.timed:
            why = ("the --validators file gives no session start times (start_ms)" if self.validator_set is not None
                   else "no --validators file") + ": give one whose sessions carry start_ms"
            self._rep.not_checked.update({r.id: why for r in self.model.rules
                                          if "session_starts" in r.requires and self.modes[r.id] != OFF})
        # REMP-TIME-002 is reported once per source: source -> (ref, message, explanation, kind) of
        # its first finding, which the merge of a sharded run keeps for the earliest share's only
        self.seconds_first: dict = {}
        self.sig_counts: Counter[str] = Counter()
        self._files = list(inputs)
        self._stored: Counter[str] = Counter()
        self._msgs: dict[str, MessageState] = {}
        self._order: deque[str] = deque()
        self._tombs: dict[str, Tomb] = {}
        self._tomb_order: deque[tuple[int, str]] = deque()
        self._roles: dict[str, tuple[str, int, str]] = {}  # inferred source -> (role, ref, message)
        self._src_names: dict[str, str] = {}
        # the log's clock (rmkit.logclock: the latest time two sources reached, held back to the
        # slowest Kafka partition still delivering), a writer being the source id (the message id
        # for a receipt that names none); hwm: its time, as the judging reads it
        self.clock = RecordClock(self.partition_idle_receipts)
        self.hwm: int | None = None
        self.min_t: int | None = None
        self.seq = 0
        self.kind_counts: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.not_judged = 0
        self.untimed_live = self.untimed_expiry = 0  # messages the time rules could not judge
        self.no_time = 0
        self.redelivered = 0
        self.late = 0
        self.messages = 0
        self.peak_open = 0
        self.kafka_tombstones = 0
        self._next_sweep_t = 0
        self._own_top: tuple | None = None  # (ref, message, kind) of this run's latest receipt by time
        self.lat = {name: LatencyHistogram() for name in self.model.latency}
        self._outcome_of: dict[tuple, tuple] = {}  # (kinds seen, queued validators' positions) -> outcome
        self.per_source: dict[str, list] = {}  # source -> SourceFigures fields (see _source_figures)
        # a share of a sharded run holds back messages whose sources' roles it has not seen
        self._deferring = partition is not None or shared
        self._deferred: list[tuple] = []
        self._first_roles: dict[str, tuple] | None = None
        self._before = 1 << 62
        self._envelopes = False  # the typed decoder reads Kafka records (the log is a Kafka dump)
        # a share's clock also takes the other shares' records (clocktrack.py: queued on it in log
        # order, taken before each own record that follows them)
        self.others_seen = 0  # those applied (counted in seq, the log's record number, not in this share's records)
        self.hooks = Hooks(self)  # the rules' handlers, bound to this run

    def finish(self, end_hwm: int | None, latest_ref: int | None = None) -> Report:
        """Judge the messages still open against the log's final clock and complete the report.
        ``latest_ref``: in a share, the log's latest receipt (:func:`latest_receipt`), the only
        one that can be the log's clock outlier."""
        if end_hwm is not None and (self.hwm is None or end_hwm > self.hwm):
            self.hwm = end_hwm
        c, own = self.clock, self._own_top
        if c.top is not None and self.hwm is not None and c.top - self.hwm > self.clock_jump_ms \
                and (latest_ref is None or c.top_ref == latest_ref) and own is not None and own[0] == c.top_ref:
            self.hooks.clock_outlier((c.top, c.top_ref, own[1], own[2], c.top_who), self.hwm)
        with paused_collections():  # judging holds no cycles either; a collection here would walk every tomb
            for mid in list(self._order):
                msg = self._msgs.pop(mid, None)
                if msg is not None:
                    self._close(msg, at_end=True)
        self._order.clear()
        self._tombs.clear()  # no receipt comes after the end: the judged messages' tombs are done with
        self._tomb_order.clear()
        rep = self._rep
        rep.subjects = self.messages
        for rule, n in (("REMP-LIVE-001", self.untimed_live), ("REMP-EXPIRY-001", self.untimed_expiry)):
            if self.modes[rule] != OFF:
                rep.add_not_judged(rule, n, NO_TIME)
        rep.violations.sort(key=violation_order)
        rep.metrics = self._metrics(time.perf_counter() - self._started)
        rep.decide()
        return rep

    # ------------------------------------------------------------------------------------------
    def _violate(self, rule: str, mid: str | None, explanation: str, refs: list[tuple]) -> None:
        mode = self.modes[rule]
        if mode == OFF:
            return
        rep = self._rep
        rep.count(rule, mode)
        if self.max_examples and self._stored[rule] >= self.max_examples:
            return
        self._stored[rule] += 1
        by_ref: dict[int, tuple] = {}
        for ref, kind, src in refs:  # one entry per receipt, the most informative one
            if ref not in by_ref or (kind and not by_ref[ref][0]):
                by_ref[ref] = (kind, src)
        ev = [Evidence(ref & LINE_MASK, kind, src, self._files[ref >> LINE_BITS]) for ref, (kind, src) in by_ref.items()]
        rep.violations.append(Violation(rule, self.model.rules[rule].severity, mode, mid, explanation, ev))

    def _problem(self, ref: int, error: str, field: str | None = None) -> None:
        """A line that cannot be read as a receipt (the unreadable-line rule's handler reports it)."""
        self.hooks.unreadable(ref, error, field)

    def _input_problem(self, ref: int, error: str, field: str | None) -> InputProblem:
        return InputProblem(self._files[ref >> LINE_BITS], ref & LINE_MASK, error, field)

    def _read_error(self, idx: int, lineno: int, error: str) -> None:
        """An input that broke off (truncated gzip...): one problem, reported by one share only."""
        if not self.partition or self.partition[0] == 0:
            self._problem(idx << LINE_BITS | lineno, error)

    @property
    def known_fields(self) -> frozenset:
        """Every field name a receipt of any kind may carry in the spec."""
        if self._known_fields is None:
            names = {"kind", "signature", "timestamp", "message_id", "source_id"}
            for ki in self.model.kinds.values():
                names.update(fc.name for fc in ki.fields)
            self._known_fields = frozenset(names)
        return self._known_fields

    def _near_fields(self, obj: dict) -> list[str]:
        """Fields a receipt carries that the spec does not know but that are close to a known one
        (``signatre``): most likely a misspelling, which would hide the field. Other unknown fields
        are an implementation's own and pass."""
        out = []
        for key in obj.keys() - self.known_fields:
            near = self._near_cache.get(key, False)
            if near is False:
                near = difflib.get_close_matches(key, sorted(self.known_fields), n=1, cutoff=0.8) if isinstance(key, str) else []
                near = self._near_cache[key] = near[0] if near else None
                if len(self._near_cache) > 10_000:
                    self._near_cache.clear()
            if near is not None:
                out.append(f"{key}: unknown field; did you mean {near!r}?")
        return sorted(out)

    def _kind_hint(self, kind: Any) -> str:
        if not isinstance(kind, str):
            return f"expected a string naming a receipt kind, found {type(kind).__name__} {kind!r}"
        if kind in self.model.seed_names:
            return f"unknown kind {kind!r}: the documents call it so, but receipts name it {self.model.seed_names[kind]!r}"
        near = difflib.get_close_matches(kind, list(self.model.kinds), n=1, cutoff=0.75)
        if not near:
            low = {k.lower(): k for k in self.model.kinds}
            near = [low[kind.lower()]] if kind.lower() in low else []
        hint = f"; did you mean {near[0]!r}?" if near else f"; expected one of {', '.join(self.model.kinds)}"
        return f"unknown kind {kind!r}{hint}"

    # ------------------------------------------------------------------------------------------
    def _run_file(self, idx: int, path: str) -> None:
        self.feed(self._file_batches(idx, path))

    def _file_batches(self, idx: int, path: str):
        """The lines of one input as (refs, lines) batches for :meth:`feed`."""
        return numbered_batches(idx, path, on_error=lambda n, why: self._read_error(idx, n, why), progress=self.progress,
                                terminated=True)

    def feed(self, batches) -> None:
        """Check records in log order: ``batches`` yields (refs, lines), each ref the record's
        input index << LINE_BITS | its line number, each line the raw record (bytes or str; a
        line of bytes may end with its newline, as a file's are read, which is JSON's whitespace). A
        file's lines come from :meth:`_run_file`; a distributed job hands over the records of
        some messages (all of each one's, in log order) and merges the shares as ``--jobs`` does."""
        with paused_collections():  # the open messages' state holds no cycles (see rmkit.gctune)
            self._feed(batches)

    @cython.locals(log_clock=Clock, msg=MessageT, st=SourceT, entry=BlockT, fin=FinalT, tomb=TombT,
                   act=cython.int, h=cython.longlong, one=cython.ulonglong, bit=cython.ulonglong, bits=cython.ulonglong)
    def _feed(self, batches) -> None:
        m = self.model
        kinds = m.kinds
        modes = self.modes
        msgs = self._msgs
        hash_ok = m.hash_check
        sig_ok = m.signature_check
        declared = self.declared_roles
        inferred = self._roles
        hooks = self.hooks  # the rules' handlers, by the event they listen to (handlers.py)
        on_schema, on_kind2, on_zero_time, on_seconds = hooks.schema, hooks.kind_outside_table, hooks.zero_time, hooks.seconds
        on_sig_format, on_role_breach, on_transition_breach = hooks.signature_format, hooks.role_breach, hooks.transition_breach
        on_timeout = hooks.timeout_by_session if self._timeout_by_session else hooks.timeout
        on_first_inclusion = hooks.first_inclusion_by_session if self._obsolete_by_session else hooks.first_inclusion
        on_replay = hooks.replay
        per_kind: dict[str, int] = {}
        loads = orjson.loads
        JSONDecodeError = orjson.JSONDecodeError
        check_schema = modes["REMP-SCHEMA-001"] != OFF
        sec_lo, sec_hi = m.seconds_range
        check_key = modes["REMP-INPUT-002"] != OFF
        check_sig = modes["REMP-SIG-001"] != OFF
        track_blocks = modes["REMP-REPLAY-004"] != OFF or modes["REMP-REPLAY-005"] != OFF or modes["REMP-COLL-004"] != OFF
        verify = hooks.signature if self.keyed else None
        expiry_ms = self.expiry_ms
        close_after_ms = self.close_after_ms
        hwm = self.hwm
        clock = hwm if hwm is not None else -NEVER  # hwm as a number (before any time: below every close_t)
        good_src: dict[str, str] = {}  # source ids found good -> as compared (case-folded when the profile folds)
        part_k, part_n = self.partition or (0, 0)
        seq = self.seq
        own_top = self._own_top
        min_t = self.min_t if self.min_t is not None else 1 << 62
        queued_mask = m.queued_mask
        known_fields = self.known_fields
        receipt_fields = frozenset(["kind", *m.spec["kinds"]["common_fields"]])  # what makes an object a receipt at all
        fold = m.ids_fold_case
        intern_src = self._src_names.setdefault
        sweep_mask = SWEEP_EVERY - 1
        folded_blocks: dict[str, str] = {}  # block ids seen -> as compared (case-folded)
        fold_block = folded_blocks.get
        one = 1  # (a C unsigned 64-bit number compiled: the seen filter's bits)
        rep = self._rep
        # the typed decoder (records.py); signatures are verified on the receipt as a dict
        # (a receipt of master block fields without the master block's file hash is not typed: read in general)
        typed = None if self.keyed or not self.typed else m.typed_decoder()
        kind_info = typed.kind_of.get if typed is not None else None
        act_of_type = {cls: KIND_ACTS.get(ki.name, 0) for cls, ki in typed.kind_of.items()} if typed is not None else {}
        act_of_type[type(None)] = 0  # (a line the typed reading left: its act is found when it is read in general)
        sig_every = sig_ok.every
        plain_src: set[str] = set()  # source ids found good and already as compared (folded), see src_plain
        src_plain = ts_plain = sig_plain = False
        envelopes = self._envelopes  # the last piece was typed as Kafka records
        if part_n:  # keep this share's lines, a batch at a time (shares.py)
            from rmkit.conformance.remp.shares import own_lines

            batches = (own_lines(refs, batch, part_k, part_n) for refs, batch in batches)
        batches = self._own_batches(batches)
        next_other_ref = self._next_other
        log_clock = self.clock  # the log's clock takes a record's time (rmkit.logclock)
        others_taken = 0  # the other shares' records taken here (added to others_seen at the end)
        for refs, batch in _pieces(batches) if typed is not None else batches:
            next_other = next_other_ref()  # the next other share's record to take the time of
            if typed is not None:  # the well-formed receipts of known kinds, typed (records.py); None for the others
                # receipts, or Kafka records holding them: a piece is read as the last one was,
                # and as the other when that types more of its lines (a log is one or the other)
                recs = None
                if envelopes:
                    recs, refused = typed.decode_records(batch)
                    if refused > len(batch) >> 1:
                        objs, refused_plain = typed.decode_lines(batch)
                        if refused_plain < refused:
                            recs, refused, envelopes = None, refused_plain, False
                else:
                    objs, refused = typed.decode_lines(batch)
                    if refused > len(batch) >> 1:
                        recs, refused_recs = typed.decode_records(batch)
                        if refused_recs < refused:
                            refused, envelopes = refused_recs, True
                        else:
                            recs = None
                if recs is not None:
                    objs = [r.value if r is not None else None for r in recs]
                    # a redelivered record is known by its receipt (kind and fields), whatever the envelope says
                    hashes = [hash((type(r.value), astuple(r.value))) if r is not None else line_hashes([line])[0] for r, line in zip(recs, batch)]
                else:
                    recs = repeat(None)
                    hashes = line_hashes(batch)
                types = list(map(type, objs))
                infos, acts = list(map(kind_info, types)), list(map(act_of_type.get, types))
                if not refused and objs:
                    # What every receipt of a wholly typed piece may show alike is settled for the
                    # piece at once; each flag says that the per-receipt test below would pass for
                    # every receipt of it, which is then not run: a source id found good before and
                    # as compared, a timestamp that reads as milliseconds (so >= 0, not 0, not
                    # seconds), a signature there and well-formed (the format's own check, at once).
                    src_plain = plain_src.issuperset(map(_SOURCE, objs))
                    try:
                        ts_plain = min(map(_TIMESTAMP, objs)) >= sec_hi
                    except TypeError:  # a receipt without one
                        ts_plain = False
                    sigs = list(map(_SIGNATURE, objs))
                    sig_plain = check_sig and all(sigs) and sig_every(sigs)  # (all: none missing, none empty)
                else:
                    src_plain = ts_plain = sig_plain = False
            else:
                objs = infos = recs = repeat(None)
                acts = repeat(0)
                hashes = line_hashes(batch)
            # each line's hash, by which a redelivered (identical) receipt is known: one C loop per piece
            for ref, line, obj, ki, act, h, rec in zip(refs, batch, objs, infos, acts, hashes, recs):
                if ref > next_other:  # (a share: the clock takes the other shares' records before this one)
                    why = log_clock.take_queued(ref, seq, self._next_sweep_t, SWEEP_EVERY)
                    seq, next_other = log_clock.q_seq, log_clock.q_next
                    others_taken += log_clock.q_taken
                    hwm = self.hwm = log_clock.now
                    if why:  # a sweep is due (now and then): judged, and the rest taken
                        self.seq = seq
                        self._clock_passed(why)
                        next_other = self._clock_others(ref)
                        seq, hwm = self.seq, self.hwm
                    clock = hwm if hwm is not None else -NEVER
                    if next_other is None:
                        next_other = NO_REF
                kts = part = None
                text = line
                near = None
                if obj is not None:
                    if rec is not None:  # a typed Kafka record (records.py): its time, partition and key
                        kts = rec.timestamp
                        part = rec.partition
                        part = (rec.topic, part) if type(part) is int else None
                        if check_key and rec.key != obj.message_id:
                            hooks.kafka_key(rec.key, obj.message_id, ki.name, obj.source_id, ref)
                    seq += 1
                    kind = ki.name
                    mid = obj.message_id
                    src = obj.source_id
                    ts = obj.timestamp
                    sig = obj.signature
                    block = obj.block_id if ki.has_block else None
                    validate = ki.validate_typed
                else:
                    if line[-1:] == NEWLINE:  # (a line read with its newline: the record is what precedes it)
                        line = line[:-1]
                    try:
                        obj = loads(line)
                    except JSONDecodeError as exc:
                        if line.strip():
                            self._problem(ref, f"not JSON: {exc}")
                        continue
                    if type(obj) is not dict:
                        self._problem(ref, f"expected a JSON object, found {type(obj).__name__}")
                        continue
                    if kafka_value_field(obj) is not None:  # a Kafka record or kcat -J envelope
                        rec = obj
                        obj, kts, text, err, fld = unwrap_kafka(obj)
                        part = rec.get("partition")
                        part = (rec.get("topic"), part) if type(part) is int else None
                        if err:
                            self._problem(ref, err, fld)
                            continue
                        if obj is None:  # a Kafka tombstone (null value): a deletion marker, not a receipt
                            self.kafka_tombstones += 1
                            continue
                        h = hash(text)  # (a redelivery is known by the receipt's own text, which the record holds)
                        if kts is None and (damaged := kafka_time_problem(rec)):
                            self._problem(ref, damaged, kafka_time_field(rec))  # and the receipt is checked
                        if check_key and "key" in rec:
                            hooks.kafka_key(rec["key"], obj.get("message_id"), obj.get("kind"), obj.get("source_id"), ref)
                    if obj.keys().isdisjoint(receipt_fields):  # no field any receipt has: another kind of log, not a receipt
                        fields = ", ".join(sorted(map(str, obj))[:6]) or "none"
                        self._problem(ref, f"expected a REMP receipt (fields {', '.join(sorted(receipt_fields))}), "
                                           f"found an object with fields {fields} (another protocol's log? give --protocol)"[:300])
                        continue
                    if "mc_block_id" in obj and "mc_block_file_hash" not in obj:  # rare: the seed's repeated block_file_hash
                        from rmkit.protocols.remp.tlreceipt import recover_master_file_hash  # (the TL tables load on demand)

                        obj = recover_master_file_hash(obj, text)
                    seq += 1
                    kind = obj.get("kind")
                    mid = obj.get("message_id")
                    src = obj.get("source_id")
                    ts = obj.get("timestamp")
                    sig = obj.get("signature")
                    block = obj.get("block_id")
                    ki = kinds.get(kind) if type(kind) is str else None
                    validate = ki.validate if ki is not None else None
                    act = KIND_ACTS.get(kind, 0) if ki is not None else 0
                    if not obj.keys() <= known_fields:
                        near = self._near_fields(obj) or None
                bad = None
                if src_plain:
                    src = good_src[src]  # (found good before, as compared: its one string, which the state keeps)
                elif type(src) is str:
                    folded = good_src.get(src)  # a source id found good before: its folded form
                    if folded is not None:
                        src = folded
                    else:
                        folded = src.lower() if fold else src
                        if hash_ok(src):
                            if len(good_src) < 100_000:
                                good_src[src] = folded  # (the one string of this source that the state keeps)
                                if folded == src:
                                    plain_src.add(src)
                        else:
                            bad = [f"source_id: expected {m.hash_expected}, found {src!r}"]
                        src = folded
                else:
                    bad = [f"source_id: expected {m.hash_expected}, found {'nothing' if src is None else repr(src)}"]
                    src = None
                if ts_plain:
                    t = ts  # (milliseconds, so >= 0 and not 0)
                else:
                    ts_ok = type(ts) is int and ts >= 0
                    if ts_ok and ts < sec_hi and ts >= sec_lo:  # (milliseconds fail the first test)
                        on_seconds(ts, kind, mid, src, ref)
                    if not ts_ok:
                        (bad := bad or []).append(f"timestamp: expected an integer >= 0 (unix ms), found {'nothing' if ts is None else repr(ts)}")
                        ts = 0
                    t = ts or kts
                if t is not None:
                    if t > clock or part is not None:  # (a record whose time passes no clock, of no partition, moves nothing)
                        moved = log_clock.advance(t, src if src is not None else mid, part, seq, ref)
                        if moved:
                            if moved & TOP:
                                own_top = (ref, mid, kind)
                            if moved & MOVED:
                                hwm = clock = self.hwm = log_clock.now
                                if hwm >= self._next_sweep_t:  # the clock moved on: judge what is due
                                    self.seq = seq
                                    self._sweep()
                                    self._next_sweep_t = hwm + 1000
                    if t < min_t:
                        min_t = t
                else:
                    self.no_time += 1
                if not seq & sweep_mask:  # for logs whose receipts carry no time (every record counts, a share's others too)
                    self.seq = seq
                    self._sweep()
                if validate is not None:
                    problems = validate(obj)
                    if problems:
                        bad = (bad or []) + problems
                if near is not None:
                    bad = (bad or []) + near
                # ---- the message this receipt belongs to ----------------------------------
                if type(mid) is str:
                    msg = msgs.get(mid)  # keys are folded ids: an id already folded is found at once
                    if msg is None and fold:
                        mid = mid.lower()
                        msg = msgs.get(mid)
                else:
                    msg = None
                if msg is not None and clock > msg.close_t:
                    # the clock passed its close point after the last sweep: closed now, as a sweep would
                    # have closed it, so that a message closes by the clock alone (one process, a share)
                    del msgs[mid]
                    self._close(msg, at_end=False)
                    msg = None
                if act & _START and msg is not None and t is not None and msg.first_t is not None \
                        and t - msg.first_t > expiry_ms:
                    # submitted again after its lifetime: a new life of the same message id
                    del msgs[mid]
                    self._close(msg, at_end=False)
                    msg = None
                if msg is None:
                    if type(mid) is not str or not hash_ok(mid):
                        (bad := bad or []).append(f"message_id: expected {m.hash_expected}, found {'nothing' if mid is None else repr(mid)}")
                        if type(mid) is not str:
                            if check_schema:
                                hooks.no_message(kind, bad, ref, src)
                            continue
                    # a message not open: judged already (a late receipt), or new
                    tomb = self._tombs.get(mid)
                    if tomb is not None:
                        if not (t is not None and act & _START and tomb.first_t is not None and t - tomb.first_t > expiry_ms):
                            self.late += 1
                            if ki is not None:
                                self._late_receipt(tomb, ki, obj, ref, t, src)
                                if verify is not None and type(src) is str:
                                    # a late receipt is still a signed statement: its origin is checked
                                    sig_fmt = hooks.late_signature_format(sig, mid, kind, src, ref)
                                    role = (declared.get(src) or declared.get(src.lower())) if declared is not None else None
                                    verify(obj, src, role, ki.issuers, t, ref, kind, mid, sig_fmt, bad)
                            continue
                        del self._tombs[mid]  # submitted again after its lifetime: a new life
                    msg = msgs[mid] = MessageState(mid, ref, t, seq, close_after_ms)
                    self._order.append(mid)
                    self.messages += 1
                    if len(msgs) > self.peak_open:
                        self.peak_open = len(msgs)
                else:
                    if msg.first_t is None and t is not None:
                        msg.first_t = t
                        msg.close_t = t + close_after_ms
                    if hwm is None or msg.first_t is None:
                        msg.last_seq = seq  # read by the sweep only while the message or the log has no time
                bit = one << (h & 63)
                bits = msg.seen_bits
                if bits & bit and _holds(msg.seen, h):
                    self.redelivered += 1
                    continue
                msg.seen_bits = bits | bit
                _remember(msg.seen, h)
                if bad and check_schema:
                    on_schema(mid, kind, bad, ref, src)
                if ki is None:
                    hooks.unknown_kind(mid, kind, ref, src)
                    continue
                per_kind[kind] = per_kind.get(kind, 0) + 1  # a plain dict, added to the Counter after the batches
                msg.kmask |= ki.bit
                if not ki.in_table:
                    on_kind2(mid, kind, ref, src)
                # ---- role of the source ---------------------------------------------------------
                issuers = ki.issuers
                role = None
                if src is not None:
                    st = msg.srcs.get(src)
                    if declared is not None:
                        role = declared.get(src) or declared.get(src.lower())
                        if role is None:
                            if st is None:  # once per source and message
                                hooks.unknown_source(mid, kind, src, ref)
                            role = next(iter(issuers)) if len(issuers) == 1 else VALIDATOR
                        elif role not in issuers:
                            on_role_breach(mid, kind, issuers, src, role, ref, None)
                            role = None  # no transition for a receipt its source may not issue
                    else:
                        known = inferred.get(src)
                        if known is None:
                            if len(issuers) == 1:
                                role = next(iter(issuers))
                                inferred[src] = (role, ref, mid)
                            else:
                                role = st.role if st else VALIDATOR
                        else:
                            role = known[0]
                            if role not in issuers:
                                on_role_breach(mid, kind, issuers, src, role, ref, known[1])
                                role = None  # no transition for a receipt its source may not issue
                    # ---- time and signature ------------------------------------------------------
                    if ts == 0 and ts_ok:
                        on_zero_time(mid, kind, role, issuers, src, ref)
                    # the signature's format: True good, False bad, None not looked at (or missing)
                    if check_sig:
                        sig_fmt = True if sig_plain else on_sig_format(sig, mid, kind, role, issuers, src, ref)  # (plain: there, well-formed)
                    else:
                        sig_fmt = None
                    if verify is not None:
                        verify(obj, src, role, issuers, t, ref, kind, mid, sig_fmt, bad)
                    # ---- per-source transition ---------------------------------------------------
                    trans = ki.log_transitions.get(role) if role is not None else None
                    if trans is not None:
                        if st is None:
                            src = intern_src(src, src)  # one string per source, not one per message
                            st = msg.srcs[src] = SourceState(role, ref, kind, t)
                        to, allowed = trans
                        if st.pos not in allowed:
                            on_transition_breach(mid, kind, role, src, st, allowed, ref)
                        st.role = role
                        st.pos = to
                        st.last_ref = ref
                        st.last_kind = kind
                        st.receipts += 1
                        if st.queued is None and ki.bit & queued_mask:
                            st.queued = True  # a flag, not the ref: no int kept alive per source
                # ---- per-message rules ----------------------------------------------------------
                if not act & _PER_MESSAGE:
                    pass
                elif act & _PUT:
                    if msg.put_t is None and t:
                        msg.put_t = t
                elif act & _SENT:
                    if msg.sent_t is None:
                        msg.sent_t = t
                    n, total = obj.get("sent_to"), obj.get("total_validators")
                    if type(n) is int and type(total) is int and total > 0:
                        if msg.total is None:
                            msg.total = total
                        hooks.sent(mid, n, total, ref, kind, src)
                elif act & _FN_REJECT:
                    if msg.fn_rej is None:
                        msg.fn_rej = (ref, src)
                else:  # (_TIMEOUT)
                    on_timeout(msg, ref, t, src)
                if act & _USES_BLOCK:  # (another kind's block, when it names one, is not used)
                    if ki.has_block and type(block) is str:
                        if fold:
                            folded = fold_block(block)  # one string per block: shared by its messages' state
                            if folded is None:
                                folded = block.lower()
                                if len(folded_blocks) < 100_000:
                                    folded_blocks[block] = folded
                            block = folded
                        if act & _INCLUSION:
                            # the block's state; the rules a first inclusion, a collator and an
                            # inclusion after the Finalized decide
                            blocks = msg.blocks
                            if blocks is None:
                                blocks = msg.blocks = {}
                            entry = blocks.get(block)
                            if entry is None:
                                entry = blocks[block] = BlockState(t)
                                first = True
                            else:
                                first = False
                            if act & _COLLATED:
                                if src is not None:
                                    if entry.collator is None:
                                        entry.collator, entry.collator_ref = src, ref
                                    elif entry.collator != src:
                                        hooks.second_collator(msg, entry, block, ref, src)
                            else:
                                entry.accepted = True
                            if first:
                                on_first_inclusion(msg, kind, block, ref, t, src)
                            if msg.fin is not None:
                                on_replay(mid, msg.fin, kind, block, ref, t, src)
                        elif act & _FINAL:
                            msg.fin_count += 1
                            fin = msg.fin
                            if fin is None:
                                msg.fin = Final(block, ref, t, src)
                            elif block != fin.block:
                                on_replay(mid, fin, kind, block, ref, t, src)
                            else:
                                hooks.finalized_again(msg, ref, src)
                    if track_blocks and t is not None and act & _BLOCK_EVENT:
                        # a timed inclusion (block named) or masterchain release (block optional) for
                        # REMP-REPLAY-004/005, judged when the message closes (receipts' times decide)
                        if type(block) is not str:
                            block = None
                        elif fold and not ki.has_block:  # (a block of ki.has_block is folded above)
                            block = block.lower()
                        if block is not None or not act & _INCLUSION:
                            if msg.blk is None:
                                msg.blk = [kind, block, t, ref, src]
                            else:
                                msg.blk.extend((kind, block, t, ref, src))

        self.seq = seq
        self.others_seen += others_taken
        self._envelopes = envelopes
        self._own_top = own_top
        if self.clock.next_queued() is not None:  # the other shares' records after this share's last one
            self._clock_others(NO_REF)
        rep.records = self.seq - self.others_seen
        self.kind_counts.update(per_kind)
        self.min_t = min_t if min_t != 1 << 62 else None

    def _own_batches(self, batches):
        """The (refs, lines) of ``batches``; a batch of a share may carry a third part, the clock
        events of the other shares' lines up to its end (clocktrack.py: a block of them), queued
        on the clock for :meth:`_clock_others`."""
        queue = self.clock.queue
        for batch in batches:
            if len(batch) > 2:
                queue(*batch[2])
                yield batch[0], batch[1]
            else:
                yield batch

    def _next_other(self) -> int:
        """The reference of the next other share's record whose time the clock has not taken."""
        ref = self.clock.next_queued()
        return NO_REF if ref is None else ref

    def _clock_others(self, before: int):
        """The clock takes the times of the other shares' records before reference ``before``, in
        log order, as the feed loop takes its own records' (the same clock, stepped by the same
        rule: a share's clock is then the log's at each of its records), and what it passes is
        judged when one process would judge it. Returns the reference of the next (None: none known)."""
        clock = self.clock
        while True:
            seq, why, taken, after = clock.advance_queued(before, self.seq, self._next_sweep_t, SWEEP_EVERY)
            self.others_seen += taken
            self.hwm, self.seq = clock.now, seq
            if not why:
                return after
            self._clock_passed(why)

    def _clock_passed(self, why: int) -> None:
        """What is due after another share's record (:meth:`RecordClock.advance_queued` says why it
        stopped): a sweep when the clock moved on, and every SWEEP_EVERY records."""
        if why & PASSED:  # the clock moved on: judge what is due
            self._sweep()
            self._next_sweep_t = self.hwm + 1000
        if why & COUNTED:  # (for logs whose receipts carry no time: every record counts, the others' too)
            self._sweep()

    # ------------------------------------------------------------------------------------------
    def _final_role(self, src: str, seen: str) -> str:
        """A source's role for the report: declared, else inferred, else the one it first acted in."""
        if self.declared_roles is not None and src in self.declared_roles:
            return self.declared_roles[src]
        known = self._roles.get(src)
        return known[0] if known is not None else seen

    def _role_of(self, src: str, st: SourceState) -> str:
        """The role a source plays, as known at the end: declared, else inferred from any message,
        else the one assumed when its receipt arrived."""
        if self.declared_roles is not None:
            role = self.declared_roles.get(src)
            if role is not None:
                return role
        known = self._roles.get(src)
        if known is None and self._first_roles:
            known = self._first_roles.get(src)
            if known is not None and known[1] > self._before:
                known = None
        return known[0] if known is not None else st.role

    def _late_receipt(self, tomb: Tomb, ki, obj: dict, ref: int, t, src) -> None:
        """A receipt for a message already judged: only the replay rules still apply."""
        fin = tomb.fin
        block = obj.get("block_id")
        if fin is not None and ki.has_block and type(block) is str:
            self.hooks.replay(tomb.id, fin, ki.name, block.lower() if self.model.ids_fold_case else block, ref, t, src)

    @cython.locals(msg=MessageT)
    def _sweep(self) -> None:
        order, msgs, hwm = self._order, self._msgs, self.hwm
        while order:
            msg = msgs.get(order[0])
            if msg is None:
                order.popleft()
                continue
            if msg.first_t is not None and hwm is not None:
                if hwm - msg.first_t <= self.close_after_ms:
                    break
            elif self.seq - msg.last_seq <= self.idle_receipts:
                break
            order.popleft()
            del msgs[msg.id]
            self._close(msg, at_end=False)
        tombs, torder = self._tombs, self._tomb_order
        while torder and hwm is not None and torder[0][0] < hwm:
            tombs.pop(torder.popleft()[1], None)

    # ------------------------------------------------------------------------------------------
    @cython.locals(msg=MessageT)
    def _close(self, msg: MessageState, at_end: bool) -> None:
        """Judge what can only be judged once a message's stream is complete, then forget it.
        In a share of a sharded run, a message with a source whose role the share has not seen yet
        is judged at the end, on the roles of the whole log (see :meth:`settle_roles`)."""
        if self._deferring and len(self._deferred) < MAX_DEFERRED and self._role_unseen(msg):
            self._deferred.append((msg, at_end, self.hwm))
        else:
            self._judge(msg, at_end, self.hwm)
        if self.hwm is not None and not at_end:  # late receipts of a judged message are recognised as such (none come after the end)
            self._tombs[msg.id] = Tomb(msg.fin, msg.first_t, msg.id)
            self._tomb_order.append((self.hwm + self.close_after_ms, msg.id))

    def _role_unseen(self, msg: MessageState) -> bool:
        declared, known = self.declared_roles, self._roles
        return any(s not in known and (declared is None or s not in declared) for s in msg.srcs)

    def settle_roles(self, first_roles: dict[str, tuple]) -> None:
        """A share's last step before :meth:`finish`: the roles every source first showed in the
        whole log (source -> (role, ref, message), earliest ref over all shares) stand in for the
        roles this share did not see; the messages held back for them are judged. A held-back
        message uses a role shown before its last receipt (``rmkit check`` judges it soon after),
        a message still open at the end any role shown in the log."""
        self._deferring = False
        self._first_roles = first_roles
        deferred, self._deferred = self._deferred, []
        for msg, at_end, hwm in deferred:
            self._before = max(st.last_ref for st in msg.srcs.values())
            self._judge(msg, at_end, hwm)
        self._before = 1 << 62

    @cython.locals(msg=MessageT, fin=FinalT)
    def _judge(self, msg: MessageState, at_end: bool, hwm: int | None) -> None:
        """Judge a message whose stream is complete: its outcome, and the rules a closed message
        decides (each by its handler, called when the message has what the rule looks at)."""
        m = self.model
        hooks = self.hooks
        if msg.blocks:
            untimed = msg.put_t is None and msg.first_t is None
            if not untimed:
                for entry in msg.blocks.values():
                    if entry.first_t is None:
                        untimed = True
                        break
            if untimed:
                self.untimed_expiry += 1  # an inclusion whose delay cannot be measured
        queued = self._source_figures(msg)
        key = (msg.kmask, tuple([st.pos for _, st in queued]))  # a few patterns recur over a log's messages
        got = self._outcome_of.get(key)
        if got is None:
            got = evaluate_outcome(m.outcomes, key[0], key[1])
            if len(self._outcome_of) < 10_000:
                self._outcome_of[key] = got
        outcome, final = got
        fin = msg.fin
        if msg.blk is not None:
            # REMP-REPLAY-004/005 need two blocks named by inclusions (msg.blocks holds every one),
            # REMP-COLL-004 a RejectedByCollator: most messages have neither, and skip both
            replays = msg.blocks is not None and len(msg.blocks) > 1
            collated = msg.total is not None and msg.kmask & self._collator_reject_bit
            if replays or collated:
                events = msg.block_events()
                if replays:
                    hooks.replay_before_final(msg, events)
                if collated:
                    hooks.collated_after_rejects(msg, events)
        if fin is not None:
            hooks.finalized_closed(msg, queued)
            if msg.fn_rej is not None:
                hooks.finalized_rejected(msg)
            hooks.finalized_block(msg)
            if msg.sent_t is not None and fin.t is not None:
                self._lat("finalized_ms", fin.t - msg.sent_t)
        if msg.fn_rej is not None:
            hooks.fullnode_rejected(msg)
        if msg.sent_t is not None and msg.put_t is not None:
            self._lat("queue_ack_ms", msg.put_t - msg.sent_t)
        if final:
            self.outcomes[outcome] += 1
        elif msg.first_t is None or hwm is None or (at_end and hwm - msg.first_t < self.horizon_ms):
            if msg.first_t is None or hwm is None:
                self.untimed_live += 1  # no time: not judged for want of it (the others: too near the end)
            self.not_judged += 1
            self.outcomes["not_judged:" + outcome] += 1
        else:
            self.outcomes["lost"] += 1
            hooks.lost(msg, outcome)

    @cython.locals(msg=MessageT, st=SourceT, hist=HistogramT)
    def _source_figures(self, msg: MessageState) -> list[tuple]:
        """The operator's per-source figures, per message closed: [role first seen, messages,
        receipts, messages it ended rejected, ended timed out, latency of its first receipt after
        the message's first]. Returns the validators that queued the message, (source, state)
        (found in the same pass over its sources)."""
        figures = self.per_source
        first_t = msg.first_t
        role_of = self._role_of
        # the role as _role_of finds it, at once where no roles were declared and the source's was inferred
        inferred = self._roles.get if self.declared_roles is None else None
        queued = []
        for src, st in msg.srcs.items():
            f = figures.get(src)
            if f is None:
                f = figures[src] = [st.role, 0, 0, 0, 0, LatencyHistogram()]
            f[1] += 1
            f[2] += st.receipts
            pos = st.pos
            if pos == "rejected":
                f[3] += 1
            elif pos == "timed_out":
                f[4] += 1
            if first_t is not None and (t := st.first_t) is not None:
                hist = f[5]
                hist.add(t - first_t)
            if st.queued is not None:
                known = inferred(src) if inferred is not None else None
                if (known[0] if known is not None else role_of(src, st)) == VALIDATOR:
                    queued.append((src, st))
        return queued

    @cython.locals(hist=HistogramT)
    def _lat(self, name: str, value: int) -> None:
        hist = self.lat.get(name)
        if hist is not None:
            hist.add(value)

    def _metrics(self, elapsed: float) -> dict[str, Any]:
        m = self.model
        lat = {}
        for name, spec in m.latency.items():
            lat[name] = latency_entry(spec, self.lat[name])
        roles = Counter(r for r, _, _ in self._roles.values())
        if self.declared_roles is not None:
            roles = Counter(self.declared_roles.values())
        return {
            "lifetime_s": self.lifetime_s,
            "horizon_s": self.horizon_s,
            "expiry_bound_s": self.expiry_ms / 1000,
            "receipts_per_kind": dict(self.kind_counts.most_common()),
            "outcomes": dict(self.outcomes.most_common()),
            "not_judged_for_liveness": self.not_judged,
            "redelivered_receipts": self.redelivered,
            "late_receipts": self.late,
            "peak_open_messages": self.peak_open,
            "kafka_tombstones": self.kafka_tombstones,
            "receipts_without_time": self.no_time,
            "log_time_span_s": round((self.hwm - self.min_t) / 1000, 3) if self.hwm is not None and self.min_t is not None else None,
            "sources": dict(roles),
            "per_source": per_source_metrics([self.per_source], self._final_role),
            "latency_ms": lat,
            **({"signatures": {k: self.sig_counts.get(k, 0) for k in SIG_COUNTS}} if self.keyed else {}),
            "elapsed_s": round(elapsed, 3),
            "receipts_per_s": round(self._rep.records / elapsed) if elapsed > 0 else None,
        }
