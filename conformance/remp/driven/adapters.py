"""The implementation under test, behind one interface: a process speaking JSON Lines, or a Python
object. Whatever goes wrong on the implementation's side becomes an :class:`ImplementationFailure`
(crash, timeout, malformed JSON, an answer to the wrong request, an error it reports) with the step
and the bytes received, never an exception of the kit.
"""

from __future__ import annotations

import collections
import importlib
import os
import select
import shlex
import signal
import _signal
import subprocess
import threading
import time
from dataclasses import dataclass

import orjson

from rmkit.cli_options import with_role
from rmkit.conformance.deadline_io import Worker as _Worker, read_line
from rmkit.protocols.remp.adapterwire import WireError, adapter_spec, from_json
from rmkit.errors import UsageError

PROTOCOL_VERSION = 1
STDERR_KEEP = 200  # lines of the implementation's stderr kept for the report
MAX_ANSWER_BYTES = 4 << 20  # one answer larger than this is reported as oversized, not read on


@dataclass
class ImplementationFailure(Exception):
    """The implementation did not answer a request properly. ``kind``: crash | timeout | malformed
    | wrong-answer | error | start; ``step``: the request's number (0: the hello)."""

    kind: str
    step: int
    detail: str
    received: bytes = b""
    stderr: str = ""

    def __str__(self) -> str:
        got = f"; received {self.received[:300]!r}" if self.received else ""
        return f"{self.kind} at step {self.step}: {self.detail}{got}"


def _check_outputs(role: str, seq: int, outputs, raw: bytes, values: list | None = None) -> list:
    """``outputs`` when each is a well-formed output of ``role``; their decoded values are appended
    to ``values`` when given (the receipt log reuses them)."""
    allowed = adapter_spec()["roles"][role]["outputs"]
    if not isinstance(outputs, list):
        raise ImplementationFailure("malformed", seq, f'"outputs": expected a list, found {type(outputs).__name__}', raw)
    for i, o in enumerate(outputs):
        if not isinstance(o, dict) or o.get("type") not in allowed:
            found = o.get("type") if isinstance(o, dict) else o
            raise ImplementationFailure("malformed", seq, f"outputs[{i}].type: expected one of {', '.join(allowed)} "
                                                          f"(the {role}'s outputs), found {found!r}", raw)
        try:
            v = from_json(o, where=f"outputs[{i}]", part="outputs")
            if values is not None:
                values.append(v)
        except WireError as exc:
            raise ImplementationFailure("malformed", seq, str(exc), raw) from None
    return outputs


def _not_ready(answer) -> str | None:
    """What is wrong with an answer to the hello, or None when it is the ready the protocol asks for
    (the same answer of both forms: an object whose ``hello`` returns nothing has not said it is ready)."""
    if isinstance(answer, dict) and answer.get("type") == "ready":
        return None
    if isinstance(answer, dict):
        found = f"type {answer.get('type')!r}"
    else:
        found = "None (hello() returned nothing)" if answer is None else f"{answer!r:.80} (a {type(answer).__name__})"
    return f'expected {{"type": "ready"}} to the hello, found {found}'


def _json_size(outputs) -> tuple[int, str]:
    """(bytes of ``outputs`` as JSON, "") or (0, why it is no JSON): a Python implementation's answer
    is held to the wire's size limit and to what JSON can carry, as a process's answer is."""
    try:
        return len(orjson.dumps(outputs)), ""
    except TypeError as exc:  # a value JSON cannot carry (an object, an integer beyond 64 bits)
        return 0, str(exc)


class _StepTimeout(BaseException):
    """Raised into an in-process call by the alarm (a BaseException, so that an implementation's
    ``except Exception`` does not swallow it)."""


def _alarm(signum, frame):
    raise _StepTimeout


class _Alarm:
    """Calls run on the calling thread, interrupted by SIGALRM when they outlive the timeout: no
    thread handover per step (which costs more than a reference step on a busy machine). Only on
    the main thread, and only when no one else's alarm is pending; else :class:`_Worker`."""

    @staticmethod
    def usable() -> bool:
        return (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
                and signal.getitimer(signal.ITIMER_REAL)[0] == 0)

    def call(self, fn, arg, timeout: float):
        old = _signal.signal(signal.SIGALRM, _alarm)  # the C call: signal.signal's enum wrapping costs more than a step
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            started = time.monotonic()
            value = fn(arg)
            if time.monotonic() - started > timeout:  # it caught the alarm and went on: still too late
                raise TimeoutError
            return value
        except _StepTimeout:
            raise TimeoutError from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _signal.signal(signal.SIGALRM, old)


