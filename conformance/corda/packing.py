# cython: annotation_typing=False
"""The exact Corda check's settled tracks, packed: a message's track (:class:`.state.Track`) whose
copies are all settled after its one commit is kept as a few dozen bytes in the share's key store
(:class:`rmkit.keystore.KeyStore`, keyed by the message id), and unpacked, exactly as it was, when
any other record of it comes.

Why: without a declared bound the documents bound no message's life, so the exact check keeps
every track to the end of the log (a redelivery, a second commit or the export's row may come at
any time, and each is judged against the whole track). Kept as objects, a settled message's track
and its id cost most of a kilobyte; packed, its memo holds its numbers relative to its first
record (a byte or two each), the names it repeats (sender, session, answer, what was done) as codes
of the share's names, and its id lives once in the store's arena. The packing is lossless, so when
a track is packed changes no finding, only the time spent.

What a packed track answers without unpacking: its node and its commit's transaction, so that its
processed-ids row (the export, most often read after the events) is taken into columns of its own
beside the memo; and at the share's end, whether the fast judgement of
:meth:`.share._ShareRun.judge_track` applies (committed once, the row of that transaction inserted
no earlier than its one NEW answer before the commit), decided as the row came. Anything else
(a second row too) unpacks it.
"""

from __future__ import annotations

from array import array

import msgspec

from rmkit.keystore import KeyStore

try:
    import cython
except ImportError:  # not compiled, and Cython not installed
    from rmkit import _cython_shadow as cython

from rmkit.conformance.corda.state import Commit, Copy, NewAnswer, Track

if cython.compiled:  # the state's C types (state.pxd): a track's fields read as struct fields
    from cython.cimports.rmkit.conformance.corda.state import Commit as CommitT, Copy as CopyT, \
        NewAnswer as NewAnswerT, Track as TrackT
    # the key store's (rmkit/keystore.pxd): its add, put and memo are C calls
    from cython.cimports.rmkit.keystore import KeyStore as KeyStoreT
    # the rows' columns, written in place
    from cython.cimports.cpython.array import array as CArray
else:
    CommitT = CopyT = NewAnswerT = TrackT = KeyStoreT = CArray = None

# A track of more copies than this is not packed: a message redelivered that often is likely to be
# redelivered again, and each copy would unpack and pack it once more.
MAX_COPIES = 4
# Names (senders, sessions, answers) coded by their number in the share's list of names, up to this
# many; a name beyond them is kept in the memo as it is (a log whose every message has a session of
# its own would otherwise keep a list entry per message).
MAX_NAMES = 1 << 16

# The ids packed last whose numbers are kept at hand (:attr:`PackedTracks.recent`): a few chunks of
# facts (:attr:`.facts.Facts.CHUNK`).
RECENT = 1 << 14
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder().decode


class _Head(msgspec.Struct, array_like=True, gc=False):
    """A memo (:meth:`PackedTracks.pack`) read for its row alone: its copies and send left unread."""

    node: int | str
    first: int
    t0: int
    commit_dref: int
    tx: int
    copies: msgspec.Raw
    na: tuple | None
    acked: msgspec.Raw
    sent: msgspec.Raw


_decode_head = msgspec.msgpack.Decoder(_Head).decode
_NO_ROW = -1


class _Codes(dict):
    """Name -> its code in ``names``: a name not coded yet is given the next (a str in a memo is a
    name kept as it is, an int a code)."""

    def __init__(self, names: list):
        super().__init__({None: 0})
        self.names = names

    def __missing__(self, name):
        if type(name) is not str or len(self.names) >= MAX_NAMES:
            return name  # (kept as it is)
        code = self[name] = len(self.names)
        self.names.append(name)
        return code


@cython.cfunc  # (compiled, a C call: one per row taken and per track packed with its row)
def _fits(ref: int, dtx: int, dt: int) -> bool:
    """A row's ref (64 bits) and differences from its commit (32 bits) fit its columns."""
    return 0 <= ref < 1 << 63 and -1 << 31 <= dtx < 1 << 31 and -1 << 31 <= dt < 1 << 31


