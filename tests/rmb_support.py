"""Shared set-up of the RMB tests: the pinned npm clients (interop/rmb-npm) and redis-server."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import REPO

NPM_DIR = REPO / "interop" / "rmb-npm"


def npm_ready() -> str:
    """The node binary, with interop/rmb-npm's lockfile installed (`npm ci`, registry only).
    Skips only where node is absent; a failed install is a failure."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the npm RMB clients cannot run (make .venv/.installed installs it)")
    if not (NPM_DIR / "node_modules" / "ts-rmb-http-client").is_dir():
        npm = shutil.which("npm")
        assert npm, "node is installed but npm is not: cannot install interop/rmb-npm"
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NPM_DIR, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"npm ci in interop/rmb-npm failed:\n{done.stderr[-2000:]}"
    return node


def run_vectors(mode: str, cases: list[dict]) -> list[dict]:
    node = npm_ready()
    done = subprocess.run([node, "vectors.js", mode], cwd=NPM_DIR, input="".join(json.dumps(c) + "\n" for c in cases),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(out) == len(cases), done.stderr[-3000:]
    return out


def redis_server_or_skip() -> str:
    path = shutil.which("redis-server")
    if path is None:
        pytest.skip("redis-server is not installed (make .venv/.installed installs it with apt-get)")
    return path


# -- in-process twins on one redis-server (one database per twin) ------------------------------
import asyncio
import threading
import time
import urllib.error
import urllib.request

import redis as syncredis

from rmkit.protocols.rmb.keys import Directory, Twin
from rmkit.protocols.rmb.signing import keypair
from rmkit.reference_impl.rmb.cluster import key_type_of, demo_seed
from rmkit.reference_impl.rmb.daemon import DaemonConfig, RmbDaemon
from rmkit.reference_impl.rmb.handler import serve_commands
from rmkit.reference_impl.rmb.redisproc import free_port


class LoopThread:
    """An asyncio loop in a thread, so sync tests can drive async daemons."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout=30):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class Net:
    """Twins 1..n: daemons for ``running`` twins (each on its own database of one redis-server),
    keys for all; ``down`` twins get a directory address where nothing listens."""

    def __init__(self, loopthread: LoopThread, redis_port: int, profile: str, n: int = 3, running=(1, 2),
                 handlers: dict | None = None, tmp_path=None):
        self.lt, self.profile, self.redis_port = loopthread, profile, redis_port
        self.keys = {i: keypair(demo_seed(i), key_type_of(i, "mixed")) for i in range(1, n + 1)}
        self.ports = {i: free_port() for i in range(1, n + 1)}
        self.directory = Directory({i: Twin(i, f"127.0.0.1:{self.ports[i]}", self.keys[i].key_type, self.keys[i].public) for i in self.keys})
        self.running = running
        self.logs = {i: (tmp_path / f"twin-{i}.jsonl") for i in running} if tmp_path else {}
        self.r = {i: syncredis.Redis(port=redis_port, db=i, decode_responses=True) for i in range(1, n + 1)}
        for r in self.r.values():
            r.flushdb()
        self.daemons = {}
        self.handlers = handlers or {}
        self._stop = None

    def url(self, twin: int) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/{twin}"

    def __enter__(self):
        async def start():
            self._stop = asyncio.Event()
            for i in self.running:
                d = RmbDaemon(DaemonConfig(i, self.keys[i], self.directory, self.url(i), self.profile, "127.0.0.1", self.ports[i],
                                           workers=2, log_path=str(self.logs[i]) if i in self.logs else None, http_timeout_s=2))
                await d.start()
                self.daemons[i] = d
            self._served = [asyncio.ensure_future(serve_commands(self.url(i), h, self._stop)) for i, h in self.handlers.items()]
        self.lt.run(start())
        return self

    def __exit__(self, *exc):
        async def stop():
            self._stop.set()
            await asyncio.gather(*self._served, return_exceptions=True)
            for d in self.daemons.values():
                await d.stop()
        self.lt.run(stop())
        for r in self.r.values():
            r.close()

    # -- what a client does
    def request(self, twin: int, dst, cmd="echo", payload=b"hi", exp=30, tries=2, ret=None, **extra) -> dict:
        import base64
        import json
        import uuid

        msg = {"ver": 1, "uid": "", "cmd": cmd, "exp": exp, "try": tries, "dat": base64.b64encode(payload).decode(), "src": 0,
               "dst": list(dst), "ret": ret or str(uuid.uuid4()), "shm": "", "now": int(time.time()), "err": "", "sig": "", **extra}
        self.r[twin].lpush("msgbus.system.local", json.dumps(msg))
        return msg

    def wait(self, twin: int, queue: str, timeout: float = 10.0):
        import json

        got = self.r[twin].brpop([queue], timeout=timeout)
        return json.loads(got[1]) if got else None

    def log(self, twin: int, until: str | None = None, timeout: float = 3.0) -> list[dict]:
        """Twin's message log; with ``until``, waits (up to ``timeout``) for that event to be written."""
        import json

        deadline = time.monotonic() + timeout
        while True:
            lines = [json.loads(l) for l in self.logs[twin].read_text().splitlines()]
            if until is None or any(e["event"] == until for e in lines) or time.monotonic() > deadline:
                return lines
            time.sleep(0.05)

    def post(self, twin: int, endpoint: str, body) -> tuple[int, str]:
        import json

        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.ports[twin]}{endpoint}", data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
