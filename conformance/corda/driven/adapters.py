"""The kit's side of the adapter protocol for Corda implementations under test (the process and
Python wrappers, a database per scenario, real crashes) and the reference adapter.

The protocol itself (every event and reply, the hello's ``database``, the crash, the numbers the
kit waits by) is the implementer's contract, spec/corda/adapter.md, with its numbers in
spec/corda/adapter.yaml (read through :mod:`.contract`) and the wire in
spec/schema/corda-adapter-wire.schema.json; the bridge role's events are there too. Why the crash is
done, not announced: were it a message, a node keeping its processed ids in memory would pass, and
the verdict on durability would rest on the node's own account of a crash.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

from rmkit.cli_options import with_role
from rmkit.protocols.corda.model import DRIVEN_ROLES, corda_spec
from rmkit.conformance.deadline_io import Worker, read_line
from rmkit.errors import UsageError
from rmkit.process_group import signal_group, stop_group
from rmkit.interrupts import held
from rmkit.reference_impl.corda.broker import Delivery, Queue
from rmkit.reference_impl.corda.message import Message
from rmkit.reference_impl.corda.receiver import ReceivingNode

from .contract import number

ROLES = DRIVEN_ROLES   # model.py names the roles the kit drives
DEFAULT_TIMEOUT = number("process", "reply_timeout_s")   # seconds per call, as `--timeout`'s default


class ImplementationFailed(Exception):
    """The implementation could not start, crashed, or answered something that is not a reply."""


def message_from(d: dict) -> Message:
    return Message(d["dedup_id"], d["session_id"], bool(d["session_init"]), d["payload"], d.get("sender_uuid"),
                   d.get("sequence_number"), peer=d.get("peer"))


def message_to(m: Message) -> dict:
    return {"dedup_id": m.dedup_id, "session_id": m.session_id, "session_init": m.session_init, "peer": m.sending_peer,
            "sender_uuid": m.sender_uuid, "sequence_number": m.sequence_number, "payload": m.payload}


class ReferenceReceiver:
    """The reference receiving node (reference_impl/corda) behind the adapter protocol. On a tick it
    commits what it is processing (oldest first) and acknowledges what is pending. What it commits
    goes to the SQLite file hello names, and a node started again on that file reads it back;
    nothing else survives a restart. (Without a database, as when a test drives the object
    directly, it keeps its processed ids in memory.)"""

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
        self.close()
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

    def on_broker_restart(self, event: dict) -> dict:
        self.node.to_ack.clear()
        return {}

    def close(self) -> None:
        """Close the node's database: at a new scenario's hello (whose node has a file of its own)
        and at the end of the run."""
        store = getattr(self.node, "store", None)
        if store is not None:
            store.close()


class ReferenceBridge:
    """The reference bridge (reference_impl/corda/bridge.py's rules) behind the adapter protocol:
    forwards at once (in order: one at a time), acknowledges locally on the remote acknowledgement,
    rolls back when the link goes down, acknowledges and drops oversize messages where the profile
    does."""

    def __init__(self, role: str = "bridge"):
        self.role = role

    def handle(self, event: dict) -> dict:
        return getattr(self, f"on_{event['type']}")(event)

    def on_hello(self, event):
        self.spec = corda_spec(event["profile"])
        self.waiting: list[Delivery] = []     # delivered, not sent yet (in order: behind an unacked one)
        self.unacked: dict[int, Delivery] = {}
        return {"ok": True}

    def _pump(self) -> list[int]:
        sent = []
        while self.waiting and not (self.spec.in_order_bridge and self.unacked):
            d = self.waiting.pop(0)
            self.unacked[d.tag] = d
            sent.append(d.tag)
        return sent

    def on_deliver(self, event):
        d = Delivery(event["tag"], message_from(event["message"]), False, event["conn"])
        if event["message"].get("size", 0) > self.spec.max_message_size and self.spec.oversize == "dropped_by_bridge":
            return {"acks": [[d.tag, d.connection]]}
        self.waiting.append(d)
        return {"send": self._pump()}

    def on_remote_ack(self, event):
        d = self.unacked.pop(event["tag"], None)
        return {"acks": [[d.tag, d.connection]] if d else [], "send": self._pump()}

    def on_link_down(self, event):
        self.waiting.clear()
        self.unacked.clear()
        return {"rollback": True}

    def on_tick(self, event):
        return {"send": self._pump()}

    def on_crash(self, event):
        self.waiting.clear()
        self.unacked.clear()
        return {}


def reference_factory(role: str):
    if role not in ROLES:
        raise UsageError(f"--role {role!r}: expected one of {', '.join(ROLES)}")
    if role == "bridge":
        return ReferenceBridge()
    return ReferenceReceiver()


# ---- the kit's side: a database per scenario, real crashes, a record of the exchange --------------
def describe(event: dict) -> str:
    """One event as a line of a report's exchange."""
    kind = event.get("type")
    if kind == "deliver":
        m = event.get("message") or {}
        return f"deliver {m.get('dedup_id')} (tag {event.get('tag')}, connection {event.get('conn')})"
    if kind == "hello":
        return f"hello (profile {event.get('profile')})"
    rest = {k: v for k, v in event.items() if k != "type"}
    return f"{kind} {json.dumps(rest)}" if rest else str(kind)


class Harnessed:
    """What the process and the Python wrappers share: the kit's side of the adapter protocol.

    Each scenario's hello gets a new SQLite file (in a temporary folder removed at :meth:`close`),
    and a ``crash`` event is done, not passed on: the implementation is stopped without warning,
    started again and greeted with the same file. Were the crash only a message, a node keeping
    its processed ids in memory would pass, and the durability rule would rest on the node's own
    account. The runners (``suite.run``, ``bridge.run_bridge``) send the same events as before.

    After a failure (a timeout, an exit, a bad reply) the next scenario starts a new
    implementation: a process that wrote garbage or a Python object that raised is in no known
    state. Counts kept for the report: ``delivered`` (deliveries answered: none means the run
    checked nothing), ``past_hello`` (some hello was answered: an implementation that fails
    before that could not be driven at all), and ``transcript`` (the current scenario's events
    and replies, shown when the implementation fails in it)."""

    def _setup(self) -> None:
        self._folder: Path | None = None    # the temporary folder of the databases, made at the first hello
        self._scenarios = 0
        self._hello: dict | None = None     # the current scenario's hello, database included
        self._fresh_needed = False          # the implementation failed: start a new one before the next hello
        self.delivered = 0
        self.past_hello = False
        self.transcript: list[str] = []

    # what a wrapper provides
    def _call(self, event: dict) -> dict:
        raise NotImplementedError

    def _start(self) -> None:
        raise NotImplementedError

    def _kill(self) -> None:
        raise NotImplementedError

    def handle(self, event: dict) -> dict:
        kind = event.get("type")
        if kind == "hello":
            return self._greet(event)
        if kind == "crash":
            self._crash()
            return {}
        reply = self._exchange(event)
        if kind == "deliver":
            self.delivered += 1
        return reply

    def _exchange(self, event: dict) -> dict:
        try:
            reply = self._call(event)
        except ImplementationFailed as exc:
            self._fresh_needed = True
            self.transcript.append(f"{describe(event)} -> {exc}")
            raise
        self.transcript.append(f"{describe(event)} -> {json.dumps(reply, default=repr)}")
        return reply

    def _greet(self, event: dict) -> dict:
        """A new scenario: a new database; a new implementation if the last one failed."""
        self.transcript = []
        if self._fresh_needed:
            self._fresh_needed = False
            self._restart()
        self._hello = {**event, "database": self._new_database()}
        reply = self._exchange(self._hello)
        self.past_hello = True
        return reply

    def _crash(self) -> None:
        self.transcript.append("crash: the kit stops the implementation without warning and starts it again "
                               "on the same database")
        self._restart()
        if self._hello is not None:
            self._exchange(self._hello)

    def _restart(self) -> None:
        try:
            self._kill()
            self._start()
        except ImplementationFailed as exc:
            self._fresh_needed = True
            self.transcript.append(f"start again -> {exc}")
            raise

    def _new_database(self) -> str:
        """A new, empty place for this scenario's SQLite file; the last scenario's is removed."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="rmkit-corda-", dir=_memory_folder()))
            # removed at close, or else when this object is collected or the kit exits
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(self._folder), True)
        else:
            shutil.rmtree(self._folder / f"scenario-{self._scenarios}", ignore_errors=True)
        self._scenarios += 1
        place = self._folder / f"scenario-{self._scenarios}"
        place.mkdir()
        return str(place / "node.sqlite")

    def _remove_databases(self) -> None:
        if self._folder is not None:
            self._cleanup()
            self._folder = None


def _memory_folder() -> str | None:
    """/dev/shm when it can be written, else None (the default temporary folder). The kit's crash
    kills a process, not the machine: what a node wrote survives it in memory as on a disk, and a
    node that syncs every commit (as it should) runs its scenarios several times faster there."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def harnessed(factory, timeout: float = DEFAULT_TIMEOUT):
    """``factory`` as the search drives it: one that makes the kit's wrappers. A plain Python
    factory (a class, as tests pass) is wrapped as ``--impl`` would be, so that its crashes are
    real too."""
    if getattr(factory, "harnessed", False):
        return factory
    name = getattr(factory, "__qualname__", None) or repr(factory)

    def make(role: str) -> InProcessImplementation:
        return InProcessImplementation(factory, name, role, timeout)

    make.harnessed = True
    return make


MAX_REPLY_BYTES = int(number("process", "max_reply_bytes"))   # a reply line longer than this is no reply
STOP_GRACE_S = number("process", "stop_grace_s")              # to exit once its input is closed (then SIGTERM)


class ProcessImplementation(Harnessed):
    """An implementation started as a process, speaking JSON Lines on stdin/stdout, in a process
    group of its own (``start_new_session``): a crash, a timeout or the end of the run stops the
    whole group, so a command that is a wrapper (``sh -c '...'``) leaves nothing behind. Replies
    are read as raw bytes with ``select`` up to the ``--timeout`` deadline, buffering a partial
    line: a line-buffered ``readline`` would block for ever on a process that writes half a line
    and stops, whatever the timeout."""

    def __init__(self, cmd: str, role: str, timeout: float):
        self.argv = [with_role(a, role) for a in shlex.split(cmd)]
        if not self.argv:
            raise UsageError("--impl-cmd: expected a command, found an empty string")
        self.cmd, self.timeout = cmd, timeout
        self.proc: subprocess.Popen | None = None
        self._setup()
        self._start()

    def _start(self) -> None:
        with held():   # a signal between the start and the line that keeps the process would orphan it
            try:
                self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                             start_new_session=True)
            except OSError as exc:
                raise ImplementationFailed(f"--impl-cmd {self.cmd!r}: cannot start ({exc.strerror})") from None
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

    def _call(self, event: dict) -> dict:
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
        """SIGKILL to the whole group at once (a crash, or a process that stopped answering)."""
        with held():
            if self.proc is None:
                return
            signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self._close_pipes()

    _kill = kill

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass

    def _stop(self) -> None:
        """The end of the run: stdin closed, a moment to exit, then SIGTERM and SIGKILL to whatever
        of the group still runs (the process, or what it started)."""
        proc = self.proc
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        stop_group(proc, STOP_GRACE_S, 0.02)
        proc.wait()
        self._close_pipes()

    def close(self) -> None:
        with held():   # a second signal must not cut the stop in half
            try:
                self._stop()
            finally:
                self._remove_databases()


