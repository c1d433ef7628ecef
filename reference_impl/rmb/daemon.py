"""The reference RMB v1 daemon: one per twin, on its own Redis, behaviour from spec/rmb's
behaviour.yaml for the chosen profile (spec, rmb-rs-v1, rmb-go).

Tasks: the local dispatcher (msgbus.system.local), forward workers (forward and reply queues,
signing, retries, the error message on ret), the HTTP server (remote and reply endpoints), the
proxy routines, and rmb-go's retry queue and scrubber. Every message and exchange goes to the
message log. Rule IDs in comments name the rule each step implements.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp
import redis.asyncio as aioredis
from aiohttp import web

from rmkit.protocols.rmb.keys import Directory, Twin
from rmkit.protocols.rmb.model import message_problems, rmb_spec
from rmkit.protocols.rmb.signing import BadSignature, KeyPair, verify
from rmkit.reference_impl.rmb.msglog import MessageLog

POP_TIMEOUT_S = 1  # blocking pops wake up this often to notice a stop


@dataclass
class DaemonConfig:
    twin: int
    keypair: KeyPair
    directory: Directory
    redis_url: str
    profile: str = "spec"
    host: str = "127.0.0.1"
    port: int = 0
    workers: int = 4
    log_path: str | None = None
    http_timeout_s: float = 5.0


class RmbDaemon:
    def __init__(self, cfg: DaemonConfig):
        self.cfg = cfg
        self.b = rmb_spec().behaviour(cfg.profile)
        self.twin = cfg.twin
        self.log = MessageLog(cfg.log_path, f"twin-{cfg.twin}")
        self.redis: aioredis.Redis | None = None
        self.http: aiohttp.ClientSession | None = None
        self.runner: web.AppRunner | None = None
        self.tasks: list[asyncio.Task] = []
        self.port = cfg.port
        self._stopping = False

    # -- life cycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        self.redis = aioredis.Redis.from_url(self.cfg.redis_url, decode_responses=True)
        await self.redis.ping()
        self.http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.cfg.http_timeout_s))
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_post(self.b["remote_endpoint"], self._remote)
        app.router.add_post(self.b["reply_endpoint"], self._reply)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.cfg.host, self.cfg.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        loops = [self._local_loop()] + [self._worker_loop() for _ in range(self.cfg.workers)]
        if self.b["proxy"]:
            loops += [self._proxy_request_loop(), self._proxy_reply_loop()]
        if self.b["retry_queue"]:
            loops.append(self._retry_loop())
        if self.b["scrubber"]:
            loops.append(self._scrub_loop())
        self.tasks = [asyncio.create_task(c) for c in loops]

    async def stop(self) -> None:
        self._stopping = True
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.runner:
            await self.runner.cleanup()
        if self.http:
            await self.http.close()
        if self.redis:
            await self.redis.aclose()
        self.log.close()

    async def _forever(self, step) -> None:
        """Run ``step`` until stopped; an unexpected error is logged and the loop goes on."""
        while not self._stopping:
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a daemon keeps serving; the log says why
                self.log.record("internal-error", direction="none", note=f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(0.1)

    # -- helpers ------------------------------------------------------------------------------
    def _fmt(self, template: str, **kw) -> str:
        return template.format(**kw)

    def _backlog_get_sync_key(self, uid: str) -> str:
        return self._fmt(self.b["backlog_key"], uid=uid)

    async def _backlog_get(self, uid: str) -> dict | None:
        key = self._backlog_get_sync_key(uid)
        raw = await (self.redis.hget(key, uid) if self.b["backlog_written"] == "after-post" else self.redis.get(key))
        return json.loads(raw) if raw else None

    async def _push(self, queue: str, msg: dict, event: str) -> None:
        await self.redis.lpush(queue, json.dumps(msg, ensure_ascii=False))
        self.log.record(event, direction="out", queue=queue, msg=msg)

    def _error_for(self, msg: dict, err: str, from_twin: int | None = None) -> dict:
        """The error message a client gets on ret: src and dst swapped, err set, dat empty (RMB-RETRY-002)."""
        out = {k: msg.get(k) for k in ("ver", "uid", "cmd", "exp", "try", "ret", "shm") if k in msg}
        out.update({"ver": 1, "dat": "", "src": from_twin if from_twin is not None else self.twin,
                    "dst": [msg.get("src", 0)] if isinstance(msg.get("src"), int) else [0],
                    "now": int(time.time()), "err": err, "sig": ""})
        if "tag" in msg:
            out["tag"] = msg["tag"]
        return out

    async def _new_uid(self, msg: dict) -> str:
        if self.b["uid_scheme"] == "uuid4":
            return str(uuid.uuid4())
        dst = msg["dst"][0]
        n = await self.redis.incr(self._fmt(self.b["uid_counter_key"], dst=dst))
        return self._fmt(self.b["uid_scheme"], dst=dst, n=n)

    # -- local dispatcher (RMB-LOCAL-001..003, RMB-DIR-001, RMB-MSG-005, RMB-BACKLOG-001, RMB-FANOUT-001)
    async def _local_loop(self) -> None:
        await self._forever(self._local_step)

    async def _local_step(self) -> None:
        got = await self.redis.brpop([self.b["local_queue"]], timeout=POP_TIMEOUT_S)
        if not got:
            return
        queue, raw = got
        try:
            msg = json.loads(raw)
        except ValueError:
            self.log.record("local-unreadable", direction="in", queue=queue, note=f"not JSON: {raw[:200]!r}")
            return
        self.log.record("local-request", direction="in", queue=queue, msg=msg)
        problems = message_problems({**msg, "uid": msg.get("uid") or "", "src": 0} if isinstance(msg, dict) else msg)
        if problems:
            rule, field, what = problems[0]
            note = f"{rule}: field {field}: {what}"
            if isinstance(msg, dict) and isinstance(msg.get("ret"), str) and msg["ret"]:
                await self._push(msg["ret"], self._error_for(msg, f"invalid message: {note}"), "error-to-ret")  # RMB-LOCAL-002
            else:
                self.log.record("local-invalid-dropped", direction="none", queue=queue, msg=msg, note=note)
            return
        unknown = [d for d in msg["dst"] if self.cfg.directory.get(d) is None]
        if unknown:  # RMB-DIR-001
            await self._push(msg["ret"], self._error_for(msg, f"unknown destination twin(s): {', '.join(map(str, unknown))}"), "error-to-ret")
            return
        msg["uid"] = await self._new_uid(msg)  # RMB-MSG-005
        msg["src"] = self.twin
        if self.b["local_shortcut"] and msg["dst"] == [self.twin]:  # RMB-LOCAL-003
            await self._push(self._fmt(self.b["command_queue"], cmd=msg["cmd"]), msg, "local-shortcut")
            return
        pipe = self.redis.pipeline(transaction=True)  # the backlog entry and its jobs in one round trip, in this order
        if self.b["backlog_written"] == "before-forward":  # RMB-BACKLOG-001: TTL exp
            key, ttl = self._fmt(self.b["backlog_key"], uid=msg["uid"]), max(int(msg["exp"]), 1)
        else:  # rmb-go: the request waits for its POST here; the backlog hash is written after it
            key, ttl = self._fmt(self.b["pending_key"], uid=msg["uid"]), max(int(msg["exp"]) or 3600, 1)
        pipe.set(key, json.dumps(msg, ensure_ascii=False), ex=ttl)
        jobs = [self._fmt(self.b["forward_job"], uid=msg["uid"], dst=dst) for dst in msg["dst"]]  # RMB-FANOUT-001
        for job in jobs:
            pipe.lpush(self.b["forward_queue"], job)
        await pipe.execute()
        if self.b["backlog_written"] == "before-forward":
            self.log.record("backlog-set", direction="out", queue=key, msg=msg, note=f"ttl {ttl} s")
        for job in jobs:
            self.log.record("forward-job", direction="out", queue=self.b["forward_queue"], msg=None, note=job, uid=msg["uid"])

    # -- forward workers (RMB-FWD-001, RMB-SIG-006, RMB-RETRY-*, RMB-REPLY-001/002) -------------
    async def _worker_loop(self) -> None:
        await self._forever(self._worker_step)

    async def _worker_step(self) -> None:
        got = await self.redis.brpop([self.b["forward_queue"], self.b["reply_queue"]], timeout=POP_TIMEOUT_S)
        if not got:
            return
        queue, raw = got
        if queue == self.b["forward_queue"]:
            await self._forward_job(raw, attempt=1)
        else:
            try:
                msg = json.loads(raw)
            except ValueError:
                self.log.record("reply-unreadable", direction="in", queue=queue, note=raw[:200])
                return
            self.log.record("handler-reply", direction="in", queue=queue, msg=msg)
            await self._send_reply(msg, attempt=1)

    def _split_job(self, job: str) -> tuple[str, int] | None:
        sep = self.b["forward_job"].replace("{uid}", "").replace("{dst}", "")
        uid, _, dst = job.rpartition(sep)
        return (uid, int(dst)) if uid and dst.isdigit() else None

    def _attempts(self, msg: dict) -> int:
        bounds = self.b["try_bounds"]
        n = max(int(msg.get("try") or 0), bounds["min"])
        return min(n, bounds["max"]) if bounds["max"] else n

    async def _load_request(self, uid: str) -> dict | None:
        if self.b["backlog_written"] == "before-forward":
            return await self._backlog_get(uid)
        raw = await self.redis.get(self._fmt(self.b["pending_key"], uid=uid))
        return json.loads(raw) if raw else None

    async def _forward_job(self, job: str, attempt: int) -> None:
        parsed = self._split_job(job)
        if parsed is None:
            self.log.record("forward-job-unreadable", direction="in", queue=self.b["forward_queue"], note=job)
            return
        uid, dst = parsed
        msg = await self._load_request(uid)
        if msg is None:  # RMB-BACKLOG-002: expired, skipped without a POST
            self.log.record("forward-expired-skipped", direction="none", note=job, uid=uid)
            return
        twin = self.cfg.directory.get(dst)
        msg = {**msg, "dst": [dst]}  # each destination gets its own copy: a receiver checks dst[0] (RMB-REMOTE-004)
        total = self._attempts(msg)
        deadline = msg["now"] + msg["exp"]
        while True:
            if self.b["restamp_per_attempt"]:  # RMB-RETRY-004
                now = int(time.time())
                if now >= deadline:
                    await self._request_failed(msg, dst, "message expired before it could be sent")
                    return
                msg = {**msg, "now": now, "exp": deadline - now}
            signed = self.cfg.keypair.sign(msg)  # RMB-SIG-006
            status, reason = await self._post(twin, self.b["remote_endpoint"], signed, attempt)
            if status in self._accepted_statuses():
                if self.b["backlog_written"] == "after-post":  # rmb-go: the hash entry after the POST
                    await self.redis.hset(self.b["backlog_key"], uid, json.dumps({**msg, "epoch": int(time.time())}, ensure_ascii=False))
                return
            retryable = status is None or self.b["retry_on"] == "any"  # RMB-RETRY-003
            if not retryable or attempt >= total:  # RMB-RETRY-001
                await self._request_failed(msg, dst, reason)
                return
            attempt += 1
            if self.b["retry_queue"]:
                await self.redis.lpush(self.b["retry_queue"], json.dumps({"job": job, "attempt": attempt, "at": time.time() + self.b["retry_delay_s"]}))
                self.log.record("retry-queued", direction="out", queue=self.b["retry_queue"], msg=msg, note=f"attempt {attempt} of {total}")
                return
            await asyncio.sleep(self.b["retry_delay_s"])

    def _accepted_statuses(self) -> set[int]:
        return {self.b["accepted"]["status"], 200, 202}

    async def _post(self, twin: Twin, endpoint: str, msg: dict, attempt: int) -> tuple[int | None, str]:
        """POST ``msg``; (status, reason) with status None for a connection error."""
        url = twin.url(endpoint)
        try:
            async with self.http.post(url, data=json.dumps(msg, ensure_ascii=False).encode(),
                                      headers={"Content-Type": "application/json"}) as resp:
                text = await resp.text()
                self.log.record("http-post", direction="out", endpoint=endpoint, status=resp.status, peer=f"{twin.id}@{twin.address}",
                                msg=msg, note=f"attempt {attempt}" + (f": {text[:200]}" if resp.status >= 300 else ""))
                return resp.status, f"HTTP {resp.status}: {text[:200]}"
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            self.log.record("http-post", direction="out", endpoint=endpoint, status=None, peer=f"{twin.id}@{twin.address}",
                            msg=msg, note=f"attempt {attempt}: connection error: {type(exc).__name__}: {exc}")
            return None, f"connection error: {type(exc).__name__}"

    async def _request_failed(self, msg: dict, dst: int, reason: str) -> None:  # RMB-RETRY-002
        err = self.b["send_error_text"].format(dst=dst, reason=reason)
        await self._push(msg["ret"], self._error_for(msg, err, from_twin=dst), "error-to-ret")

    async def _send_reply(self, msg: dict, attempt: int) -> None:  # RMB-REPLY-001/002
        if not isinstance(msg, dict) or not isinstance(msg.get("dst"), list) or not msg["dst"]:
            self.log.record("reply-invalid-dropped", direction="none", queue=self.b["reply_queue"], msg=msg)
            return
        twin = self.cfg.directory.get(msg["dst"][0])
        if twin is None:
            self.log.record("reply-unknown-twin-dropped", direction="none", msg=msg)
            return
        msg = {**msg, "src": self.twin}
        signed = self.cfg.keypair.sign(msg)
        total = self._attempts(msg)
        while True:
            status, reason = await self._post(twin, self.b["reply_endpoint"], signed, attempt)
            if status is not None and (status in self._accepted_statuses() or self.b["retry_on"] != "any"):
                if status not in self._accepted_statuses():
                    self.log.record("reply-lost", direction="none", msg=msg, note=reason)
                return
            if attempt >= total:
                self.log.record("reply-lost", direction="none", msg=msg, note=f"after {attempt} attempt(s): {reason}")
                return
            attempt += 1
            if self.b["retry_queue"]:
                await self.redis.lpush(self.b["retry_queue"], json.dumps({"reply": msg, "attempt": attempt, "at": time.time() + self.b["retry_delay_s"]}))
                return
            await asyncio.sleep(self.b["retry_delay_s"])

    # -- rmb-go: the retry queue and the scrubber (RMB-RETRY-003, RMB-BACKLOG-003) -------------
    async def _retry_loop(self) -> None:
        await self._forever(self._retry_step)

    async def _retry_step(self) -> None:
        got = await self.redis.brpop([self.b["retry_queue"]], timeout=POP_TIMEOUT_S)
        if not got:
            return
        entry = json.loads(got[1])
        await asyncio.sleep(max(0.0, entry["at"] - time.time()))
        if "job" in entry:
            await self._forward_job(entry["job"], entry["attempt"])
        else:
            await self._send_reply(entry["reply"], entry["attempt"])

    async def _scrub_loop(self) -> None:
        async def step():
            sc = self.b["scrubber"]
            for uid, raw in (await self.redis.hgetall(self.b["backlog_key"])).items():
                msg = json.loads(raw)
                exp = msg.get("exp") or sc["default_exp_s"]
                if msg.get("epoch", msg["now"]) + exp < time.time():
                    await self.redis.hdel(self.b["backlog_key"], uid)
                    await self._push(msg["ret"], self._error_for(msg, sc["error"], from_twin=msg["dst"][0]), "scrubber-timeout")
            await asyncio.sleep(sc["interval_s"])
        await self._forever(step)

    # -- HTTP endpoints (RMB-REMOTE-*, RMB-REPLY-003..007) -------------------------------------
    def _answer(self, request: web.Request, status: int, msg: Any, note: str) -> web.Response:
        self.log.record("http-answer", direction="in", endpoint=request.path, status=status, peer=request.remote, msg=msg, note=note)
        if status == self.b["accepted"]["status"] and self.b["accepted"]["body"]:
            return web.json_response(self.b["accepted"]["body"], status=status)
        return web.Response(status=status, text=note)

    async def _checked(self, request: web.Request) -> tuple[dict | None, web.Response | None]:
        """The message of a POST when it passes the checks both endpoints share, else the answer."""
        try:
            msg = json.loads(await request.read())
        except ValueError as exc:
            return None, self._answer(request, self.b["status_bad_body"], None, f"body is not JSON: {exc}")  # RMB-REMOTE-002
        problems = message_problems(msg)
        if problems:
            rule, field, what = problems[0]
            return None, self._answer(request, self.b["status_bad_body"], msg, f"{rule}: field {field}: {what}")
        if msg["dst"][0] != self.twin:  # RMB-REMOTE-004, RMB-REPLY-003
            return None, self._answer(request, self.b["status_wrong_destination"], msg, f"dst {msg['dst'][0]} is not this twin ({self.twin})")
        twin = self.cfg.directory.get(msg["src"])
        if twin is None:  # RMB-REMOTE-003
            return None, self._answer(request, self.b["status_bad_signature"], msg, f"unknown source twin {msg['src']}")
        try:
            verify(msg, twin.public_key, twin.key_type)
        except BadSignature as bad:  # RMB-REMOTE-003, RMB-REPLY-007
            return None, self._answer(request, self.b["status_bad_signature"], msg, f"{bad.rule}: {bad.reason}")
        return msg, None

    async def _remote(self, request: web.Request) -> web.Response:
        msg, refused = await self._checked(request)
        if refused:
            return refused
        now = int(time.time())
        if self.b["age_limit_s"] is not None and msg["now"] < now - self.b["age_limit_s"]:  # RMB-REMOTE-006
            return self._answer(request, self.b["status_bad_body"], msg, f"message is too old: sent time {msg['now']}")
        if self.b["refuse_expired"] and msg["now"] + msg["exp"] < now:  # RMB-REMOTE-007
            return self._answer(request, self.b["status_bad_body"], msg, "message expired")
        proxy = self.b["proxy"]
        try:
            if proxy and msg["cmd"] == proxy["cmd"]:  # RMB-PROXY-001
                queue = proxy["request_queue"]
            else:
                queue = self._fmt(self.b["command_queue"], cmd=msg["cmd"])
            received, msg = msg, {**msg, "ret": self.b["reply_queue"]}  # RMB-REMOTE-005
            pipe = self.redis.pipeline(transaction=True)
            pipe.lpush(queue, json.dumps(msg, ensure_ascii=False))
            if self.b["command_queue_limit"]:  # RMB-REMOTE-008: the oldest (tail) entries go
                pipe.ltrim(queue, 0, self.b["command_queue_limit"] - 1)
            await pipe.execute()
        except aioredis.RedisError as exc:  # RMB-REMOTE-009
            return self._answer(request, self.b["status_storage_failure"], received, f"storage failure: {exc}")
        self.log.record("to-handler", direction="out", queue=queue, msg=msg)
        return self._answer(request, self.b["accepted"]["status"], received, "accepted")  # RMB-REMOTE-001: the message as received

    async def _reply(self, request: web.Request) -> web.Response:
        msg, refused = await self._checked(request)
        if refused:
            return refused
        try:
            original = await self._backlog_get(msg["uid"])
            if original is None:  # RMB-REPLY-004
                return self._answer(request, self.b["reply_without_backlog"], msg, "no backlog entry (timed out): reply dropped")
            out = {**msg, "ret": original["ret"]}  # RMB-REPLY-005
            if "tag" in original:
                out["tag"] = original["tag"]
            await self.redis.lpush(original["ret"], json.dumps(out, ensure_ascii=False))
            if self.b["backlog_deleted_on_reply"]:  # RMB-REPLY-006 (no profile of the kit deletes)
                await self.redis.delete(self._backlog_get_sync_key(msg["uid"]))
        except aioredis.RedisError as exc:
            return self._answer(request, self.b["status_storage_failure"], msg, f"storage failure: {exc}")
        self.log.record("reply-to-ret", direction="out", queue=original["ret"], msg=out)
        return self._answer(request, self.b["accepted"]["status"], msg, "accepted")

    # -- proxying (RMB-PROXY-*) ---------------------------------------------------------------
    async def _proxy_request_loop(self) -> None:
        await self._forever(self._proxy_request_step)

    async def _proxy_request_step(self) -> None:
        proxy = self.b["proxy"]
        got = await self.redis.brpop([proxy["request_queue"]], timeout=POP_TIMEOUT_S)
        if not got:
            return
        envelope = json.loads(got[1])
        self.log.record("proxy-envelope", direction="in", queue=proxy["request_queue"], msg=envelope)
        try:
            payload = json.loads(base64.b64decode(envelope["dat"]))
        except ValueError as exc:
            return await self._proxy_refuse(envelope, f"payload is not base64 JSON: {exc}")
        problems = message_problems(payload)
        if problems:
            return await self._proxy_refuse(envelope, f"invalid payload: {problems[0][0]}: field {problems[0][1]}: {problems[0][2]}")
        if self.twin not in payload["dst"]:  # RMB-PROXY-002
            return await self._proxy_refuse(envelope, f"payload is not for twin {self.twin}")
        sender = self.cfg.directory.get(payload["src"])
        if sender is None:
            return await self._proxy_refuse(envelope, f"unknown payload source twin {payload['src']}")
        try:
            verify(payload, sender.public_key, sender.key_type)
        except BadSignature as bad:
            return await self._proxy_refuse(envelope, f"payload signature: {bad.reason}")
        if self.b["age_limit_s"] is not None and payload["now"] < time.time() - self.b["age_limit_s"]:
            return await self._proxy_refuse(envelope, f"payload is too old: sent time {payload['now']}")
        key = self._fmt(proxy["backlog_key"], uid=envelope["uid"])  # RMB-PROXY-003
        await self.redis.set(key, json.dumps(envelope, ensure_ascii=False), ex=max(int(envelope["exp"]), 1))
        payload = {**payload, "uid": envelope["uid"], "ret": proxy["reply_queue"]}  # RMB-PROXY-004
        await self._push(self._fmt(self.b["command_queue"], cmd=payload["cmd"]), payload, "proxy-payload-to-handler")

    async def _proxy_refuse(self, envelope: dict, why: str) -> None:
        err = {**envelope, "src": envelope["dst"][0], "dst": [envelope["src"]], "dat": "", "err": why, "now": int(time.time())}
        await self._push(self.b["reply_queue"], err, "proxy-refused")

    async def _proxy_reply_loop(self) -> None:
        await self._forever(self._proxy_reply_step)

    async def _proxy_reply_step(self) -> None:  # RMB-PROXY-005
        proxy = self.b["proxy"]
        got = await self.redis.brpop([proxy["reply_queue"]], timeout=POP_TIMEOUT_S)
        if not got:
            return
        answer = json.loads(got[1])
        self.log.record("proxy-answer", direction="in", queue=proxy["reply_queue"], msg=answer)
        raw = await self.redis.get(self._fmt(proxy["backlog_key"], uid=answer.get("uid", "")))
        if raw is None:
            self.log.record("proxy-answer-dropped", direction="none", msg=answer, note="envelope expired")
            return
        envelope = json.loads(raw)
        signed_answer = self.cfg.keypair.sign({**answer, "src": self.twin})
        reply = {**envelope, "src": self.twin, "dst": [envelope["src"]], "now": int(time.time()), "err": "", "sig": "",
                 "dat": base64.b64encode(json.dumps(signed_answer, ensure_ascii=False).encode()).decode()}
        queue = envelope["ret"] if proxy["reply_to"] == "envelope-ret" else self.b["reply_queue"]
        await self._push(queue, reply, "proxy-reply")
