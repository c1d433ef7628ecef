"""Test tooling: the records (spec/corda/records.yaml) of a run of the reference machines
(reference_impl/corda/system.py) under a random schedule of steps, crashes and faults, settled at
the end. The machines follow the spec's profile, so the log checker must find nothing strict in
their records; a faulty variant of the receiver must be caught."""

from __future__ import annotations

import json
import random

from rmkit.reference_impl.corda.system import StepRefused, System

STEPS = ["Suspend", "Produce", "Forward", "RemoteAccept", "BridgeAck", "Deliver", "Deliver", "Commit", "Ack", "Ack",
         "SenderCrash", "ReceiverCrash", "BrokerRestart", "BridgeRollback", "LinkLose", "LinkDup", "AckLose"]
SETTLE = ["Suspend", "Produce", "Forward", "RemoteAccept", "BridgeAck", "Deliver", "Commit", "Ack"]


class Recorder:
    """Runs steps on a :class:`System` and writes the records node A (sender) and B (receiver) keep."""

    def __init__(self, system: System):
        self.s = system
        self.lines: list[dict] = []
        self.t = 1_767_225_600_000
        self.tx = 0
        self.rows: dict[str, dict] = {}

    def ev(self, node, event, mid, **f) -> None:
        self.t += 5
        self.lines.append({"t": self.t, "node": node, "event": event, "id": mid, **f})

    @staticmethod
    def who(m) -> dict:
        return {"sender": m.sender_uuid or "A", "seq": m.sequence_number, "session": m.session_id}

    def step(self, name: str) -> bool:
        r = self.s.receiver
        mark = len(r.journal)
        try:
            out = self.s.step(name)
        except StepRefused:
            return False
        if name == "Produce":
            for m in out:
                self.ev("A", "sent", m.dedup_id, **self.who(m))
        for entry in r.journal[mark:]:
            if entry[0] == "deliver":
                _, tag, mid, answer, consequence = entry
                m = next(e.message for e in r.inbound.entries if e.tag == tag)
                self.ev("B", "received", mid, delivery=str(tag), **self.who(m))
                self.ev("B", "dedup", mid, verdict=answer, delivery=str(tag))
                if consequence == "discard":
                    self.ev("B", "discarded", mid, delivery=str(tag))
            elif entry[0] == "commit":
                self.tx += 1
                m = out  # the Commit step returns the message it committed
                self.ev("B", "committed", entry[1], tx=self.tx)
                self.rows.setdefault(entry[1], {"node": "B", "id": entry[1], "sender": m.sender_uuid or "A",
                                                "seq": m.sequence_number, "tx": self.tx, "t": self.t})
            elif entry[0] == "acknowledge" and entry[3]:
                self.ev("B", "acked", entry[2], delivery=str(entry[1]))
        return True

    def settle(self, limit: int = 2000) -> None:
        """Run without faults until nothing moves; a bridge or consumer left holding unacknowledged
        messages is restarted (rollback, reconnect) so that they come again."""
        for _ in range(limit):
            if any(self.step(n) for n in SETTLE):
                continue
            if self.s.bridge.outbound.entries and self.step("BridgeRollback") and any(self.step(n) for n in SETTLE):
                continue
            if any(e.delivered for e in self.s.receiver.inbound.entries):
                self.step("ReceiverCrash")
                if any(self.step(n) for n in SETTLE):
                    continue
            return

    def text(self) -> str:
        return "".join(json.dumps(x) + "\n" for x in [*self.lines, *self.rows.values()])


def run(profile: str, seed: int, messages: int = 4, steps: int = 80, patch=None) -> str:
    rng = random.Random(seed)
    s = System.one_session(profile, messages)
    if patch is not None:
        patch(s)
    rec = Recorder(s)
    for _ in range(steps):
        rec.step(rng.choice(STEPS))
    rec.settle()
    return rec.text()


# -- faulty receivers: each breaks one mechanism the exactly-once design rests on -----------------
def ack_before_commit(system: System) -> None:
    """The receiver acknowledges a NEW copy as soon as it takes it, before the commit."""
    r = system.receiver
    deliver = r.deliver

    def early():
        answer = deliver()
        if r.processing and r.processing[-1] not in r.to_ack:
            r.to_ack.append(r.processing[-1])
        return answer

    r.deliver = early


def in_memory_dedup(system: System) -> None:
    """The processed ids live in memory only: a crash forgets them."""
    r = system.receiver
    crash = r.crash

    def forget():
        crash()
        r.db.clear()

    r.crash = forget


def fast_path_without_mark(system: System) -> None:
    """The fast path answers NEW without a database read also where its sender key has no mark."""
    r = system.receiver

    def no_mark_read(m):
        key = m.sender_key
        return (r.spec.fast_path and key is not None and m.sequence_number is not None
                and (key not in r.marks or m.sequence_number > r.marks[key]))

    r.fast_path_new = no_mark_read


FAULTY = {"ack_before_commit": ack_before_commit, "in_memory_dedup": in_memory_dedup,
          "fast_path_without_mark": fast_path_without_mark}
