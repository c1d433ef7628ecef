"""The bridge process: moves a node's outbound queue for one peer (``internal.peers.<peer>`` on the
node's broker) to the peer's inbound queue (``p2p.inbound.<peer>`` on the peer's broker), sending
what it holds pipelined and acknowledging each local copy only after the peer broker's receipt for it
(spec/corda/system.yaml ``bridge``: local_ack after_remote_ack). A bridge killed between the
remote receipt and the local acknowledgement leaves the message on both brokers: the local broker
redelivers it to the restarted bridge and the peer receives a duplicate (crash point
``bridge_between_remote_ack_and_local_ack``).

``python -m rmkit.reference_impl.corda.bridge_node --name N --local-port P --remote-port Q
(--peer B | --outbound Q1 --inbound Q2) [--in-order [true|false]] [--folder DIR | --arm F --paused F --ready F]
[--crash-at POINT[:K[:MODE]]]``. Under the crash-point harness it is started by the ``--bridge-cmd`` of
:func:`.variants.bridge_cmd` (placeholders: spec/corda/node.md). Exits 0 on SIGTERM, 3 when either
broker connection is lost, 2 on bad arguments."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from .crashpoints import ENV, CrashPoints, parse
from .stomp_link import LinkLost, StompLink
from .stomp_node import HEADERS

LINK_LOST = 3


def run(args: argparse.Namespace) -> int:
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    hooks = CrashPoints(args.name, args.folder, args.crash_at, arm=args.arm, paused=args.paused, ready=args.ready)
    local = StompLink(args.local_port, args.heartbeat_ms, host=args.local_host)
    remote = StompLink(args.remote_port, args.heartbeat_ms, host=args.remote_host)
    window = 1 if args.in_order else args.prefetch   # in order: the next only after the last one's receipt
    local.subscribe(args.outbound, window)
    hooks.ready()
    while not stopping:
        remote.check()
        frames = local.take(window, 0.1)
        receipts = [remote.send_async(args.inbound, {k: f.headers[k] for k in HEADERS if k in f.headers}, f.body)
                    for f in frames]   # pipelined: each is acknowledged locally only after its own receipt
        for frame, rid in zip(frames, receipts):
            remote.wait(rid)
            hooks.reach("bridge_between_remote_ack_and_local_ack")
            local.ack(frame)
    local.close()
    remote.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(prog="python -m rmkit.reference_impl.corda.bridge_node", description=__doc__.split("\n\n")[0])
    a.add_argument("--name", required=True, help="the component's name (arm files use it)")
    a.add_argument("--local-host", default="127.0.0.1")
    a.add_argument("--local-port", type=int, required=True, help="STOMP port of the sending node's broker")
    a.add_argument("--remote-host", default="127.0.0.1")
    a.add_argument("--remote-port", type=int, required=True, help="STOMP port of the peer's broker")
    a.add_argument("--peer", help="the peer: consume internal.peers.PEER, produce to p2p.inbound.PEER")
    a.add_argument("--outbound", help="the queue consumed on the local broker (instead of --peer)")
    a.add_argument("--inbound", help="the queue produced to on the remote broker (instead of --peer)")
    a.add_argument("--folder", help="folder of the arm, paused and ready files (from a supervisor)")
    a.add_argument("--arm", help="the crash-point arm file (the harness's ARM)")
    a.add_argument("--paused", help="the file written when paused at a crash point (the harness's PAUSED)")
    a.add_argument("--ready", help="the file touched once connected (the harness's READY)")
    a.add_argument("--crash-at")
    a.add_argument("--prefetch", type=int, default=16, help="messages in flight at once (pipelined)")
    a.add_argument("--in-order", nargs="?", const="true", default="false", choices=("true", "false"),
                   help="one message at a time, the next only after the peer broker's receipt for the last "
                        "(the spec profile's in_order_bridge)")
    a.add_argument("--heartbeat-ms", type=int, default=1000)
    args = a.parse_args(argv)
    args.in_order = args.in_order == "true"
    if args.peer:
        args.outbound = args.outbound or f"internal.peers.{args.peer}"
        args.inbound = args.inbound or f"p2p.inbound.{args.peer}"
    if not (args.outbound and args.inbound):
        print(f"bridge {args.name}: expected --peer, or --outbound and --inbound", file=sys.stderr)
        return 2
    crash = args.crash_at or os.environ.get(ENV)
    try:
        if crash:
            parse(crash)
    except ValueError as e:   # a bad argument: exit 2 with one line, not a traceback
        print(f"bridge {args.name}: --crash-at (or {ENV}): {e}", file=sys.stderr)
        return 2
    try:
        return run(args)
    except LinkLost as e:
        print(f"bridge {args.name}: {e}", file=sys.stderr)
        return LINK_LOST


if __name__ == "__main__":
    sys.exit(main())
