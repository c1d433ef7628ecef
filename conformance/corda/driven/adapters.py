"""The receiver adapter protocol and the reference adapter.

An implementation under test plays the receiving node (the bridge role's events are in
:mod:`.bridge`). The harness owns the broker: it delivers
copies and applies the implementation's acknowledgements. Each event is a JSON object; each reply
is a JSON object that may carry, besides what the event asks for, ``commits`` (ids whose
transaction committed, in order) and ``acks`` (``[tag, connection]`` pairs acknowledged):

- ``{"type": "hello", "role": "receiver", "profile": P}`` -> ``{"ok": true}``: a new node with an
  empty database (each scenario starts with one; one process serves every scenario); with
  ``"database": PATH`` the node keeps its database in that SQLite file, and a process started
  again on it finds what was committed (the reference adapter does; the suite does not need it)
- ``{"type": "deliver", "tag": T, "conn": C, "message": {dedup_id, session_id, session_init,
  sender_uuid, sequence_number, payload}}`` -> ``{"answer": "NEW" | "DUPLICATE" | "IN_FLIGHT", ...}``
- ``{"type": "tick"}`` -> ``{...}``: time passes; the node may commit and acknowledge
- ``{"type": "crash"}`` -> ``{}``: the process dies and restarts: memory lost, its database kept
- ``{"type": "broker_restart"}`` -> ``{}``: deliveries of earlier connections can no longer be acked

Process implementations speak it as JSON Lines on stdin/stdout (``--impl-cmd``); Python ones are
objects with ``handle(event) -> reply`` made by ``FACTORY(role)`` (``--impl module:FACTORY``; a
class taking the role works).
"""

from __future__ import annotations

import importlib
import json
import shlex
import subprocess
import sys
from typing import Any

from rmkit.conformance.corda.spec import corda_spec
from rmkit.errors import UsageError
from rmkit.reference_impl.corda.broker import Delivery, Queue
from rmkit.reference_impl.corda.message import Message
from rmkit.reference_impl.corda.receiver import ReceivingNode

ROLES = ("receiver", "bridge")


class ImplementationFailed(Exception):
    """The implementation could not start, crashed, or answered something that is not a reply."""


def message_from(d: dict) -> Message:
    return Message(d["dedup_id"], d["session_id"], bool(d["session_init"]), d["payload"], d.get("sender_uuid"),
                   d.get("sequence_number"))


def message_to(m: Message) -> dict:
    return {"dedup_id": m.dedup_id, "session_id": m.session_id, "session_init": m.session_init,
            "sender_uuid": m.sender_uuid, "sequence_number": m.sequence_number, "payload": m.payload}


class ReferenceReceiver:
    """The reference receiving node (reference_impl/corda) behind the adapter protocol. On a tick it
    commits what it is processing (oldest first) and acknowledges what is pending; the database
    (processed ids) survives a crash, nothing else does."""

    def __init__(self, role: str = "receiver") -> None:
        self.role = role
        self.node: ReceivingNode | None = None

    def make_node(self, profile: str, database: str | None = None) -> ReceivingNode:
        store = None
        if database:
            from rmkit.reference_impl.corda.store import SqliteStore

            store = SqliteStore(database)
        return ReceivingNode(corda_spec(profile), Queue("p2p.inbound.self"), store=store)

    def handle(self, event: dict) -> dict:
        return getattr(self, f"on_{event['type']}")(event)

    def on_hello(self, event: dict) -> dict:
        self.node = self.make_node(event["profile"], event.get("database"))
        return {"ok": True}

    def on_deliver(self, event: dict) -> dict:
        node = self.node
        d = Delivery(event["tag"], message_from(event["message"]), False, event["conn"])
        answer = node.check(d.message)
        consequence = node.spec.consequence[answer.value]
        if consequence == "process":
            node.in_flight[d.message.dedup_id] = d
            node.processing.append(d)
        elif consequence == "ack_and_drop":
            node.to_ack.append(d)
        return {"answer": answer.value}

    def commit_now(self) -> list[str]:
        """Commit every copy being processed, oldest first (the reference's choice)."""
        done = []
        while self.node.processing:
            done.append(self.node.commit().dedup_id)
        return done

    def acks_now(self) -> list[list[int]]:
        out = [[d.tag, d.connection] for d in self.node.to_ack]
        self.node.to_ack.clear()
        return out

    def on_tick(self, event: dict) -> dict:
        commits = self.commit_now()
        return {"commits": commits, "acks": self.acks_now()}

    def on_crash(self, event: dict) -> dict:
        self.node.crash()
        return {}

    def on_broker_restart(self, event: dict) -> dict:
        self.node.to_ack.clear()
        return {}


def reference_factory(role: str):
    if role not in ROLES:
        raise UsageError(f"--role {role!r}: expected one of {', '.join(ROLES)}")
    if role == "bridge":
        from .bridge import ReferenceBridge

        return ReferenceBridge()
    return ReferenceReceiver()


class ProcessImplementation:
    """An implementation started as a process, speaking JSON Lines on stdin/stdout."""

    def __init__(self, cmd: str, role: str, timeout: float):
        argv = [a.replace("ROLE", role) for a in shlex.split(cmd)]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        except OSError as exc:
            raise ImplementationFailed(f"--impl-cmd {cmd!r}: cannot start ({exc.strerror})") from None
        self.timeout = timeout

    def handle(self, event: dict) -> dict:
        import select

        try:
            self.proc.stdin.write(json.dumps(event) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ImplementationFailed(f"the implementation exited (code {self.proc.poll()})") from None
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        if not ready:
            raise ImplementationFailed(f"no reply within {self.timeout} s to {event['type']}")
        line = self.proc.stdout.readline()
        if not line:
            raise ImplementationFailed(f"the implementation exited (code {self.proc.wait()}) at {event['type']}")
        try:
            reply = json.loads(line)
        except ValueError:
            raise ImplementationFailed(f"not a JSON reply to {event['type']}: {line[:200]!r}") from None
        if not isinstance(reply, dict):
            raise ImplementationFailed(f"not a JSON object reply to {event['type']}: {line[:200]!r}")
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def open_factory(args) -> Any:
    """A function role -> implementation for ``--impl-cmd`` or ``--impl module:factory``."""
    if getattr(args, "impl_cmd", None):
        return lambda role: ProcessImplementation(args.impl_cmd, role, args.timeout)
    mod, _, name = args.impl.partition(":")
    try:
        factory = getattr(importlib.import_module(mod), name or "factory")
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"--impl {args.impl!r}: cannot load ({exc})") from None
    return factory


def serve(factory, role: str) -> None:
    """Run a Python implementation as an adapter process (JSON Lines on stdin/stdout)."""
    impl = factory(role)
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(impl.handle(json.loads(line))) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    serve(reference_factory, sys.argv[1] if len(sys.argv) > 1 else "receiver")
