"""A recording HTTP proxy to sit between real RMB daemons: a twin's directory address points at
the recorder, which forwards every request to the daemon behind it and writes both sides of the
exchange to a message log (the same JSON Lines as the daemon's), untouched."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import TYPE_CHECKING

from rmkit.reference_impl.rmb.msglog import MessageLog

if TYPE_CHECKING:
    from aiohttp import web


class Recorder:
    def __init__(self, listen: tuple[str, int], target: str, log_path: str, name: str = "recorder"):
        self.listen, self.target = listen, target
        self.log = MessageLog(log_path, name)
        self.port = listen[1]

    async def start(self) -> None:
        import aiohttp  # imported here, not when the CLI builds its parser (every rmkit command would pay for it)
        from aiohttp import web

        self.http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, *self.listen)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        await self.runner.cleanup()
        await self.http.close()
        self.log.close()

    async def _forward(self, request: web.Request) -> web.Response:
        import aiohttp
        from aiohttp import web

        body = await request.read()
        try:
            msg = json.loads(body)
        except ValueError:
            msg = None
        self.log.record("recorded-request", direction="in", endpoint=request.path, peer=request.remote, msg=msg,
                        note=None if msg is not None else f"body not JSON: {body[:200]!r}")
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type",)}
        try:
            async with self.http.request(request.method, f"http://{self.target}{request.path_qs}", data=body, headers=headers) as resp:
                out = await resp.read()
                self.log.record("recorded-response", direction="out", endpoint=request.path, status=resp.status, peer=self.target,
                                msg=msg, note=out[:500].decode(errors="replace"))
                return web.Response(status=resp.status, body=out, content_type=resp.content_type if out else None)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:  # (asyncio's is the builtin since 3.11)
            self.log.record("recorded-response", direction="out", endpoint=request.path, status=502, peer=self.target, msg=msg,
                            note=f"target unreachable: {type(exc).__name__}")
            return web.Response(status=502, text=f"recorder: {self.target} unreachable")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rmkit rmb record", description="record the HTTP exchanges between RMB daemons")
    add_arguments(p)
    return run(p.parse_args(argv))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--listen", required=True, metavar="HOST:PORT", help="where the recorder listens (the address other twins are given)")
    p.add_argument("--target", required=True, metavar="HOST:PORT", help="the daemon behind it")
    p.add_argument("--log", required=True, metavar="FILE", help="message log (JSON Lines) to append to")


def run(args) -> int:
    import asyncio  # here, not at the top: every rmkit command builds the recorder's arguments

    host, _, port = args.listen.rpartition(":")
    if not port.isdigit():
        print(f"rmkit rmb record: --listen: expected HOST:PORT, found {args.listen!r}", file=sys.stderr)
        return 2

    async def go() -> int:
        rec = Recorder((host or "127.0.0.1", int(port)), args.target, args.log)
        await rec.start()
        print(f"recording 127.0.0.1:{rec.port} -> {args.target} into {args.log}", flush=True)
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await stop.wait()
        await rec.stop()
        return 0

    return asyncio.run(go())


if __name__ == "__main__":
    sys.exit(main())
