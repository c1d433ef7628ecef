"""The reference receiving node on a real broker: consumes the inbound queue over STOMP with
individual acknowledgements, deduplicates with :class:`~.receiver.ReceivingNode`, commits
checkpoint, processed id and effect in one SQLite transaction, and acknowledges only after the
commit (DUPLICATE copies at once; IN_FLIGHT cannot arise with one consumer thread).

``python -m rmkit.reference_impl.corda.stomp_node --port P --queue Q --db FILE [--profile P]
[--die-after-commits N] [--idle S]``: with ``--die-after-commits`` the process kills itself
(SIGKILL) right after its Nth commit, before the acknowledgement (the crash point
receiver_between_commit_and_ack); it exits 0 after ``--idle`` seconds without a message. One
line per copy on stdout: ``ANSWER dedup_id``.
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import sys

from .broker import Delivery, Queue
from .message import Message
from .receiver import ReceivingNode
from .store import SqliteStore

HEADERS = ("dedup_id", "session_id", "session_init", "sender_uuid", "sequence_number", "payload")


def to_headers(m: Message) -> dict:
    h = {"dedup_id": m.dedup_id, "session_id": m.session_id, "session_init": "1" if m.session_init else "0",
         "payload": m.payload, "persistent": "true"}
    if m.sender_uuid is not None:
        h["sender_uuid"], h["sequence_number"] = m.sender_uuid, str(m.sequence_number)
    return h


def from_headers(h: dict) -> Message:
    seq = h.get("sequence_number")
    return Message(h["dedup_id"], h["session_id"], h.get("session_init") == "1", h["payload"], h.get("sender_uuid"),
                   int(seq) if seq is not None else None)


def main(argv: list[str] | None = None) -> int:
    import stomp

    from rmkit.protocols.corda.model import corda_spec

    a = argparse.ArgumentParser(prog="stomp_node")
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--queue", required=True)
    a.add_argument("--db", required=True)
    a.add_argument("--profile", default="corda-os")
    a.add_argument("--die-after-commits", type=int)
    a.add_argument("--idle", type=float, default=2.0)
    args = a.parse_args(argv)
    node = ReceivingNode(corda_spec(args.profile), Queue(args.queue), store=SqliteStore(args.db))
    inbox: queue.Queue = queue.Queue()

    class Listener(stomp.ConnectionListener):
        def on_message(self, frame):
            inbox.put(frame)

    conn = stomp.Connection([("127.0.0.1", args.port)], heartbeats=(0, 0))
    conn.set_listener("node", Listener())
    conn.connect(wait=True)
    conn.subscribe(destination=f"/queue/{args.queue}", id="1", ack="client-individual",
                   headers={"activemq.prefetchSize": "1"})
    commits = 0
    while True:
        try:
            frame = inbox.get(timeout=args.idle)
        except queue.Empty:
            break
        m = from_headers(frame.headers)
        d = Delivery(0, m, frame.headers.get("redelivered") == "true", 0)
        answer = node.check(m)
        print(f"{answer.value} {m.dedup_id}", flush=True)
        consequence = node.spec.consequence[answer.value]
        if consequence == "process":
            node.in_flight[m.dedup_id] = d
            node.processing.append(d)
            node.commit()
            commits += 1
            if args.die_after_commits is not None and commits >= args.die_after_commits:
                os.kill(os.getpid(), signal.SIGKILL)   # crash point: between commit and ack
        if consequence in ("process", "ack_and_drop"):
            conn.ack(frame.headers["message-id"], frame.headers["subscription"])
            node.to_ack.clear()
    conn.disconnect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