class InProcessImplementation(Harnessed):
    """A Python implementation (``--impl``) whose calls (the factory's, then each ``handle``) run on
    a worker thread, waited for at most ``--timeout``: on the calling thread a ``handle`` that never
    returns would hang the run. A thread cannot be stopped, so a call that outlives the timeout
    fails the scenario and its thread is left behind, a daemon that does not keep the kit alive
    (the next scenario gets a new thread and a new object). An exception raised by the
    implementation is its failure, not the kit's. A crash drops the object and makes another."""

    def __init__(self, factory, spec: str, role: str, timeout: float):
        self.factory, self.spec, self.role, self.timeout = factory, spec, role, timeout
        self._worker: Worker | None = None
        self._stuck = False
        self.obj = None
        self._setup()
        self._start()

    def _start(self) -> None:
        if self._worker is None or self._stuck:
            self._worker, self._stuck = Worker(), False
        self.obj = self._run(f"{self.spec}({self.role!r})", self.factory, self.role)
        if not callable(getattr(self.obj, "handle", None)):
            raise ImplementationFailed(f"the object {self.spec}({self.role!r}) returned has no handle(event) method")

    def _kill(self) -> None:
        self.obj = None   # dropped without a call, as a killed process has no last word

    def _run(self, what: str, fn, arg):
        if self._stuck:
            raise ImplementationFailed(f"{what}: the implementation is still busy with a call that timed out")
        try:
            return self._worker.call(fn, arg, self.timeout)
        except TimeoutError:
            self._stuck = True
            raise ImplementationFailed(f"{what} did not return within {self.timeout:g} s (--timeout)") from None
        except (Exception, SystemExit) as exc:
            raise ImplementationFailed(f"{what} raised {type(exc).__name__}: {exc}") from None

    def _call(self, event: dict) -> dict:
        what = event["type"]
        reply = self._run(f"handle({what})", self.obj.handle, event)
        if not isinstance(reply, dict):
            raise ImplementationFailed(f"not a JSON object reply to {what}: {reply!r:.200}")
        return reply

    def close(self) -> None:
        try:
            done = getattr(self.obj, "close", None)
            if callable(done) and not self._stuck:
                try:
                    self._run("close()", lambda _: done(), None)
                except ImplementationFailed:
                    pass
        finally:
            self.obj = None
            self._remove_databases()


