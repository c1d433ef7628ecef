"""The vocabulary the REMP reference machines speak: inputs (events) and outputs, as frozen values.

Why a module of its own: the validator, the full node, the receipt sender and the simulator all
exchange these values, and a machine must be drivable from a test without the simulator. Every
event carries its own time (unix milliseconds): the machines never read a clock, time is an input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# ---- shared values ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BlockRef:
    """A block id as receipts name it (``tonNode.blockIdExt``): workchain, shard with tag bit,
    seqno, root hash and file hash (hashes as 64 lowercase hex digits)."""

    wc: int
    shard: int
    seqno: int
    root_hash: str
    file_hash: str


@dataclass(frozen=True, slots=True)
class Receipt:
    """One receipt as its source produced it (before the JSON form and the signature).

    ``time`` is when the source produced it; the JSON form of a profile may write another value
    (the ever-node profile relays validator receipts with timestamp 0).
    """

    kind: str
    msg_id: str
    source_id: str
    time: int
    block: Optional[BlockRef] = None
    mc_block: Optional[BlockRef] = None
    error: Optional[str] = None
    sent_to: Optional[int] = None
    total_validators: Optional[int] = None


# ---- validator inputs ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageFromFullNode:
    """A full node hands an external message to this validator (REMP Client protocol)."""

    msg_id: str
    time: int
    uid: Optional[str] = None  # hash of the body cell; None: the id stands for it
    has_body: bool = True


# catchain record kinds
NEW = "new"  # a message (header and body) put into the REMP catchain
REJECT = "reject"  # "refusal receipt": the sender's collator rejected the message
ACCEPT = "accept"  # "successfully collated" receipt: the sender put it into a block candidate
FORWARD = "forward"  # a pending message handed over from the previous session (full message)
DIGEST = "digest"  # a processed or finally rejected message handed over as its id only


@dataclass(frozen=True, slots=True)
class CatchainRecord:
    """A record of the REMP catchain (RMQ) as delivered to one validator.

    ``session``: the catchain session the record was posted in; ``origin_session``: the master
    session in which the message was first received (its lifetime counts from there).
    ``status`` of a DIGEST: ``"accepted"`` (processed, ``block`` names the block) or ``"rejected"``.
    """

    sender: str
    msg_id: str
    session: int
    kind: str
    time: int
    uid: Optional[str] = None
    origin_session: Optional[int] = None
    block: Optional[BlockRef] = None
    error: Optional[str] = None
    status: Optional[str] = None


@dataclass(frozen=True, slots=True)
class CollationRound:
    """It is this validator's turn to collate: hand at most ``max_messages`` to the collator."""

    time: int
    max_messages: int


# collator results
ACCEPTED, REJECTED, IGNORED = "accepted", "rejected", "ignored"


@dataclass(frozen=True, slots=True)
class CollatorResult:
    """What this validator's collator did with one message it was handed."""

    msg_id: str
    result: str  # ACCEPTED (into candidate ``block``) | REJECTED (``error``) | IGNORED
    time: int
    block: Optional[BlockRef] = None
    error: Optional[str] = None


@dataclass(frozen=True, slots=True)
class ShardBlockAccepted:
    """Validators accepted shard block ``block`` (collated by ``collated_by``) holding ``msg_ids``."""

    block: BlockRef
    msg_ids: tuple
    collated_by: str
    time: int


@dataclass(frozen=True, slots=True)
class ShardBlockIgnored:
    """A candidate did not become a shard block. ``superseded``: another candidate of the same
    round won (the node then downgrades leftover acceptances silently in the ever-node profile)."""

    block: BlockRef
    msg_ids: tuple
    time: int
    superseded: bool = False


@dataclass(frozen=True, slots=True)
class ShardBlockRejected:
    """Validators rejected the candidate ``block``."""

    block: BlockRef
    msg_ids: tuple
    time: int
    error: str = "block candidate rejected by validators"


