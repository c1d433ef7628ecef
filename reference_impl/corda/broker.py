"""A broker queue: persistent, at-least-once, individual acknowledgements.

A delivered message stays in the queue until acknowledged; when its consumer disconnects (a
crash, a rollback, a broker restart) every delivered and unacknowledged message becomes
deliverable again at its place, before the later messages (spec/corda/system.yaml ``redelivery``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .message import Message


@dataclass(frozen=True)
class Delivery:
    tag: int          # the broker's message id; acknowledgements name it
    message: Message
    redelivered: bool
    connection: int   # the consumer connection it was delivered on; an ack on a later one fails


@dataclass
class _Entry:
    tag: int
    message: Message
    delivered: bool = False
    deliveries: int = 0
    connection: int = 0


@dataclass
class Queue:
    name: str
    entries: list[_Entry] = field(default_factory=list)
    next_tag: int = 1
    connection: int = 0   # incremented at each disconnect: deliveries of an earlier one can no longer be acked

    def produce(self, message: Message) -> int:
        tag = self.next_tag
        self.next_tag += 1
        self.entries.append(_Entry(tag, message))
        return tag

    def deliver(self) -> Delivery | None:
        """The first message not delivered yet (None when there is none)."""
        for e in self.entries:
            if not e.delivered:
                e.delivered, e.connection = True, self.connection
                e.deliveries += 1
                return Delivery(e.tag, e.message, e.deliveries > 1, self.connection)
        return None

    def ack(self, tag: int, connection: int | None = None) -> bool:
        """Remove a delivered message; False when the tag is unknown (already acknowledged) or its
        delivery was made on an earlier connection (cancelled by a disconnect)."""
        for i, e in enumerate(self.entries):
            if e.tag == tag and e.delivered and (connection is None or e.connection == connection):
                del self.entries[i]
                return True
        return False

    def disconnect(self) -> int:
        """The consumer went away: every unacknowledged delivery becomes deliverable again."""
        n = 0
        self.connection += 1
        for e in self.entries:
            if e.delivered:
                e.delivered, n = False, n + 1
        return n

    def messages(self) -> list[Message]:
        return [e.message for e in self.entries]

    def delivered(self) -> list[Message]:
        return [e.message for e in self.entries if e.delivered]
