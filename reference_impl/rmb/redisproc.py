"""A private redis-server on loopback: a free port, no persistence, a temporary folder, stopped by
its PID. Each twin's daemon gets its own (RMB-NODE-001)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from rmkit.errors import UsageError
from rmkit.interrupts import held


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, port: int | None = None, workdir: str | Path | None = None):
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            raise UsageError("redis-server is not installed (apt-get install -y redis-server; `make .venv/.installed` does it)")
        self.port = port or free_port()
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="rmb-redis-")
        self.dir = Path(workdir) if workdir else Path(self._tmp.name)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> "RedisServer":
        with held():  # started and recorded (to be stopped), or neither
            self.proc = subprocess.Popen([self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                                          "--appendonly", "no", "--daemonize", "no", "--dir", str(self.dir)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise UsageError(f"redis-server on port {self.port} exited at start ({self.proc.returncode}): {err[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise UsageError(f"redis-server on port {self.port} did not answer within {timeout} s")

    def stop(self) -> None:
        with held():  # a second Ctrl-C does not cut the stop in half
            self._stop()

    def _stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and self.proc.stderr:
            self.proc.stderr.close()
        if self._tmp:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
