"""The receiving node: the deduplicator, the processed-ids table, checkpoints and acknowledgements.

The deduplicator answers NEW, DUPLICATE or IN_FLIGHT, looking first in the in-memory set of ids
being processed, then (where the profile has it) the sequence-number fast path, then the database
(spec/corda/system.yaml ``dedup_order``); what each answer leads to is the profile's
``consequence``. A NEW copy is processed by its session's flow in arrival order; its commit writes
the checkpoint, the id (with sender key and sequence number) and the effect in one transaction,
and only then is the copy acknowledged (acknowledgements may wait and go out in batches). A crash
loses memory only: the database stays, the broker redelivers every unacknowledged copy.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .broker import Delivery, Queue
from .message import Message

if TYPE_CHECKING:   # the node process starts without loading the spec (a restart must be quick)
    from rmkit.protocols.corda.model import CordaSpec


class Answer(str, enum.Enum):
    NEW = "NEW"
    DUPLICATE = "DUPLICATE"
    IN_FLIGHT = "IN_FLIGHT"


@dataclass(frozen=True)
class Row:
    """One row of the processed-ids table."""

    sender_key: tuple | None
    sequence_number: int | None


@dataclass
class ReceivingNode:
    spec: CordaSpec
    inbound: Queue
    db: dict[str, Row] = field(default_factory=dict)                        # durable: processed ids
    effects: list[tuple[str, str, str]] = field(default_factory=list)      # durable: (session, payload, id) committed
    journal: list[tuple] = field(default_factory=list)                     # every action, for evidence
    in_flight: dict[str, Delivery] = field(default_factory=dict)           # memory: ids being processed
    processing: list[Delivery] = field(default_factory=list)               # memory: NEW copies, arrival order
    to_ack: list[Delivery] = field(default_factory=list)                   # memory: acknowledgements pending
    marks: dict[tuple, int] = field(default_factory=dict)                  # memory: fast path high-water marks
    db_reads: int = 0
    store: object | None = None                                            # a SqliteStore: db and effects on disk

    def __post_init__(self) -> None:
        if self.store is not None:   # a (re)started process: what was committed, from the database
            self.db = {i: Row(*r) for i, r in self.store.processed().items()}
            self.effects = self.store.effects()
        self.load_marks()

    # -- the deduplicator ------------------------------------------------------------------------
    def load_marks(self) -> None:
        """The fast path's marks, loaded from the database as the maximum per sender key."""
        self.marks = {}
        if self.spec.fast_path:
            for row in self.db.values():
                if row.sender_key is not None and row.sequence_number is not None:
                    self.marks[row.sender_key] = max(self.marks.get(row.sender_key, 0), row.sequence_number)

    def fast_path_new(self, m: Message) -> bool:
        """True when the fast path may answer NEW without reading the database: a sequence number
        above an existing mark. No mark, no sender UUID: the database must be read."""
        key = m.sender_key
        return (self.spec.fast_path and key is not None and m.sequence_number is not None
                and key in self.marks and m.sequence_number > self.marks[key])

    def in_database(self, dedup_id: str) -> bool:
        self.db_reads += 1
        return dedup_id in self.db

    def check(self, m: Message) -> Answer:
        if m.dedup_id in self.in_flight:
            return Answer.IN_FLIGHT
        if self.fast_path_new(m):
            return Answer.NEW
        return Answer.DUPLICATE if self.in_database(m.dedup_id) else Answer.NEW

    # -- steps -----------------------------------------------------------------------------------
    def can_deliver(self) -> bool:
        return any(not e.delivered for e in self.inbound.entries)

    def deliver(self) -> Answer:
        """Take the next copy from the inbound queue and act on the deduplicator's answer."""
        d = self.inbound.deliver()
        assert d is not None
        answer = self.check(d.message)
        consequence = self.spec.consequence[answer.value]
        self.journal.append(("deliver", d.tag, d.message.dedup_id, answer.value, consequence))
        if consequence == "process":
            self.in_flight[d.message.dedup_id] = d
            self.processing.append(d)
        elif consequence == "ack_and_drop":
            self.to_ack.append(d)
        return answer

    def sessions_processing(self) -> list[str]:
        return list(dict.fromkeys(d.message.session_id for d in self.processing))

    def can_commit(self, session: str | None = None) -> bool:
        return any(session is None or d.message.session_id == session for d in self.processing)

    def commit(self, session: str | None = None) -> Message:
        """The receiving flow's suspend after consuming the session's oldest NEW copy: checkpoint,
        deduplication facts, commit (one transaction); the acknowledgement follows."""
        d = next(d for d in self.processing if session is None or d.message.session_id == session)
        m = d.message
        self.journal.append(("persist_checkpoint", m.session_id))
        self.persist_dedup_facts(m)
        if self.store is not None:
            self.store.commit(m)   # checkpoint, processed id and effect in one SQLite transaction
        self.effects.append((m.session_id, m.payload, m.dedup_id))
        self.journal.append(("commit", m.dedup_id))
        self.processing.remove(d)
        del self.in_flight[m.dedup_id]
        self.to_ack.append(d)
        return m

    def persist_dedup_facts(self, m: Message) -> None:
        self.db[m.dedup_id] = Row(m.sender_key, m.sequence_number)
        self.journal.append(("persist_dedup_facts", m.dedup_id))
        if self.spec.fast_path and m.sender_key is not None and m.sequence_number is not None:
            self.marks[m.sender_key] = max(self.marks.get(m.sender_key, 0), m.sequence_number)

    def can_ack(self) -> bool:
        return bool(self.to_ack)

    def ack(self, count: int = 1) -> list[str]:
        """Acknowledge the ``count`` oldest pending copies (a batch)."""
        done = []
        for d in self.to_ack[:count]:
            ok = self.inbound.ack(d.tag, d.connection)
            self.journal.append(("acknowledge", d.tag, d.message.dedup_id, ok))
            done.append(d.message.dedup_id)
        del self.to_ack[:count]
        return done

    def crash(self) -> None:
        """Crash and restart: memory is lost, the database stays, unacknowledged copies return."""
        self.journal.append(("crash",))
        self.in_flight.clear()
        self.processing.clear()
        self.to_ack.clear()
        self.load_marks()
        self.inbound.disconnect()

    def broker_restart(self) -> None:
        """The node's broker restarts: persistent messages survive, every unacknowledged delivery is
        redelivered; the node keeps processing what it holds, and the acknowledgements it had pending
        are lost with the consumer's connection."""
        self.journal.append(("broker_restart",))
        self.to_ack.clear()
        self.inbound.disconnect()
