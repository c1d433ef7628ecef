# cython: annotation_typing=False
"""Step 1 of the Corda log check (:mod:`.checker`): one share's records read, per (node, id) a
:class:`.state.Track` kept and judged, and the facts across ids gathered for the merge. The rules'
judgements are the handlers' (:mod:`.handlers`); the exact reading is :class:`_ShareRun`, the
bounded one (:mod:`.stream`) builds on it."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter
from sys import intern

import msgspec
import orjson
from msgspec import UNSET

from rmkit.keystore import KeyStore
from rmkit.logread import BrokenLine
from rmkit.malloctune import release_freed_memory
from rmkit.protocol import REF_LINE_BITS
from rmkit.rules import OFF
from rmkit.verdict import InputProblem

from rmkit.conformance.corda.decode import TypedRecords
from rmkit.conformance.corda.facts import Facts
from rmkit.conformance.corda.handlers import Hooks
from rmkit.conformance.corda.packing import PackedTracks, packable
from rmkit.conformance.corda.state import Ack, Commit, Copy, NewAnswer, Track
from rmkit.protocols.corda.records import EVENT, ROW, record_format

try:
    import cython
except ImportError:  # not compiled, and Cython not installed
    from rmkit import _cython_shadow as cython

if cython.compiled:  # the state's C types (state.pxd): a track's and a copy's fields read as struct fields
    from cython.cimports.rmkit.conformance.corda.state import Commit as CommitT, Copy as CopyT, Track as TrackT
    # the key store's (rmkit/keystore.pxd): the probe every send, row and track opened makes is a C call
    from cython.cimports.rmkit.keystore import KeyStore as KeyStoreT
else:
    CommitT = CopyT = TrackT = KeyStoreT = None

LINE_MASK = (1 << REF_LINE_BITS) - 1
# Records read between two hand-backs of freed memory to the system (:func:`release_freed_memory`):
# the columns of the packed tracks and the key store grow by reallocation, each leaving the block it
# outgrew free in the heap, still counted in the process's memory until handed back.
TRIM_EVERY = 1 << 18


@dataclass
class Share:
    """What one share hands to :meth:`.checker.CordaLogChecker.merge` (picklable, compact)."""

    records: int = 0
    ids: int = 0
    seconds: float = 0.0   # spent checking this share
    unreadable: int = 0
    counts: Counter = field(default_factory=Counter)
    violations: list[tuple] = field(default_factory=list)  # (found at, Violation): the first max_examples per rule
    problems: list[InputProblem] = field(default_factory=list)
    events: Counter = field(default_factory=Counter)
    verdicts: Counter = field(default_factory=Counter)
    rows: int = 0
    event_nodes: set = field(default_factory=set)
    export_nodes: set = field(default_factory=set)
    # facts for the checks that span ids (kept as columns, :mod:`.facts`)
    commits: Facts = field(default_factory=lambda: Facts("issssii"))  # (ref, node, id, session, sender, seq, its first send's ref or None), first commit per node and id
    seqs: Facts = field(default_factory=lambda: Facts("sisi", 3))     # (sender, seq, id, ref): a received copy's number, where its id's send did not carry it
    sent_seqs: Facts = field(default_factory=lambda: Facts("isis"))   # (ref, sender, seq, id) of every send with a seq (each also a use of the number)
    renewed: list[tuple] = field(default_factory=list)     # (verdict ref, node, id, sender, seq, commit ref or None, row ref or None)
    pending: list[tuple] = field(default_factory=list)     # (needs "events"|"export", node, Violation)
    spanned: list = field(default_factory=list)   # findings across ids already judged (one process under a bound)
    # under a declared bound (stream.py): records that came after their message was judged; the most
    # tracks and ids open at once (per node engine, summed)
    late: int = 0
    peak_open: int = 0


_FIRST = attrgetter("first")


@cython.locals(c=CopyT)
def _copy_of(copies: list, delivery):
    """A track's latest copy of this delivery, or None (a redelivery may carry the broker's
    message-id again); here, where it is compiled with the handlers that call it (a settled
    message asks it once or twice)."""
    for c in reversed(copies):
        if c.delivery == delivery:
            return c
    return None


@cython.locals(c=CopyT)
def _last(copies: list, test):
    """A track's latest copy that passes ``test``, or None (a handler's generator expression would be
    a closure, which a compiled C method cannot hold)."""
    for c in reversed(copies):
        if test(c):
            return c
    return None


_UNANSWERED = lambda c: c.verdict is None  # noqa: E731 - the tests _last is given
_UNREAD_UNANSWERED = lambda c: c.unread and c.verdict is None  # noqa: E731
_NEW_UNCOMMITTED = lambda c: c.verdict == "NEW" and c.done != "committed"  # noqa: E731
_ANSWERED_UNCOMMITTED = lambda c: c.verdict is not None and c.done != "committed"  # noqa: E731
_COMMITTED = lambda c: c.done == "committed"  # noqa: E731
_UNCOMMITTED = lambda c: c.done != "committed"  # noqa: E731


@cython.locals(c=CommitT)
def _has_tx(commits, tx) -> bool:
    """Whether one of ``commits`` is of transaction ``tx``."""
    for c in commits:
        if c.tx == tx:
            return True
    return False


_NO_KIND = (None, None)


class _Unreadable(msgspec.Struct, gc=False):
    """A line that could not be read, in its place among a batch's records: the problem to report
    and, for an event that names its node and message, the line as read (see ``unread``)."""

    why: str
    field: str | None = None
    event: dict | None = None


# what a run holds, dropped when it hands its share back (:meth:`_ShareRun.release`): every field its
# __init__ sets but the two numbers (tests/corda/test_corda_compiled.py holds the two lists equal)
_RUN_STATE = ("c", "inputs", "modes", "spec", "fmt", "typed", "store", "packed", "out", "stored", "hooks",
              "tracks", "more_tracks", "ids", "sent", "unsent_commits", "received")


@cython.cclass
class _ShareRun:
    """Step 1 over the records of one share: per (node, id) a :class:`Track`, judged as records come
    and at the end; the judgements are the rule handlers' (:mod:`.handlers`, called through ``hooks``).

    Compiled, it is a C class: the state it reads per record is C fields rather than an instance
    dict, and the calls its handlers make of each other (``track``, ``new_id``, ``sent_of``, ...)
    are C calls. A subclass written in Python (the bounded run, :mod:`.stream`) still overrides any
    of them."""

    c = cython.declare(object, visibility="public")
    inputs = cython.declare(object, visibility="public")
    modes = cython.declare(object, visibility="public")
    spec = cython.declare(object, visibility="public")
    fmt = cython.declare(object, visibility="public")
    typed = cython.declare(object, visibility="public")
    store = cython.declare(KeyStoreT, visibility="public")
    packed = cython.declare(object, visibility="public")
    out = cython.declare(object, visibility="public")
    stored = cython.declare(object, visibility="public")
    hooks = cython.declare(object, visibility="public")
    phase = cython.declare(object, visibility="public")
    ref = cython.declare(object, visibility="public")
    tracks = cython.declare(dict, visibility="public")
    more_tracks = cython.declare(dict, visibility="public")
    ids = cython.declare(dict, visibility="public")
    sent = cython.declare(dict, visibility="public")
    unsent_commits = cython.declare(dict, visibility="public")
    received = cython.declare(set, visibility="public")

    def __init__(self, checker, inputs: list[str]):
        self.c = checker
        self.inputs = inputs
        self.modes = checker.modes
        self.spec = checker.spec
        self.fmt = record_format()
        self.typed = TypedRecords(self.fmt)
        # the ids the facts across ids name and those of the packed tracks, each once, by number
        self.store = store = KeyStore()
        self.packed = packed = PackedTracks(store)
        number = packed.number
        self.out = Share(commits=Facts("iskssii", keys=store, number_of=number),
                         seqs=Facts("siki", 3, keys=store, number_of=number),
                         sent_seqs=Facts("isik", keys=store, number_of=number))
        # the open tracks: by id (most ids are received by one node), and by (node, id) for the
        # tracks of an id on a node other than its first
        self.tracks: dict[str, Track] = {}
        self.more_tracks: dict[tuple[str, str], Track] = {}
        # the settled tracks, packed (:mod:`.packing`): an id whose track is there is in none of
        # ``tracks``, ``ids``, ``sent`` and ``received`` (its send and its reception are kept there)
        # every id of the share, to its one string (kept once, however many records name it), but
        # for the ids of the packed tracks
        self.ids: dict[str, str] = {}
        self.sent: dict[str, tuple] = {}   # id -> its first send (:meth:`sent_of`)
        self.unsent_commits: dict[str, list] = {}  # id -> its commit facts (indexes) made while its send was not yet read
        self.received: set[str] = set()    # ids some node received
        self.stored: Counter = Counter()
        # where a finding is made, in the order one process makes them: (0, line) while reading,
        # (1, a track's first line) at the share's end, (2, a send's line) for the sends never received
        self.phase, self.ref = 0, 0
        self.hooks = Hooks(self)

    # findings --------------------------------------------------------------------------------
    @cython.ccall
    def find(self, rule: str, mid: str, why: str, refs) -> None:
        mode = self.modes[rule]
        if mode == OFF:
            return
        out = self.out
        out.counts[rule] += 1
        if self.c.max_examples and self.stored[rule] >= self.c.max_examples:
            return
        self.stored[rule] += 1
        out.violations.append(((self.phase, self.ref), self.c.violation(self.inputs, rule, mid, why, refs)))

    @cython.ccall
    def find_if(self, need: str, node: str, rule: str, mid: str, why: str, refs) -> None:
        """A finding that holds only if the node's events (or export) were given at all: decided at the merge."""
        if self.modes[rule] != OFF:
            self.out.pending.append((need, node, self.c.violation(self.inputs, rule, mid, why, refs)))

    @cython.ccall
    def problem(self, ref: int, error: str, fld: str | None = None) -> None:
        out = self.out
        out.unreadable += 1
        if not self.c.max_examples or len(out.problems) < self.c.max_examples:
            out.problems.append(InputProblem(self.inputs[ref >> REF_LINE_BITS], ref & LINE_MASK, error, fld))

    # reading ---------------------------------------------------------------------------------
    def feed(self, batches) -> Share:
        """Every record of ``batches`` in log order, then the end of the share."""
        started = time.perf_counter()
        handlers = self.handlers()
        read, trim_at = 0, TRIM_EVERY
        for refs, recs in self.decoded(batches):
            for ref, r in zip(refs, recs):
                if r is not None:
                    self.ref = ref
                    handlers[type(r)](r, ref)
            read += len(recs)
            if read >= trim_at:
                trim_at += TRIM_EVERY
                release_freed_memory()
        self.finish()
        self.out.seconds = time.perf_counter() - started
        return self.release()

    def release(self) -> Share:
        """The share's result; the run forgets everything else. Its handlers (and, under a bound, its
        engines) refer back to it, and the collector is paused while a share is read
        (:func:`rmkit.gctune.paused_collections`): emptied, the tracks and facts it holds are freed
        by reference counting at once rather than by a later collection over all of them."""
        out = self.out
        for facts in (out.commits, out.seqs, out.sent_seqs):
            if type(facts) is Facts:
                facts.flush()
        self.store.forget_memos()  # (the facts keep the ids alone)
        for name in _RUN_STATE:
            setattr(self, name, None)
        own = getattr(self, "__dict__", None)  # (a subclass's state; all of it where nothing is compiled)
        if own is not None:
            own.clear()
        return out

    def handlers(self) -> dict:
        """The typed record's class -> its handler (``ev_<event>``, ``row``, ``unreadable``)."""
        out = {cls: getattr(self, "ev_" + ev) if ev else self.row for cls, (_, ev) in self.typed.kind.items()}
        out[_Unreadable] = self.unreadable
        return out

    def decoded(self, batches):
        """(refs, typed records) per batch (None for a blank line, an :class:`_Unreadable` in place of
        a line that could not be read); counts the records per kind and the nodes with events."""
        typed = self.typed
        decode, kinds = typed.decode_batch, typed.kind
        out = self.out
        per_type: Counter = Counter()
        nodes: set = set()
        node_of = attrgetter("node")
        try:
            for refs, lines in batches:
                recs = decode(lines)
                if None in recs:
                    recs = self.general(refs, lines, recs, typed)
                    seen = {r.node for r in recs if kinds.get(type(r), _NO_KIND)[0] == EVENT}
                else:  # (every record typed: their nodes are gathered in C; most batches name one or two)
                    seen = set(map(node_of, recs)) - nodes
                    if seen:  # a node not seen before: only its events count (an export names nodes too)
                        seen = {r.node for r in recs if r.node in seen and kinds[type(r)][0] == EVENT}
                nodes |= seen
                per_type.update(map(type, recs))
                yield refs, recs
        finally:
            per_type.pop(type(None), None)
            per_type.pop(_Unreadable, None)
            out.records += sum(per_type.values())
            out.events.update({kinds[cls][1]: n for cls, n in per_type.items() if kinds[cls][0] == EVENT})
            out.event_nodes |= nodes

    @cython.ccall
    def new_id(self, mid: str, ref: int, kind: str, node: str, packed: int | None = None) -> str:
        """The id's one string; judged at its first record in this share (each record that may open
        an id asks; ``packed``: its packed track's number, -1 for none, where the caller looked)."""
        known = self.ids.get(mid)
        if known is not None:
            return known
        if packed is None:
            packed = self.store.held(mid)
        if packed >= 0:
            return mid
        self.ids[mid] = mid
        self.hooks.new_id(mid, ref, kind, node)
        return mid

    def general(self, refs, lines, recs: list, typed: TypedRecords) -> list:
        """``recs`` with each line the typed decoding refused read the general way: its typed record
        where it is usable, else an :class:`_Unreadable` that reports it in its place among the
        records (so that what it does to its message's track comes in log order)."""
        out = list(recs)
        for i, r in enumerate(recs):
            if r is not None:
                continue
            line = lines[i]
            if type(line) is bytes and line[-1:] == b"\n":  # (a line read with its newline, as shares
                line = line[:-1]  # that read the log themselves give it: a problem's text is the same)
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                if isinstance(line, BrokenLine):
                    out[i] = _Unreadable(str(line))
                elif line and not line.isspace():
                    out[i] = _Unreadable(f"not JSON: {exc}")
                continue
            kind, problems = self.fmt.read(obj)
            if problems:
                fld, why = problems[0]
                more = f" (and {len(problems) - 1} more: {', '.join(str(p[0]) for p in problems[1:])})" if len(problems) > 1 else ""
                out[i] = _Unreadable(why + more, fld, obj if kind is not None and kind != ROW else None)
                continue
            out[i] = typed.from_dict(obj, kind)
        return out

    def unreadable(self, u: "_Unreadable", ref: int) -> None:
        self.problem(ref, u.why, u.field)
        if u.event is not None:
            self.unread(u.event, ref)

    def unread(self, obj: dict, ref: int, _tr: Track | None = None) -> None:
        """An event line that is unreadable but names its node and message: the line is reported and
        not judged, and it affects only itself. Its message's track is marked (a follow-up whose cause
        was that line is read without it), and an unreadable received line still stands for a copy,
        with what of it can be read, so that its dedup, commit and acknowledgement find it."""
        node, mid = obj.get("node"), obj.get("id")
        if type(node) is not str or type(mid) is not str or not node or not mid:
            return
        tr = self._track(node, mid, ref)
        tr.gap = True
        if obj.get("event") == "received":
            def text(name):
                v = obj.get(name)
                return v if type(v) is str and v else None
            seq = obj.get("seq")
            tr.copies.append(Copy(ref, text("delivery"), text("sender"), seq if type(seq) is int and seq >= 0 else None,
                                   text("session"), unread=True))

    @cython.ccall
    @cython.locals(t=TrackT)
    def track(self, r, ref: int, kind: str) -> Track:
        """The track of the record's message on its node (opened by this record if there is none;
        ``kind``: the record's, for the evidence of a finding about the id)."""
        t = self.tracks.get(r.id)
        if t is not None and t.node == r.node and not t.gap:
            return t
        return self._track(intern(r.node), self.new_id(r.id, ref, kind, r.node), ref)

    @cython.ccall
    @cython.locals(t=TrackT)
    def _track(self, node: str, mid: str, ref: int) -> Track:
        """The track of ``mid`` on ``node``, opened at ``ref`` if there is none."""
        t = self.tracks.get(mid)
        if t is None:
            # (an id of ``ids`` is not packed: packing takes it out of them)
            n = self.store.held(mid) if mid not in self.ids else -1
            if n < 0:
                t = self.tracks[mid] = Track(node, mid, ref, [])
                return t
            if self.packed.node(n) == node:
                t = self.tracks[mid] = self.unpacked(n, mid)
                return t
        elif t.node == node:
            return t
        # (an id's track on a node other than its first: its first stays in ``tracks``, or packed)
        t = self.more_tracks.get((node, mid))
        if t is None:
            t = self.more_tracks[(node, mid)] = Track(node, mid, ref, [])
        return t

    @cython.ccall
    def unpacked(self, n: int, mid: str) -> Track:
        """The packed track ``n`` unpacked, its id's send, reception and string kept by the share again."""
        sent = self.packed.sent_fact(n, mid)
        if sent is not None:
            self.sent[mid] = sent
        self.received.add(mid)
        self.ids[mid] = mid
        return self.packed.unpack(n, mid)

    @cython.ccall
    def sent_of(self, mid: str) -> tuple | None:
        """The fact of ``mid``'s first send, (ref, node, id, session, sender, seq); None where none
        was read."""
        sent = self.sent.get(mid)
        if sent is None:
            n = self.store.held(mid)
            if n >= 0:
                return self.packed.sent_fact(n, mid)
        return sent

    # events (``r``: a typed record, :mod:`rmkit.conformance.corda.decode`; an optional field it
    # does not carry is UNSET) ------------------------------------------------------------------
    @cython.ccall
    def ev_sent(self, r, ref: int) -> None:
        mid, seq = r.id, r.seq
        sender = intern(r.sender)
        if mid not in self.sent and (
                (n := self.store.held(mid)) < 0
                or self.packed.sent_fact(n, mid) is None):
            # (a packed track keeps its id's send: :meth:`sent_of`)
            mid = self.new_id(mid, ref, "sent", r.node, n)
            fact = (ref, intern(r.node), mid, intern(r.session), sender, seq)
            self.sent[mid] = fact
        if seq is not None:
            self.out.sent_seqs.append((ref, sender, seq, mid))

    @cython.ccall
    @cython.locals(tr=TrackT, c=CopyT)
    def ev_received(self, r, ref: int, tr: Track | None = None) -> None:
        if tr is None:
            tr = self.track(r, ref, "received")
        c = Copy(ref, r.delivery, intern(r.sender), r.seq, intern(r.session))
        tr.copies.append(c)
        self.received.add(tr.mid)
        if len(tr.copies) == 1 and c.seq is not None:
            # a use of the number, unless the id's send (before it) used it already: the merge keeps
            # one use per sender, number and id, the first
            sent = self.sent_of(r.id)
            if sent is None or sent[5] != c.seq or sent[4] != c.sender or sent[0] > ref:
                self.out.seqs.append((c.sender, c.seq, tr.mid, ref))

    @cython.ccall
    @cython.locals(tr=TrackT, c=CopyT)
    def ev_dedup(self, r, ref: int, tr: Track | None = None) -> None:
        if tr is None:
            tr = self.track(r, ref, "dedup")
        node, mid = tr.node, tr.mid
        delivery = r.delivery
        copies = tr.copies
        if delivery is not UNSET:
            c = _copy_of(tr.copies, delivery)
        elif copies and copies[-1].verdict is None:
            c = copies[-1]  # the copy last received, most often
        else:
            c = _last(copies, _UNANSWERED)
        if c is None and tr.gap:  # the copy's received line was unreadable (its delivery too, or the copy unnamed)
            c = _last(tr.copies, _UNREAD_UNANSWERED)
            if c is None:
                return
        if c is None:
            self.problem(ref, f"a dedup verdict for {mid} on node {node} with no received copy "
                              + (f"of delivery {delivery!r} " if delivery is not UNSET else "awaiting one ")
                              + "before it (records.yaml: received is written before its dedup)", "event")
            self.out.records -= 1
            return
        answer = self.fmt.verdicts[r.verdict]
        c.verdict, c.vref = answer, ref
        self.out.verdicts[answer] += 1
        if answer == "NEW":
            if tr.commits:
                self.out.renewed.append((ref, intern(node), mid, c.sender, c.seq, tr.commits[0].ref, None))
            else:
                tr.new_after = (*tr.new_after, NewAnswer(ref, r.t, c.sender, c.seq))

    @cython.ccall
    @cython.locals(tr=TrackT, c=CopyT, other=CopyT)
    def ev_committed(self, r, ref: int, tr: Track | None = None) -> None:
        if tr is None:
            tr = self.track(r, ref, "committed")
        node, mid = tr.node, tr.mid
        copies = tr.copies
        c = copies[-1] if copies else None  # most often the copy the commit is for
        if c is None or c.verdict != "NEW" or c.done == "committed":
            c = _last(copies, _NEW_UNCOMMITTED)
        if c is None:
            other = _last(copies, _ANSWERED_UNCOMMITTED)
            if other is not None:
                self.hooks.commit_not_new(tr, other, ref)
                c = other
            elif tr.commits:  # a copy committed a second time: the effect happened twice (CORDA-DEDUP-001 below)
                c = _last(copies, _COMMITTED)
            elif tr.gap:  # the copy's received or dedup line was unreadable: the commit is read without it
                c = _last(copies, _UNCOMMITTED)
            else:
                self.problem(ref, f"{mid} committed on node {node} with no received copy answered before it "
                                  "(records.yaml: received and dedup come before the commit)", "event")
                self.out.records -= 1
                return
        if c is not None:
            c.done = "committed"
        if tr.commits:
            self.hooks.second_commit(tr, c, r, ref)
        else:
            session = r.session if r.session is not UNSET else c.session if c is not None else None
            sender = r.sender if r.sender is not UNSET else c.sender if c is not None else None
            if session is not None and sender is not None:  # else unknown (an unreadable line held it): not ordered
                seq = r.seq if r.seq is not UNSET else c.seq if c is not None else None
                sent = self.sent_of(mid)
                if sent is None:  # (its send may come later in the log: looked for again at the end)
                    self.unsent_commits.setdefault(mid, []).append(len(self.out.commits))
                self.out.commits.append((ref, intern(node), mid, intern(session), intern(sender), seq,
                                         sent[0] if sent is not None else None))
        tr.commits = (*tr.commits, Commit(ref, r.tx, r.t))

    @cython.ccall
    @cython.locals(tr=TrackT, c=CopyT)
    def _settle_copy(self, r, ref: int, done: str, tr: Track | None) -> tuple[Track, str, str, Copy | None, str | None]:
        """(track, node, id, the copy the event's delivery names, its answer) of an acked or discarded
        event; the copy is marked with what was done to it."""
        if tr is None:
            tr = self.track(r, ref, done)
        c = _copy_of(tr.copies, r.delivery)
        if c is not None:
            c.done = c.done or done
        return tr, r.node, r.id, c, c.verdict if c is not None else None

    @cython.ccall
    @cython.locals(tr=TrackT)
    def ev_acked(self, r, ref: int, tr: Track | None = None) -> None:
        if tr is not None:  # (the bounded check's: its tracks are its engines')
            self._acked(r, ref, tr)
            return
        tr = self._acked(r, ref, None)
        # an acknowledgement most often ends its message's records on the node (but for its row):
        # a settled track is packed
        mid = tr.mid
        if packable(tr) and self.tracks.get(mid) is tr:
            sent = self.sent.get(mid)
            if self.packed.pack(tr, sent):
                del self.tracks[mid]
                if sent is not None:
                    del self.sent[mid]
                self.received.discard(mid)  # (a packed track has a copy: its id was received)
                self.ids.pop(mid, None)

    @cython.ccall
    @cython.locals(tr=TrackT, c=CopyT)
    def _acked(self, r, ref: int, tr: Track | None) -> Track:
        tr, node, mid, c, answer = self._settle_copy(r, ref, "acked", tr)
        tr.acked = ref
        if answer is not None and self.spec.consequence[answer] == "discard":
            self.hooks.discardable_acked(tr, c, answer, r, ref)
        elif answer == "IN_FLIGHT":
            pass  # acknowledged now by the profile's choice (corda-os-2021): CORDA-ACK-001 holds for other copies
        elif not tr.commits:
            tr.acks = (*tr.acks, Ack(ref, r.t, answer or "no answer", c.ref if c is not None else None,
                                     c.vref if c is not None else None))
        return tr

    @cython.ccall
    @cython.locals(tr=TrackT, c=CopyT)
    def ev_discarded(self, r, ref: int, tr: Track | None = None) -> None:
        tr, node, mid, c, answer = self._settle_copy(r, ref, "discarded", tr)
        if answer == "IN_FLIGHT" or (answer is None and tr.gap):  # no answer known: its line was unreadable
            return
        refs = [(c.ref, "received", node), (c.vref or None, "dedup", node)] if c is not None else []
        if answer == "DUPLICATE":
            self.hooks.duplicate_dropped(tr, refs, r, ref)
        else:
            self.hooks.answered_dropped(tr, refs, answer, r, ref)

    @cython.ccall
    @cython.locals(tr=TrackT)
    def row(self, r, ref: int, tr: Track | None = None) -> None:
        out = self.out
        out.rows += 1
        out.export_nodes.add(r.node)
        if tr is None:
            tr = self.tracks.get(r.id)
            if tr is None and r.id not in self.ids:
                n = self.store.held(r.id)
                # (a packed track takes its first row as it is: :mod:`.packing`)
                if n >= 0 and self.packed.add_row(n, r.node, ref, r.tx, r.t):
                    return
            if tr is None or tr.node != r.node or tr.gap:
                tr = self.track(r, ref, "row")
        if tr.rows:
            self.hooks.second_row(tr, r, ref)
        tr.rows = (*tr.rows, Commit(ref, r.tx, r.t))

    # end of the share --------------------------------------------------------------------------
    def finish(self) -> Share:
        out = self.out
        for mid, idxs in self.unsent_commits.items():
            self.sent_found(mid, idxs)
        packed = self.packed
        out.ids = len(self.ids) + len(packed)
        settled = self.c.settled
        committed_ids = set()
        self.phase = 1
        # in the order the tracks were opened; a packed track the fast case passes (nothing
        # judge_track judges applies) is not unpacked: it was committed, and received
        key = self.store.key
        tracks = [*self.tracks.values(), *self.more_tracks.values(),
                  *(packed.peek(n, key(n)) for n in packed.numbers() if not packed.fast_judged(n))]
        if self.more_tracks or len(tracks) > len(self.tracks):
            tracks.sort(key=_FIRST)
        received = self.received
        for tr in tracks:
            if self.judge_track(tr, settled) and tr.mid not in received:
                committed_ids.add(tr.mid)  # (needed only for an id no node received: never_received below)
        if settled:
            self.phase = 2
            for mid, fact in self.sent.items():
                self.ref = fact[0]
                if mid not in received and mid not in committed_ids and packed.find(mid) < 0:
                    self.hooks.never_received(mid, fact)
        return out

    @cython.ccall
    @cython.locals(tr=TrackT, last=CopyT)
    def judge_track(self, tr: Track, settled: bool) -> bool:
        """What one message's records on one node show once all of them are read: its acknowledgements
        against its commits, its row against its commits, its NEW answers against its row, and (on
        settled records) whether it was lost or left unredelivered. True if the node committed it
        (a committed event or a row)."""
        commits, rows, na = tr.commits, tr.rows, tr.new_after
        if len(commits) == 1 and rows and commits[0].tx == rows[0].tx and not tr.acks \
                and (not na or (len(na) == 1 and na[0].t <= rows[0].t)):
            # committed once, the row of that transaction inserted no earlier than its NEW answer:
            # nothing below applies
            return True
        hooks = self.hooks
        self.ref = tr.first
        row = rows[0] if rows else None
        row_commit_unrecorded = row is not None and not _has_tx(commits, row.tx)
        if tr.acks:
            hooks.acks_before_commit(tr, row, row_commit_unrecorded)
        for a in na:
            if row is not None and row.t < a.t and not (commits and commits[0].ref < a.ref):
                self.out.renewed.append((a.ref, tr.node, tr.mid, a.sender, a.seq, None, row.ref))
        if commits and row is not None and row_commit_unrecorded:
            hooks.row_of_other_tx(tr, row)
        if commits and row is None:
            hooks.committed_without_row(tr)
        if row is not None and not commits and not tr.copies and not tr.gap:
            hooks.row_never_received(tr, row)
        if settled and tr.copies and not commits and row is None and not tr.gap:
            last = tr.copies[-1]
            refs = [(last.ref, "received", tr.node)] + ([(last.vref, "dedup", tr.node)] if last.vref else [])
            if tr.acked:
                hooks.acked_never_committed(tr, refs)
            else:
                hooks.never_settled(tr, refs)
        return bool(commits or rows)

    @cython.ccall
    def sent_found(self, mid: str, idxs: list) -> None:
        """The commit facts ``idxs`` of ``mid``, made before its send was read, with its send's ref."""
        sent = self.sent_of(mid)
        if sent is not None:
            commits = self.out.commits
            for i in idxs:
                commits[i] = (*commits[i][:6], sent[0])
