"""The reference node process on a real broker and a real database.

One process per node: its sending flows suspend at each send (checkpoint committed first, then the
message produced to the peer's outbound queue ``internal.peers.<peer>`` on the node's own broker,
waiting for the broker's receipt), and its receiving side consumes ``p2p.inbound.<node>`` over
STOMP 1.2 with individual acknowledgements and heart-beats, asks the deduplicator (the reference
machine's :meth:`~.receiver.ReceivingNode.check`, reading the database), commits the step (session
checkpoints, processed ids, effects) in one SQLite transaction and acknowledges only after it.
A restarted node replays each flow from its checkpoint: it re-sends the last checkpoint's message
with the same N- id and without sender UUID or sequence number.

Every action is recorded (:mod:`.records`); crash points (:mod:`.crashpoints`) sit at
``sender_after_checkpoint``, ``receiver_before_commit`` and ``receiver_between_commit_and_ack``.

Faulty variants (``--variant``), which the crash-point harness must catch:

- ``ack_before_commit``: a NEW copy is acknowledged when it arrives, before its commit;
- ``memory_dedup``: the deduplicator asks only an in-memory set of the ids this process
  committed, never the database (a restart forgets);
- ``fastpath_no_db``: the sequence-number fast path keeps its marks in memory and takes a missing
  mark as "nothing seen yet", answering NEW without the database read the spec requires.

``python -m rmkit.reference_impl.corda.node --name A --port P --peers B --db FILE --events FILE
[--flows N | --plan FLOW:QUEUE,...] [--messages M] [--profile P | --policy JSON] [--variant V]
[--folder DIR | --credit FILE --arm FILE --paused FILE --ready FILE] [--crash-at POINT[:K[:MODE]]]``.
Under the crash-point harness it is started by the ``--node-cmd`` of :func:`.variants.node_cmd`,
whose placeholders (spec/corda/node.md) give it its broker, queues, files and policy.
Exits 0 on SIGTERM, 3 when its broker connection is lost, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .broker import Queue
from .crashpoints import CrashPoints
from .message import Message, flow_id
from .receiver import ReceivingNode
from .records import EventLog
from .stomp_link import LinkLost, StompLink
from .stomp_node import from_headers, to_headers
from .store import SqliteStore
from .variants import VARIANTS

LINK_LOST = 3


@dataclass(frozen=True)
class Policy:
    """What a node takes from its profile (spec/corda/system.yaml): each answer's consequence and
    whether the deduplicator has the fast path (and, for its bridges, whether they keep order). Passed as JSON by a supervisor that already loaded
    the spec, so that a restart does not load it again."""

    consequence: dict
    fast_path: bool
    in_order_bridge: bool = False   # for the bridges: one message at a time (the API's per-session order kept)

    @classmethod
    def of_profile(cls, profile: str) -> "Policy":
        from rmkit.protocols.corda.model import corda_spec

        s = corda_spec(profile)
        return cls(dict(s.consequence), s.fast_path, s.in_order_bridge)

    def to_json(self) -> str:
        return json.dumps({"consequence": self.consequence, "fast_path": self.fast_path})

    @classmethod
    def from_json(cls, text: str) -> "Policy":
        d = json.loads(text)
        return cls(dict(d["consequence"]), bool(d["fast_path"]))


def flow_plan(node: str, peers: list[str], flows: int) -> list[tuple[str, str]]:
    """A node's sending flows: (flow name, the peer it sends to), round robin over the peers. The
    flow's name is the seed of its N- deduplication ids."""
    return [(f"{node}f{i}", peers[i % len(peers)]) for i in range(flows if peers else 0)]


def n_format():
    """The spec's N- deduplication id format (spec/corda/messages.yaml ``dedup_ids``; the same in
    every profile)."""
    from rmkit.protocols.corda.model import corda_spec, profiles

    return corda_spec(profiles()[0]).id_formats["N"]


