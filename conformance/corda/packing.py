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

import msgspec

from rmkit.conformance.corda.state import Track


class Settled(msgspec.Struct, gc=False):
    """A packed track in its place among the share's tracks."""

    blob: bytes                    # the track, its rows (and node, id) left out
    node: str
    tx: int                        # its one commit's transaction
    na_t: int                      # the time of its one NEW answer before the commit (-1: none)
    rows: tuple = ()               # of Commit, as :attr:`Track.rows`
    gap = True                     # (class attribute: the share's fast lookup, ``not t.gap``, passes it by)

    def fast_judged(self) -> bool:
        """judge_track's fast case: nothing it judges applies."""
        rows = self.rows
        return bool(rows) and self.tx == rows[0].tx and self.na_t <= rows[0].t


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


def pack(tr: Track) -> Settled:
    """``tr`` packed (it is emptied of its node, id and rows: the caller drops it)."""
    node, rows, na = tr.node, tr.rows, tr.new_after
    tr.node = tr.mid = ""
    tr.rows = ()
    return Settled(_encode(tr), node, tr.commits[0].tx, na[0].t if na else -1, rows)


def unpack(s: Settled, mid: str) -> Track:
    tr = _decode(s.blob)
    tr.node, tr.mid, tr.rows = s.node, mid, s.rows
    return tr
