"""The environment the RMB model/reference agreement plays around the reference daemons, in both
directions (model -> reference, :mod:`rmkit.conformance.rmb.agreement`; reference -> model,
:mod:`rmkit.conformance.rmb.trace_validation`): the client, the handlers, the network, the
scheduler and a virtual clock (see the first module's docstring), and the model's state in a
comparable shape. The daemons' decisions stay their own."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import time as _time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import redis.asyncio as aioredis

import rmkit.reference_impl.rmb.daemon as daemon_module
from rmkit.protocols.rmb.keys import Directory, Twin
from rmkit.protocols.rmb.signing import keypair
from rmkit.reference_impl.rmb.cluster import demo_seed
from rmkit.reference_impl.rmb.daemon import DaemonConfig, RmbDaemon
from rmkit.reference_impl.rmb.handler import answer_for
from rmkit.reference_impl.rmb.redisproc import free_port


class StepStuck(RuntimeError):
    """A reference task did not reach its next step within the settle time: the step cannot be
    taken, which the replay reports as a disagreement at that step instead of hanging."""


BUDGETS = ("MaxLoss", "MaxFail", "MaxReplyLoss", "MaxDup", "MaxCrash", "MaxDelay")
# The model's faults the harness does not make (a restart of the sender's Redis, a destination's
# daemon crashing, skewed clocks): absent from every behaviour compared.
ABSENT = ('    Persistence = "aof"', "    MaxRedisCrash = 0", "    MaxRemoteCrash = 0", "    MaxSkew = 0")
T0 = 1_700_000_000          # the virtual clock's second 0 (the request's now)
SENDER = 1
CMD = "agree.echo"
RET = "agreement.client.ret"
SETTLE_S = 5.0              # the longest a daemon step may take before the harness gives up


@dataclass(frozen=True)
class Scenario:
    profile: str
    dests: int = 1
    tries: int = 2
    exp: int = 1
    max_time: int = 3
    budgets: tuple[int, ...] = (1, 1, 1, 1, 1, 2)   # in the order of BUDGETS


# ---- the model's state in a comparable shape ----------------------------------------------------
def model_view(v: dict) -> dict:
    dests = sorted(v["w"])
    return {
        "clock": v["clock"], "local": v["local"], "bl": v["bl"]["on"], "hash": v["hash"]["on"],
        "fwd": list(v["fwd"]),
        "rq": {d: v["rq"][d] for d in dests if v["rq"][d]},
        "held": sorted(d for d in dests if v["w"][d]),
        # "late": on the wire since the second before; the reference's exchange is simply "sent"
        "ex": {d: "sent" if v["ex"][d] == "late" else v["ex"][d] for d in dests},
        "todo": {d: v["todo"][d] for d in dests}, "rp": {d: v["rp"][d] for d in dests},
        "out": sorted((o["d"], o["k"], o["t"]) for o in v["out"]),
        "posts": {d: v["posts"][d] for d in dests},
        "got": sorted((g["d"], g["t"]) for g in v["got"]),
    }


# ---- the environment around the reference daemons -----------------------------------------------
class Clock:
    """The daemons' ``time`` module: ``time()`` is the virtual clock."""

    def __init__(self):
        self.now = 0

    def time(self) -> float:
        return float(T0 + self.now)

    def __getattr__(self, name):
        return getattr(_time, name)


class Scheduler:
    """The daemons' ``asyncio`` module: ``sleep`` parks the calling task until the harness lets it go."""

    def __init__(self):
        self.parked: dict[asyncio.Task, tuple[str, asyncio.Future]] = {}

    async def park(self, kind: str) -> None:
        fut = asyncio.get_running_loop().create_future()
        self.parked[asyncio.current_task()] = (kind, fut)
        try:
            await fut
        finally:
            self.parked.pop(asyncio.current_task(), None)

    async def sleep(self, delay: float = 0, result: Any = None) -> Any:
        await self.park("sleep")
        return result

    def __getattr__(self, name):
        return getattr(asyncio, name)


@dataclass
class Exchange:
    state: str = "idle"          # the model's Exchanges
    msg: dict | None = None
    status: int | None = None
    fut: asyncio.Future | None = None


@contextmanager
def _virtual_environment(clock: Clock, sched: Scheduler):
    saved = daemon_module.time, daemon_module.asyncio
    daemon_module.time, daemon_module.asyncio = clock, sched
    try:
        yield
    finally:
        daemon_module.time, daemon_module.asyncio = saved


