"""The world around an RMB daemon under test: its own fresh redis-server, its twin directory and
key, the daemon process started from ``--impl-cmd``, and every other party it talks to.

Why a harness of real parts: a daemon's interfaces are Redis queues and HTTP. The kit plays the
local clients and command handlers on the daemon's Redis, and the remote twins as HTTP servers on
loopback (answering as a scenario tells them: accepted, 4xx, 5xx, slow, connection closed), while
a twin whose address has no listener gives connection refused. Every HTTP exchange the daemon makes
is recorded with what the twin answered, and Redis MONITOR records the operations the daemon
issued, so a report shows what happened on the wire, not a summary of it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import redis.asyncio as aioredis
from aiohttp import web

from rmkit.protocols.rmb.keys import Directory, Twin
from rmkit.protocols.rmb.model import rmb_spec
from rmkit.protocols.rmb.signing import BadSignature, KeyPair, keypair, verify
from rmkit.errors import RmkitError, UsageError
from rmkit.process_group import stop_group
from rmkit.reference_impl.rmb.redisproc import RedisServer, free_port

IUT, PEER_ED, PEER_SR, DOWN, UNKNOWN = 1, 2, 3, 4, 99
PEERS = (PEER_ED, PEER_SR)
KEY_TYPES = {IUT: "ed25519", PEER_ED: "ed25519", PEER_SR: "sr25519", DOWN: "ed25519"}
PLACEHOLDERS = tuple(rmb_spec().raw["daemon"]["placeholders"])  # spec/rmb/daemon.yaml
KIT_CLIENT = "rmkit-conform-kit"  # the name the kit's own Redis connections carry (told apart in MONITOR)


class ImplementationCannotStart(RmkitError):
    """The daemon under test did not start (exit 2: no verdict on it)."""

    exit_code = 2


def daemon_contract() -> dict:
    """spec/rmb/daemon.yaml: the numbers of the contract a daemon under test meets (windows,
    placeholders, side-by-side daemons)."""
    return rmb_spec().raw["daemon"]


def kit_seed(twin: int) -> bytes:
    """Public, deterministic keys of the kit's twins: never use them for anything real."""
    return hashlib.sha256(f"rmkit-conform-rmb-twin-{twin}".encode()).digest()


def kit_keys() -> dict[int, KeyPair]:
    return {t: keypair(kit_seed(t), kt) for t, kt in KEY_TYPES.items()}


def expand_command(cmd: str, values: dict[str, str]) -> list[str]:
    """CMD split like a shell would, each ``{name}`` of :data:`PLACEHOLDERS` replaced; another
    ``{...}`` is left as written (JSON in an argument stays intact)."""
    try:
        words = shlex.split(cmd)
    except ValueError as exc:
        raise UsageError(f"--impl-cmd: cannot split {cmd!r} ({exc})") from None
    if not words:
        raise UsageError("--impl-cmd: empty command")
    pat = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
    return [pat.sub(lambda m: values[m.group(1)], w) for w in words]


@dataclass
class Exchange:
    """One HTTP request the daemon made to a kit twin, and the kit's answer."""

    t: float  # monotonic time of arrival
    twin: int
    path: str
    body: bytes
    msg: Any  # parsed JSON (None when the body is not JSON)
    answer: str  # what the kit twin did: a status, "slow 202", "closed"
    sig_problem: str | None  # None: the signature verifies under the daemon's key
    backlog: str = ""  # the daemon's backlog entry for the uid when the request arrived
    wall: float = 0.0

    @property
    def uid(self) -> str | None:
        return self.msg.get("uid") if isinstance(self.msg, dict) else None

    @property
    def cmd(self) -> str | None:
        return self.msg.get("cmd") if isinstance(self.msg, dict) else None

    def describe(self, t0: float) -> str:
        m = self.msg if isinstance(self.msg, dict) else None
        what = (f"uid={m.get('uid')!s:.40} cmd={m.get('cmd')} src={m.get('src')} dst={m.get('dst')} now={m.get('now')} "
                f"exp={m.get('exp')} try={m.get('try')} ret={str(m.get('ret'))[:40]}") if m else f"body {self.body[:80]!r}"
        sig = "sig ok" if self.sig_problem is None else f"sig BAD ({self.sig_problem})"
        extra = f"; backlog at arrival: {self.backlog}" if self.backlog else ""
        return f"+{self.t - t0:6.2f}s POST twin {self.twin} {self.path} {what}; {sig} -> kit answered {self.answer}{extra}"


