# cython: annotation_typing=False
"""The checks that span message ids, run once over the facts every share kept (see
:mod:`rmkit.conformance.corda.checker`; the handlers of :mod:`.handlers` call them): a sender's sequence numbers, the order of a session, and the
deduplicator's wrong NEW answers classified by what the fast path's high-water mark was then.

The facts are one per commit, per send and per sequence number a copy carried without its send
(:mod:`.facts`: kept as columns); each check reads them once or twice in log order, as they stream
from the shares, and keeps only what it judges by (a session's latest commits, a sender key's
numbers), never the records themselves.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections import defaultdict
from operator import itemgetter
from typing import Iterable

from rmkit.lazy import numpy_module
from rmkit.rules import OFF
from rmkit.verdict import Violation

from rmkit.conformance.corda.facts import Facts, fields_of, ids_at, in_log_order, merged

_REF3 = itemgetter(3)
N_ID = re.compile(r"^N-([0-9A-Za-z]+)-([0-9]+)-([0-9]+)$")


class sorted_commits:
    """Every share's commit facts, in log order: each iteration streams them afresh."""

    def __init__(self, shares):
        self.shares = shares

    def __iter__(self):
        return in_log_order(s.commits for s in self.shares)


def renewed(checker, inputs, shares, commits) -> Iterable[Violation]:
    """A NEW answer for an id the node had committed: which mechanism failed. Without a fast path the
    database of processed ids did (CORDA-DEDUP-005). With it, the mark of the copy's sender key at
    that moment (the highest committed sequence number) decides: none yet, so the database should
    have been read (CORDA-DEDUP-006); below the copy's number, so the fast path trusted a mark the
    sender's order does not uphold (CORDA-DEDUP-007); else the database answered wrong (005)."""
    fast = checker.spec.fast_path
    # (node, sender) -> (refs, running max seq); a number beyond 64 bits turns its key's column into a list
    marks: dict[tuple, tuple] = defaultdict(lambda: (array("q"), array("q")))
    if fast:
        for ref, node, _mid, _session, sender, seq, _sent in commits:
            if seq is not None:
                key = (node, sender)
                refs, top = marks[key]
                refs.append(ref)
                try:
                    top.append(max(seq, top[-1]) if top else seq)
                except OverflowError:
                    marks[key] = refs, top = refs, list(top)
                    top.append(max(seq, top[-1]) if top else seq)
    for r in sorted(r for s in shares for r in s.renewed):
        refs, top = marks.get((r[1], r[3]), ([], [])) if fast and r[4] is not None else ([], [])
        v = classify_renewed(checker, inputs, r, refs, top)
        if v is not None:
            yield v


def classify_renewed(checker, inputs, r: tuple, refs: list, top: list) -> Violation | None:
    """One NEW answer for a processed id, ``r`` = (verdict ref, node, id, sender, seq, commit ref,
    row ref), classified by its sender key's marks (``refs``: the refs of that key's commits at the
    node, in log order; ``top``: the running highest number at each)."""
    vref, node, mid, sender, seq, cref, rref = r
    fast = checker.spec.fast_path
    shown = f"committed before (line {(cref or rref) & ((1 << 40) - 1)})"
    rule, why = "CORDA-DEDUP-005", f"the deduplicator of node {node} answered NEW for {mid}, {shown}: the processed id was not found"
    if fast and seq is not None:
        i = bisect.bisect_left(refs, vref)
        if i == 0:
            rule, why = "CORDA-DEDUP-006", (f"node {node} answered NEW for {mid} ({shown}) with no high-water mark for "
                                            f"sender {sender}: the fast path skipped the database")
        elif seq > top[i - 1]:
            rule, why = "CORDA-DEDUP-007", (f"node {node} answered NEW for {mid} ({shown}): its sequence number {seq} is "
                                            f"above sender {sender}'s mark {top[i - 1]}, but the id was committed under another key")
    if checker.modes[rule] == OFF:
        return None
    refs = [(vref, "dedup", node)] + [(r, kind, node) for r, kind in ((cref, "committed"), (rref, "row")) if r is not None]
    return checker.violation(inputs, rule, mid, why, refs)


