"""The bridge role: a bridge implementation driven between the harness's local outbound queue and
the remote broker, over a link the scenario controls.

Its events and replies, and the numbers of the drain below, are the implementer's contract:
spec/corda/adapter.md (numbers in spec/corda/adapter.yaml). A crash is done by the kit, not
announced (see :mod:`.adapters`); an object driven directly, as unit tests do, gets
``{"type": "crash"}`` instead. The restarted bridge hears of nothing the old one sent: what it had
sent may still reach the remote broker (or be lost), but no acknowledgement of it comes back.

The link, besides failing as a whole (``link_down``, a crash), can lose one message while later
ones on it still arrive (``lose``): the remote broker does not take that message and nothing tells
the bridge. That is the failure the as-built bridge answers by committing what was acknowledged and
rolling back (corda-as-built, section Bridges), the one that puts a session out of order behind a
pipelining bridge (section Ordering); a bridge recovers from it by a timeout of its own or at the
next link failure.

After the scenario the harness drains in two phases, the second after a ``link_down``: it delivers
and transfers whatever can move, then ticks, and again, until the local queue is empty or nothing
moved for ``QUIET_TICKS`` ticks in a row (a bridge with work left must act, by sending,
acknowledging or rolling back, at least once every ``QUIET_TICKS`` ticks). A phase is bounded:
a bridge still moving after ``MAX_DRAIN_TICKS`` ticks or ``MAX_DRAIN_MOVES`` deliveries and
transfers makes no progress (say, it rolls back at every step, so the local broker delivers the
same messages for ever): CORDA-BRIDGE-002, strict, and the drain stops there.

The judge: a local acknowledgement only after the remote one (CORDA-BRIDGE-001: a message
acknowledged without it and never transferred is lost), a dropped message (CORDA-BRIDGE-003: only a
message over the spec's ``max_message_size``, where the profile has the bridge drop oversize
messages, may be acknowledged without ever being transferred), the session's order where the
profile keeps it (CORDA-ORDER-001: no message reaches the remote broker for the first time after a
later one), and after the drain every message transferred at least once and the local queue empty
(CORDA-BRIDGE-002).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from rmkit.protocols.corda.model import CordaSpec, corda_spec
from rmkit.reference_impl.corda.broker import Queue
from rmkit.reference_impl.corda.message import Message, flow_id
from rmkit.rules import OFF

from .adapters import ImplementationFailed, ReferenceBridge, message_from, message_to
from .contract import number
from .judge import Outcome, Violation

QUIET_TICKS = number("bridge", "drain", "quiet_ticks")       # ticks in a row in which nothing moves end a drain phase
MAX_DRAIN_TICKS = number("bridge", "drain", "max_ticks")     # a bridge still moving then makes no progress
MAX_DRAIN_MOVES = number("bridge", "drain", "max_moves")     # deliveries and transfers in one drain phase
MESSAGES = number("bridge", "messages")                      # messages produced at most in a scenario


def message(k: int, spec: CordaSpec) -> Message:
    """Message k of one session; the third is oversize where the profile lets one reach the bridge."""
    big = k == 3 and spec.oversize == "dropped_by_bridge"
    return Message(flow_id("f1", k, 0), "A:s1", k == 1, f"m{k}", "A-0", k, spec.max_message_size + 1 if big else 100, peer="A")


# the actions drawn, repeated by weight; none takes an argument
_DRAWN = ("produce", "produce", "deliver", "deliver", "transfer", "transfer", "lose", "tick", "link_down", "crash")
ACTIONS = tuple(dict.fromkeys(_DRAWN))


def actions():
    return st.sampled_from([(a,) for a in _DRAWN])


@dataclass
class BridgeJudge:
    spec: CordaSpec
    outbound: Queue
    remote: Queue
    step: int = 0
    deliveries: dict[int, tuple] = field(default_factory=dict)   # tag -> (connection, message) live
    transit: list[tuple] = field(default_factory=list)            # (tag, message, incarnation) on the link
    incarnation: int = 0                                          # the bridge's process: crashes so far
    sent_tags: set[int] = field(default_factory=set)              # tags sent since the last rollback or crash
    remote_acked: set[int] = field(default_factory=set)           # tags the remote acknowledged (ever)
    transferred: set[str] = field(default_factory=set)            # ids the remote broker holds
    produced: list[Message] = field(default_factory=list)
    lost: set[str] = field(default_factory=set)                   # ids acknowledged locally, never transferred
    violations: list[Violation] = field(default_factory=list)
    moves: int = 0        # sends, accepted local acks and rollbacks (the drain's measure of progress)
    rollbacks: int = 0
    stalled: bool = False  # the drain stopped at its bound: reported once, as no progress
    where: str = "the hello"   # "step N", "drain tick K", "the end of the drain": where a violation is seen

    def _fail(self, rule: str, why: str) -> None:
        mode = self.spec.mode(rule)
        if mode != OFF:
            self.violations.append(Violation(rule, mode, self.step, why, self.where))

    def on_transfer(self, m: Message) -> None:
        """The remote broker got ``m``: its first arrival must not follow a later message's."""
        later = [x for x in self.produced if x.dedup_id in self.transferred and self.produced.index(x) > self.produced.index(m)]
        if m.dedup_id not in self.transferred and later:
            self._fail("CORDA-ORDER-001", f"{m.dedup_id} reached the remote broker after {later[0].dedup_id}, which was sent after it")
        self.transferred.add(m.dedup_id)

    def may_drop(self, m: Message) -> bool:
        """The one drop a profile allows: an oversize message, where the bridge drops those."""
        return m.size > self.spec.max_message_size and self.spec.oversize == "dropped_by_bridge"

    def on_local_ack(self, tag: int, m: Message) -> None:
        """The local queue removed ``m``: it must be the remote broker's by now."""
        if tag in self.remote_acked:
            return
        if m.dedup_id in self.transferred:
            self._fail("CORDA-BRIDGE-001", f"{m.dedup_id} (tag {tag}) acknowledged locally before the remote broker acknowledged this transfer")
            return
        self.lost.add(m.dedup_id)
        if tag in self.sent_tags:
            self._fail("CORDA-BRIDGE-001", f"{m.dedup_id} (tag {tag}) acknowledged locally before the remote broker acknowledged it")
        elif self.may_drop(m):
            self._fail("CORDA-BRIDGE-003", f"{m.dedup_id} (tag {tag}, {m.size} bytes, over the maximum of "
                                           f"{self.spec.max_message_size}) acknowledged and dropped, never transferred")
        else:
            self._fail("CORDA-BRIDGE-001", f"{m.dedup_id} (tag {tag}, {m.size} bytes) acknowledged locally, never transferred "
                                           "nor acknowledged by the remote broker: lost (only an oversize message may be "
                                           "dropped, and only where the profile says so)")

    def on_reply(self, reply: dict) -> None:
        for tag in reply.get("send", []) or []:
            if tag not in self.deliveries:
                self._fail("CORDA-BRIDGE-002", f"sent tag {tag}, which the local queue had not delivered to it")
                continue
            self.sent_tags.add(tag)
            self.transit.append((tag, self.deliveries[tag][1], self.incarnation))
            self.moves += 1
        for pair in reply.get("acks", []) or []:
            tag, conn = pair
            live = self.deliveries.get(tag)
            if live is None or live[0] != conn or not self.outbound.ack(tag, conn):
                continue
            del self.deliveries[tag]
            self.moves += 1
            self.on_local_ack(tag, live[1])
        if reply.get("rollback"):
            self.rollbacks += 1
            self.moves += 1
            self.disconnect()

    def disconnect(self) -> None:
        self.outbound.disconnect()
        self.deliveries.clear()
        self.sent_tags.clear()

    def untransferred(self) -> list[str]:
        return [m.dedup_id for m in self.produced if m.dedup_id not in self.transferred and m.dedup_id not in self.lost]

    def no_progress(self, within: str) -> None:
        """The drain reached its bound while the bridge still moved: a liveness failure."""
        self.stalled = True
        left = [e.message.dedup_id for e in self.outbound.entries]
        never = self.untransferred()
        what = "; ".join(part for part in (
            f"{', '.join(never)} never reached the remote broker" if never else "",
            f"{', '.join(left)} still unacknowledged in the local queue" if left else "") if part)
        self._fail("CORDA-BRIDGE-002", f"no progress within {within} of the drain: {what or 'the bridge still moving'} "
                                       f"({self.rollbacks} rollbacks so far; each has the local broker deliver "
                                       "everything unacknowledged again)")

    def at_end(self) -> None:
        self.where = "the end of the drain"
        if self.stalled:
            return
        for dedup_id in self.untransferred():
            self._fail("CORDA-BRIDGE-002", f"{dedup_id} never reached the remote broker")
        if self.outbound.entries and not any(v.rule == "CORDA-BRIDGE-002" for v in self.violations):
            self._fail("CORDA-BRIDGE-002", "messages left unacknowledged in the local queue after the drain: "
                       + ", ".join(e.message.dedup_id for e in self.outbound.entries))


