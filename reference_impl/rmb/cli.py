"""``rmkit rmb serve`` (one daemon) and ``rmkit rmb up N`` (N twins, each with its own
redis-server and daemon process). Both stop cleanly on Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys

from rmkit.errors import UsageError
from rmkit.reference_impl.rmb.addresses import CannotStart, host_port, listen_problem


MAX_WORKERS = 256  # forward workers of one daemon: beyond, a typo, not a machine


def check_workers(workers: int) -> None:
    """--workers: a daemon with no forward worker never posts a request (nor says so)."""
    if not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers: expected a number of forward workers from 1 to {MAX_WORKERS}, found {workers}")


INTERNAL = "or an internal error (one line; --debug before the command shows the traceback)"

SERVE_EXIT_CODES = f"""exit codes:
  0  the daemon stopped cleanly (Ctrl-C or SIGTERM)
  2  usage error, an unreadable directory, a daemon that cannot start (its port busy, its
     Redis not answering, its log not writable),
     {INTERNAL}"""

UP_EXIT_CODES = f"""exit codes:
  0  every twin stopped cleanly (Ctrl-C or SIGTERM)
  2  usage error, redis-server missing, --dir not writable, a child that cannot start, or a
     daemon, recorder or redis-server that exited while running (every twin is then stopped),
     {INTERNAL}"""

RECORD_EXIT_CODES = f"""exit codes:
  0  the recorder stopped cleanly (Ctrl-C or SIGTERM)
  2  usage error, a port that cannot be listened on (busy), a log that cannot be written,
     {INTERNAL}"""


def add_commands(rsub: argparse._SubParsersAction) -> None:
    s = rsub.add_parser("serve", help="run one reference RMB v1 daemon (until Ctrl-C)", epilog=SERVE_EXIT_CODES,
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="Run the reference daemon of one twin on its Redis, behaviour from spec/rmb for --profile.")
    s.add_argument("--twin", type=int, required=True, help="this twin's id")
    s.add_argument("--directory", required=True, metavar="FILE", help="twin directory (JSON or YAML): address, key type, public key per twin")
    key = s.add_mutually_exclusive_group(required=True)
    key.add_argument("--seed", metavar="HEX", help="this twin's 32-byte seed (64 hex digits)")
    key.add_argument("--mnemonic", metavar="WORDS", help="this twin's mnemonic (or 0x + 64 hex digits)")
    s.add_argument("--key-type", choices=("ed25519", "sr25519"), help="default: the directory's key type of this twin")
    s.add_argument("--redis", default="redis://127.0.0.1:6379/0", metavar="URL", help="this twin's own Redis (default %(default)s)")
    s.add_argument("--listen", metavar="HOST:PORT", help="HTTP address (default: this twin's directory address; port 0: a free one)")
    s.add_argument("--profile", default="spec", help="spec | rmb-rs-v1 | rmb-go (default spec)")
    s.add_argument("--workers", type=int, default=4, metavar="N", help=f"forward workers, 1 to {MAX_WORKERS} (default 4)")
    s.add_argument("--log", metavar="FILE", help="append the message log (JSON Lines) to FILE")
    s.set_defaults(func=cmd_serve)
    u = rsub.add_parser("up", help="start N twins: a redis-server and a daemon each, on free loopback ports (until Ctrl-C)",
                        epilog=UP_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    u.add_argument("n", type=int, metavar="N", help="number of twins (ids 1..N)")
    u.add_argument("--profile", default="spec")
    u.add_argument("--key-type", choices=("ed25519", "sr25519", "mixed"), default="mixed",
                   help="keys of the twins (default mixed: odd twins ed25519, even sr25519)")
    u.add_argument("--dir", metavar="DIR", help="where the directory, keys and logs go (default: a temporary folder)")
    u.add_argument("--workers", type=int, default=4, metavar="N", help=f"forward workers of each daemon, 1 to {MAX_WORKERS} (default 4)")
    u.add_argument("--record", action="store_true",
                   help="put a recording proxy (rmkit rmb record) in front of every daemon: the directory names the recorders")
    u.add_argument("--down", type=int, default=0, metavar="K",
                   help="also list K >= 0 twins (ids N+1..N+K) in the directory with no daemon behind their address (default 0)")
    u.set_defaults(func=cmd_up)
    r = rsub.add_parser("record", help="a recording HTTP proxy between daemons (message log of every exchange)",
                        epilog=RECORD_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    from rmkit.reference_impl.rmb import recorder

    recorder.add_arguments(r)
    r.set_defaults(func=recorder.run)


def cmd_serve(args, daemon_class=None) -> int:
    """Run one daemon; ``daemon_class`` (a subclass of RmbDaemon) runs a variant of the reference."""
    from rmkit.protocols.rmb.keys import Directory
    from rmkit.protocols.rmb.model import rmb_spec
    from rmkit.protocols.rmb.signing import keypair, seed_from_hex, seed_from_mnemonic
    from rmkit.guard import check_writable_file
    from rmkit.reference_impl.rmb.daemon import DaemonConfig

    rmb_spec().behaviour(args.profile)  # a clear usage error for an unknown profile
    check_workers(args.workers)
    check_writable_file(args.log, "--log")
    _check_redis_url(args.redis)
    directory = Directory.load(args.directory)
    me = directory.get(args.twin)
    if me is None:
        raise UsageError(f"--twin {args.twin}: not in the directory {args.directory}")
    kp = keypair(seed_from_hex(args.seed) if args.seed else seed_from_mnemonic(args.mnemonic), args.key_type or me.key_type)
    if kp.public != me.public_key or kp.key_type != me.key_type:
        raise UsageError(f"--twin {args.twin}: the key given is not the directory's {me.key_type} key {me.public_key.hex()}")
    host, port = host_port(args.listen, "--listen", any_port=True) if args.listen else \
        host_port(me.address, f"--twin {args.twin}: the directory's address (give --listen)")
    cfg = DaemonConfig(args.twin, kp, directory, args.redis, args.profile, host, port, args.workers, args.log)
    import asyncio  # here, not at the top: every rmkit command builds this module's arguments

    return asyncio.run(_serve(cfg, daemon_class))


async def _serve(cfg, daemon_class=None) -> int:
    import asyncio

    from rmkit.reference_impl.rmb.daemon import RmbDaemon

    from redis.exceptions import RedisError

    daemon = (daemon_class or RmbDaemon)(cfg)
    try:
        await daemon.start()
    except BaseException as exc:
        await daemon.stop()
        if isinstance(exc, RedisError):
            raise CannotStart(f"--redis {cfg.redis_url}: twin {cfg.twin} cannot start: {type(exc).__name__}: {exc}") from exc
        if isinstance(exc, OSError):  # Redis answered: the HTTP server cannot listen
            raise listen_problem(exc, "--listen", cfg.host, cfg.port) from exc
        raise  # the kit's own failure: an internal error (--debug shows the traceback)
    print(f"twin {cfg.twin} ({cfg.profile}) serving on http://{cfg.host}:{daemon.port}, redis {cfg.redis_url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await daemon.stop()
    print(f"twin {cfg.twin} stopped", flush=True)
    return 0


def _check_redis_url(url: str) -> None:
    from redis.asyncio import Redis

    try:
        Redis.from_url(url)  # parses only: connects at the first command
    except ValueError as exc:
        raise UsageError(f"--redis {url}: {exc}") from None


def cmd_up(args) -> int:
    from pathlib import Path

    from rmkit.guard import OutputError, check_writable_dir
    from rmkit.reference_impl.rmb.cluster import Cluster

    if args.n < 1:
        raise UsageError(f"N: expected at least 1 twin, found {args.n}")
    check_workers(args.workers)
    if args.down < 0:
        raise UsageError(f"--down: expected a number of twins that are down >= 0, found {args.down}")
    if args.dir:
        check_writable_dir(args.dir, "--dir")
        try:
            Path(args.dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"--dir {args.dir}: cannot create the folder ({exc.strerror or exc})") from None
    cluster = Cluster(args.n, profile=args.profile, key_type=args.key_type, workdir=args.dir, workers=args.workers,
                      record=args.record, down=args.down)
    stopping = {"now": False}

    def on_signal(signum, frame):
        stopping["now"] = True

    for sig in (signal.SIGINT, signal.SIGTERM):  # set, not inherited: a shell may start us with SIGINT ignored
        signal.signal(sig, on_signal)
    from rmkit.interrupts import Interrupted, signals_interrupt

    try:
        # while the twins start, a signal stops the start at once (Cluster.start stops what it has
        # started); its children got the terminal's Ctrl-C too, and their exits are its effect, not
        # the failure to report
        with signals_interrupt():
            cluster.start()
    except Interrupted as exc:
        print(f"rmkit rmb up: interrupted ({exc}) while the twins were starting; every process it started is stopped; "
              "no verdict", file=sys.stderr)
        return 2
    try:
        print(cluster.describe(), flush=True)
        print("ready (Ctrl-C stops every twin)", flush=True)
        import time

        while not stopping["now"]:
            dead = cluster.dead()
            if dead:
                print(f"rmkit rmb up: {dead}\nstopping every twin", file=sys.stderr)
                return 2
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
        print("stopped", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m rmkit.reference_impl.rmb.cli serve ...``: the daemon without loading every
    protocol's command line (``rmkit rmb up`` starts its twins this way), under the same exit-code
    contract as ``rmkit`` (``--debug`` or RMKIT_DEBUG=1: the traceback of an internal error)."""
    from rmkit.guard import run_command_line

    p = argparse.ArgumentParser(prog="rmkit rmb")
    add_commands(p.add_subparsers(dest="rmb_command", required=True))
    return run_command_line(p, argv, shown_as=("rmb",))


if __name__ == "__main__":
    sys.exit(main())
