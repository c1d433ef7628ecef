"""A small Corda node for the crash-point harness, written from spec/corda/node.md alone.

It takes everything from its environment (the harness sets each placeholder as RMKIT_CORDA_<NAME>),
so its ``--node-cmd`` names no placeholder::

    rmkit corda torture --seed 7 --cycles 50 --node-cmd "python -m rmkit.conformance.corda.examples.minimal_node"

One thread does everything, one copy at a time: a copy is committed and acknowledged before the
next is looked at (prefetch 1), so no copy is ever IN_FLIGHT. The database is SQLite: ``flows``
(each flow's suspends), ``processed`` (in the shape the harness exports) and ``effects`` (what the
audit reads), the last two written in one transaction.

``--memory-dedup`` makes it faulty: the deduplicator asks a set of the ids this process committed
instead of the database, so a copy that comes again after a restart is processed twice.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sqlite3
import sys
import threading
import time
import uuid

import stomp

LINK_LOST = 3
CREDIT_READ_S = 0.1     # spec/corda/node.yaml harness.credit_read_s: re-read CREDIT at least this often
RECEIPT_WAIT_S = 10.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS flows (flow TEXT PRIMARY KEY, suspends INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS processed (dedup_id TEXT NOT NULL, sender_uuid TEXT, peer TEXT, sequence_number INTEGER,
                                      tx INTEGER NOT NULL, inserted_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS processed_id ON processed (dedup_id);
CREATE TABLE IF NOT EXISTS effects (dedup_id TEXT NOT NULL, tx INTEGER NOT NULL);
"""


class LinkLost(Exception):
    pass


def env(name: str) -> str:
    return os.environ["RMKIT_CORDA_" + name]


