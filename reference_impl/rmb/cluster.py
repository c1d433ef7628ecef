"""N twins on one machine: per twin a redis-server and a daemon process (``rmkit rmb serve``) on
free loopback ports, a directory file, deterministic test keys. Children are stopped by PID."""

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

from rmkit.conformance.rmb.directory import Directory, Twin
from rmkit.conformance.rmb.signing import keypair
from rmkit.errors import UsageError
from rmkit.reference_impl.rmb.redisproc import RedisServer, free_port


def test_seed(twin: int) -> bytes:
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


class Cluster:
    def __init__(self, n: int, profile: str = "spec", key_type: str = "mixed", workdir: str | Path | None = None, workers: int = 4):
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="rmb-up-")
        self.dir = Path(workdir or self._tmp.name)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.profile, self.workers = profile, workers
        self.twins = [TwinProc(i, key_type_of(i, key_type), test_seed(i), RedisServer(workdir=self.dir / f"redis-{i}"),
                               free_port(), self.dir / f"twin-{i}.log.jsonl") for i in range(1, n + 1)]
        self.directory = Directory({t.twin: Twin(t.twin, f"127.0.0.1:{t.http_port}", t.key_type, keypair(t.seed, t.key_type).public)
                                    for t in self.twins})
        self.directory_path = self.dir / "directory.json"

    def start(self, timeout: float = 20.0) -> "Cluster":
        self.directory_path.write_text(json.dumps(self.directory.to_data(), indent=2) + "\n", encoding="utf-8")
        (self.dir / "twins.json").write_text(json.dumps(
            [{"twin": t.twin, "key_type": t.key_type, "seed": t.seed.hex(), "redis": t.redis.url, "redis_port": t.redis.port,
              "http": f"127.0.0.1:{t.http_port}", "log": str(t.log)} for t in self.twins], indent=2) + "\n", encoding="utf-8")
        try:
            for t in self.twins:
                t.redis.start()
            for t in self.twins:
                t.proc = subprocess.Popen([sys.executable, "-m", "rmkit", "rmb", "serve", "--twin", str(t.twin),
                                           "--directory", str(self.directory_path), "--seed", t.seed.hex(), "--redis", t.redis.url,
                                           "--profile", self.profile, "--workers", str(self.workers), "--log", str(t.log)],
                                          stdout=subprocess.DEVNULL, stderr=open(self.dir / f"twin-{t.twin}.stderr", "w"),
                                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
            deadline = time.monotonic() + timeout
            for t in self.twins:
                while True:
                    if t.proc.poll() is not None:
                        err = (self.dir / f"twin-{t.twin}.stderr").read_text()
                        raise UsageError(f"twin {t.twin}'s daemon exited at start ({t.proc.returncode}): {err[-800:]}")
                    try:
                        socket.create_connection(("127.0.0.1", t.http_port), timeout=0.2).close()
                        break
                    except OSError:
                        if time.monotonic() > deadline:
                            raise UsageError(f"twin {t.twin}'s daemon did not listen on 127.0.0.1:{t.http_port} within {timeout} s")
                        time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def dead(self) -> str | None:
        for t in self.twins:
            if t.proc and t.proc.poll() is not None:
                return f"twin {t.twin}'s daemon (pid {t.proc.pid}, exit {t.proc.returncode})"
            if t.redis.proc and t.redis.proc.poll() is not None:
                return f"twin {t.twin}'s redis-server (pid {t.redis.proc.pid})"
        return None

    def stop(self) -> None:
        for t in self.twins:
            if t.proc and t.proc.poll() is None:
                t.proc.terminate()
        for t in self.twins:
            if t.proc:
                try:
                    t.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    t.proc.kill()
                    t.proc.wait()
            t.redis.stop()

    def describe(self) -> str:
        rows = [f"{len(self.twins)} twins, profile {self.profile}; directory {self.directory_path}; keys and ports in {self.dir / 'twins.json'}",
                f"{'twin':>4}  {'key':7}  {'http':21}  {'redis':28}  log"]
        for t in self.twins:
            rows.append(f"{t.twin:>4}  {t.key_type:7}  127.0.0.1:{t.http_port:<11}  {t.redis.url:28}  {t.log}")
        t = self.twins[0]
        rows.append(f"a client of twin {t.twin}: LPUSH msgbus.system.local to redis-cli -p {t.redis.port} "
                    f"(e.g. the npm ts-rmb-redis-client: new MessageBusClient({t.redis.port})); a handler of command CMD on "
                    f"twin N pops msgbus.CMD on twin N's redis")
        return "\n".join(rows)

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