class Harness:
    def __init__(self, sc: Scenario, redis_port: int):
        self.sc, self.redis_port = sc, redis_port
        self.dests = [d + 2 for d in range(sc.dests)]
        twins = [SENDER] + self.dests
        self.keys = {i: keypair(demo_seed(i), "ed25519") for i in twins}
        self.ports = {i: free_port() for i in twins}
        self.directory = Directory({i: Twin(i, f"127.0.0.1:{self.ports[i]}", "ed25519", self.keys[i].public) for i in twins})
        self.clock, self.sched = Clock(), Scheduler()
        self.r = {i: aioredis.Redis(port=redis_port, db=i, decode_responses=True) for i in twins}
        self.daemons: dict[int, RmbDaemon] = {}
        self.tasks: dict[int, asyncio.Task] = {}       # d -> the sender's worker task holding d's job
        self.scrubber: asyncio.Task | None = None
        self.ex = {d: Exchange() for d in self.dests}
        self.rp: dict[int, list[dict]] = {d: [] for d in self.dests}
        self.posts = {d: 0 for d in self.dests}
        self.got: list[tuple[int, int]] = []
        self.out: list[tuple[int, str, int]] = []
        self.expiry: dict[str, int] = {}               # key -> last virtual second it lives
        self.http: aiohttp.ClientSession | None = None
        self.b = None

    # -- daemons
    async def _daemon(self, twin: int) -> RmbDaemon:
        d = RmbDaemon(DaemonConfig(twin, self.keys[twin], self.directory, f"redis://127.0.0.1:{self.redis_port}/{twin}",
                                   self.sc.profile, "127.0.0.1", self.ports[twin], workers=0))
        await d.start()
        for t in d.tasks:      # no background loop: the harness runs each step
            t.cancel()
        await asyncio.gather(*d.tasks, return_exceptions=True)
        d.tasks = []
        return d

    async def _start_sender(self) -> None:
        s = await self._daemon(SENDER)
        self.b = s.b
        load = s._load_request

        async def load_then_park(uid):
            msg = await load(uid)
            if msg is not None:
                await self.sched.park("load")
            return msg

        async def post(twin, endpoint, msg, attempt):
            ex = self.ex[twin.id]
            self.posts[twin.id] += 1
            ex.state, ex.msg, ex.status = "sent", msg, None
            ex.fut = asyncio.get_running_loop().create_future()
            return await ex.fut

        s._load_request, s._post = load_then_park, post
        self.daemons[SENDER] = s
        if s.b["scrubber"]:
            self.scrubber = asyncio.ensure_future(s._scrub_loop())
            await self._settle([self.scrubber])

    async def _start_remote(self, twin: int) -> None:
        d = await self._daemon(twin)

        async def post(twin_, endpoint, msg, attempt):   # the reply leaves: the network holds it
            self.rp[twin].append(msg)
            return d.b["accepted"]["status"], ""

        d._post = post
        self.daemons[twin] = d

    async def start(self) -> None:
        for r in self.r.values():
            await r.flushdb()
        self.http = aiohttp.ClientSession()
        for d in self.dests:
            await self._start_remote(d)
        await self._start_sender()
        req = {"ver": 1, "uid": "", "cmd": CMD, "exp": self.sc.exp, "try": self.sc.tries,
               "dat": base64.b64encode(b"ping").decode(), "src": 0, "dst": list(self.dests), "ret": RET,
               "shm": "", "now": T0, "err": "", "sig": ""}
        await self.r[SENDER].lpush(self.b["local_queue"], json.dumps(req))

    async def stop(self) -> None:
        tasks = list(self.tasks.values()) + ([self.scrubber] if self.scrubber else [])
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for ex in self.ex.values():
            if ex.fut and not ex.fut.done():
                ex.fut.cancel()
        for d in self.daemons.values():
            await d.stop()
        if self.http:
            await self.http.close()
        for r in self.r.values():
            await r.aclose()

    # -- scheduling
    def _blocked(self, t: asyncio.Task) -> bool:
        if t.done() or t in self.sched.parked:
            return True
        return any(ex.fut is not None and not ex.fut.done() and self.tasks.get(d) is t for d, ex in self.ex.items())

    async def _settle(self, tasks) -> None:
        deadline = _time.monotonic() + SETTLE_S
        await asyncio.sleep(0)
        while not all(self._blocked(t) for t in tasks):
            if _time.monotonic() > deadline:
                raise StepStuck("a reference task did not reach its next step")
            await asyncio.sleep(0.001)

    async def _release(self, task: asyncio.Task, kinds=("load", "sleep")) -> None:
        kind, fut = self.sched.parked[task]
        assert kind in kinds, kind
        fut.set_result(None)
        await asyncio.sleep(0)
        await self._settle([task])

    # -- Redis's clock
    async def _register_ttls(self) -> None:
        r = self.r[SENDER]
        for key in await r.keys("*"):
            pttl = await r.pttl(key)
            if pttl > 0:
                self.expiry[key] = self.clock.now + math.ceil(pttl / 1000)
                await r.persist(key)

    async def _expire(self) -> None:
        for key, last in list(self.expiry.items()):
            if self.clock.now > last:
                await self.r[SENDER].delete(key)
                del self.expiry[key]

    # -- the model's steps, played on the reference
    async def step(self, a: dict) -> None:
        name, d = a["a"], a.get("d")
        s = self.daemons[SENDER]
        if name == "Dispatch":
            await s._local_step()
        elif name in ("Take", "RetryTake"):
            if name == "Take":
                raw = (await self.r[SENDER].lrange(self.b["forward_queue"], -1, -1))[0]
                d = s._split_job(raw)[1]
                task = asyncio.ensure_future(s._worker_step())
            else:
                task = asyncio.ensure_future(s._retry_step())
            self.tasks[d] = task
            await self._settle([task])
            while name == "RetryTake" and task in self.sched.parked and self.sched.parked[task][0] == "sleep":
                await self._release(task, ("sleep",))     # the retry queue's pause (not modelled)
        elif name in ("Post", "GiveUpExpired"):
            await self._release(self.tasks[d])
        elif name == "React":
            ex = self.ex[d]
            answer = {"accepted": (ex.status, ""), "refused": (ex.status, "refused"),
                      "failed": (500, "HTTP 500: storage failure"), "lost": (None, "connection error: lost")}[ex.state]
            fut, ex.state, ex.fut = ex.fut, "idle", None
            fut.set_result(answer)
            await asyncio.sleep(0)
            await self._settle([self.tasks[d]])
        elif name == "Orphan":
            self.ex[d].state = "idle"
        elif name == "Arrive":
            await self._arrive(d)
        elif name == "Fail":
            self.ex[d].state = "failed"
        elif name == "Lose":
            self.ex[d].state = "lost"
        elif name == "HandlerReply":
            remote = self.daemons[d]
            queue, raw = await self.r[d].brpop([remote.b["command_queue"].format(cmd=CMD)], timeout=1)
            request = json.loads(raw)
            await self.r[d].lpush(request["ret"], json.dumps(answer_for(request, {"pong": True})))
            await remote._worker_step()
        elif name == "ReplyArrive":
            msg = self.rp[d].pop(0)
            async with self.http.post(f"http://127.0.0.1:{self.ports[SENDER]}{self.b['reply_endpoint']}", json=msg) as resp:
                await resp.read()
        elif name == "ReplyLose":
            self.rp[d].pop(0)
        elif name == "ReplyDup":
            self.rp[d].append(self.rp[d][0])
        elif name == "Crash":
            await self._crash()
        elif name == "Tick":
            self.clock.now += 1
            await self._expire()
            if self.scrubber:
                await self._release(self.scrubber, ("sleep",))
        else:
            raise ValueError(f"unknown step {name}")
        await self._register_ttls()
        await self._observe_ret()

    async def _arrive(self, d: int) -> None:
        ex, remote = self.ex[d], self.daemons[d]
        queue = remote.b["command_queue"].format(cmd=CMD)
        before = await self.r[d].llen(queue)
        async with self.http.post(f"http://127.0.0.1:{self.ports[d]}{remote.b['remote_endpoint']}", json=ex.msg) as resp:
            await resp.read()
            ex.status = resp.status
        ex.state = "accepted" if 200 <= ex.status < 300 else "refused" if ex.status < 500 else "failed"
        if await self.r[d].llen(queue) > before:
            self.got.append((d, self.clock.now))

    async def _crash(self) -> None:
        tasks = list(self.tasks.values()) + ([self.scrubber] if self.scrubber else [])
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.tasks, self.scrubber = {}, None
        for ex in self.ex.values():       # a request on the wire may still arrive; answers go nowhere
            if ex.state != "sent":
                ex.state = "idle"
            ex.fut = None
        await self.daemons[SENDER].stop()
        await self._start_sender()

    async def _observe_ret(self) -> None:
        raw = await self.r[SENDER].lrange(RET, 0, -1)
        for item in list(reversed(raw))[len(self.out):]:
            msg = json.loads(item)
            kind = "reply" if not msg.get("err") else "timeout" if self.b["scrubber"] and msg["err"] == self.b["scrubber"]["error"] else "error"
            self.out.append((msg["src"], kind, self.clock.now))

    async def view(self) -> dict:
        r, b, s = self.r[SENDER], self.b, self.daemons[SENDER]
        after_post = b["backlog_written"] == "after-post"
        uid_keys = [k for k in await r.keys("*") if k.startswith((b["pending_key"] or b["backlog_key"]).split("{uid}")[0])]
        hash_on = after_post and await r.hlen(b["backlog_key"]) > 0
        rq = {}
        if b["retry_queue"]:
            for item in await r.lrange(b["retry_queue"], 0, -1):
                entry = json.loads(item)
                rq[s._split_job(entry["job"])[1]] = entry["attempt"]
        return {
            "clock": self.clock.now, "local": await r.llen(b["local_queue"]) > 0, "bl": bool(uid_keys), "hash": hash_on,
            "fwd": [s._split_job(j)[1] for j in reversed(await r.lrange(b["forward_queue"], 0, -1))],
            "rq": rq,
            "held": sorted(d for d, t in self.tasks.items() if not t.done()),
            "ex": {d: self.ex[d].state for d in self.dests},
            "todo": {d: await self.r[d].llen(self.daemons[d].b["command_queue"].format(cmd=CMD)) for d in self.dests},
            "rp": {d: len(self.rp[d]) for d in self.dests},
            "out": sorted(set(self.out)),
            "posts": dict(self.posts),
            "got": sorted(set(self.got)),
        }
