"""The exact Corda check's settled tracks, packed: a message's track (:class:`.state.Track`) whose
copies are all settled after its one commit is kept as its MessagePack bytes beside the few facts
the records that still commonly come for it are judged by, and unpacked, exactly as it was, when
any other record of it comes.

Why: without a declared bound the documents bound no message's life, so the exact check keeps
every track to the end of the log (a redelivery, a second commit or the export's row may come at
any time, and each is judged against the whole track). Kept as objects, a settled message's track
costs most of a kilobyte (a Struct per copy and commit, an int object per number); packed, under
half. The packing is lossless, so when a track is packed changes no finding, only the time spent.

What a packed track (:class:`Settled`) answers without unpacking: its node, its commit's
transaction and its rows, so that its processed-ids row (the export, most often read after the
events) is taken as the row of an unpacked track is; and at the share's end, whether the fast
judgement of :meth:`.share._ShareRun.judge_track` applies (committed once, the row of that
transaction inserted no earlier than its one NEW answer before the commit), which needs nothing
else. Anything else unpacks it.
"""

from __future__ import annotations

import struct

import msgspec

from rmkit.conformance.corda.state import Commit, Track


class Settled(msgspec.Struct, gc=False):
    """A packed track in its place among the share's tracks."""

    blob: bytes                    # the track, its rows (and node, id) left out
    node: str
    nums: bytes                    # its one commit's transaction, the time of its one NEW answer before the
    #                                commit, its id's first send's ref and seq (each plus one; 0: none), then
    #                                each row's ref, transaction, time
    sent_names: tuple | None = None  # (node, session, sender) of its id's first send, where the share's
    #                                  send of the id is kept here (:func:`sent_fact`)
    gap = True                     # (class attribute: the share's fast lookup, ``not t.gap``, passes it by)

    @property
    def rows(self) -> tuple:
        """Its rows, as :attr:`Track.rows`."""
        nums = self.nums
        return tuple(Commit(*_ROW.unpack_from(nums, i)) for i in range(_HEAD.size, len(nums), _ROW.size))

    @property
    def nrows(self) -> int:
        return (len(self.nums) - _HEAD.size) // _ROW.size

    def add_row(self, ref: int, tx: int, t: int) -> bool:
        """Take a row; False where its numbers do not pack (then unpack the track and add it there)."""
        try:
            self.nums += _ROW.pack(ref, tx, t)
        except struct.error:
            return False
        return True

    def fast_judged(self) -> bool:
        """judge_track's fast case: nothing it judges applies."""
        nums = self.nums
        if len(nums) == _HEAD.size:
            return False
        tx, na_t, _sref, _sseq = _HEAD.unpack_from(nums)
        _ref, row_tx, row_t = _ROW.unpack_from(nums, _HEAD.size)
        return tx == row_tx and na_t - 1 <= row_t

    def sent_fact(self, mid: str) -> tuple | None:
        """The share's fact of its id's first send, (ref, node, id, session, sender, seq), where it is
        kept here."""
        names = self.sent_names
        if names is None:
            return None
        _tx, _na, ref, seq = _HEAD.unpack_from(self.nums)
        return (ref - 1, names[0], mid, names[1], names[2], seq - 1 if seq else None)


_HEAD = struct.Struct("<QQQQ")
_ROW = struct.Struct("<QQQ")
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Track).decode


# A track of more copies than this is not packed: a message redelivered that often is likely to be
# redelivered again, and each copy would unpack and pack it once more.
MAX_COPIES = 4


def packable(tr: Track) -> bool:
    """Committed once, no acknowledgement before the commit, at most one NEW answer before it,
    every copy settled, every line read: a track no record but its row is expected for."""
    copies = tr.copies
    return (len(tr.commits) == 1 and not tr.acks and len(tr.new_after) <= 1 and not tr.gap
            and len(copies) <= MAX_COPIES and all(c.done for c in copies))


def pack(tr: Track, sent: tuple | None = None) -> Settled | None:
    """``tr`` packed (emptied of its node, id and rows: the caller drops it), with its id's send
    (``sent``, the share's fact) where given; None where a number does not pack (more than 64 bits:
    it stays a Track)."""
    na = tr.new_after
    try:
        head = _HEAD.pack(tr.commits[0].tx, na[0].t + 1 if na else 0, sent[0] + 1 if sent else 0,
                          sent[5] + 1 if sent and sent[5] is not None else 0)
        nums = head + b"".join(_ROW.pack(r.ref, r.tx, r.t) for r in tr.rows)
    except struct.error:
        return None
    node = tr.node
    tr.node = tr.mid = ""
    tr.rows = ()
    return Settled(_encode(tr), node, nums, (sent[1], sent[3], sent[4]) if sent else None)


def unpack(s: Settled, mid: str) -> Track:
    tr = _decode(s.blob)
    tr.node, tr.mid, tr.rows = s.node, mid, s.rows
    return tr
