"""The Corda log check under a declared bound (docs/corda-check-streaming.md): messages judged and
forgotten once the log's clock has passed their horizon, on the core's streaming engine
(:class:`rmkit.subjects.SubjectEngine`), so that memory follows what is open, not the log.

The bound (records.yaml ``horizon``, or the deployment's ``--horizon``) says that a message's
successive records, on any node and in the processed-ids export, come within that many seconds
of each other. Then:

- **The inputs are read in step**, merged by their records' times (each input in its own order: a
  node's events as it wrote them, its export in insertion order), so that a row comes within the
  bound of its message's other records.
- **Per node, one engine** of that node's tracks (a message id on the node, :class:`.state.Track`),
  clocked by that node's records: a track is judged (:meth:`_ShareRun.judge_track`, as the exact
  check judges it at the end) once its node's clock passes its last record plus the bound, and its
  memo (first commit, first row: :class:`.state.Memo`) is kept for one more bound: a record that
  comes after its message was judged is late, judged against the memo (a second commit:
  CORDA-DEDUP-001; a NEW answer for a committed id: CORDA-DEDUP-005/006/007; a row of another
  transaction: CORDA-ACK-002, a second row: CORDA-DEDUP-001) and counted (``late_records``).
- **One engine of ids** over all nodes, clocked by all records: the id's one string, its first send,
  whether a node received or committed it (CORDA-ID-001 at its first record, CORDA-DEDUP-002 "never
  received" at its judgement), kept for two bounds after its last record, so that the send of an id
  is still known when its commit's facts are judged.
- **Across ids** (:class:`SpanningStream`): the facts the exact check hands to the merge (commits,
  sequence-number uses, sends, NEW answers for processed ids) are judged one bound after they come
  (their send then known), in the order they came, by the checks of :mod:`.spanning` made
  incrementally; what they keep (a session's latest sends, a sender key's marks and numbers) is
  forgotten once unused for a few bounds.

With one process the whole check streams. With ``--jobs``/``rmkit audit`` each share streams its
tracks and ids alike; the facts across ids travel to the merge, which judges them as the exact
check does (the same findings; their memory is the facts', a few tuples per message).
"""

from __future__ import annotations

import bisect
import time
from collections import OrderedDict, deque

from msgspec import UNSET

from rmkit.rules import OFF
from rmkit.subjects import LogClock, SubjectEngine

from rmkit.conformance.corda.share import Share, _ShareRun, _Unreadable
from rmkit.conformance.corda.spanning import _session_step
from rmkit.conformance.corda.state import Commit, Memo, Track