class Node:
    def __init__(self, memory_dedup: bool):
        self.name = env("NODE")
        self.flows = [tuple(pair.split(":", 1)) for pair in env("FLOWS").split(",") if pair]
        self.messages = int(env("MESSAGES"))
        self.consequence = json.loads(env("POLICY"))["consequence"]
        self.arm, self.paused, self.credit_file = env("ARM"), env("PAUSED"), env("CREDIT")
        self.memory_dedup, self.committed_here = memory_dedup, set()
        self.passes: dict[str, int] = {}
        self.db = sqlite3.connect(env("DB"), isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self.records = open(env("RECORDS"), "ab", buffering=0)
        self.sender_uuid, self.seq = uuid.uuid4().hex, 0
        self.inbox: queue.Queue = queue.Queue()
        self.receipts: dict[str, threading.Event] = {}
        self.lost, self.closing, self.stopping = threading.Event(), False, False

    # -- the broker ------------------------------------------------------------------------------
    def connect(self) -> None:
        node = self

        class Listener(stomp.ConnectionListener):
            def on_message(self, frame):
                node.inbox.put(frame)

            def on_receipt(self, frame):
                ev = node.receipts.get(frame.headers.get("receipt-id"))
                if ev is not None:
                    ev.set()

            def on_error(self, frame):
                node.lost.set()

            def on_disconnected(self):
                if not node.closing:
                    node.lost.set()

            def on_heartbeat_timeout(self):
                node.lost.set()

        hb = int(env("HEARTBEAT_MS"))
        deadline = time.monotonic() + 30
        while True:   # the broker may still be starting
            self.conn = stomp.Connection12([(env("BROKER_HOST"), int(env("BROKER_PORT")))], heartbeats=(hb, hb),
                                           reconnect_attempts_max=1)
            self.conn.set_listener("node", Listener())
            try:
                self.conn.connect(wait=True)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise LinkLost("no broker") from None
                time.sleep(0.2)
        self.subscribe()

    def subscribe(self) -> None:
        self.conn.subscribe(destination=f"/queue/{env('INBOUND')}", id="1", ack="client-individual",
                            headers={"activemq.prefetchSize": "1"})

    def check(self) -> None:
        if self.lost.is_set():
            raise LinkLost("broker connection lost")

    def send(self, queue_name: str, headers: dict) -> None:
        """Send persistently and wait for the broker's receipt."""
        rid = uuid.uuid4().hex
        self.receipts[rid] = threading.Event()
        try:
            self.conn.send(destination=f"/queue/{queue_name}", body="", headers={**headers, "persistent": "true"}, receipt=rid)
            deadline = time.monotonic() + RECEIPT_WAIT_S
            while not self.receipts[rid].wait(0.05):
                self.check()
                if time.monotonic() > deadline:
                    raise LinkLost("no receipt")
        except stomp.exception.StompException as e:
            raise LinkLost(str(e)) from None
        finally:
            del self.receipts[rid]

    def ack(self, frame) -> None:
        self.check()
        try:
            self.conn.ack(frame.headers["ack"])
        except stomp.exception.StompException as e:
            raise LinkLost(str(e)) from None

    # -- records and crash points ----------------------------------------------------------------
    def record(self, event: str, dedup_id: str, **fields) -> None:
        line = {"t": time.time_ns() // 1_000_000, "node": self.name, "event": event, "id": dedup_id, **fields}
        self.records.write((json.dumps(line) + "\n").encode())   # one write per line, unbuffered

    @staticmethod
    def who(h: dict) -> dict:
        """The sender, seq and session fields of a copy, from its headers."""
        peer = h["session_id"].split(":", 1)[0]
        seq = h.get("sequence_number")
        return {"sender": f"{peer}/{h['sender_uuid']}" if h.get("sender_uuid") else peer,
                "seq": int(seq) if seq is not None else None, "session": h["session_id"]}

    def crash_point(self, name: str) -> None:
        try:
            with open(self.arm) as f:
                point, k = f.read().split()
        except FileNotFoundError:
            return
        if point != name:
            return
        self.passes[name] = self.passes.get(name, 0) + 1
        if self.passes[name] == int(k):
            tmp = f"{self.paused}.tmp"
            with open(tmp, "w") as f:
                f.write(name)
            os.replace(tmp, self.paused)
            while True:
                time.sleep(3600)

    # -- sending ---------------------------------------------------------------------------------
    def suspends(self, flow: str) -> int:
        row = self.db.execute("SELECT suspends FROM flows WHERE flow = ?", (flow,)).fetchone()
        return row[0] if row else 0

    def credit(self) -> int:
        try:
            with open(self.credit_file) as f:
                return min(self.messages, int(f.read()))
        except FileNotFoundError:
            return self.messages

    def headers(self, flow: str, k: int, original: bool) -> dict:
        h = {"dedup_id": f"N-{flow}-{k}-0", "session_id": f"{self.name}:{flow}", "session_init": "1" if k == 1 else "0",
             "payload": f"{flow}:{k}"}
        if original:
            self.seq += 1
            h.update(sender_uuid=self.sender_uuid, sequence_number=str(self.seq))
        return h

    def deliver(self, queue_name: str, h: dict) -> None:
        self.send(queue_name, h)
        self.record("sent", h["dedup_id"], **self.who(h))

    def recover(self) -> None:
        for flow, queue_name in self.flows:
            k = self.suspends(flow)
            if k > 0:
                self.deliver(queue_name, self.headers(flow, k, original=False))

    def send_step(self) -> bool:
        """Every flow that may make its next suspend makes it; False when none may."""
        limit, sent = self.credit(), False
        for flow, queue_name in self.flows:
            k = self.suspends(flow) + 1
            if k > limit:
                continue
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("INSERT INTO flows VALUES (?, ?) ON CONFLICT(flow) DO UPDATE SET suspends = excluded.suspends",
                            (flow, k))
            self.db.execute("COMMIT")
            self.crash_point("sender_after_checkpoint")
            self.deliver(queue_name, self.headers(flow, k, original=True))
            sent = True
        return sent

    # -- receiving -------------------------------------------------------------------------------
    def is_processed(self, dedup_id: str) -> bool:
        if self.memory_dedup:   # faulty: forgets every id at a restart
            return dedup_id in self.committed_here
        return self.db.execute("SELECT 1 FROM processed WHERE dedup_id = ?", (dedup_id,)).fetchone() is not None

    def commit(self, h: dict) -> int:
        self.db.execute("BEGIN IMMEDIATE")
        tx = self.db.execute("SELECT COALESCE(MAX(tx), 0) + 1 FROM effects").fetchone()[0]
        seq = h.get("sequence_number")
        self.db.execute("INSERT INTO processed VALUES (?, ?, ?, ?, ?, ?)",
                        (h["dedup_id"], h.get("sender_uuid"), h["session_id"].split(":", 1)[0],
                         int(seq) if seq is not None else None, tx, time.time()))
        self.db.execute("INSERT INTO effects VALUES (?, ?)", (h["dedup_id"], tx))
        self.db.execute("COMMIT")
        self.committed_here.add(h["dedup_id"])
        return tx

    def receive(self, frame) -> None:
        h, delivery = frame.headers, frame.headers["message-id"]
        did = h["dedup_id"]
        self.record("received", did, delivery=delivery, **self.who(h))
        verdict = "DUPLICATE" if self.is_processed(did) else "NEW"   # one copy at a time: never IN_FLIGHT
        self.record("dedup", did, verdict=verdict.lower())
        consequence = self.consequence[verdict]
        if consequence == "process":
            self.crash_point("receiver_before_commit")
            tx = self.commit(h)
            self.record("committed", did, tx=tx)
            self.crash_point("receiver_between_commit_and_ack")
            self.ack(frame)
            self.record("acked", did, delivery=delivery)
        elif consequence == "ack_and_drop":
            self.ack(frame)
            self.record("acked", did, delivery=delivery)
        else:   # discard: redelivered to a new subscription only
            self.record("discarded", did, delivery=delivery)
            self.conn.unsubscribe(id="1")
            self.subscribe()

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> int:
        self.connect()
        self.recover()
        open(env("READY"), "a").close()
        may_send = True
        while not self.stopping:
            self.check()
            try:
                frame = self.inbox.get(timeout=0.005 if may_send else CREDIT_READ_S)
            except queue.Empty:
                frame = None
            if frame is not None:
                self.receive(frame)
            may_send = self.send_step()
        self.closing = True
        self.conn.disconnect()
        return 0


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(prog="minimal_node", description=__doc__.split("\n\n")[0])
    a.add_argument("--memory-dedup", action="store_true", help="faulty: processed ids kept in memory only")
    args = a.parse_args(argv)
    node = Node(args.memory_dedup)

    def stop(*_):
        node.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        return node.run()
    except LinkLost as e:
        print(f"node {node.name}: {e}", file=sys.stderr)
        return LINK_LOST


if __name__ == "__main__":
    sys.exit(main())