def fits_flow_ids(name: str) -> bool:
    """Whether ``name`` can name a node: its flows' names (:func:`flow_plan`) are the seeds of
    their N- deduplication ids, so each must be a seed the spec's N- pattern allows."""
    n = n_format()
    seed = flow_plan(name, ["peer"], 1)[0][0]
    m = n.pattern.fullmatch(flow_id(seed, 1, 0))
    return m is not None and m.group(n.parts.index("seed") + 1) == seed


class Deduplicator(ReceivingNode):
    """The reference machine's deduplicator (in-flight set, fast path, database, in that order)
    with its database reads going to the node's store."""

    def __init__(self, policy: Policy, store: SqliteStore, variant: str = "reference"):
        self._store, self.variant, self.committed_here = store, variant, set()
        super().__init__(policy, Queue("unused"))

    def load_marks(self) -> None:
        store = getattr(self, "_store", None)
        self.marks = store.marks() if store is not None and self.spec.fast_path and self.variant == "reference" else {}

    def fast_path_new(self, m: Message) -> bool:
        if self.variant == "fastpath_no_db":   # faulty: no mark is taken as "nothing seen yet"
            key = m.sender_key
            return key is not None and m.sequence_number is not None and m.sequence_number > self.marks.get(key, 0)
        return super().fast_path_new(m)

    def in_database(self, dedup_id: str) -> bool:
        self.db_reads += 1
        if self.variant == "memory_dedup":   # faulty: only what this process committed
            return dedup_id in self.committed_here
        return self._store.has(dedup_id)

    def committed(self, m: Message) -> None:
        """After the commit: the id leaves the in-flight set; the fast path's mark moves up."""
        self.in_flight.pop(m.dedup_id, None)
        self.committed_here.add(m.dedup_id)
        key = m.sender_key
        if (self.spec.fast_path or self.variant == "fastpath_no_db") and key is not None and m.sequence_number is not None:
            self.marks[key] = max(self.marks.get(key, 0), m.sequence_number)


