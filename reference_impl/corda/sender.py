"""The sending node: flows that suspend at each send and produce to the peer's outbound queue.

At a suspend the checkpoint is persisted and committed first; the sends it requested run after
(spec/corda/system.yaml ``suspend_actions``). A crash loses the process: the restarted node has a
new sender UUID and sequence counter, and replays each flow from its last checkpoint, re-sending
that checkpoint's messages with the same N- ids and without sender UUID or sequence number (a
re-send during recovery).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmkit.protocols.corda.model import CordaSpec

from .broker import Queue
from .message import Message, flow_id


class OversizeRefused(Exception):
    """The spec profile refuses a message above max_message_size when the flow sends it."""


@dataclass
class Flow:
    name: str
    seed: str
    session_id: str
    sends: list[list[tuple[str, int]]]   # per suspend: the (payload, size) of each message it sends
    checkpoint: int = 0                  # suspends persisted (durable)
    produced: int = 0                    # suspends whose sends this process produced
    recovering: bool = False             # the next produce is a re-send during recovery

    def done(self) -> bool:
        return self.checkpoint == len(self.sends) and self.produced == self.checkpoint


@dataclass
class SendingNode:
    name: str
    spec: CordaSpec
    outbound: Queue
    flows: dict[str, Flow] = field(default_factory=dict)
    epoch: int = 0                       # process generation: the sender UUID changes at each restart
    seq: int = 0
    sent_log: list[Message] = field(default_factory=list)   # every message produced, in order

    @property
    def sender_uuid(self) -> str:
        return f"{self.name}-{self.epoch}"

    def add_flow(self, flow: Flow) -> None:
        self.flows[flow.name] = flow

    def can_suspend(self, flow: str) -> bool:
        f = self.flows[flow]
        return f.produced == f.checkpoint and f.checkpoint < len(f.sends)

    def suspend(self, flow: str) -> None:
        """Persist the next checkpoint (the flow asked to send its next batch)."""
        f = self.flows[flow]
        assert self.can_suspend(flow)
        if self.spec.oversize == "refused_at_send":
            big = [p for p, size in f.sends[f.checkpoint] if size > self.spec.max_message_size]
            if big:
                raise OversizeRefused(f"flow {flow}: message {big[0]!r} is above {self.spec.max_message_size} bytes")
        f.checkpoint += 1

    def can_produce(self, flow: str) -> bool:
        f = self.flows[flow]
        return f.produced < f.checkpoint

    def dedup_id(self, f: Flow, suspends: int, index: int) -> str:
        return flow_id(f.seed, suspends, index)

    def produce(self, flow: str) -> list[Message]:
        """Run the sends of the flow's last checkpoint: one message each to the outbound queue."""
        f = self.flows[flow]
        assert self.can_produce(flow)
        out = []
        for index, (payload, size) in enumerate(f.sends[f.checkpoint - 1]):
            if f.recovering:
                uuid, seq = None, None
            else:
                self.seq += 1
                uuid, seq = self.sender_uuid, self.seq
            m = Message(self.dedup_id(f, f.checkpoint, index), f.session_id, f.checkpoint == 1 and index == 0,
                        payload, uuid, seq, size)
            self.outbound.produce(m)
            out.append(m)
        self.sent_log.extend(out)
        f.produced, f.recovering = f.checkpoint, False
        return out

    def crash(self) -> None:
        """Crash and restart: a new process replays every flow from its last checkpoint."""
        self.epoch += 1
        self.seq = 0
        for f in self.flows.values():
            if f.checkpoint > 0:
                f.produced, f.recovering = f.checkpoint - 1, True
            else:
                f.produced = 0
