"""Benchmark of the reference RMB daemon end to end, against a baseline measured in the same run.

Machines here are noisy (2 shared cores), so the daemon path is reported with a baseline taken
moments before on the same machine:

- baseline: the same client and the same Python handler on one redis-server with no daemon (the
  client pushes to msgbus.$cmd, the handler answers on ret): the floor of Redis + JSON + asyncio
- through two daemons: twin 1's client pushes to msgbus.system.local; twin 1's daemon (its own
  redis-server and process) signs and POSTs to twin 2's daemon, the Python handler on twin 2
  answers, twin 2 signs and POSTs the reply back, twin 1 pushes it to ret. Request + reply.
- figures: messages/s (round trips completed per second with ``--concurrency`` in flight),
  p50/p99 round-trip latency, and the ratio daemon/baseline in messages/s

Usage: python bench/bench_rmb.py [--messages N] [--concurrency C] [--profile P] [--key-type T]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import redis.asyncio as aioredis

from rmkit.reference_impl.rmb.cluster import Cluster
from rmkit.reference_impl.rmb.handler import serve_commands
from rmkit.reference_impl.rmb.redisproc import RedisServer


def _request(dst: int, queue_ret: str) -> dict:
    return {"ver": 1, "uid": "", "cmd": "bench.echo", "exp": 60, "try": 1, "dat": base64.b64encode(b'{"n": 1}').decode(),
            "src": 0, "dst": [dst], "ret": queue_ret, "shm": "", "now": int(time.time()), "err": "", "sig": "", "pxy": False}


async def _drive(client_url: str, handler_url: str, push_queue: str, dst: int, messages: int, concurrency: int) -> tuple[float, list[float]]:
    stop = asyncio.Event()
    handlers = [asyncio.ensure_future(serve_commands(handler_url, {"bench.echo": lambda req, p: {"ok": True}}, stop)) for _ in range(4)]
    r = aioredis.Redis.from_url(client_url, decode_responses=True, max_connections=concurrency + 4)
    lat: list[float] = []
    sem = asyncio.Semaphore(concurrency)

    async def one():
        async with sem:
            ret = str(uuid.uuid4())
            msg = _request(dst, ret)
            if push_queue != "msgbus.system.local":
                msg.update({"uid": ret, "src": dst})
            t0 = time.perf_counter()
            await r.lpush(push_queue, json.dumps(msg))
            got = await r.brpop([ret], timeout=30)
            if not got or json.loads(got[1])["err"]:
                raise RuntimeError(f"no good reply for {ret}: {got}")
            lat.append(time.perf_counter() - t0)

    await asyncio.gather(*[one() for _ in range(min(50, messages))])  # warm-up
    lat.clear()
    start = time.perf_counter()
    await asyncio.gather(*[one() for _ in range(messages)])
    took = time.perf_counter() - start
    stop.set()
    await asyncio.gather(*handlers)
    await r.aclose()
    return took, lat


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--profile", default="spec")
    ap.add_argument("--key-type", default="mixed", choices=("ed25519", "sr25519", "mixed"))
    ap.add_argument("--workers", type=int, default=16, help="forward workers per daemon (default 16)")
    args = ap.parse_args()
    with RedisServer() as solo:
        took0, lat0 = asyncio.run(_drive(solo.url, solo.url, "msgbus.bench.echo", 2, args.messages, args.concurrency))
    with tempfile.TemporaryDirectory() as tmp, Cluster(2, profile=args.profile, key_type=args.key_type, workdir=Path(tmp),
                                                                 workers=args.workers) as c:
        a, b = c.twins
        took1, lat1 = asyncio.run(_drive(a.redis.url, b.redis.url, "msgbus.system.local", 2, args.messages, args.concurrency))
    rate0, rate1 = args.messages / took0, args.messages / took1
    print(f"{args.messages} round trips, {args.concurrency} in flight, profile {args.profile}, keys {args.key_type}, "
          f"{args.workers} workers per daemon, 4 handler tasks, message logs on")
    print(f"baseline (one redis, no daemon):  {rate0:8.0f} msg/s   p50 {_pct(lat0, 50):6.1f} ms   p99 {_pct(lat0, 99):6.1f} ms")
    print(f"through two daemons (req + reply): {rate1:8.0f} msg/s   p50 {_pct(lat1, 50):6.1f} ms   p99 {_pct(lat1, 99):6.1f} ms")
    print(f"ratio daemons / baseline: {rate1 / rate0:.3f} in msg/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