class Node:
    def __init__(self, args: argparse.Namespace, policy: Policy):
        self.args, self.name, self.policy = args, args.name, policy
        self.store = SqliteStore(args.db)
        self.events = EventLog(args.events, self.name)
        self.dedup = Deduplicator(policy, self.store, args.variant)
        self.hooks = CrashPoints(f"node-{self.name}", args.folder, args.crash_at, arm=args.arm, paused=args.paused,
                                 ready=args.ready)
        self.uuid = uuid.uuid4().hex[:12]
        self.seq = 0
        self.flows = args.plan if args.plan is not None else [(f, f"internal.peers.{p}") for f, p in
                                                              flow_plan(self.name, args.peers, args.flows)]
        self.discarded = 0
        self.stopping = False
        self.link: StompLink | None = None

    # -- receiving ---------------------------------------------------------------------------
    def connect(self) -> None:
        self.link = StompLink(self.args.port, self.args.heartbeat_ms, host=self.args.host)
        self.link.subscribe(self.args.inbound or f"p2p.inbound.{self.name}", self.args.prefetch)

    def reconnect(self) -> None:
        """Discarded (IN_FLIGHT) copies are redelivered only to a new consumer: reconnect."""
        self.link.close()
        self.discarded = 0
        self.connect()

    def receive(self, frames: list) -> None:
        """One step of the receiving flows over the copies that arrived together."""
        new = []
        for f in frames:
            m = from_headers(f.headers)
            delivery = f.headers.get("message-id", "")
            self.events.write("received", m, delivery=delivery)
            answer = self.dedup.check(m)
            self.events.write("dedup", m, verdict=answer.value)
            consequence = self.policy.consequence[answer.value]
            if consequence == "process":
                self.dedup.in_flight[m.dedup_id] = f
                new.append((m, f))
                if self.args.variant == "ack_before_commit":   # faulty: acknowledged before the commit
                    self.ack(m, f)
            elif consequence == "ack_and_drop":
                self.ack(m, f)
            else:
                self.events.write("discarded", m, delivery=delivery)
                self.discarded += 1
        if not new:
            return
        self.hooks.reach("receiver_before_commit")
        tx = self.store.commit_batch([m for m, _ in new])
        for m, _ in new:
            self.events.write("committed", m, tx=tx)
            self.dedup.committed(m)
        self.hooks.reach("receiver_between_commit_and_ack")
        if self.args.variant != "ack_before_commit":
            for m, f in new:
                self.ack(m, f)

    def ack(self, m: Message, frame) -> None:
        self.link.ack(frame)
        self.events.write("acked", m, delivery=frame.headers.get("message-id", ""))

    # -- sending -------------------------------------------------------------------------------
    def credit(self) -> int:
        """How many suspends each flow may have made by now: ``--messages``, or less while a
        supervisor paces the run (a number in the ``--credit`` file, by default ``<folder>/credit``)."""
        path = self.args.credit or (Path(self.args.folder) / "credit" if self.args.folder else None)
        if path:
            try:
                return min(self.args.messages, int(Path(path).read_text()))
            except FileNotFoundError:
                pass
            except (OSError, ValueError):
                return 0   # being replaced: no send until it reads whole
        return self.args.messages

    def message(self, flow: str, suspends: int, original: bool) -> Message:
        """The message of a flow's suspend: an original send carries the process's sender UUID and
        next sequence number, a re-send during recovery neither."""
        uuid_, seq = None, None
        if original:
            self.seq += 1
            uuid_, seq = self.uuid, self.seq
        return Message(flow_id(flow, suspends, 0), f"{self.name}:{flow}", suspends == 1, f"{flow}:{suspends}", uuid_, seq)

    def produce(self, sends: list[tuple[str, Message]]) -> None:
        """Send to the peers' outbound queues, pipelined, and wait for every receipt: a flow suspends
        again only once the broker holds its last message."""
        receipts = [(m, self.link.send_async(queue, to_headers(m))) for queue, m in sends]
        for m, rid in receipts:
            self.link.wait(rid)
            self.events.write("sent", m)

    def recover(self) -> None:
        """Replay every flow from its checkpoint: re-send the last checkpoint's message."""
        done = self.store.flows()
        self.produce([(queue, self.message(flow, done[flow], original=False)) for flow, queue in self.flows if done.get(flow, 0) > 0])
        self.suspends = {flow: done.get(flow, 0) for flow, _ in self.flows}

    def send_step(self) -> bool:
        """Every flow that may send now suspends (checkpoint committed) and sends; False when none may."""
        limit = self.credit()
        sends = []
        for flow, queue in self.flows:
            if self.suspends[flow] < limit:
                _, k = self.store.checkpoint_flow(flow)
                self.suspends[flow] = k
                self.hooks.reach("sender_after_checkpoint")
                sends.append((queue, self.message(flow, k, original=True)))
        self.produce(sends)
        return bool(sends)

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> int:
        self.connect()
        self.recover()
        self.hooks.ready()
        idle_since = time.monotonic()
        may_send = True
        while not self.stopping:
            frames = self.link.take(self.args.batch, 0.005 if may_send else 0.1)
            now = time.monotonic()
            if frames:
                self.receive(frames)
                idle_since = now
            elif self.discarded and now - idle_since > self.args.rediscover:
                self.reconnect()
                idle_since = now
            may_send = self.send_step()
        self.link.close()
        return 0


