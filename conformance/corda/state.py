# cython: annotation_typing=False
"""What the Corda log checker remembers of one message on one node while it reads: one small
named class per kind of state.

Why ``__slots__`` classes: there is one per delivery and per commit, so each must stay small, and
a rule handler must read ``tr.commits`` rather than ``tr[3]``. They hold no reference cycles, and
they pickle (by their slots), as the tests copy them and a share's state may travel between
processes.

Compiled (setup.py), each class is a C type whose fields ``state.pxd`` declares: the share's run
(:mod:`.share`) and the packing (:mod:`.packing`), which cimport them, read and write a track's
and a copy's fields as C struct fields rather than through the slots' descriptors. As Python the
same classes are the slotted classes they read as.
"""

from __future__ import annotations


class _Slotted:
    """The repr, equality (same class, equal fields) and pickling of the slotted classes below."""

    __slots__ = ()

    def _fields(self) -> tuple:
        return tuple([getattr(self, n) for n in self.__slots__])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # (mutable: as a dataclass with eq)

    def __reduce__(self):
        return _rebuilt, (type(self), self._fields())


def _rebuilt(cls, fields: tuple):
    """An instance of ``cls`` with ``fields`` in slot order (how the classes here unpickle)."""
    obj = cls.__new__(cls)
    for name, value in zip(cls.__slots__, fields):
        setattr(obj, name, value)
    return obj


class Copy(_Slotted):
    """One copy of a message a node received (a delivery), and what the node did with it."""

    __slots__ = ("ref", "delivery", "sender", "seq", "session", "verdict", "vref", "done", "unread")

    def __init__(self, ref: int, delivery: str | None, sender: str | None, seq: int | None, session: str | None,
                 verdict: str | None = None, vref: int = 0, done: str | None = None, unread: bool = False):
        self.ref = ref
        self.delivery = delivery
        self.sender = sender
        self.seq = seq
        self.session = session
        self.verdict = verdict      # the spec's answer: NEW, DUPLICATE, IN_FLIGHT
        self.vref = vref            # the ref of its dedup line (0: none yet)
        self.done = done            # acked | discarded | committed
        self.unread = unread        # its received line was unreadable: what it carries is partly unknown


class Commit(_Slotted):
    """A committed event, or a processed-ids row (the transaction that inserted the id): where, which
    transaction, when."""

    __slots__ = ("ref", "tx", "t")

    def __init__(self, ref: int, tx: int, t: int):
        self.ref = ref
        self.tx = tx
        self.t = t


class Ack(_Slotted):
    """An acknowledgement that came before any commit of its message (CORDA-ACK-001 judges it at the
    message's end, when the row that may excuse it is known)."""

    __slots__ = ("ref", "t", "answer", "copy_ref", "verdict_ref")

    def __init__(self, ref: int, t: int, answer: str, copy_ref: int | None, verdict_ref: int | None):
        self.ref = ref
        self.t = t
        self.answer = answer            # the acknowledged copy's answer, or "no answer"
        self.copy_ref = copy_ref        # the copy's received line
        self.verdict_ref = verdict_ref  # its dedup line


class NewAnswer(_Slotted):
    """A NEW answer that came before any commit of its message: a row inserted before it shows the
    deduplicator answered NEW for a processed id (CORDA-DEDUP-005/006/007)."""

    __slots__ = ("ref", "t", "sender", "seq")

    def __init__(self, ref: int, t: int, sender: str | None, seq: int | None):
        self.ref = ref
        self.t = t
        self.sender = sender
        self.seq = seq


class Track(_Slotted):
    """One message id on one node (its lists made when first needed)."""

    __slots__ = ("node", "mid", "first", "copies", "commits", "rows", "acks", "new_after", "acked", "gap")

    def __init__(self, node: str, mid: str, first: int, copies: list, commits: tuple = (), rows: tuple = (),
                 acks: tuple = (), new_after: tuple = (), acked: int = 0, gap: bool = False):
        self.node = node
        self.mid = mid
        self.first = first            # the ref of the record that opened it (its place at the share's end)
        self.copies = copies          # Copy, in log order
        self.commits = commits        # Commit: committed events in log order
        self.rows = rows              # Commit: processed-ids rows in log order
        self.acks = acks              # Ack
        self.new_after = new_after    # NewAnswer
        self.acked = acked            # the ref of the last acknowledgement (0: none)
        self.gap = gap                # a line of it was unreadable: what follows may lack its cause


class Memo(_Slotted):
    """What stays of a judged message for the declared bound (streaming mode): its first commit and
    first row, against which a record that comes after its judgement is still judged."""

    __slots__ = ("node", "commit", "row")

    def __init__(self, node: str, commit: Commit | None, row: Commit | None):
        self.node = node
        self.commit = commit
        self.row = row
