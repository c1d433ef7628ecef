"""The bridge and the link it pushes over.

The bridge takes messages from the local outbound queue and puts them on the link to the remote
broker; it acknowledges a message locally only when the remote broker's acknowledgement comes back
(spec/corda/system.yaml ``bridge``). A rollback (a failed transfer, a reconnect, a crash of the
bridge between the remote and the local acknowledgement) cancels its unacknowledged deliveries,
which the local broker then redelivers; a transfer of which nothing is left on the link is sent
again when the wait for its acknowledgement times out (``resend``). The link loses and duplicates
messages and loses acknowledgements (the adversary the documents assume: flaky connections).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmkit.protocols.corda.model import CordaSpec

from .broker import Queue
from .message import Message


@dataclass
class Link:
    transit: list[tuple[int, Message]] = field(default_factory=list)   # (outbound tag, message) on the way
    acks: list[int] = field(default_factory=list)                      # remote acknowledgements on the way back

    def lose(self, i: int) -> None:
        del self.transit[i]

    def duplicate(self, i: int) -> None:
        self.transit.insert(i + 1, self.transit[i])

    def lose_ack(self, i: int) -> None:
        del self.acks[i]

    def accept(self, inbound: Queue) -> Message:
        """The remote broker persists the head message and acknowledges it."""
        tag, m = self.transit.pop(0)
        inbound.produce(m)
        self.acks.append(tag)
        return m


@dataclass
class Bridge:
    spec: CordaSpec
    outbound: Queue
    link: Link
    dropped: list[Message] = field(default_factory=list)   # oversize messages acknowledged and dropped

    def can_forward(self) -> bool:
        if not any(not e.delivered for e in self.outbound.entries):
            return False
        # in order (spec): the next message waits until the one before it was remotely acknowledged
        return not (self.spec.in_order_bridge and self.outbound.delivered())

    def forward(self) -> Message:
        d = self.outbound.deliver()
        assert d is not None
        if d.message.size > self.spec.max_message_size and self.spec.oversize == "dropped_by_bridge":
            self.outbound.ack(d.tag)
            self.dropped.append(d.message)
        else:
            self.link.transit.append((d.tag, d.message))
        return d.message

    def on_remote_ack(self) -> bool:
        """The head acknowledgement from the remote broker: acknowledge the outbound copy."""
        return self.outbound.ack(self.link.acks.pop(0))

    def stale(self) -> list[int]:
        """Tags of delivered transfers of which nothing is left on the link (the message or its
        acknowledgement was lost): the bridge's wait for the remote acknowledgement times out."""
        on_link = {tag for tag, _ in self.link.transit} | set(self.link.acks)
        return [e.tag for e in self.outbound.entries if e.delivered and e.tag not in on_link]

    def resend(self) -> Message:
        """Send the oldest stale transfer again, the same message under the same tag."""
        tag = self.stale()[0]
        entry = next(e for e in self.outbound.entries if e.tag == tag)
        self.link.transit.append((tag, entry.message))
        return entry.message

    def rollback(self) -> None:
        """Roll back the session: unacknowledged deliveries come back; the connection is reset."""
        self.outbound.disconnect()
        self.link.transit.clear()
        self.link.acks.clear()