def parser() -> argparse.ArgumentParser:
    a = argparse.ArgumentParser(prog="python -m rmkit.reference_impl.corda.node", description=__doc__.split("\n\n")[0])
    a.add_argument("--name", required=True, help="the node's name (letters A-Z, a-z and digits: the spec's N- id seeds)")
    a.add_argument("--host", default="127.0.0.1", help="STOMP host of the node's own broker (default 127.0.0.1)")
    a.add_argument("--port", type=int, required=True, help="STOMP port of the node's own broker")
    a.add_argument("--inbound", help="the queue it consumes (the harness's INBOUND; default p2p.inbound.NAME)")
    a.add_argument("--peers", default="", help="comma-separated peers its flows send to")
    a.add_argument("--plan", help="the sending flows as FLOW:QUEUE,... (the harness's FLOWS; instead of --peers and --flows)")
    a.add_argument("--db", required=True, help="the node's SQLite file")
    a.add_argument("--events", required=True, help="its events file (JSON Lines, appended)")
    a.add_argument("--flows", type=int, default=2, help="sending flows (each to one peer, round robin)")
    a.add_argument("--messages", type=int, default=10, help="messages each flow sends (one per suspend)")
    g = a.add_mutually_exclusive_group()
    g.add_argument("--profile", default="corda-os", help="spec profile (default corda-os)")
    g.add_argument("--policy", help="the profile's consequences and fast path as JSON (see Policy)")
    a.add_argument("--variant", choices=VARIANTS, default="reference")
    a.add_argument("--folder", help="folder of the arm, paused and ready files and the pacing credit (from a supervisor)")
    a.add_argument("--credit", help="the pacing file (the harness's CREDIT; default <folder>/credit)")
    a.add_argument("--arm", help="the crash-point arm file (the harness's ARM; default <folder>/node-NAME.arm)")
    a.add_argument("--paused", help="the file written when paused at a crash point (the harness's PAUSED)")
    a.add_argument("--ready", help="the file touched once connected (the harness's READY)")
    a.add_argument("--crash-at", help="POINT[:K[:MODE]] (also env RMKIT_CORDA_CRASH)")
    a.add_argument("--batch", type=int, default=16, help="most copies consumed in one step")
    a.add_argument("--prefetch", type=int, default=32)
    a.add_argument("--heartbeat-ms", type=int, default=1000)
    a.add_argument("--rediscover", type=float, default=0.5,
                   help="seconds idle with discarded copies before reconnecting to get them redelivered")
    return a


def read_policy(args: argparse.Namespace) -> Policy:
    """The node's policy from ``--policy`` or ``--profile``; a :class:`UsageError` naming the
    option when neither can be used (the node is started by hand too)."""
    from rmkit.errors import UsageError

    if args.policy is None:
        return Policy.of_profile(args.profile)
    try:
        return Policy.from_json(args.policy)
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"--policy {args.policy!r}: expected the JSON of Policy.to_json, "
                         f'e.g. {{"consequence": {{...}}, "fast_path": false}} ({type(e).__name__}: {e})') from None


def start_node(args: argparse.Namespace) -> Node:
    """The node, its database, events file and crash point opened; a :class:`UsageError` naming
    the option that cannot be used, so a bad argument is exit 2 with one line, not a traceback."""
    import sqlite3

    from rmkit.errors import UsageError

    from .crashpoints import ENV, parse

    policy = read_policy(args)
    crash = args.crash_at or os.environ.get(ENV)
    try:
        if crash:
            parse(crash)
    except ValueError as e:
        raise UsageError(f"--crash-at (or {ENV}): {e}") from None
    try:
        return Node(args, policy)
    except sqlite3.Error as e:
        raise UsageError(f"--db {args.db}: cannot open the database: {e}") from None
    except OSError as e:
        raise UsageError(f"--events {args.events}: cannot open: {e.strerror or e}") from None


def main(argv: list[str] | None = None) -> int:
    from rmkit.errors import UsageError

    args = parser().parse_args(argv)
    args.peers = [p for p in args.peers.split(",") if p]
    if not all(fits_flow_ids(n) for n in [args.name, *args.peers]):
        print("node: --name and --peers must be names the N- ids' seeds allow (spec/corda/messages.yaml)", file=sys.stderr)
        return 2
    if args.plan is not None:
        pairs = [p.split(":", 1) for p in args.plan.split(",") if p]
        if not all(len(p) == 2 and p[0] and p[1] for p in pairs):
            print(f"node {args.name}: --plan {args.plan!r}: expected FLOW:QUEUE pairs, comma-separated", file=sys.stderr)
            return 2
        args.plan = [(f, q) for f, q in pairs]
    try:
        node = start_node(args)
    except UsageError as e:
        print(f"node {args.name}: {e}", file=sys.stderr)
        return 2

    def stop(*_):
        node.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        return node.run()
    except LinkLost as e:
        print(f"node {args.name}: {e}", file=sys.stderr)
        return LINK_LOST


if __name__ == "__main__":
    sys.exit(main())
