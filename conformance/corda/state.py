"""What the Corda log checker remembers of one message on one node while it reads: one small
named class per kind of state.

Why msgspec Structs with ``gc=False``: they are slotted classes (no ``__dict__``, named fields
read as ``tr.commits``, not ``tr[3]``) that Python makes faster than a plain ``__slots__`` class,
and there is one per delivery and per commit; they hold no reference cycles, so the collector
need not track them; and they pickle, as a share travels between processes (``--jobs``,
``rmkit audit``). They are ``array_like``: a track packed (:mod:`.packing`) is its fields' values in
order, without their names.
"""

from __future__ import annotations

import msgspec


class Copy(msgspec.Struct, gc=False, array_like=True):
    """One copy of a message a node received (a delivery), and what the node did with it."""

    ref: int
    delivery: str | None
    sender: str | None
    seq: int | None
    session: str | None
    verdict: str | None = None   # the spec's answer: NEW, DUPLICATE, IN_FLIGHT
    vref: int = 0                # the ref of its dedup line (0: none yet)
    done: str | None = None      # acked | discarded | committed
    unread: bool = False         # its received line was unreadable: what it carries is partly unknown


class Commit(msgspec.Struct, gc=False, array_like=True):
    """A committed event, or a processed-ids row (the transaction that inserted the id): where, which
    transaction, when."""

    ref: int
    tx: int
    t: int


class Ack(msgspec.Struct, gc=False, array_like=True):
    """An acknowledgement that came before any commit of its message (CORDA-ACK-001 judges it at the
    message's end, when the row that may excuse it is known)."""

    ref: int
    t: int
    answer: str                  # the acknowledged copy's answer, or "no answer"
    copy_ref: int | None         # the copy's received line
    verdict_ref: int | None      # its dedup line


class NewAnswer(msgspec.Struct, gc=False, array_like=True):
    """A NEW answer that came before any commit of its message: a row inserted before it shows the
    deduplicator answered NEW for a processed id (CORDA-DEDUP-005/006/007)."""

    ref: int
    t: int
    sender: str | None
    seq: int | None


class Track(msgspec.Struct, gc=False, array_like=True):
    """One message id on one node (its lists made when first needed)."""

    node: str
    mid: str
    first: int                     # the ref of the record that opened it (its place at the share's end)
    copies: list[Copy]
    commits: tuple[Commit, ...] = ()       # committed events in log order
    rows: tuple[Commit, ...] = ()          # processed-ids rows in log order
    acks: tuple[Ack, ...] = ()
    new_after: tuple[NewAnswer, ...] = ()
    acked: int = 0                 # the ref of the last acknowledgement (0: none)
    gap: bool = False              # a line of it was unreadable: what follows may lack its cause


class Memo(msgspec.Struct, gc=False, array_like=True):
    """What stays of a judged message for the declared bound (streaming mode): its first commit and
    first row, against which a record that comes after its judgement is still judged."""

    node: str
    commit: Commit | None
    row: Commit | None