class SpanningStream:
    """The checks of :mod:`.spanning` made as the facts come (in the order they came, each judged one
    bound after it came), keeping what they need for a few bounds only. Its findings are
    :class:`Violation` objects, as the merge's are."""

    KEEP = 4  # bounds an unused session, sender key or sequence number is kept

    def __init__(self, checker, inputs, bound: int, sent_of):
        self.c, self.inputs, self.bound = checker, inputs, bound
        self.sent_of = sent_of          # id -> its first send's fact, while the id is open
        modes = checker.modes
        self.order1 = modes["CORDA-ORDER-001"] != OFF
        self.order2 = modes["CORDA-ORDER-002"] != OFF
        self.id3 = modes["CORDA-ID-003"] != OFF
        self.fast = checker.spec.fast_path
        self.pending: deque = deque()   # (t, kind, fact), in the order they came
        self.judge = {kind: getattr(self, kind) for kind in ("commit", "seq", "sent", "renewed")}
        self.found: list = []
        # each kept in the order of last use (OrderedDict: its front is found at once, however many
        # entries were taken from it)
        self.sessions = OrderedDict()   # (node, session) -> [last t, [top_sent, top_flow, top_seq]] (spanning._session_step's state)
        self.sender_top = OrderedDict() # (node, sender) -> [last t, (seq, commit)]  (CORDA-ORDER-002)
        self.marks: dict = {}           # (node, sender) -> [last t, refs, running max, times]  (fast path)
        self.uses = OrderedDict()       # (sender, seq) -> [last t, first id, its ref, {other id: ref}]
        self.sends = OrderedDict()      # sender -> [last t, (seq, ref, id)]

    def add(self, t: int, kind: str, fact: tuple) -> None:
        self.pending.append((t, kind, fact))

    def advance(self, now) -> None:
        """Judge the facts the clock has passed by one bound."""
        pending = self.pending
        if now is None or not pending or pending[0][0] + self.bound >= now:
            return
        judge = self.judge
        while pending and pending[0][0] + self.bound < now:
            t, kind, fact = pending.popleft()
            judge[kind](t, fact)
        self._forget(now - self.KEEP * self.bound)

    def finish(self) -> None:
        while self.pending:
            t, kind, fact = self.pending.popleft()
            getattr(self, kind)(t, fact)

    @staticmethod
    def _touch(d: dict, key, t):
        """``d[key]`` moved to the end (the dicts are kept in the order of last use), its time ``t``."""
        v = d.get(key)
        if v is not None:
            v[0] = t
            d.move_to_end(key)
        return v

    def _forget(self, before) -> None:
        for d in (self.sessions, self.sender_top, self.uses, self.sends):
            while d:
                key = next(iter(d))
                if d[key][0] >= before:
                    break
                del d[key]
        for key, m in list(self.marks.items()):  # (a sender key's marks: the latest stays as its baseline)
            refs, ts = m[1], m[3]
            cut = bisect.bisect_left(ts, before)
            if cut > 0:
                cut = min(cut, len(refs) - 1)
                del refs[:cut], m[2][:cut], ts[:cut]

    # -- the facts ------------------------------------------------------------------------------
    def commit(self, t, c) -> None:
        ref, node, mid, session, sender, seq, sent = c
        if sent is None:
            s = self.sent_of(mid)
            if s is not None:
                c = (*c[:6], s[0])
        if self.fast and seq is not None:
            m = self.marks.get((node, sender))
            if m is None:
                m = self.marks[(node, sender)] = [t, [], [], []]
            m[1].append(ref)
            m[2].append(max(seq, m[2][-1]) if m[2] else seq)
            m[3].append(t)
        if self.order1:
            self._session(t, c)
        if self.order2 and seq is not None:
            self._sender(t, c)

    def _session(self, t, c) -> None:
        """spanning.session_order, one commit at a time (its one step, on this session's state)."""
        node, session = c[1], c[3]
        st = self._touch(self.sessions, (node, session), t)
        if st is None:
            st = self.sessions[(node, session)] = [t, [None, {}, {}]]
        v = _session_step(self.c, self.inputs, (node, session), st[1], c)
        if v is not None:
            self.found.append(v)

    def _sender(self, t, c) -> None:
        """spanning.sender_order, one commit at a time."""
        ref, node, mid, _, sender, seq, _ = c
        st = self._touch(self.sender_top, (node, sender), t)
        prev = st[1] if st is not None else None
        if prev is not None and prev[0] > seq:
            self.found.append(self.c.violation(
                self.inputs, "CORDA-ORDER-002", mid, f"node {node} committed {mid} (sequence number {seq} of "
                f"sender {sender}) after {prev[1][2]} (number {prev[0]}): the mark had passed it",
                [(prev[1][0], "committed", node), (ref, "committed", node)]))
        if prev is None or seq > prev[0]:
            if st is None:
                self.sender_top[(node, sender)] = [t, (seq, c)]
            else:
                st[1] = (seq, c)

    def seq(self, t, u) -> None:
        """spanning.sequence_numbers' reuse, one use at a time: (sender, seq, id, ref)."""
        if not self.id3:
            return
        sender, seq, mid, ref = u
        key = (sender, seq)
        got = self._touch(self.uses, key, t)
        if got is None:
            self.uses[key] = [t, mid, ref, None]
        elif got[1] != mid and (got[3] is None or mid not in got[3]):
            if got[3] is None:
                got[3] = {}
            got[3][mid] = ref
            self.found.append(self.c.violation(self.inputs, "CORDA-ID-003", mid, f"sender {sender} used sequence number "
                                               f"{seq} for {mid} and for {got[1]}", [(got[2], None, None), (ref, None, None)]))

    def sent(self, t, u) -> None:
        """spanning.sequence_numbers' order of one sender's sends, and the use of the send's number:
        (ref, sender, seq, id)."""
        if not self.id3:
            return
        ref, sender, seq, mid = u
        st = self._touch(self.sends, sender, t)
        prev = st[1] if st is not None else None
        if prev is not None and seq < prev[0]:
            self.found.append(self.c.violation(self.inputs, "CORDA-ID-003", mid, f"sender {sender} sent {mid} with sequence "
                                               f"number {seq} after {prev[2]} with {prev[0]}: one sender UUID's numbers "
                                               "only increase", [(prev[1], "sent", None), (ref, "sent", None)]))
        if prev is None or seq > prev[0]:
            if st is None:
                self.sends[sender] = [t, (seq, ref, mid)]
            else:
                st[1] = (seq, ref, mid)
        self.seq(t, (sender, seq, mid, ref))  # (a send is also a use of its number)

    def renewed(self, t, r) -> None:
        """spanning.renewed, one NEW answer at a time: (verdict ref, node, id, sender, seq, commit ref, row ref)."""
        from rmkit.conformance.corda.spanning import classify_renewed

        vref, node, mid, sender, seq, cref, rref = r
        refs, top = [], []
        if self.fast and seq is not None:
            m = self.marks.get((node, sender))
            if m is not None:
                refs, top = m[1], m[2]
        v = classify_renewed(self.c, self.inputs, r, refs, top)
        if v is not None:
            self.found.append(v)