def open_factory(args) -> Any:
    """A function role -> implementation for ``--impl-cmd`` or ``--impl module:factory``; both
    answer within ``--timeout`` or raise :class:`ImplementationFailed`. A module that cannot be
    imported, whatever the reason (missing, a syntax error, an exception at import), is exit 2
    with its error: the implementation cannot be started, and the kit is not at fault."""
    if getattr(args, "impl_cmd", None):
        def start(role: str) -> ProcessImplementation:
            return ProcessImplementation(args.impl_cmd, role, args.timeout)
    else:
        factory = load_factory(args.impl)

        def start(role: str) -> InProcessImplementation:
            return InProcessImplementation(factory, args.impl, role, args.timeout)
    start.harnessed = True
    return start


def load_factory(spec: str):
    mod, _, name = spec.partition(":")
    try:
        module = importlib.import_module(mod)
    except (Exception, SystemExit) as exc:   # noqa: BLE001 -- the implementation's code, not the kit's
        raise UsageError(f"--impl {spec!r}: cannot load {mod}: {type(exc).__name__}: {exc}") from None
    try:
        factory = getattr(module, name or "factory")
    except AttributeError:
        raise UsageError(f"--impl {spec!r}: cannot load {mod}: it has no {name or 'factory'!r}") from None
    if not callable(factory):
        raise UsageError(f"--impl {spec!r}: expected FACTORY to be callable (FACTORY(role) returns the "
                         f"implementation), found {type(factory).__name__}")
    return factory