class BridgeRun:
    """One scenario played against a bridge: the harness's queues and link, the judge, the log."""

    def __init__(self, impl, profile: str):
        self.impl = impl
        self.spec = corda_spec(profile)
        self.judge = BridgeJudge(self.spec, Queue("internal.peers.B"), Queue("p2p.inbound.B"))
        self.log: list[str] = []
        self.next_k = 1
        self.drain_ticks = 0   # numbered across the drain's phases, as the receiver's

    def here(self) -> str:
        """The label of log lines: the step number, or the drain tick."""
        return self.judge.where.removeprefix("step ")

    def call(self, event: dict) -> None:
        reply = self.impl.handle(event)
        if any(reply.values()):
            tag = f" {event['tag']}" if "tag" in event else ""
            self.log.append(f"{self.here()}: {event['type']}{tag} -> {reply}")
        self.judge.on_reply(reply)

    def produce(self) -> None:
        if self.next_k > MESSAGES:
            return
        m = message(self.next_k, self.spec)
        self.next_k += 1
        self.judge.outbound.produce(m)
        self.judge.produced.append(m)
        self.log.append(f"{self.here()}: produce {m.dedup_id} ({m.size} bytes)")

    def deliver(self) -> bool:
        d = self.judge.outbound.deliver()
        if d is None:
            return False
        self.judge.deliveries[d.tag] = (d.connection, d.message)
        self.call({"type": "deliver", "tag": d.tag, "conn": d.connection,
                   "message": {**message_to(d.message), "size": d.message.size}})
        return True

    def transfer(self) -> bool:
        """The head of the link reaches the remote broker, which acknowledges it (a message whose
        delivery was rolled back or acknowledged meanwhile is not sent on by the harness). One a
        crashed bridge sent is taken too, but its acknowledgement has no bridge to go to."""
        judge = self.judge
        if not judge.transit:
            return False
        tag, m, incarnation = judge.transit.pop(0)
        if incarnation != judge.incarnation:
            judge.remote.produce(m)
            judge.on_transfer(m)
            self.log.append(f"{self.here()}: {m.dedup_id} (tag {tag}), sent before the bridge crashed, reaches the remote "
                            "broker; no acknowledgement goes back")
            return True
        live = judge.deliveries.get(tag)
        if live is None:
            return True
        judge.remote.produce(live[1])
        judge.on_transfer(live[1])
        judge.remote_acked.add(tag)
        self.call({"type": "remote_ack", "tag": tag})
        return True

    def lose(self) -> None:
        if self.judge.transit:
            tag = self.judge.transit.pop(0)[0]
            self.log.append(f"{self.here()}: the remote broker did not take tag {tag} (later messages on the link still arrive)")

    def link_down(self) -> None:
        self.judge.transit.clear()
        self.call({"type": "link_down"})

    def crash(self) -> None:
        """The bridge's process dies and restarts, its connection to the remote broker with it: the
        restarted bridge hears of nothing the old one sent."""
        self.judge.incarnation += 1
        self.call({"type": "crash"})
        self.judge.disconnect()

    def play(self, kind: str) -> None:
        {"produce": self.produce, "deliver": self.deliver, "transfer": self.transfer, "lose": self.lose,
         "tick": lambda: self.call({"type": "tick"}), "link_down": self.link_down, "crash": self.crash}[kind]()

    def drain_phase(self) -> bool:
        """Deliver, transfer and tick until the local queue is empty or nothing moved for
        ``QUIET_TICKS`` ticks; False (reported as no progress) when the phase's bound is reached
        first."""
        judge, quiet, moves = self.judge, 0, 0
        for _ in range(MAX_DRAIN_TICKS):
            if not judge.outbound.entries:
                return True
            self.drain_ticks += 1
            judge.where = f"drain tick {self.drain_ticks}"
            before = (judge.moves, moves)
            while self.deliver() or self.transfer():
                moves += 1
                if moves >= MAX_DRAIN_MOVES:
                    judge.no_progress(f"{MAX_DRAIN_MOVES} deliveries and transfers")
                    return False
            self.call({"type": "tick"})
            quiet = quiet + 1 if (judge.moves, moves) == before else 0
            if quiet >= QUIET_TICKS:
                return True
        if judge.outbound.entries:
            judge.no_progress(f"{MAX_DRAIN_TICKS} ticks")
            return False
        return True

    def drain(self) -> None:
        self.judge.where = f"drain tick {self.drain_ticks + 1}"
        if self.drain_phase():
            self.judge.where = f"drain tick {self.drain_ticks + 1}"   # the link goes down before the next tick
            self.link_down()
            self.drain_phase()


