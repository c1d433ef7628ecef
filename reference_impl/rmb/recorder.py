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

        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, *self.listen)
        try:
            await site.start()
        except BaseException:
            await self.runner.cleanup()
            self.log.close()
            raise
        self.port = site._server.sockets[0].getsockname()[1]
        # the client session once the recorder listens: a recorder that cannot start leaves none open
        self.http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))

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
    """``python -m rmkit.reference_impl.rmb.recorder``, under the exit-code contract of ``rmkit``
    (``--debug`` or RMKIT_DEBUG=1: the traceback of an internal error)."""
    from rmkit.guard import run_command_line

    p = argparse.ArgumentParser(prog="rmkit rmb record", description="record the HTTP exchanges between RMB daemons")
    add_arguments(p)
    p.set_defaults(func=run)
    return run_command_line(p, argv, shown_as=("rmb", "record"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--listen", required=True, metavar="HOST:PORT",
                   help="where the recorder listens (the address other twins are given; port 0: a free one, printed)")
    p.add_argument("--target", required=True, metavar="HOST:PORT", help="the daemon behind it")
    p.add_argument("--log", required=True, metavar="FILE", help="message log (JSON Lines) to append to")


def run(args) -> int:
    import asyncio  # here, not at the top: every rmkit command builds the recorder's arguments

    from rmkit.guard import check_writable_file
    from rmkit.reference_impl.rmb.addresses import host_port, listen_problem

    host, port = host_port(args.listen, "--listen", any_port=True)
    host_port(args.target, "--target")
    check_writable_file(args.log, "--log")

    async def go() -> int:
        rec = Recorder((host, port), args.target, args.log)
        try:
            await rec.start()
        except OSError as exc:
            raise listen_problem(exc, "--listen", host, port) from exc
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
