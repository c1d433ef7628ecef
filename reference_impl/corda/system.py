"""The whole path of one peer-to-peer direction, one step at a time: a sending node's flows, its
outbound queue, the bridge and the link, the receiving node's inbound queue and the node itself.

Every step has the name of the TLA+ model's action (tla/corda/CordaP2P.tla), so behaviours of the
model replay into these machines step by step and both sides' states can be compared
(:meth:`System.view`). A step that is not enabled raises :class:`StepRefused`; crash and restart
steps exist at every crash point of spec/corda/system.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmkit.protocols.corda.model import CordaSpec, corda_spec

from .bridge import Bridge, Link
from .broker import Queue
from .message import Message
from .receiver import ReceivingNode
from .sender import Flow, SendingNode


class StepRefused(Exception):
    """The step is not enabled in the current state."""


@dataclass
class System:
    spec: CordaSpec
    sender: SendingNode = field(init=False)
    bridge: Bridge = field(init=False)
    receiver: ReceivingNode = field(init=False)
    answers: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        outbound, inbound = Queue("internal.peers.B"), Queue("p2p.inbound.B")
        self.sender = SendingNode("A", self.spec, outbound)
        self.bridge = Bridge(self.spec, outbound, Link())
        self.receiver = ReceivingNode(self.spec, inbound)

    @classmethod
    def one_session(cls, profile: str, messages: int, seed: str = "f1", session: str = "A:s1") -> "System":
        """One flow on one session sending ``messages`` messages, one per suspend (the model's set-up)."""
        s = cls(corda_spec(profile))
        s.sender.add_flow(Flow("f1", seed, session, [[(f"m{k}", 1)] for k in range(1, messages + 1)]))
        return s

    # -- steps (the model's action names) ---------------------------------------------------------
    def step(self, name: str, **params) -> object:
        do = getattr(self, f"_do_{name}", None)
        if do is None:
            raise StepRefused(f"unknown step {name!r}")
        return do(**params)

    @staticmethod
    def _need(ok: bool, why: str) -> None:
        if not ok:
            raise StepRefused(why)

    def _flow(self, flow: str | None) -> str:
        return flow or next(iter(self.sender.flows))

    def _do_Suspend(self, flow: str | None = None):
        f = self._flow(flow)
        self._need(self.sender.can_suspend(f), "the flow cannot suspend (sends pending, or finished)")
        self.sender.suspend(f)

    def _do_Produce(self, flow: str | None = None):
        f = self._flow(flow)
        self._need(self.sender.can_produce(f), "nothing checkpointed to send")
        return self.sender.produce(f)

    def _do_SenderCrash(self):
        self.sender.crash()

    def _do_Forward(self):
        self._need(self.bridge.can_forward(), "the bridge has nothing it may forward")
        return self.bridge.forward()

    def _do_Resend(self):
        self._need(bool(self.bridge.stale()), "no transfer of the bridge is lost")
        return self.bridge.resend()

    def _do_LinkLose(self, i: int = 0):
        self._need(0 <= i < len(self.bridge.link.transit), f"no message {i} on the link")
        self.bridge.link.lose(i)

    def _do_LinkDup(self, i: int = 0):
        self._need(0 <= i < len(self.bridge.link.transit), f"no message {i} on the link")
        self.bridge.link.duplicate(i)

    def _do_AckLose(self, i: int = 0):
        self._need(0 <= i < len(self.bridge.link.acks), f"no acknowledgement {i} on the link")
        self.bridge.link.lose_ack(i)

    def _do_RemoteAccept(self):
        self._need(bool(self.bridge.link.transit), "nothing on the link")
        return self.bridge.link.accept(self.receiver.inbound)

    def _do_BridgeAck(self):
        self._need(bool(self.bridge.link.acks), "no remote acknowledgement on the link")
        return self.bridge.on_remote_ack()

    def _do_BridgeRollback(self):
        self.bridge.rollback()

    def _do_Deliver(self):
        self._need(self.receiver.can_deliver(), "nothing to deliver in the inbound queue")
        answer = self.receiver.deliver()
        self.answers.append(answer.value)
        return answer

    def _do_Commit(self, session: str | None = None):
        self._need(self.receiver.can_commit(session), "no NEW copy being processed")
        return self.receiver.commit(session)

    def _do_Ack(self, count: int = 1):
        self._need(self.receiver.can_ack(), "no acknowledgement pending")
        return self.receiver.ack(count)

    def _do_ReceiverCrash(self):
        self.receiver.crash()

    def _do_BrokerRestart(self):
        self.receiver.broker_restart()

    # -- the state as the model sees it ------------------------------------------------------------
    @staticmethod
    def abstract(m: Message) -> tuple:
        """(index, id, uuid, seq) with the model's integers: the N- id of suspend k is k, any other
        id its own string; the sender UUID of process generation e is e + 1 (0: none)."""
        parts = m.dedup_id.split("-")
        did = int(parts[2]) if m.dedup_id.startswith("N-") else m.dedup_id
        uuid = int(m.sender_uuid.rsplit("-", 1)[1]) + 1 if m.sender_uuid else 0
        return (int(m.payload[1:]), did, uuid, m.sequence_number or 0)

    def view(self) -> dict:
        f = next(iter(self.sender.flows.values()))
        a = self.abstract
        return {
            "ckpt": f.checkpoint, "produced": f.produced,
            "out": [(*a(e.message), e.delivered) for e in self.bridge.outbound.entries],
            "transit": [a(m) for _, m in self.bridge.link.transit],
            "acks": len(self.bridge.link.acks),
            "inq": [(*a(e.message), e.delivered) for e in self.receiver.inbound.entries],
            "proc": [a(d.message) for d in self.receiver.processing],
            "toack": [a(d.message) for d in self.receiver.to_ack],
            "db": sorted((int(i.split("-")[2]) if i.startswith("N-") else i for i in self.receiver.db), key=str),
            "effects": [int(p[1:]) for _, p, _ in self.receiver.effects],
        }
