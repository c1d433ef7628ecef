"""N twins on one machine: per twin a redis-server and a daemon process (``rmkit rmb serve``) on
free loopback ports, a directory file, deterministic test keys, and with ``record`` a recorder
in front of each daemon. Each child's error output is kept in the run folder (``*.stderr``) and
quoted when it dies. Children are stopped by PID."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rmkit.protocols.rmb.keys import Directory, Twin
from rmkit.protocols.rmb.signing import keypair
from rmkit.errors import UsageError
from rmkit.interrupts import held
from rmkit.reference_impl.rmb.redisproc import RedisServer, free_port


def demo_seed(twin: int) -> bytes:
    """Deterministic, public test keys: never use them for anything real."""
    return hashlib.sha256(f"rmkit-rmb-test-twin-{twin}".encode()).digest()


def key_type_of(twin: int, choice: str) -> str:
    if choice == "mixed":
        return "ed25519" if twin % 2 else "sr25519"
    return choice


@dataclass
class TwinProc:
    twin: int
    key_type: str
    seed: bytes
    redis: RedisServer
    http_port: int
    log: Path
    proc: subprocess.Popen | None = None
    record_port: int | None = None  # the recorder in front of the daemon, when recording
    recorder: subprocess.Popen | None = None

    def children(self, workdir: Path) -> list[tuple[str, subprocess.Popen, Path]]:
        """(name, process, its error output) of the daemon and recorder started for this twin."""
        out = [(f"twin {self.twin}'s daemon", self.proc, workdir / f"twin-{self.twin}.stderr")] if self.proc else []
        if self.recorder:
            out.append((f"twin {self.twin}'s recorder", self.recorder, workdir / f"recorder-{self.twin}.stderr"))
        return out

    @property
    def address(self) -> str:
        """What other twins are given: the recorder when there is one."""
        return f"127.0.0.1:{self.record_port or self.http_port}"


class Cluster:
    def __init__(self, n: int, profile: str = "spec", key_type: str = "mixed", workdir: str | Path | None = None, workers: int = 4,
                 record: bool = False, down: int = 0):
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="rmb-up-")
        self.dir = Path(workdir or self._tmp.name)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.profile, self.workers = profile, workers
        self.twins = [TwinProc(i, key_type_of(i, key_type), demo_seed(i), RedisServer(workdir=self.dir / f"redis-{i}"),
                               free_port(), self.dir / f"twin-{i}.log.jsonl", record_port=free_port() if record else None)
                      for i in range(1, n + 1)]
        # twins listed with no daemon behind their address (a destination that is down)
        self.down = {i: free_port() for i in range(n + 1, n + down + 1)}
        twins = {t.twin: Twin(t.twin, t.address, t.key_type, keypair(t.seed, t.key_type).public) for t in self.twins}
        twins.update({i: Twin(i, f"127.0.0.1:{port}", key_type_of(i, key_type), keypair(demo_seed(i), key_type_of(i, key_type)).public)
                      for i, port in self.down.items()})
        self.directory = Directory(twins)
        self.directory_path = self.dir / "directory.json"
        self._files: list = []  # the children's error outputs

    def start(self, timeout: float = 20.0) -> "Cluster":
        self.directory_path.write_text(json.dumps(self.directory.to_data(), indent=2) + "\n", encoding="utf-8")
        (self.dir / "twins.json").write_text(json.dumps(
            [{"twin": t.twin, "key_type": t.key_type, "seed": t.seed.hex(), "redis": t.redis.url, "redis_port": t.redis.port,
              "http": f"127.0.0.1:{t.http_port}", "log": str(t.log)} for t in self.twins], indent=2) + "\n", encoding="utf-8")
        try:
            for t in self.twins:
                t.redis.start()
            for t in self.twins:
                with held():  # each process started and recorded (to be stopped), or not started
                    t.proc = subprocess.Popen([sys.executable, "-m", "rmkit.reference_impl.rmb.cli", "serve", "--twin", str(t.twin),
                                               "--directory", str(self.directory_path), "--seed", t.seed.hex(), "--redis", t.redis.url,
                                               "--profile", self.profile, "--workers", str(self.workers), "--log", str(t.log),
                                               "--listen", f"127.0.0.1:{t.http_port}"],
                                              stdout=subprocess.DEVNULL, stderr=self._stderr(f"twin-{t.twin}.stderr"),
                                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
                    if t.record_port:
                        t.recorder = subprocess.Popen([sys.executable, "-m", "rmkit.reference_impl.rmb.recorder", "--listen",
                                                       f"127.0.0.1:{t.record_port}", "--target", f"127.0.0.1:{t.http_port}",
                                                       "--log", str(self.dir / f"recorder-{t.twin}.log.jsonl")],
                                                      stdout=subprocess.DEVNULL, stderr=self._stderr(f"recorder-{t.twin}.stderr"),
                                                      env={**os.environ, "PYTHONUNBUFFERED": "1"})
            deadline = time.monotonic() + timeout
            for t in self.twins:
                for (name, proc, err), port in zip(t.children(self.dir), (t.http_port, t.record_port)):
                    while True:
                        # any child dead stops the wait, not only the one whose port is awaited
                        dead = self.dead()
                        if dead:
                            raise UsageError(f"at start, {dead}")
                        try:
                            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                            break
                        except OSError:
                            if time.monotonic() > deadline:
                                raise UsageError(f"{name} did not listen on 127.0.0.1:{port} within {timeout} s"
                                                 + _last_lines(err)) from None
                            time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def _stderr(self, name: str):
        f = open(self.dir / name, "w")
        self._files.append(f)
        return f

    def dead(self) -> str | None:
        """The first child that has exited (a daemon, a recorder, a redis-server), with its exit code
        and its last lines of error output; None while all run."""
        for t in self.twins:
            for name, proc, err in t.children(self.dir):
                if proc.poll() is not None:
                    return f"{name} exited (pid {proc.pid}, exit {proc.returncode})" + _last_lines(err)
            if t.redis.proc and t.redis.proc.poll() is not None:
                return f"twin {t.twin}'s redis-server exited (pid {t.redis.proc.pid}, exit {t.redis.proc.returncode})"
        return None

    def stop(self) -> None:
        with held():  # a second Ctrl-C does not cut the stop in half
            self._stop()

    def _stop(self) -> None:
        procs = [p for t in self.twins for p in (t.proc, t.recorder) if p]
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for t in self.twins:
            t.redis.stop()
        for f in self._files:
            f.close()
        self._files.clear()

    def describe(self) -> str:
        rows = [f"{len(self.twins)} twins, profile {self.profile}; directory {self.directory_path}; keys and ports in {self.dir / 'twins.json'}",
                f"{'twin':>4}  {'key':7}  {'http':21}  {'redis':28}  log"]
        for t in self.twins:
            rows.append(f"{t.twin:>4}  {t.key_type:7}  {t.address:<21}  {t.redis.url:28}  {t.log}"
                        + (f"  (recorder in front of 127.0.0.1:{t.http_port})" if t.record_port else ""))
        for i, port in self.down.items():
            rows.append(f"{i:>4}  {self.directory.twins[i].key_type:7}  127.0.0.1:{port:<11}  (down: listed, nothing listens)")
        t = self.twins[0]
        rows.append(f"a client of twin {t.twin}: LPUSH msgbus.system.local to redis-cli -p {t.redis.port} "
                    f"(e.g. the npm ts-rmb-redis-client: new MessageBusClient({t.redis.port})); a handler of command CMD on "
                    f"twin N pops msgbus.CMD on twin N's redis")
        return "\n".join(rows)

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _last_lines(path: Path, lines: int = 6, chars: int = 800) -> str:
    """``: its error output ends: ...`` with the last lines of ``path`` ('' when it has none)."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return ""
    if not text:
        return ""
    tail = "\n".join(text.splitlines()[-lines:])[-chars:]
    return f"; its error output ({path.name}) ends:\n{tail}"
