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
from rmkit.conformance.deadline_io import Worker, read_line
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


MAX_REPLY_BYTES = 1 << 20   # a reply line longer than this is no reply (the suite's are tiny)


class ProcessImplementation:
    """An implementation started as a process, speaking JSON Lines on stdin/stdout. Replies are
    read as raw bytes with ``select`` up to the ``--timeout`` deadline, buffering a partial line:
    a line-buffered ``readline`` would block for ever on a process that writes half a line and
    stops, whatever the timeout."""

    def __init__(self, cmd: str, role: str, timeout: float):
        argv = [a.replace("ROLE", role) for a in shlex.split(cmd)]
        if not argv:
            raise UsageError("--impl-cmd: expected a command, found an empty string")
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        except OSError as exc:
            raise ImplementationFailed(f"--impl-cmd {cmd!r}: cannot start ({exc.strerror})") from None
        self.timeout = timeout
        self._buf = bytearray()

    def _exited(self, what: str) -> ImplementationFailed:
        try:
            code = self.proc.wait(1)
        except subprocess.TimeoutExpired:   # it closed its output but runs on
            self.kill()
            return ImplementationFailed(f"the implementation closed its output at {what} (stopped by the kit)")
        return ImplementationFailed(f"the implementation exited (code {code}) at {what}")

    def _readline(self, what: str) -> bytes:
        try:
            line = read_line(self.proc.stdout.fileno(), self._buf, self.timeout, MAX_REPLY_BYTES)
        except TimeoutError:
            self.kill()
            part = f" (it wrote {self._buf[:200].decode('utf-8', 'replace')!r} without ending the line)" if self._buf else ""
            raise ImplementationFailed(f"no reply to {what} within {self.timeout:g} s (--timeout){part}") from None
        except OverflowError:
            self.kill()
            raise ImplementationFailed(f"the reply to {what} is longer than {MAX_REPLY_BYTES:,} bytes without "
                                       "ending its line") from None
        if line is None:
            raise self._exited(what)
        return line

    def handle(self, event: dict) -> dict:
        what = event["type"]
        try:
            self.proc.stdin.write(json.dumps(event).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._exited(what) from None
        line = self._readline(what).decode("utf-8", "replace")
        try:
            reply = json.loads(line)
        except ValueError:
            raise ImplementationFailed(f"not a JSON reply to {what}: {line[:200]!r}") from None
        if not isinstance(reply, dict):
            raise ImplementationFailed(f"not a JSON object reply to {what}: {line[:200]!r}")
        return reply

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.kill()


class InProcessImplementation:
    """A Python implementation (``--impl``) whose calls (the factory's, then each ``handle``) run on
    a worker thread, waited for at most ``--timeout``: on the calling thread a ``handle`` that never
    returns would hang the run. A thread cannot be stopped, so a call that outlives the timeout
    ends the run (the implementation cannot be driven) and its thread is left behind, a daemon
    that does not keep the kit alive. An exception raised by the implementation is its failure,
    not the kit's."""

    def __init__(self, factory, spec: str, role: str, timeout: float):
        self.spec, self.timeout = spec, timeout
        self._worker = Worker()
        self._stuck = False
        self.obj = self._call(f"{spec}({role!r})", factory, role)
        if not callable(getattr(self.obj, "handle", None)):
            raise ImplementationFailed(f"the object {spec}({role!r}) returned has no handle(event) method")

    def _call(self, what: str, fn, arg):
        if self._stuck:
            raise ImplementationFailed(f"{what}: the implementation is still busy with a call that timed out")
        try:
            return self._worker.call(fn, arg, self.timeout)
        except TimeoutError:
            self._stuck = True
            raise ImplementationFailed(f"{what} did not return within {self.timeout:g} s (--timeout)") from None
        except (Exception, SystemExit) as exc:
            raise ImplementationFailed(f"{what} raised {type(exc).__name__}: {exc}") from None

    def handle(self, event: dict) -> dict:
        what = event["type"]
        reply = self._call(f"handle({what})", self.obj.handle, event)
        if not isinstance(reply, dict):
            raise ImplementationFailed(f"not a JSON object reply to {what}: {reply!r:.200}")
        return reply

    def close(self) -> None:
        done = getattr(self.obj, "close", None)
        if callable(done) and not self._stuck:
            try:
                self._call("close()", lambda _: done(), None)
            except ImplementationFailed:
                pass


def open_factory(args) -> Any:
    """A function role -> implementation for ``--impl-cmd`` or ``--impl module:factory``; both
    answer within ``--timeout`` or raise :class:`ImplementationFailed`."""
    if getattr(args, "impl_cmd", None):
        return lambda role: ProcessImplementation(args.impl_cmd, role, args.timeout)
    mod, _, name = args.impl.partition(":")
    try:
        factory = getattr(importlib.import_module(mod), name or "factory")
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"--impl {args.impl!r}: cannot load ({exc})") from None
    if not callable(factory):
        raise UsageError(f"--impl {args.impl!r}: expected FACTORY to be callable (FACTORY(role) returns the "
                         f"implementation), found {type(factory).__name__}")
    return lambda role: InProcessImplementation(factory, args.impl, role, args.timeout)


def serve(factory, role: str) -> None:
    """Run a Python implementation as an adapter process (JSON Lines on stdin/stdout)."""
    impl = factory(role)
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(impl.handle(json.loads(line))) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    serve(reference_factory, sys.argv[1] if len(sys.argv) > 1 else "receiver")