@dataclass(frozen=True, slots=True)
class MasterchainCommit:
    """Master block ``mc_block`` committed shard block ``block`` (holding ``msg_ids``)."""

    block: BlockRef
    msg_ids: tuple
    mc_block: BlockRef
    time: int


@dataclass(frozen=True, slots=True)
class MasterchainIgnore:
    """Shard block ``block`` will not reach the masterchain: its messages return to the queue."""

    block: BlockRef
    msg_ids: tuple
    time: int


@dataclass(frozen=True, slots=True)
class SessionSwitch:
    """Master catchain session ``seqno`` starts at ``start_time``; ``validators``: the shard's
    validator set for it (the receiver learns from it whether it collates in that session)."""

    seqno: int
    start_time: int
    validators: tuple = ()

    @property
    def time(self) -> int:
        return self.start_time


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes (timers: retries, forgetting, paced receipt sending)."""

    time: int


# ---- full node inputs ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Submit:
    """A user submits an external message to the full node.

    ``error``: the result of pre-evaluating the message against the destination shard's state
    (None: it passed). ``has_body`` False stands for a message that cannot be deserialized.
    """

    msg_id: str
    time: int
    uid: Optional[str] = None
    error: Optional[str] = None
    has_body: bool = True


@dataclass(frozen=True, slots=True)
class UpcomingValidators:
    """The next session's validator set is known ahead of the switch (the full node then sends
    new messages to both sets)."""

    seqno: int
    validators: tuple
    time: int


@dataclass(frozen=True, slots=True)
class ReceiptsFromValidator:
    """Receipts arriving at the full node from one validator, in the order it sent them."""

    receipts: tuple
    time: int


# ---- outputs ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CatchainBroadcast:
    """Post ``record`` into the REMP catchain of session ``record.session``."""

    record: CatchainRecord


@dataclass(frozen=True, slots=True)
class Forwarded:
    """Hand-over at the end of session ``session`` into the catchain of ``to_session``.

    ``full``: ``(msg_id, uid, origin_session)`` of pending messages (sent with their body);
    ``digests``: ``(msg_id, status, block root or None, origin_session)`` of processed (``"accepted"``) or finally rejected
    (``"rejected"``) messages, ids only.
    """

    sender: str
    session: int
    to_session: int
    full: tuple
    digests: tuple
    time: int


@dataclass(frozen=True, slots=True)
class ForwardedDigests:
    """The digests of one :class:`Forwarded` as delivered to a validator (one input for all ids)."""

    sender: str
    session: int
    digests: tuple
    time: int


@dataclass(frozen=True, slots=True)
class HandToCollator:
    """Messages (oldest first) this validator gives its collator in this round."""

    validator: str
    msg_ids: tuple
    time: int


@dataclass(frozen=True, slots=True)
class BlockRefused:
    """Validation refused ``block``: it holds messages already in another accepted block within the
    replay-protection window (``msg_ids``: those messages)."""

    validator: str
    block: BlockRef
    msg_ids: tuple
    time: int


@dataclass(frozen=True, slots=True)
class SendToValidator:
    """The full node sends a message to one validator."""

    validator: str
    msg_id: str
    uid: Optional[str]
    time: int


@dataclass(frozen=True, slots=True)
class Publish:
    """The full node writes ``receipt`` to the receipt log (Kafka) at ``time``; ``role`` names the
    role of the receipt's source (``"fullnode"`` or ``"validator"``)."""

    receipt: Receipt
    role: str
    time: int


# ---- consumer inputs and output (driven conformance of the SDK side) ----------------------------


@dataclass(frozen=True, slots=True)
class ConsumeReceipt:
    """One receipt of a message as the log holds it (a JSON object); ``at``: when it was seen."""

    receipt: dict
    at: Optional[int] = None


@dataclass(frozen=True, slots=True)
class Query:
    """Ask the consumer for the message's outcome at ``now`` (past the horizon: lost)."""

    now: int


@dataclass(frozen=True, slots=True)
class ConsumerOutcome:
    """The consumer's conclusion so far (the ``Outcome`` output of the adapter protocol)."""

    name: str
    final: bool
    lost: bool = False