def _number(digits: str) -> tuple[int, str]:
    """Digits 0-9 as a key that orders as their number: (length, text) without leading zeros. An id
    may hold more digits than int() reads (4,300), and no number is needed, only the order."""
    digits = digits.lstrip("0")
    return len(digits), digits


def session_order(checker, inputs, shares, commits) -> Iterable[Violation]:
    """FIFO per session: a message committed after one of its session sent later. The send order comes
    from the sender's ``sent`` events where both were given, else from two N- ids of one flow (seed,
    suspends, index), else from one sender key's sequence numbers. (A commit's fact carries the ref
    of its id's first send, None where none was given.)

    The commits are read twice: first, in any order and without their ids, to learn which sessions
    have every send; then in log order, to judge each commit against what its session kept (the
    findings given per session, in the order the sessions first commit). Where every session has
    every send, the second pass reads no ids either (:func:`_sent_order_of`)."""
    all_sent: dict[tuple, bool] = {}    # (node, session) -> every message of it has its send
    for node, session, sent in fields_of((s.commits for s in shares), (1, 3, 6)):  # (in any order)
        key = (node, session)
        if sent is None:
            all_sent[key] = False
        elif key not in all_sent:
            all_sent[key] = True
    if all(all_sent.values()):
        yield from _sent_order_of(checker, inputs, shares)
        return
    state: dict[tuple, list] = {}
    found: dict[tuple, list] = {}
    for c in commits:
        key = (c[1], c[3])
        st = state.get(key)
        if st is None:
            # every message of the session has its send: the send order decides alone (the
            # fallbacks apply only to a message without one, or after one)
            st = state[key] = [None] if all_sent[key] else [None, {}, {}]
        if len(st) == 1:
            ahead = _sent_after(st, c[6], c)
            v = None if ahead is None else _consumed_after(
                checker, inputs, *key, c[2], ahead[1][2], _sent_refs(key[0], c[0], c[6], ahead[1][0], ahead[0]))
        else:
            v = _session_step(checker, inputs, key, st, c)
        if v is not None:
            found.setdefault(key, []).append(v)
    for vs in found.values():
        yield from vs


def _session_step(checker, inputs, key: tuple, st: list, c: tuple) -> Violation | None:
    """One commit of a session some of whose messages have no send: ``st`` holds the session's
    latest send (:func:`_sent_after`), and per flow seed and per sender key their highest commit
    ((suspends, index) or seq, commit)."""
    node, session = key
    _, top_flow, top_seq = st
    ref, _, mid, _, sender, seq, s = c
    ahead = None
    if s is not None:
        later = _sent_after(st, s, c)
        if later is not None:
            ahead = later[1]
    m = N_ID.match(mid)
    if m is not None:
        pos = (_number(m.group(2)), _number(m.group(3)))
        prev = top_flow.get(m.group(1))
        if ahead is None and prev is not None and prev[0] > pos and (s is None or prev[1][6] is None):
            ahead = prev[1]
        if prev is None or pos > prev[0]:
            top_flow[m.group(1)] = (pos, c)
    if seq is not None:
        prev = top_seq.get(sender)
        if ahead is None and prev is not None and prev[0] > seq and (s is None or prev[1][6] is None):
            ahead = prev[1]
        if prev is None or seq > prev[0]:
            top_seq[sender] = (seq, c)
    if ahead is not None:
        refs = [(ahead[0], "committed", node), (ref, "committed", node)]
        refs += [(x[6], "sent", None) for x in (c, ahead) if x[6] is not None]
        return _consumed_after(checker, inputs, node, session, mid, ahead[2], refs)
    return None


def _consumed_after(checker, inputs, node, session, mid: str, later: str, refs: list) -> Violation:
    """CORDA-ORDER-001: ``mid`` was committed after ``later``, which its session sent after it."""
    return checker.violation(inputs, "CORDA-ORDER-001", mid, f"session {session} on node {node}: {mid} was "
                             f"consumed after {later}, which was sent after it", refs)


def _sent_after(st: list, s: int, commit):
    """The send order's step for one commit of a session whose message has its send (at ref ``s``):
    the (send ref, commit) of the session's latest send where that came after ``s``, else None.
    ``st[0]`` keeps the session's latest send and its commit (the commit's fact, or its ref where
    ids are read after)."""
    got = st[0]
    if got is None or s > got[0]:
        st[0] = (s, commit)
    return got if got is not None and got[0] > s else None


