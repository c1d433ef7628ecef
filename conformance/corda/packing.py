"""The exact Corda check's settled tracks, packed: a message's track (:class:`.state.Track`) whose
copies are all settled after its one commit is kept as its MessagePack bytes beside the few facts
the records that still commonly come for it are judged by, and unpacked, exactly as it was, when
any other record of it comes.

Why: without a declared bound the documents bound no message's life, so the exact check keeps
every track to the end of the log (a redelivery, a second commit or the export's row may come at
any time, and each is judged against the whole track). Kept as objects, a settled message's track
costs most of a kilobyte (a Struct per copy and commit, an int object per number); packed, under
half. The packing is lossless, so when a track is packed changes no finding, only the time spent.

What a packed track (:class:`Settled`: one bytes object and three references) answers without
unpacking: its node, its commit's transaction and its rows, so that its processed-ids row (the export, most often read after the
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
    """A packed track in its place among the share's tracks: one bytes object (``data``) and the
    names of its id's first send, where the share keeps that send here (:meth:`sent_fact`)."""

    data: bytes                    # _HEAD, the track's MessagePack bytes (its node, id and rows left
    #                                out), then each row's ref, transaction, time (_ROW)
    node: str
    sent_node: str | None = None
    sent_session: str | None = None
    sent_sender: str | None = None
    gap = True                     # (class attribute: the share's fast lookup, ``not t.gap``, passes it by)

    def _rows_at(self) -> int:
        return _HEAD.size + _HEAD.unpack_from(self.data)[4]

    @property
    def rows(self) -> tuple:
        """Its rows, as :attr:`Track.rows`."""
        data = self.data
        return tuple(Commit(*_ROW.unpack_from(data, i)) for i in range(self._rows_at(), len(data), _ROW.size))

    @property
    def nrows(self) -> int:
        return (len(self.data) - self._rows_at()) // _ROW.size

    def add_row(self, ref: int, tx: int, t: int) -> int:
        """Take a row: how many it has now; 0 where its numbers do not pack (then unpack the track and
        add it there)."""
        try:
            data = self.data = self.data + _ROW.pack(ref, tx, t)
        except struct.error:
            return 0
        return (len(data) - _HEAD.size - _SIZE.unpack_from(data, _SIZE_AT)[0]) // _ROW.size

    def fast_judged(self) -> bool:
        """judge_track's fast case: nothing it judges applies."""
        data = self.data
        tx, na_t, _sref, _sseq, size = _HEAD.unpack_from(data)
        at = _HEAD.size + size
        if len(data) == at:
            return False
        _ref, row_tx, row_t = _ROW.unpack_from(data, at)
        return tx == row_tx and na_t - 1 <= row_t

    def sent_fact(self, mid: str) -> tuple | None:
        """The share's fact of its id's first send, (ref, node, id, session, sender, seq), where it is
        kept here."""
        if self.sent_node is None:
            return None
        _tx, _na, ref, seq, _size = _HEAD.unpack_from(self.data)
        return (ref - 1, self.sent_node, mid, self.sent_session, self.sent_sender, seq - 1 if seq else None)


# its one commit's transaction, the time of its one NEW answer before the commit, its id's first
# send's ref and seq (each plus one; 0: none), the length of the track's bytes
_HEAD = struct.Struct("<QQQQI")
_ROW = struct.Struct("<QQQ")
_SIZE, _SIZE_AT = struct.Struct("<I"), 32  # (the last field of _HEAD alone)
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
    na, rows, node, mid = tr.new_after, tr.rows, tr.node, tr.mid
    tr.node = tr.mid = ""
    tr.rows = ()
    try:
        blob = _encode(tr)
        head = _HEAD.pack(tr.commits[0].tx, na[0].t + 1 if na else 0, sent[0] + 1 if sent else 0,
                          sent[5] + 1 if sent and sent[5] is not None else 0, len(blob))
        data = b"".join((head, blob, *(_ROW.pack(r.ref, r.tx, r.t) for r in rows)))
    except (struct.error, OverflowError):
        tr.node, tr.mid, tr.rows = node, mid, rows  # (the caller keeps the track as it was)
        return None
    if sent is None:
        return Settled(data, node)
    return Settled(data, node, sent[1], sent[3], sent[4])


def unpack(s: Settled, mid: str) -> Track:
    data = s.data
    tr = _decode(data[_HEAD.size:s._rows_at()])
    tr.node, tr.mid, tr.rows = s.node, mid, s.rows
    return tr
