# cython: annotation_typing=False
"""What the REMP log checker remembers while it reads: one small named class per kind of state.

Why ``__slots__`` classes and not lists or dicts: a log of millions of receipts keeps tens of
thousands of these open at once, so each must stay small, and a rule handler
(:mod:`.handlers`) must read ``st.last_kind`` rather than ``st[3]``. Slots cost no more memory
than a list and are as quick to read; every class here pickles (by its slots), since a share of a
sharded run (``rmkit check --jobs``, ``rmkit audit``) travels between processes with its open
messages.

Compiled (setup.py), each class is a C type whose fields ``state.pxd`` declares: the checker
(:mod:`.checker`), which cimports them, reads and writes a receipt's message and source as C
struct fields rather than through the slots' descriptors. As Python the same classes are the
slotted classes they read as.
"""

from __future__ import annotations

from array import array

NEVER = 1 << 64  # beyond every timestamp (a receipt's is a 64-bit integer)


class _Slotted:
    """A readable repr for the slotted classes below (no ``__dict__`` to show)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class SourceState(_Slotted):
    """One source's part in one message: where its receipts took it in its role's state machine."""

    __slots__ = ("role", "pos", "last_ref", "last_kind", "queued", "first_t", "receipts")

    def __init__(self, role: str, ref: int, kind: str, t: int | None):
        self.role = role  # the role its receipts were read in
        self.pos = "none"  # its position in the role's machine (transitions.yaml)
        self.last_ref = ref  # its latest receipt (the evidence of a breach that follows)
        self.last_kind = kind
        self.queued: bool | None = None  # True once it reported a kind of the model's queued_mask
        self.first_t = t  # the time of its first receipt (the per-source latency)
        self.receipts = 0


class BlockState(_Slotted):
    """A block an inclusion receipt named for one message."""

    __slots__ = ("first_t", "accepted", "collator", "collator_ref")

    def __init__(self, t: int | None):
        self.first_t = t  # time of its first inclusion receipt (REMP-EXPIRY-001)
        self.accepted = False  # an IncludedIntoAcceptedBlock named it (REMP-FIN-002)
        self.collator: str | None = None  # source of its first IncludedIntoBlock (REMP-BLOCK-001)
        self.collator_ref: int | None = None  # that receipt


class Final(_Slotted):
    """A message's first Finalized: the block it names, the receipt, its time and source."""

    __slots__ = ("block", "ref", "t", "src")

    def __init__(self, block: str, ref: int, t: int | None, src: str | None):
        self.block = block
        self.ref = ref
        self.t = t
        self.src = src


class Tomb(_Slotted):
    """What stays of a judged message for one more horizon: enough to know a later receipt of it
    as late (or as a new submission after its lifetime) and to check it for replay."""

    __slots__ = ("fin", "first_t", "id")

    def __init__(self, fin: Final | None, first_t: int | None, mid: str):
        self.fin = fin
        self.first_t = first_t
        self.id = mid


class MessageState(_Slotted):
    """What the checker remembers about one open message."""

    __slots__ = ("id", "first_ref", "first_t", "close_t", "last_seq", "srcs", "kmask", "fin", "blocks",
                 "fn_rej", "sent_t", "put_t", "seen", "seen_bits", "fin_count", "blk", "total")

    def __init__(self, mid: str, ref: int, t: int | None, seq: int, close_after_ms: int):
        self.id = mid
        self.first_ref = ref
        self.first_t = t
        # the clock past which the message closes (its first time + the close delay; never without a time)
        self.close_t = t + close_after_ms if t is not None else NEVER
        self.last_seq = seq
        self.srcs: dict[str, SourceState] = {}
        self.kmask = 0  # bits of the kinds seen (KindInfo.bit)
        self.fin: Final | None = None  # the first Finalized
        self.fin_count = 0
        self.blocks: dict[str, BlockState] | None = None  # blocks named by inclusion receipts (made when needed)
        self.fn_rej: tuple | None = None  # (ref, source) of the full node's RejectedByFullnode
        self.sent_t: int | None = None
        self.put_t: int | None = None
        self.seen = array("q")  # hashes of the receipts seen: a few dozen, so an array beats a set in memory
        self.seen_bits = 0  # one bit per hash seen (its low 6 bits): most new receipts need no search of ``seen``
        # timed block events for REMP-REPLAY-004/005 and COLL-004, flat: kind, block, t, ref, source,
        # kind, ... (one list, no tuple per event; see block_events)
        self.blk: list | None = None
        self.total: int | None = None  # total_validators of the first SentToValidators (REMP-COLL-004)

    def block_events(self) -> list[tuple]:
        """The timed block events as (kind, block, t, ref, source) tuples, in log order."""
        b = self.blk
        return list(zip(b[0::5], b[1::5], b[2::5], b[3::5], b[4::5]))