def serve(factory, role: str) -> None:
    """Run a Python implementation as an adapter process (JSON Lines on stdin/stdout)."""
    impl = factory(role)
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(impl.handle(json.loads(line))) + "\n")
            sys.stdout.flush()


SERVE_EXIT_CODES = """exit codes:
  0  the input ended (the kit closed the adapter's stdin)
  2  usage error (an unknown name or role), or an internal error (one line; RMKIT_DEBUG=1 shows the traceback)"""


def serve_command_line(prog: str, description: str, names: list[str] | None = None):
    """The command line of an adapter process: ``[NAME] [ROLE]`` (NAME: one of ``names``, when
    given; ROLE default receiver), for :func:`rmkit.guard.run_command_line`, under the exit-code
    contract: a bad argument is exit 2 with one line, never a traceback."""
    import argparse

    p = argparse.ArgumentParser(prog=prog, description=description, epilog=SERVE_EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    if names is not None:
        p.add_argument("name", choices=names, metavar="NAME", help="the one to serve (see above)")
    p.add_argument("role", nargs="?", default="receiver", choices=ROLES, metavar="ROLE",
                   help=f"the role it plays: {' or '.join(ROLES)} (default receiver; the ROLE of --impl-cmd)")
    return p


def main(argv: list[str] | None = None) -> int:
    from rmkit.guard import run_command_line

    p = serve_command_line("python -m rmkit.conformance.corda.driven.adapters",
                           "Serve the reference Corda node as an adapter process: JSON Lines on stdin/stdout\n"
                           "(the adapter protocol above), for `rmkit conform --protocol corda --impl-cmd`.")
    p.set_defaults(func=lambda args: serve(reference_factory, args.role) or 0)
    return run_command_line(p, argv)


if __name__ == "__main__":
    sys.exit(main())