def _sent_refs(node, ref: int, s: int, later_ref: int, later_s: int) -> list:
    """The evidence of a commit (at ``ref``, sent at ``s``) consumed after one sent later."""
    return [(later_ref, "committed", node), (ref, "committed", node), (s, "sent", None), (later_s, "sent", None)]


def _sent_order_of(checker, inputs, shares) -> Iterable[Violation]:
    """The sessions' order where every session has every send (:func:`_sent_after` for all of
    them): the commits read in log order without their ids, each finding's ids read after."""
    sent: dict[tuple, list] = {}  # (node, session) -> [(the latest send's ref, its commit's ref)]
    late: list[tuple] = []        # (node, session, commit ref, send ref, the later-sent commit's ref, its send ref)
    for ref, node, session, s in in_log_order((x.commits for x in shares), picked=(0, 1, 3, 6)):
        st = sent.get((node, session))
        if st is None:
            st = sent[(node, session)] = [None]
        ahead = _sent_after(st, s, ref)
        if ahead is not None:
            late.append((node, session, ref, s, ahead[1], ahead[0]))
    ids = ids_at((x.commits for x in shares), {r for f in late for r in (f[2], f[4])}, 0, 2)
    for node, session, ref, s, later_ref, later_s in late:
        yield _consumed_after(checker, inputs, node, session, ids[ref], ids[later_ref],
                              _sent_refs(node, ref, s, later_ref, later_s))


def sender_order(checker, inputs, commits) -> Iterable[Violation]:
    """Where the fast path trusts a sender key's mark, that key's messages must be committed in
    increasing sequence numbers at each node."""
    top: dict[tuple, tuple] = {}
    for c in commits:
        ref, node, mid, _, sender, seq, _ = c
        if seq is None:
            continue
        prev = top.get((node, sender))
        if prev is not None and prev[0] > seq:
            yield checker.violation(inputs, "CORDA-ORDER-002", mid, f"node {node} committed {mid} (sequence number {seq} of "
                                    f"sender {sender}) after {prev[1][2]} (number {prev[0]}): the mark had passed it",
                                    [(prev[1][0], "committed", node), (ref, "committed", node)])
        if prev is None or seq > prev[0]:
            top[(node, sender)] = (seq, c)


def sequence_numbers(checker, inputs, shares) -> Iterable[Violation]:
    """One sender key's sequence numbers are never reused for another id, and its sends carry them
    in increasing order.

    The uses are read once to find the numbers used for two ids, and, where there are any, once more
    in log order to gather those numbers' uses."""
    reused = _reused(shares)                    # (sender, seq) used for several ids
    first: dict[tuple, tuple] = {}              # (sender, seq) -> (id, ref) of its first use
    more: dict[tuple, dict] = {}                # (sender, seq) -> id -> its first use's ref, where several ids used it
    for sender, seq, mid, ref in _uses(shares) if reused else ():
        key = (sender, seq)
        if key not in reused:
            continue
        got = first.get(key)
        if got is None:
            first[key] = (mid, ref)
        elif got[0] != mid:
            more.setdefault(key, {got[0]: got[1]}).setdefault(mid, ref)
    for (sender, seq), uses in sorted(more.items(), key=lambda kv: first[kv[0]][1]):
        uses = list(uses.items())
        for mid, ref in uses[1:]:
            yield checker.violation(inputs, "CORDA-ID-003", mid, f"sender {sender} used sequence number {seq} for {mid} "
                                    f"and for {uses[0][0]}", [(uses[0][1], None, None), (ref, None, None)])
    # the sends in log order, read without their ids (each finding's ids read after)
    top: dict[str, tuple] = {}    # sender -> (its highest number sent, that send's ref)
    down: list[tuple] = []        # (sender, seq, ref, the higher number, its send's ref)
    for ref, sender, seq in in_log_order((s.sent_seqs for s in shares), picked=(0, 1, 2)):
        prev = top.get(sender)
        if prev is not None and seq < prev[0]:
            down.append((sender, seq, ref, prev[0], prev[1]))
        if prev is None or seq > prev[0]:
            top[sender] = (seq, ref)
    ids = ids_at((s.sent_seqs for s in shares), {r for f in down for r in (f[2], f[4])}, 0, 3)
    for sender, seq, ref, high, high_ref in down:
        yield checker.violation(inputs, "CORDA-ID-003", ids[ref], f"sender {sender} sent {ids[ref]} with sequence number "
                                f"{seq} after {ids[high_ref]} with {high}: one sender UUID's numbers only increase",
                                [(high_ref, "sent", None), (ref, "sent", None)])