@dataclass
class RedisOp:
    t: float
    client: str
    command: str

    def describe(self, t0: float) -> str:
        return f"+{self.t - t0:6.2f}s redis [{self.client}] {self.command[:200]}"


class KitTwins:
    """The remote twins the kit plays: one aiohttp server per peer twin on loopback. ``plans``
    says how each answers: key (twin, cmd) for requests, (twin, uid) for replies, a list of answers
    taken one per attempt (the last one repeats): ``accept``, ``slow``, ``close`` or a status."""

    def __init__(self, harness: "Harness"):
        self.h = harness
        self.plans: dict[tuple, list] = {}
        self.exchanges: list[Exchange] = []
        self.changed = asyncio.Event()
        self.runners: list[web.AppRunner] = []
        self.ports: dict[int, int] = {}
        self._taken: dict[tuple, int] = {}

    async def start(self) -> None:
        for twin in PEERS:
            app = web.Application(client_max_size=16 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", self._handler(twin))
            runner = web.AppRunner(app, access_log=None, handle_signals=False)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.ports[twin] = site._server.sockets[0].getsockname()[1]
            self.runners.append(runner)

    async def stop(self) -> None:
        for r in self.runners:
            await r.cleanup()

    def _next_answer(self, key: tuple) -> str:
        plan = self.plans.get(key) or ["accept"]
        n = self._taken.get(key, 0)
        self._taken[key] = n + 1
        return plan[min(n, len(plan) - 1)]

    def _handler(self, twin: int):
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            try:
                msg = json.loads(body)
            except ValueError:
                msg = None
            b = self.h.b
            kind = "reply" if request.path == b["reply_endpoint"] else "remote" if request.path == b["remote_endpoint"] else "other"
            sig = self.h.signature_problem(msg)
            key = (twin, msg.get("uid") if kind == "reply" else msg.get("cmd")) if isinstance(msg, dict) else (twin, None)
            answer = self._next_answer(key) if kind != "other" else "404"
            ex = Exchange(time.monotonic(), twin, request.path, body, msg, answer, sig, wall=time.time())
            if kind == "remote" and isinstance(msg, dict):
                ex.backlog = await self.h.backlog_state(msg.get("uid"))
            self.exchanges.append(ex)
            self.changed.set()
            if answer == "close":
                ex.answer = "connection closed before answering"
                request.transport.close()
                return web.Response(status=500)
            if answer == "slow":
                await asyncio.sleep(self.h.timing["slow_answer_s"])
                answer = "accept"
            if answer == "accept":
                acc = b["accepted"]
                ex.answer = f"{acc['status']}" + (f" {json.dumps(acc['body'])}" if acc["body"] else "") + \
                    (f" after {self.h.timing['slow_answer_s']} s" if ex.answer == "slow" else "")
                if acc["body"]:
                    return web.json_response(acc["body"], status=acc["status"])
                return web.Response(status=acc["status"])
            return web.Response(status=int(answer), text=f"kit twin {twin} answers {answer} as the scenario says")
        return handle

    async def wait(self, pred: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``pred()`` holds (checked at every exchange and every 50 ms) or ``timeout``."""
        deadline = time.monotonic() + timeout
        while not pred():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 0.05))
            except asyncio.TimeoutError:
                pass
        return True


class Harness:
    """Start with :meth:`start` (raises :class:`ImplementationCannotStart`), stop with :meth:`stop`."""

    def __init__(self, impl_cmd: str, profile: str, response_s: float | None = None, workdir: str | None = None):
        spec = rmb_spec()
        self.profile = profile
        self.b = spec.behaviour(profile)
        fr = spec.raw["freedoms"]
        self.timing = {k: v["value"] for k, v in fr["timing"].items()}
        if response_s:
            self.timing["response_s"] = response_s
        self.freedoms = {f["name"]: f for f in fr["freedoms"]}
        self.windows = {k: v["value"] for k, v in daemon_contract()["windows"].items()}
        self.impl_cmd = impl_cmd
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="rmkit-conform-rmb-")
        self.dir = Path(workdir or self._tmp.name)
        self.keys = kit_keys()
        self.redis_server: RedisServer | None = None
        self.redis: aioredis.Redis | None = None
        self.proc: subprocess.Popen | None = None
        self.twins = KitTwins(self)
        self.ops: list[RedisOp] = []
        self.uids: dict[str, str] = {}  # every uid the daemon gave a request (RMB-FREE-001: unique)
        self._monitor_task: asyncio.Task | None = None
        self._kit_clients: set[str] = set()
        self.port = 0
        self.directory: Directory | None = None
        self.name = impl_cmd

    # -- life cycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        self.redis_server = RedisServer(workdir=self.dir / "redis").start()
        self.redis = aioredis.Redis.from_url(self.redis_server.url, decode_responses=True, client_name=KIT_CLIENT,
                                            socket_connect_timeout=30)
        await self.twins.start()
        self.port = free_port()
        down_port = free_port()  # nothing listens there: connection refused
        self.addr = {IUT: f"127.0.0.1:{self.port}", DOWN: f"127.0.0.1:{down_port}",
                     **{t: f"127.0.0.1:{p}" for t, p in self.twins.ports.items()}}
        await self._start_daemon()

    async def restart(self, key_type: str) -> None:
        """The daemon stopped and started again with a key of ``key_type`` (the same seed; the
        directory says the new type and public key): the kit twins and Redis stay, and a scenario
        judges signatures against the key the daemon holds now."""
        self._stop_group()
        for f in (self._out, self._err):
            f.close()
        self.keys[IUT] = keypair(kit_seed(IUT), key_type)
        await self._start_daemon()

    @property
    def key_type(self) -> str:
        return self.keys[IUT].key_type

    async def _start_daemon(self) -> None:
        addr = self.addr
        self.directory = Directory({t: Twin(t, addr[t], kp.key_type, kp.public) for t, kp in self.keys.items()})
        dpath = self.dir / "directory.json"
        dpath.write_text(json.dumps(self.directory.to_data(), indent=2) + "\n")
        kpath = self.dir / "twin.key"
        seed = "0x" + kit_seed(IUT).hex()
        kpath.write_text(seed + "\n")
        os.chmod(kpath, 0o600)
        values = {"python": sys.executable, "redis": self.redis_server.url, "twin": str(IUT), "key_file": str(kpath), "seed": seed,
                  "key_type": self.key_type, "directory": str(dpath), "listen": addr[IUT], "host": "127.0.0.1",
                  "port": str(self.port), "profile": self.profile, "workdir": str(self.dir)}
        argv = expand_command(self.impl_cmd, values)
        self.argv = argv
        self._out = open(self.dir / "impl.out", "ab")
        self._err = open(self.dir / "impl.err", "ab")
        try:
            self.proc = subprocess.Popen(argv, stdout=self._out, stderr=self._err, stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise ImplementationCannotStart(f"--impl-cmd: cannot run {argv[0]!r}: {exc.strerror or exc}") from None
        deadline = time.monotonic() + self.windows["listen_s"]
        while True:
            if self.proc.poll() is not None:
                raise ImplementationCannotStart(f"the implementation exited at start (status {self.proc.returncode}) "
                                                f"before listening on {addr[IUT]}: {self.stderr_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.3):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise ImplementationCannotStart(f"the implementation did not listen on {addr[IUT]} within "
                                                    f"{self.windows['listen_s']:g} s: {self.stderr_tail()}") from None
                await asyncio.sleep(0.05)
        if self._monitor_task is not None:  # a restart: Redis and its monitor stay
            await asyncio.sleep(self.windows["settle_s"])
            return
        self._kit_clients = {c["addr"] for c in await self.redis.client_list() if c.get("name") == KIT_CLIENT}
        self._monitor_task = asyncio.create_task(self._monitor())
        await asyncio.sleep(self.windows["settle_s"])  # the daemon's loops reach their first pop

    async def _monitor(self) -> None:
        """Record every Redis command of the daemon (MONITOR; the kit's own are marked ``kit``)."""
        mon = aioredis.Redis.from_url(self.redis_server.url, decode_responses=True)
        try:
            async with mon.monitor() as m:
                async for info in m.listen():
                    client = f"{info.get('client_address')}:{info.get('client_port')}"
                    cmd = info.get("command", "")
                    if KIT_CLIENT in cmd and cmd.upper().startswith("CLIENT SETNAME"):
                        self._kit_clients.add(client)
                        continue
                    if cmd.upper().startswith(("BRPOP", "BLPOP", "PING", "CLIENT", "INFO", "HELLO", "SELECT")):
                        continue
                    self.ops.append(RedisOp(time.monotonic(), client, cmd))
        except (asyncio.CancelledError, aioredis.ConnectionError, OSError):
            pass
        finally:
            await mon.aclose()

    def kit_client(self, client: str) -> bool:
        return client in self._kit_clients

    async def stop(self) -> None:
        if self._monitor_task:
            self._monitor_task.cancel()
            await asyncio.gather(self._monitor_task, return_exceptions=True)
        if self.proc:
            self._stop_group()
        for f in (getattr(self, "_out", None), getattr(self, "_err", None)):
            if f:
                f.close()
        await self.twins.stop()
        if self.redis:
            await self.redis.aclose()
        if self.redis_server:
            self.redis_server.stop()
        if self._tmp:
            self._tmp.cleanup()

    def _stop_group(self) -> None:
        """Stop the daemon's whole session (its own process group), even when the command the kit
        started has exited: a wrapper (``sh -c 'daemon & ...'``) leaves the daemon running in it."""
        stop_group(self.proc, self.windows["stop_grace_s"], 0.05)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stderr_tail(self, n: int = 2000) -> str:
        try:
            text = (self.dir / "impl.err").read_text(errors="replace")
        except OSError:
            return ""
        return text[-n:].strip() or "(no output on stderr)"

    # -- what the judge asks ------------------------------------------------------------------
    def signature_problem(self, msg: Any) -> str | None:
        if not isinstance(msg, dict):
            return "body is not a JSON object"
        try:
            verify(msg, self.keys[IUT].public, self.keys[IUT].key_type)
        except BadSignature as bad:
            return f"{bad.rule}: {bad.reason}"
        except (TypeError, ValueError) as exc:
            return f"cannot verify: {exc}"
        return None

    def backlog_key(self, uid: str) -> str:
        return self.b["backlog_key"].format(uid=uid)

    async def backlog_state(self, uid: Any) -> str:
        """The daemon's backlog entry for ``uid`` right now, in words (for the report and the judge)."""
        if not isinstance(uid, str) or not uid:
            return "no uid"
        try:
            if self.b["backlog_written"] == "after-post":
                return "present" if await self.redis.hexists(self.b["backlog_key"], uid) else "absent"
            key = self.backlog_key(uid)
            ttl = await self.redis.pttl(key)
        except aioredis.RedisError as exc:
            return f"unreadable ({exc})"
        if ttl == -2:
            return f"absent ({key})"
        if ttl == -1:
            return f"present without TTL ({key})"
        return f"present, TTL {ttl / 1000:.2f} s ({key})"

    async def push(self, queue: str, value: Any) -> None:
        await self.redis.lpush(queue, value if isinstance(value, str) else json.dumps(value))

    async def pop(self, queue: str, timeout: float) -> Any:
        """The next entry of ``queue`` (JSON decoded when it is JSON), or None after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            raw = await self.redis.rpop(queue)
            if raw is not None:
                try:
                    return json.loads(raw)
                except ValueError:
                    return raw
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.02)

    async def post(self, path: str, body: bytes, timeout: float) -> tuple[int | None, str]:
        """POST ``body`` to the daemon: (status, text); status None when the connection failed."""
        import aiohttp

        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s:
                async with s.post(f"http://127.0.0.1:{self.port}{path}", data=body,
                                  headers={"Content-Type": "application/json"}) as resp:
                    return resp.status, (await resp.text())[:300]
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            return None, f"{type(exc).__name__}: {exc}"


@dataclass
class Evidence:
    """What the report shows for one act: HTTP exchanges, Redis operations, the kit's own steps."""

    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines.append(line)