class _Facts:
    """Stands for one of a share's lists of facts across ids (``out.commits``, ...): what is appended
    goes to the :class:`SpanningStream`, with the time of the record being read."""

    __slots__ = ("run", "kind", "pending")

    def __init__(self, run, kind: str):
        self.run, self.kind, self.pending = run, kind, run.span.pending

    def append(self, fact: tuple) -> None:
        self.pending.append((self.run.feeding.t, self.kind, fact))

    def __len__(self) -> int:
        return 0


class _Feeding:
    """The record the bounded run is feeding: its time, kind and handler, and the track it joins.
    Its own small object, not fields of the run: a compiled call on the run checks for an override
    in Python only when the run's instance dict has changed since, and reads of the run's C fields
    from Python go through their descriptors (:class:`.share._ShareRun`); these four change per
    record."""

    __slots__ = ("t", "kind", "handler", "cur")

    def __init__(self):
        self.t, self.kind, self.handler, self.cur = 0, None, None, None


def bounded_run(checker, inputs: list[str], bound_ms: int, stream_spanning: bool):
    """A share run under the bound (``stream_spanning``: judge the facts across ids in the share, as
    one process does; else hand them to the merge)."""

    class BoundedRun(_ShareRun):
        """Step 1 of :mod:`.checker` with each track and id judged once the clock passes its horizon."""

        def __init__(self):
            super().__init__(checker, inputs)
            self.bound = bound_ms
            self.step = max(1, bound_ms // 8)  # the clocks' step (feed_inputs)
            self.engines: dict[str, SubjectEngine] = {}
            # the open ids: id -> the time of its latest record, in the order of those times (an id
            # whose record comes is moved to the end), so the ids to forget are at the front
            self.id_last: OrderedDict[str, int] = OrderedDict()
            self.peak_ids = 0
            self.committed_ids: set = set()
            self.feeding = feeding = _Feeding()
            # the ev_* handlers ask for their record's track: under the bound it is the subject being fed
            self.track = lambda r, ref, kind: feeding.cur
            self._track = lambda node, mid, ref: feeding.cur
            self.span = None
            if stream_spanning:
                self.span = SpanningStream(checker, inputs, bound_ms, self.sent.get)
                out = self.out
                out.commits, out.seqs, out.sent_seqs, out.renewed = (
                    _Facts(self, "commit"), _Facts(self, "seq"), _Facts(self, "sent"), _Facts(self, "renewed"))

        # -- the ids ------------------------------------------------------------------------------
        def _forget_ids(self, before: int) -> None:
            """Judge and forget the ids whose latest record came before ``before``."""
            last = self.id_last
            if len(last) > self.peak_ids:
                self.peak_ids = len(last)
            while last:
                mid, t = last.popitem(last=False)
                if t >= before:
                    last[mid] = t
                    last.move_to_end(mid, last=False)
                    return
                self._judge_id(mid)

        def _judge_id(self, mid: str) -> None:
            sent = self.sent.pop(mid, None)
            if sent is not None and self.c.settled and mid not in self.received and mid not in self.committed_ids:
                phase, ref = self.phase, self.ref
                self.phase, self.ref = 2, sent[0]
                self.hooks.never_received(mid, sent)
                self.phase, self.ref = phase, ref
            idxs = self.unsent_commits.pop(mid, None)
            if idxs and sent is not None and self.span is None:
                self.sent[mid] = sent
                self.sent_found(mid, idxs)
                del self.sent[mid]
            self.received.discard(mid)
            self.committed_ids.discard(mid)
            self.ids.pop(mid, None)

        # -- the tracks ---------------------------------------------------------------------------
        def engine(self, node: str) -> SubjectEngine:
            e = self.engines.get(node)
            if e is None:
                e = self.engines[node] = SubjectEngine(
                    lambda mid, t, r: Track(node, self.ids.get(mid, mid), self.ref, []),
                    self._add_track, self._judge_track, on_late=lambda mid, t, r, memo: self._late(node, mid, r, memo),
                    clock=LogClock(), remember_s=self.bound)
            return e

        def _add_track(self, tr, _t, r):
            feeding = self.feeding
            kind = feeding.kind
            feeding.cur = tr
            feeding.handler(r, self.ref, tr)
            if (kind == "committed" or kind is None) and (tr.commits or tr.rows):
                self.committed_ids.add(tr.mid)
            return feeding.t + self.bound + self.step  # (read in step within a step: judged a step later)

        def _judge_track(self, mid, tr, at_end):
            phase, ref = self.phase, self.ref
            self.phase = 1
            self.judge_track(tr, self.c.settled)
            self.phase, self.ref = phase, ref
            return Memo(tr.node, tr.commits[0] if tr.commits else None, tr.rows[0] if tr.rows else None)

        def _late(self, node, mid, r, memo):
            """A record of a message its node already judged: what it alone still shows, against the memo."""
            kind, ref = self.feeding.kind, self.ref
            if memo is True or kind == "unread":
                return
            tr = Track(node, mid, ref, [], commits=(memo.commit,) if memo.commit else (),
                       rows=(memo.row,) if memo.row else ())
            if kind == "committed" and memo.commit is not None:
                self.hooks.second_commit(tr, None, r, ref)
            elif kind is None:  # a row
                if memo.row is not None:
                    self.hooks.second_row(tr, r, ref)
                elif memo.commit is not None and r.tx != memo.commit.tx:
                    self.hooks.row_of_other_tx(tr, Commit(ref, r.tx, r.t))
            elif kind == "dedup" and (memo.commit or memo.row) and self.fmt.verdicts[r.verdict] == "NEW":
                sender = r.sender if r.sender is not UNSET else None
                seq = r.seq if r.seq is not UNSET else None
                self.out.renewed.append((ref, node, mid, sender, seq, memo.commit.ref if memo.commit else None,
                                         None if memo.commit else memo.row.ref))

        # -- reading ------------------------------------------------------------------------------
        def feed_inputs(self, streams) -> Share:
            started = time.perf_counter()
            handlers = self.handlers()
            kinds = {cls: ev for cls, (_, ev) in self.typed.kind.items()}
            ev_sent, span, engines, id_last, new_id = self.ev_sent, self.span, self.engines, self.id_last, self.new_id
            feeding = self.feeding
            out = self.out
            bound = self.bound
            # The clocks move in steps of an eighth of the bound: each time the latest time read passes
            # one, the ids and the facts across ids are swept, and each node's engine is given its
            # node's latest time (its records join their tracks as records without a time, so that
            # the engine's clock is not asked to move per record; a track is so judged up to a step
            # after its horizon, never before).
            step = self.step
            now, due = -1, 0
            node_now: dict[str, int] = {}
            for refs, recs, times in _in_step([self.decoded(b) for b in streams], step):
                for ref, r, t in zip(refs, recs, times):
                    if r is None:
                        continue
                    self.ref, feeding.t = ref, t
                    cls = type(r)
                    kind = kinds.get(cls, cls)
                    if kind is _Unreadable:
                        ev = r.event
                        node, mid = (ev.get("node"), ev.get("id")) if ev is not None else (None, None)
                        if not (type(node) is str and type(mid) is str and node and mid):
                            node = None
                    elif kind != "sent":
                        node = r.node
                    else:
                        node = None
                    e = None
                    if node is not None:  # (its node's clock takes its time before the clocks move)
                        e = engines.get(node)
                        if e is None:
                            e = self.engine(node)
                            node_now[node] = t
                        elif node_now[node] < t:
                            node_now[node] = t
                    if t > now:
                        now = t
                        if now >= due:
                            due = now + step
                            for n, engine in engines.items():
                                engine.tick(node_now[n])
                            self._forget_ids(now - 2 * bound)
                            if span is not None:
                                span.advance(now)
                    if kind is _Unreadable:
                        self.problem(ref, r.why, r.field)
                        if e is not None:
                            feeding.kind, feeding.handler = "unread", self.unread
                            e.feed(None, mid, ev)
                        continue
                    mid = r.id
                    if mid in id_last:
                        id_last.move_to_end(mid)
                    else:
                        out.ids += 1
                        mid = new_id(mid, ref, kind or "row", r.node)
                    id_last[mid] = t
                    if e is None:
                        ev_sent(r, ref)
                        continue
                    feeding.kind, feeding.handler = kind, handlers[cls]
                    e.feed(None, mid, r)
            self.finish()
            self.out.seconds = time.perf_counter() - started
            return self.release()

        def finish(self) -> Share:
            out = self.out
            for e in self.engines.values():
                e.finish()
                out.late += e.late
                out.peak_open += e.peak_open
            self._forget_ids(float("inf"))
            out.peak_open += self.peak_ids
            if self.span is not None:
                self.span.finish()
                out.spanned = self.span.found
                out.commits, out.seqs, out.sent_seqs, out.renewed = [], [], [], []
            return out

    return BoundedRun()


def _times(recs: list, t: int) -> list:
    """The time of each record (a line without one: the time of the line before it, so that it keeps
    its place; ``t``: the time before the first)."""
    try:
        return [r.t for r in recs]  # (every record typed: most batches)
    except AttributeError:
        pass
    out = []
    for r in recs:
        rt = getattr(r, "t", None)
        if type(rt) is int:
            t = rt
        else:
            ev = getattr(r, "event", None)
            if type(ev) is dict and type(ev.get("t")) is int and ev["t"] >= 0:
                t = ev["t"]
        out.append(t)
    return out


def _in_step(streams, slack: int = 0):
    """(refs, records, times) of every input's decoded batches, merged by time: each input in its own
    order, a run of one input's records given while its times are at most the others' next time plus
    ``slack`` (so that a node's events and its export, read together, come in runs of a step, not of
    a few records; the tracks are judged ``slack`` later to match)."""
    if len(streams) == 1:
        t = 0
        for refs, recs in streams[0]:
            times = _times(recs, t)
            if times:
                t = times[-1]
            yield refs, recs, times
        return
    heads = []  # per input: [refs, recs, times, position, its iterator, last time]
    for it in streams:
        head = [None, None, None, 0, iter(it), 0]
        if _refill(head):
            heads.append(head)
    while heads:
        if len(heads) == 1:
            h = heads[0]
            while True:
                i = h[3]
                yield h[0][i:], h[1][i:], h[2][i:]
                if not _refill(h):
                    return
        heads.sort(key=lambda h: h[2][h[3]])
        first, limit = heads[0], heads[1][2][heads[1][3]] + slack
        i, times = first[3], first[2]
        n = len(times)
        j = max(i + 1, bisect.bisect_right(times, limit, i))  # (an input's times increase; where they do not, its order still holds)
        yield first[0][i:j], first[1][i:j], times[i:j]
        first[3] = j
        if j == n and not _refill(first):
            heads.remove(first)


def _refill(h) -> bool:
    """The input's next non-empty batch into ``h``; False at its end."""
    for refs, recs in h[4]:
        if refs:
            times = _times(recs, h[5])
            h[0], h[1], h[2], h[3], h[5] = refs, recs, times, 0, times[-1]
            return True
    return False