def _reused(shares) -> set:
    """The (sender, seq) of every use whose number some use of the same sender key gave another id,
    and, rarely, a few more (the second pass of :func:`sequence_numbers` is exact).

    From the facts' columns as numbers (:meth:`.facts.Facts.numbers`): each use as two 64-bit
    numbers, a mix of its sender and number and its id, sorted; where a dict of every number's first
    id would hold objects per use. Two (sender, number) that mix alike, or one id in two shares (an
    id is told by its number in its share's key store), only make a number looked at again."""
    np = numpy_module()  # (here: a share's process need not load it)

    senders: dict = {}    # a sender -> its code here
    domains: dict = {}    # the store (or facts) an id's number is of -> its code here
    parts = []
    for s in shares:
        for facts, fields in ((s.sent_seqs, (1, 2, 3)), (s.seqs, (0, 1, 2))):
            if not isinstance(facts, Facts):
                return _reused_by_dict(shares)
            if not len(facts):
                continue
            if facts.shape[fields[0]] != "s":
                return _reused_by_dict(shares)
            code = np.array([senders.setdefault(v, len(senders)) for v in facts.names], dtype=np.int64)
            codes = facts.numbers(fields[0])
            seqs = facts.numbers(fields[1])
            if codes is None or seqs is None:
                return _reused_by_dict(shares)
            mixed = _mix(code[codes], seqs)
            del codes, seqs
            ids = facts.numbers(fields[2])
            if ids is None:
                return _reused_by_dict(shares)
            domain = facts.keys if facts.shape[fields[2]] == "k" else facts
            ids += domains.setdefault(id(domain), len(domains)) << 32
            parts.append((mixed, ids))
    if not parts:
        return set()
    mixed, ids = (np.concatenate(p) if len(p) > 1 else p[0] for p in zip(*parts))
    del parts
    order = np.lexsort((ids, mixed))
    mixed, ids = mixed[order], ids[order]
    del order
    at = np.nonzero((mixed[1:] == mixed[:-1]) & (ids[1:] != ids[:-1]))[0]
    wanted = set(mixed[at].tolist())
    del mixed, ids
    if not wanted:
        return set()
    return {(sender, seq) for sender, seq, _mid, _ref in _uses(shares)
            if _mix_one(senders[sender], -1 if seq is None else seq) in wanted}


_MIX = 0x9E3779B97F4A7C15


def _mix(senders, seqs):
    """A sender's code and a number mixed into one 64-bit number (wrapping)."""
    np = numpy_module()

    with np.errstate(over="ignore"):
        return seqs * np.int64(_MIX - (1 << 64)) + senders


def _mix_one(sender: int, seq: int) -> int:
    """:func:`_mix` of one use."""
    v = (seq * _MIX + sender) & ((1 << 64) - 1)
    return v - (1 << 64) if v >= 1 << 63 else v


def _reused_by_dict(shares) -> set:
    """:func:`_reused` where the facts are not all columns of numbers: each number's first id per sender key."""
    ids: dict = {}                  # sender -> seq -> the id of its first use
    reused: set = set()
    for sender, seq, mid, _ref in _uses(shares):
        got = ids.setdefault(sender, {}).setdefault(seq, mid)
        if got != mid:
            reused.add((sender, seq))
    return reused


def _uses(shares) -> Iterable[tuple]:
    """Every use of a sequence number, in log order: (sender, seq, id, ref) of each send that carries
    one and of each received copy whose send did not carry it."""
    sends = ((sender, seq, mid, ref) for ref, sender, seq, mid in in_log_order(s.sent_seqs for s in shares))
    return merged([sends, in_log_order((s.seqs for s in shares), key=_REF3)], key=_REF3)
