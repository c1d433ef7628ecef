"""A Python handler of RMB commands (the role of the npm MessageBusServer): pops msgbus.$cmd on
its twin's Redis, runs the function, pushes the answer to the request's ret with src and dst
swapped, dat the base64 of the JSON result, or err set when the function raised."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any, Awaitable, Callable

import redis.asyncio as aioredis

from rmkit.protocols.rmb.model import rmb_spec

Handler = Callable[[dict, bytes], Awaitable[Any] | Any]


def answer_for(request: dict, result: Any = None, error: str | None = None) -> dict:
    out = dict(request)
    out.update({"src": request["dst"][0], "dst": [request["src"]], "now": int(time.time()), "sig": "",
                "dat": "" if error is not None else base64.b64encode(json.dumps(result, ensure_ascii=False).encode()).decode(),
                "err": error or ""})
    return out


async def serve_commands(redis_url: str, handlers: dict[str, Handler], stop: asyncio.Event) -> int:
    """Serve until ``stop`` is set; return the number of requests answered."""
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    by_queue = {rmb_spec().behaviour("spec")["command_queue"].format(cmd=cmd): fn for cmd, fn in handlers.items()}
    served = 0
    try:
        while not stop.is_set():
            got = await r.brpop(list(by_queue), timeout=1)
            if not got:
                continue
            queue, raw = got
            request = json.loads(raw)
            fn = by_queue[queue]
            try:
                result = fn(request, base64.b64decode(request["dat"]))
                if asyncio.iscoroutine(result):
                    result = await result
                answer = answer_for(request, result)
            except Exception as exc:  # noqa: BLE001 - the caller gets the error text
                answer = answer_for(request, error=f"{type(exc).__name__}: {exc}")
            await r.lpush(request["ret"], json.dumps(answer, ensure_ascii=False))
            served += 1
    finally:
        await r.aclose()
    return served