class InProcessImplementation:
    """A Python implementation: ``factory(role)`` gives an object with ``hello(params)``,
    ``step(event) -> list`` and ``bye()``, on the wire's JSON objects. Each call runs under the
    same ``--timeout`` as the process form: interrupted by an alarm on the main thread, or on a
    worker thread elsewhere; after a timeout the object (and its thread) is abandoned and the next
    scenario gets a new object from the factory."""

    def __init__(self, spec: str, role: str, timeout: float = 5.0):
        self.spec, self.role, self.timeout = spec, role, timeout
        mod_name, _, attr = spec.partition(":")
        if not mod_name or not attr:
            raise UsageError(f"--impl {spec!r}: expected MODULE:FACTORY, e.g. rmkit.reference_impl.remp.adapter:factory")
        try:
            module = importlib.import_module(mod_name)
        except (Exception, SystemExit) as exc:  # the module's own code failed: it cannot be started
            raise UsageError(f"--impl {spec!r}: cannot load it: importing {mod_name} raised "
                             f"{type(exc).__name__}: {exc}") from None
        self.factory = getattr(module, attr, None)
        if self.factory is None:
            raise UsageError(f"--impl {spec!r}: cannot load it: module {mod_name} has no attribute {attr!r}")
        if not callable(self.factory):
            raise UsageError(f"--impl {spec!r}: expected FACTORY to be callable (FACTORY(role) returns the adapter), "
                             f"found {type(self.factory).__name__}")
        self.obj = None
        self._worker = None
        try:
            self._new_object()
        except ImplementationFailure as exc:
            raise UsageError(f"--impl {spec!r}: the implementation cannot be started: {exc.detail}") from None
        self.name = getattr(self.obj, "name", spec)
        if not isinstance(self.name, str):
            self.name = spec

    def _new_object(self) -> None:
        self._worker = _Alarm() if _Alarm.usable() else _Worker()
        try:
            self.obj = self._worker.call(self.factory, self.role, self.timeout)
        except TimeoutError:
            self.obj = self._worker = None
            raise ImplementationFailure("start", 0, f"{self.spec}({self.role!r}) did not return within "
                                                    f"{self.timeout:g} s (--timeout)") from None
        except (Exception, SystemExit) as exc:
            self.obj = None
            raise ImplementationFailure("start", 0, f"{self.spec}({self.role!r}) raised {type(exc).__name__}: {exc}") from None
        for method in ("hello", "step", "bye"):
            if not callable(getattr(self.obj, method, None)):
                raise ImplementationFailure("start", 0, f"the object {self.spec}({self.role!r}) returned has no "
                                                        f"{method}() method")

    def _call(self, what: str, seq: int, fn, arg):
        try:
            return self._worker.call(fn, arg, self.timeout)
        except TimeoutError:
            self.obj = self._worker = None  # abandoned: the next scenario starts a new object
            raise ImplementationFailure("timeout", seq, f"{what} did not return within {self.timeout:g} s (--timeout)") from None
        except (Exception, SystemExit) as exc:
            raise ImplementationFailure("error", seq, f"{what} raised {type(exc).__name__}: {exc}") from None

    def start(self, hello: dict) -> None:
        if self.obj is None:
            self._new_object()
        answer = self._call("hello", 0, self.obj.hello, dict(hello["params"], profile=hello["profile"]))
        problem = _not_ready(answer)
        if problem:
            raise ImplementationFailure("wrong-answer", 0, problem)

    def step(self, seq: int, event: dict) -> list:
        if self.obj is None:
            raise ImplementationFailure("crash", seq, "the implementation was abandoned after a timeout")
        outputs = self._call("step", seq, self.obj.step, event)
        size, not_json = _json_size(outputs)
        if size > MAX_ANSWER_BYTES:
            count = f"{len(outputs):,} outputs, " if isinstance(outputs, list) else ""
            raise ImplementationFailure("oversized", seq, f"the answer holds {count}{size:,} bytes as JSON "
                                                          f"(at most {MAX_ANSWER_BYTES:,})")
        self.last_values = []
        checked = _check_outputs(self.role, seq, outputs, b"", self.last_values)  # names the field at fault
        if not_json:  # in no field the codec reads (a key it does not know, an item of a hand-over)
            raise ImplementationFailure("malformed", seq, f"the answer is not JSON ({not_json})")
        return checked

    def end(self) -> None:
        if self.obj is None:
            return
        self._call("bye", -1, lambda _: self.obj.bye(), None)

    def stderr(self) -> str:
        return ""

    def close(self) -> None:
        pass