def run_bridge(impl, profile: str, acts: list, role: str = "bridge"):
    run = BridgeRun(impl, profile)
    judge = run.judge
    at = "at the hello"   # where an implementation that cannot be driven stopped the run
    try:
        impl.handle({"type": "hello", "role": role, "profile": profile})
        for act in acts:
            judge.step += 1
            judge.where = f"step {judge.step}"
            at = f"at step {judge.step} ({act[0]})"
            run.play(act[0])
        at = "in the drain after the scenario"
        run.drain()
        judge.at_end()
    except ImplementationFailed as exc:
        raise ImplementationFailed(f"{at}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ImplementationFailed(f"a malformed reply at {judge.where}: {exc!r}") from None
    return Outcome(profile, list(acts), judge.violations, run.log)


# ---- examples -------------------------------------------------------------------------------------
class AckOnSend(ReferenceBridge):
    """Acknowledges locally as soon as it sends (no wait for the remote broker)."""

    def _pump(self):
        sent = super()._pump()
        self.early = [[t, self.unacked[t].connection] for t in sent]
        return sent

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        reply.setdefault("acks", []).extend(getattr(self, "early", []))
        self.early = []
        return reply


class NoRollback(ReferenceBridge):
    """Ignores a failed link: what was lost on it is never sent again."""

    def on_link_down(self, event):
        return {}


class Pipelining(ReferenceBridge):
    """Sends every message at once, whatever the profile (as built): faulty in spec, legal in corda-os."""

    def _pump(self):
        sent = [d.tag for d in self.waiting]
        self.unacked.update({d.tag: d for d in self.waiting})
        self.waiting.clear()
        return sent


class BatchedLocalAcks(ReferenceBridge):
    """Legal: acknowledges locally in batches, on ticks, after the remote acknowledgements."""

    def on_hello(self, event):
        self.ready = []
        return super().on_hello(event)

    def on_remote_ack(self, event):
        reply = super().on_remote_ack(event)
        self.ready += reply.pop("acks")
        return reply

    def on_tick(self, event):
        acks, self.ready = self.ready, []
        return {**super().on_tick(event), "acks": acks}

    def on_link_down(self, event):
        self.ready = []   # rolled back: the broker redelivers them
        return super().on_link_down(event)

    def on_crash(self, event):
        self.ready = []
        return super().on_crash(event)


FAULTY = {"ack_on_send": AckOnSend, "no_rollback": NoRollback}
LEGAL = {"batched_local_acks": BatchedLocalAcks}  # Pipelining: legal where the profile does not keep order
