"""``rmkit rmb serve`` (one daemon) and ``rmkit rmb up N`` (N twins, each with its own
redis-server and daemon process). Both stop cleanly on Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys

from rmkit.errors import UsageError


def add_commands(rsub: argparse._SubParsersAction, guard) -> None:
    s = rsub.add_parser("serve", help="run one reference RMB v1 daemon (until Ctrl-C)",
                        description="Run the reference daemon of one twin on its Redis, behaviour from spec/rmb for --profile.")
    s.add_argument("--twin", type=int, required=True, help="this twin's id")
    s.add_argument("--directory", required=True, metavar="FILE", help="twin directory (JSON or YAML): address, key type, public key per twin")
    key = s.add_mutually_exclusive_group(required=True)
    key.add_argument("--seed", metavar="HEX", help="this twin's 32-byte seed (64 hex digits)")
    key.add_argument("--mnemonic", metavar="WORDS", help="this twin's mnemonic (or 0x + 64 hex digits)")
    s.add_argument("--key-type", choices=("ed25519", "sr25519"), help="default: the directory's key type of this twin")
    s.add_argument("--redis", default="redis://127.0.0.1:6379/0", metavar="URL", help="this twin's own Redis (default %(default)s)")
    s.add_argument("--listen", metavar="HOST:PORT", help="HTTP address (default: this twin's directory address)")
    s.add_argument("--profile", default="spec", help="spec | rmb-rs-v1 | rmb-go (default spec)")
    s.add_argument("--workers", type=int, default=4, help="forward workers (default 4)")
    s.add_argument("--log", metavar="FILE", help="append the message log (JSON Lines) to FILE")
    s.set_defaults(func=guard(cmd_serve))
    u = rsub.add_parser("up", help="start N twins: a redis-server and a daemon each, on free loopback ports (until Ctrl-C)")
    u.add_argument("n", type=int, metavar="N", help="number of twins (ids 1..N)")
    u.add_argument("--profile", default="spec")
    u.add_argument("--key-type", choices=("ed25519", "sr25519", "mixed"), default="mixed",
                   help="keys of the twins (default mixed: odd twins ed25519, even sr25519)")
    u.add_argument("--dir", metavar="DIR", help="where the directory, keys and logs go (default: a temporary folder)")
    u.add_argument("--workers", type=int, default=4)
    u.add_argument("--record", action="store_true",
                   help="put a recording proxy (rmkit rmb record) in front of every daemon: the directory names the recorders")
    u.add_argument("--down", type=int, default=0, metavar="K",
                   help="also list K twins (ids N+1..N+K) in the directory with no daemon behind their address")
    u.set_defaults(func=guard(cmd_up))
    r = rsub.add_parser("record", help="a recording HTTP proxy between daemons (message log of every exchange)")
    from rmkit.reference_impl.rmb import recorder

    recorder.add_arguments(r)
    r.set_defaults(func=guard(recorder.run))


def cmd_serve(args, daemon_class=None) -> int:
    """Run one daemon; ``daemon_class`` (a subclass of RmbDaemon) runs a variant of the reference."""
    from rmkit.conformance.rmb.directory import Directory
    from rmkit.conformance.rmb.model import rmb_spec
    from rmkit.conformance.rmb.signing import keypair, seed_from_hex, seed_from_mnemonic
    from rmkit.reference_impl.rmb.daemon import DaemonConfig, RmbDaemon

    rmb_spec().behaviour(args.profile)  # a clear usage error for an unknown profile
    directory = Directory.load(args.directory)
    me = directory.get(args.twin)
    if me is None:
        raise UsageError(f"--twin {args.twin}: not in the directory {args.directory}")
    kp = keypair(seed_from_hex(args.seed) if args.seed else seed_from_mnemonic(args.mnemonic), args.key_type or me.key_type)
    if kp.public != me.public_key or kp.key_type != me.key_type:
        raise UsageError(f"--twin {args.twin}: the key given is not the directory's {me.key_type} key {me.public_key.hex()}")
    host, _, port = (args.listen or me.address).rpartition(":")
    if not port.isdigit():
        raise UsageError(f"--listen: expected HOST:PORT, found {args.listen or me.address!r}")
    cfg = DaemonConfig(args.twin, kp, directory, args.redis, args.profile, host or "127.0.0.1", int(port), args.workers, args.log)
    import asyncio  # here, not at the top: every rmkit command builds this module's arguments

    return asyncio.run(_serve(cfg, daemon_class))


async def _serve(cfg, daemon_class=None) -> int:
    import asyncio

    from rmkit.reference_impl.rmb.daemon import RmbDaemon

    daemon = (daemon_class or RmbDaemon)(cfg)
    try:
        await daemon.start()
    except Exception as exc:  # noqa: BLE001 - cannot start: exit 2 with the reason
        await daemon.stop()
        print(f"rmkit rmb serve: twin {cfg.twin} cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(f"twin {cfg.twin} ({cfg.profile}) serving on http://{cfg.host}:{daemon.port}, redis {cfg.redis_url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await daemon.stop()
    print(f"twin {cfg.twin} stopped", flush=True)
    return 0


def cmd_up(args) -> int:
    from rmkit.reference_impl.rmb.cluster import Cluster

    if args.n < 1:
        raise UsageError(f"N: expected at least 1 twin, found {args.n}")
    cluster = Cluster(args.n, profile=args.profile, key_type=args.key_type, workdir=args.dir, workers=args.workers,
                      record=args.record, down=args.down)
    stopping = {"now": False}

    def on_signal(signum, frame):
        stopping["now"] = True

    for sig in (signal.SIGINT, signal.SIGTERM):  # set, not inherited: a shell may start us with SIGINT ignored
        signal.signal(sig, on_signal)
    try:
        cluster.start()
        print(cluster.describe(), flush=True)
        print("ready (Ctrl-C stops every twin)", flush=True)
        import time

        while not stopping["now"]:
            dead = cluster.dead()
            if dead:
                print(f"rmkit rmb up: {dead} exited; stopping", file=sys.stderr)
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
    protocol's command line (``rmkit rmb up`` starts its twins this way)."""
    from rmkit.conformance.rmb.cli import _guard
    from rmkit.errors import RmkitError

    p = argparse.ArgumentParser(prog="rmkit rmb")
    add_commands(p.add_subparsers(dest="rmb_command", required=True), _guard)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except RmkitError as exc:
        print(f"rmkit rmb: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