@cython.locals(tr=TrackT, c=CopyT)
def packable(tr: Track) -> bool:
    """Committed once, no acknowledgement before the commit, at most one NEW answer before it, at
    most one row, every copy settled, every line read: a track no record but its row is expected for."""
    copies = tr.copies
    if len(tr.commits) != 1 or tr.acks or len(tr.new_after) > 1 or tr.gap or len(tr.rows) > 1 or len(copies) > MAX_COPIES:
        return False
    for c in copies:
        if not c.done:
            return False
    return True


@cython.cclass
class PackedTracks:
    """The packed tracks of one share, each in ``store`` under its message id (the store the share's
    facts refer to ids by), with the names their memos code and the row each took since. (Compiled,
    a C class: what it reads per track packed and per row taken is C fields.)"""

    store = cython.declare(KeyStoreT, visibility="public")
    names = cython.declare(list, visibility="public")
    codes = cython.declare(object, visibility="public")
    row_ref = cython.declare(object, visibility="public")
    row_dtx = cython.declare(object, visibility="public")
    row_dt = cython.declare(object, visibility="public")
    fast = cython.declare(bytearray, visibility="public")
    recent = cython.declare(dict, visibility="public")
    find = cython.declare(object, visibility="public")

    def __init__(self, store: KeyStore):
        self.store = store
        self.names: list = [None]           # code -> name (0: None)
        self.codes = _Codes(self.names)
        # per key number of the store: the row taken while packed (ref -1: none; its transaction and
        # time as their differences from the commit's, which fit 32 bits, else the row is not taken),
        # and whether it made judge_track's fast case hold (1)
        self.row_ref, self.row_dtx, self.row_dt = array("q"), array("i"), array("i")
        self.fast = bytearray()
        # the ids packed last -> their numbers: the facts of an id, appended before it was packed, are
        # moved to their columns a few thousand facts later, and find its number here (:meth:`number`)
        self.recent: dict[str, int] = {}
        # The store's number of an id whose track is packed, else -1 (the store's own method: called
        # twice per id, once by its send and once by its row)
        self.find = store.held

    def number(self, mid: str) -> int:
        """``mid``'s number in the store (added where it is new)."""
        n = self.recent.get(mid)
        return n if n is not None else self.store.add(mid)

    def __len__(self) -> int:
        return self.store.memos

    @cython.cfunc
    def _name(self, code):
        return self.names[code] if type(code) is int else code

    # packing ---------------------------------------------------------------------------------
    @cython.locals(tr=TrackT, c=CopyT, commit=CommitT, a=NewAnswerT, row=CommitT)
    def pack(self, tr: Track, sent: tuple | None = None) -> bool:
        """``tr`` packed under its id, with its id's send (``sent``, the share's fact) where given;
        False where a number does not pack (beyond 64 bits: the caller keeps the track)."""
        # (``codes[name]`` rather than a bound ``__getitem__``: the dict's own subscript, which
        # calls ``__missing__`` only for a name not coded yet; a call per name cost more)
        first, codes = tr.first, self.codes
        (commit,) = tr.commits
        t0 = commit.t
        copies = []
        for c in tr.copies:  # (a loop, not a comprehension: its copy is then read as a C type)
            copies.append((c.ref - first, c.delivery, codes[c.sender], c.seq, codes[c.session], codes[c.verdict],
                           c.vref - first if c.vref else None, codes[c.done], c.unread))
        na = None
        if tr.new_after:
            a = tr.new_after[0]
            na = (a.ref - first, a.t - t0, codes[a.sender], a.seq)
        memo = (codes[tr.node], first, t0, commit.ref - first, commit.tx, copies, na,
                tr.acked - first if tr.acked else None,
                (sent[0], codes[sent[1]], codes[sent[3]], codes[sent[4]], sent[5]) if sent is not None else None)
        try:
            data = _encode(memo)
        except OverflowError:
            return False
        row = tr.rows[0] if tr.rows else None
        if row is not None and not _fits(row.ref, row.tx - commit.tx, row.t - t0):
            return False
        store = self.store
        n = store.add(tr.mid)
        store.put(n, data)
        recent = self.recent
        if len(recent) >= RECENT:
            recent.clear()
        recent[tr.mid] = n
        if n >= len(self.row_ref):
            self._grow(n)
        if row is not None:
            self._take_row(n, row.ref, row.tx, row.t, commit.tx, t0, a.t if na is not None else None)
        else:
            self.row_ref[n] = _NO_ROW
        return True

    def _grow(self, n: int) -> None:
        more = n + 1 - len(self.row_ref)
        if more > 0:
            more = max(more, 4096)
            self.row_ref.extend(array("q", [_NO_ROW]) * more)
            self.row_dtx.extend(array("i", [0]) * more)
            self.row_dt.extend(array("i", [0]) * more)
            self.fast.extend(bytes(more))

    @cython.cfunc
    @cython.locals(n=cython.Py_ssize_t, refs=CArray, dtx=CArray, dt=CArray)
    def _take_row(self, n: int, ref: int, tx: int, t: int, commit_tx: int, t0: int, na_t: int | None) -> None:
        fast = tx == commit_tx and (na_t is None or na_t <= t)
        if cython.compiled:  # (the cells written in place; _fits held the numbers to their widths)
            refs, dtx, dt = self.row_ref, self.row_dtx, self.row_dt
            if not 0 <= n < len(refs):
                raise IndexError(n)
            refs.data.as_longlongs[n] = ref
            dtx.data.as_ints[n] = tx - commit_tx
            dt.data.as_ints[n] = t - t0
            self.fast[n] = fast
            return
        self.row_ref[n], self.row_dtx[n], self.row_dt[n] = ref, tx - commit_tx, t - t0
        self.fast[n] = fast

    @cython.cfunc
    def _memo(self, n: int) -> list:
        return _decode(self.store.memo(n))

    def node(self, n: int) -> str:
        """The node of the packed track ``n``."""
        return self._name(self._memo(n)[0])

    def add_row(self, n: int, node: str, ref: int, tx: int, t: int) -> bool:
        """The packed track ``n`` takes a row of ``node``'s export, where it is its node's track, has
        none yet and its numbers fit; False: the caller unpacks it (or it is another node's)."""
        if self.row_ref[n] != _NO_ROW:
            return False
        head = _decode_head(self.store.memo(n))
        t0, commit_tx = head.t0, head.tx
        if self._name(head.node) != node or not _fits(ref, tx - commit_tx, t - t0):
            return False
        na = head.na
        self._take_row(n, ref, tx, t, commit_tx, t0, None if na is None else na[1] + t0)
        return True

    def fast_judged(self, n: int) -> bool:
        """judge_track's fast case holds for the packed track ``n`` (nothing it judges applies)."""
        return self.fast[n] == 1

    def sent_fact(self, n: int, mid: str) -> tuple | None:
        """The share's fact of the id's first send, (ref, node, id, session, sender, seq), where the
        packed track ``n`` keeps it."""
        sent = self._memo(n)[8]
        if sent is None:
            return None
        return (sent[0], self._name(sent[1]), mid, self._name(sent[2]), self._name(sent[3]), sent[4])

    def unpack(self, n: int, mid: str) -> Track:
        """The packed track ``n`` as it was (``mid``: its id), no longer packed."""
        track = self.peek(n, mid)
        self.store.drop(n)
        self.row_ref[n] = _NO_ROW
        self.fast[n] = 0
        return track

    def peek(self, n: int, mid: str) -> Track:
        """The packed track ``n`` as it was, left packed."""
        node, first, t0, commit_dref, tx, copies, na, acked, _sent = self._memo(n)
        tr = Track(self._name(node), mid, first,
                   [Copy(ref + first, delivery, self._name(sender), seq, self._name(session), self._name(verdict),
                         vref + first if vref is not None else 0, self._name(done), unread)
                    for ref, delivery, sender, seq, session, verdict, vref, done, unread in copies],
                   commits=(Commit(commit_dref + first, tx, t0),),
                   acked=acked + first if acked is not None else 0)
        if na is not None:
            tr.new_after = (NewAnswer(na[0] + first, na[1] + t0, self._name(na[2]), na[3]),)
        if self.row_ref[n] != _NO_ROW:
            tr.rows = (Commit(self.row_ref[n], tx + self.row_dtx[n], t0 + self.row_dt[n]),)
        return tr

    def numbers(self):
        """The store numbers of the packed tracks."""
        return self.store.numbers_held()