class ProcessImplementation:
    """An implementation as a process: started once, given one scenario after another (hello ...
    bye); restarted after it crashed or timed out."""

    def __init__(self, cmd: str, role: str, timeout: float = 5.0):
        self.cmd, self.role, self.timeout = cmd, role, timeout
        self.argv = [with_role(a, role) for a in shlex.split(cmd)]
        if not self.argv:
            raise UsageError("--impl-cmd: expected a command, found an empty string")
        self.name = " ".join(with_role(w, role) for w in cmd.split(" "))
        self.batch = False  # it takes several events in one request (its ready says so)
        self.requests = 0  # lines sent (hello, event or events, bye): each a round trip
        self._ready_due = False  # a hello was sent and its ready not read yet
        self.proc: subprocess.Popen | None = None
        self._err: collections.deque = collections.deque(maxlen=STDERR_KEEP)

    # ---- process --------------------------------------------------------------------------------
    def _spawn(self) -> None:
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, bufsize=0)
        except OSError as exc:
            raise UsageError(f"--impl-cmd {self.cmd!r}: cannot start {self.argv[0]!r} ({exc.strerror or exc})") from None
        self._buf = bytearray()
        self.batch = self._ready_due = False
        threading.Thread(target=self._read_err, args=(self.proc.stderr,), daemon=True).start()

    def _readline(self) -> bytes | None:
        """The next line of the implementation's stdout, waiting at most the step timeout (read
        here, with select, rather than handed over by a thread: the handover cost more than the
        reference's whole step); None at end of file; raises TimeoutError, or OverflowError for
        an answer longer than MAX_ANSWER_BYTES."""
        return read_line(self.proc.stdout.fileno(), self._buf, self.timeout, MAX_ANSWER_BYTES)

    def _read_err(self, stream) -> None:
        for line in iter(stream.readline, b""):
            self._err.append(line.decode("utf-8", "replace").rstrip("\n"))

    def stderr(self) -> str:
        return "\n".join(self._err)

    def _send(self, obj: dict, step: int) -> None:
        self.requests += 1
        try:
            self.proc.stdin.write(orjson.dumps(obj) + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._crashed(step, "the process closed its input (it exited)", self._unread())

    def _unread(self, limit: int = 300, wait: float = 0.5) -> bytes:
        """The first bytes the process wrote that no answer took (up to ``limit``, waiting at most
        ``wait`` seconds for them): a process that exits at once often printed why (a usage line,
        a banner), which is what its author needs to see."""
        out = bytearray(self._buf[:limit])
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + wait
        while len(out) < limit and (left := deadline - time.monotonic()) > 0:
            if not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, limit - len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def _crashed(self, step: int, why: str, received: bytes = b""):
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:  # it closed its output but runs on: stopped here
                why += ", yet kept running (stopped by the kit)"
                self.proc.kill()
                code = self.proc.wait()
        time.sleep(0.05)  # let the stderr reader catch the last lines
        self.proc = None
        raise ImplementationFailure("crash", step, f"{why}; exit code {code}", received, self.stderr())

    def _receive(self, step: int) -> tuple[dict, bytes]:
        try:
            line = self._readline()
        except TimeoutError:
            self.close()
            raise ImplementationFailure("timeout", step, f"no answer within {self.timeout:g} s (--timeout)",
                                        stderr=self.stderr()) from None
        except OverflowError:
            head = bytes(self._buf[:300])
            self.close()
            raise ImplementationFailure("oversized", step, f"the answer is longer than {MAX_ANSWER_BYTES:,} bytes "
                                                           "without ending its line", head, self.stderr()) from None
        if line is None:
            self._crashed(step, "the process exited without answering", bytes(self._buf[:300]))
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise self._out_of_step("malformed", step, f"the answer is not JSON ({exc})", line) from None
        if not isinstance(msg, dict):
            raise self._out_of_step("malformed", step, "the answer is not a JSON object", line)
        if msg.get("type") == "error":
            raise ImplementationFailure("error", step, f"the implementation reports: {msg.get('message')}", line, self.stderr())
        return msg, line

    def _out_of_step(self, kind: str, step: int, why: str, raw: bytes) -> ImplementationFailure:
        """The failure of an answer that is not the one asked for. Which request the lines still to
        come answer is unknown (a stray debug line puts every later answer one behind), so the
        process is stopped and the next scenario starts a fresh one: one bad line fails one scenario."""
        self._stop()
        return ImplementationFailure(kind, step, why, raw, self.stderr())

    # ---- protocol -------------------------------------------------------------------------------
    def start(self, hello: dict) -> None:
        self.begin(hello)
        self._ready()

    def begin(self, hello: dict) -> None:
        """Send the hello without waiting for the ready: it is read before the next request, so
        that its round trip overlaps with the kit's own work (a failure is still the hello's, step 0)."""
        if self.proc is None or self.proc.poll() is not None:
            self._spawn()
        self._send(hello, 0)
        self._ready_due = True

    def _ready(self) -> None:
        if not self._ready_due:
            return
        self._ready_due = False
        msg, raw = self._receive(0)
        problem = _not_ready(msg)
        if problem:
            raise self._out_of_step("wrong-answer", 0, problem, raw)
        self.name = str(msg.get("implementation") or self.name)
        self.batch = msg.get("batch") is True

    def step(self, seq: int, event: dict) -> list:
        self._ready()
        self._send({"type": "event", "seq": seq, "event": event}, seq)
        outputs, self.last_values = self._answer(seq)
        return outputs

    def _answer(self, seq: int) -> tuple[list, list]:
        """The checked outputs of request ``seq`` and their decoded values."""
        msg, raw = self._receive(seq)
        if msg.get("type") != "outputs":
            raise self._out_of_step("wrong-answer", seq, f'expected {{"type": "outputs", "seq": {seq}, ...}}, found type {msg.get("type")!r}', raw)
        if msg.get("seq") != seq:
            raise self._out_of_step("wrong-answer", seq, f"the answer is to request {msg.get('seq')!r}, expected {seq}", raw)
        values: list = []
        return _check_outputs(self.role, seq, msg.get("outputs"), raw, values), values

    def steps(self, seq: int, events: list) -> list:
        """The answers to ``events`` (steps ``seq``, ``seq`` + 1, ...) sent in one request (an
        implementation whose ready said ``"batch": true``): per step (outputs, their values), in
        order, up to the first failure, which ends the list as an :class:`ImplementationFailure`.
        After a failure the answers not read yet are of no use: the process is stopped (restarted
        for the next scenario)."""
        answers: list = []
        try:
            self._ready()
            if not self.batch:  # it said otherwise this time: one by one
                for i, event in enumerate(events):
                    answers.append((self.step(seq + i, event), self.last_values))
                return answers
            if len(events) == 1:
                self._send({"type": "event", "seq": seq, "event": events[0]}, seq)
            else:
                self._send({"type": "events", "seq": seq, "events": events}, seq)
            for i in range(len(events)):
                answers.append(self._answer(seq + i))
        except ImplementationFailure as f:
            if len(answers) < len(events) - 1:
                self._stop()
            answers.append(f)
        return answers

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def end(self) -> None:
        if self.proc is None:
            return
        self._ready()
        self._send({"type": "bye"}, -1)
        msg, raw = self._receive(-1)
        if msg.get("type") != "bye":
            raise self._out_of_step("wrong-answer", -1, f'expected {{"type": "bye"}}, found type {msg.get("type")!r}', raw)

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def open_implementation(args, role: str):
    """The implementation named by ``--impl-cmd`` or ``--impl`` for ``role``."""
    if getattr(args, "impl_cmd", None) is not None:
        return ProcessImplementation(args.impl_cmd, role, args.timeout)
    return InProcessImplementation(args.impl, role, getattr(args, "timeout", 5.0))


def hello_message(role: str, profile: str, params: dict, scenario: str = "") -> dict:
    return {"type": "hello", "protocol": "remp", "version": PROTOCOL_VERSION, "role": role, "profile": profile,
            "params": params, "scenario": scenario}
