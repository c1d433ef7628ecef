"""The crash-point harness: brokers, bridges and nodes on loopback (see
:mod:`rmkit.reference_impl.corda.cluster`), killed with SIGKILL at named crash points and at
random times, restarted, and audited from their databases and records. The nodes and bridges are
any processes that keep the contract of spec/corda/node.md (``--node-cmd``, ``--bridge-cmd``); the
reference node and its faulty variants are run the same way. Every number the harness waits,
paces and plans by is in spec/corda/node.yaml ``harness``.

A run is planned from its seed before it starts (:func:`plan`): each cycle names its target (a
node, a bridge, a broker), and either a crash point of spec/corda/system.yaml with the pass at
which the target pauses there (the harness then kills it) or a delay after which the target is
killed wherever it is (always so for a kind of process that cannot arm crash points). The flows are paced (one more message per flow each cycle, more while a
crash point waits for traffic) so that every cycle finds traffic in every part. After the last
cycle the harness lets everything drain, stops the cluster and checks (:func:`audit`):

- every message of every flow is committed at its receiver (nothing lost);
- no message's effect is committed twice (nothing duplicated);
- every acknowledgement follows the commit of its message (from the node's records; an IN_FLIGHT
  copy may be acknowledged at once where the profile says so).

The schedule is reproducible from the seed; the interleaving of real processes is not, so a
violation is reported with the cycles that ran while the message was on its way."""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

from rmkit.protocols.corda.nodespec import contract
from rmkit.protocols.corda.records import record_format
from rmkit.reference_impl.corda.cluster import Cluster, ComponentFailed, export_tables
from rmkit.reference_impl.corda.crashpoints import arm
from rmkit.reference_impl.corda.node import Policy

ROLE_TARGETS = {"receiver": "node", "sender": "node", "bridge": "bridge", "broker": "broker"}
ARMABLE = ("node", "bridge")


class RecordsUnreadable(ComponentFailed):
    """A node's records do not follow spec/corda/records.yaml: the audit cannot judge them."""


def read_records(path: Path) -> list[dict]:
    """Every complete event of a node's events file, each checked against spec/corda/records.yaml;
    a :class:`RecordsUnreadable` naming file, line and field for the first that does not fit (a
    line cut short by a kill at the very end is left out)."""
    from rmkit.protocols.corda.records import EVENT, record_format

    fmt, out = record_format(), []
    if not path.exists():
        return out
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith(b"\n"):
                break
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise RecordsUnreadable(f"{path}:{n}: not a JSON object ({e})") from None
            kind, problems = fmt.read(obj)
            if problems or kind != EVENT:
                where, why = problems[0] if problems else ("event", "expected an event (records.yaml events)")
                raise RecordsUnreadable(f"{path}:{n}: {'field ' + where + ': ' if where else ''}{why}")
            out.append(obj)
    return out


@dataclass
class Cycle:
    n: int
    target: str                 # node-A, bridge-A-B, broker-A
    point: str | None           # a crash point of the spec (None: a kill at a random time)
    k: int = 1                  # the pass at which the target pauses at the point
    delay: float = 0.0          # random-time kills: seconds after the cycle starts
    t: float = 0.0              # when the kill happened (seconds since the run started)
    reached: bool | None = None  # a crash point: was it reached (else the target was killed when the wait ran out)
    restart_s: float | None = None   # brokers: seconds until the restarted broker answered

    def describe(self) -> str:
        how = (f"at {self.point} (pass {self.k}{'' if self.reached is not False else ', not reached: killed after the wait'})"
               if self.point else f"at a random time ({self.delay * 1000:.0f} ms)")
        return f"cycle {self.n:>4} t={self.t:7.2f}s kill -9 {self.target} {how}"


def plan(seed: int, cycles: int, nodes: list[str], crash_points: dict[str, str],
         armed: tuple[str, ...] = ARMABLE) -> list[Cycle]:
    """The crash schedule of a run, from its seed alone (and the shares of spec/corda/node.yaml
    ``harness.plan``). A cycle that would arm a crash point of a kind of process not in ``armed``
    kills its target at a random time instead."""
    shares = contract().harness["plan"]
    broker_share, random_share, top = shares["broker_share"], shares["random_share"], shares["random_delay_max_s"]
    rng = random.Random(seed)
    unarmed_rng = random.Random(f"{seed}/unarmed")   # apart: the targets stay those of a run with every point armed
    bridges = [f"bridge-{a}-{b}" for a in nodes for b in nodes if a != b]
    by_kind = {"node": [f"node-{n}" for n in nodes], "bridge": bridges, "broker": [f"broker-{n}" for n in nodes]}
    points = sorted((p, ROLE_TARGETS[r]) for p, r in crash_points.items() if ROLE_TARGETS.get(r) in ARMABLE)
    out = []
    for n in range(1, cycles + 1):
        r = rng.random()
        if r < broker_share:
            out.append(Cycle(n, rng.choice(by_kind["broker"]), None, delay=round(rng.uniform(0, top), 3)))
        elif r < broker_share + random_share:
            out.append(Cycle(n, rng.choice(by_kind["node"] + bridges), None, delay=round(rng.uniform(0, top), 3)))
        else:
            point, kind = rng.choice(points)
            target, k = rng.choice(by_kind[kind]), rng.randint(1, shares["max_pass"])
            if kind in armed:
                out.append(Cycle(n, target, point, k=k))
            else:
                out.append(Cycle(n, target, None, delay=round(unarmed_rng.uniform(0, top), 3)))
    return out


@dataclass
class Violation:
    kind: str        # lost | duplicated | acked_before_commit
    node: str
    id: str
    detail: str
    first_t: int | None = None   # unix ms of the first record of the message (its first send)
    last_t: int | None = None    # unix ms of the record that shows the violation


@dataclass
class Result:
    seed: int
    cycles_planned: int
    cycles_run: int
    variant: str | None          # the reference node's variant, when --variant chose the node
    profile: str
    messages: int
    elapsed_s: float
    schedule: list[Cycle]
    violations: list[Violation] = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    broker_restarts_s: list[float] = field(default_factory=list)
    startup_s: float = 0.0       # brokers, bridges and nodes started
    cycles_s: float = 0.0        # the crash cycles alone (no start-up, no drain)
    error: str | None = None
    node_cmd: str = ""
    bridge_cmd: str = ""
    unarmed: list[str] = field(default_factory=list)   # kinds of process whose crash points were not armed

    @property
    def exit_code(self) -> int:
        return 2 if self.error else (1 if self.violations else 0)

    def to_json(self) -> dict:
        d = asdict(self)
        d["exit_code"] = self.exit_code
        return d


def audit(cluster: Cluster, credit: int, policy: Policy) -> tuple[list[Violation], dict]:
    """Lost, duplicated and acknowledged-before-commit messages, from the databases (each node's
    ``effects`` table) and records (each node's events file)."""
    violations: list[Violation] = []
    expected = cluster.expected(credit)
    counts: dict = {"committed": 0, "expected": 0, "acks": 0, "commit_records_lost_to_kills": 0}
    first_seen: dict[str, int] = {}
    records = {node: read_records(cluster.events(node)) for node in cluster.nodes}
    for node in cluster.nodes:
        for e in records[node]:
            first_seen[e["id"]] = min(first_seen.get(e["id"], e["t"]), e["t"])
    for node in cluster.nodes:
        rows = cluster.committed(node)
        per_id = Counter(did for did, _ in rows)
        counts["committed"] += len(rows)
        counts["expected"] += len(expected[node])
        events = records[node]
        commit_t = {}
        for e in events:
            if e["event"] == "committed":
                commit_t.setdefault(e["id"], []).append(e["t"])
        for did in sorted(expected[node] - set(per_id)):
            violations.append(Violation("lost", node, did, "never committed at its receiver", first_seen.get(did)))
        for did, c in sorted(per_id.items()):
            if c > 1:
                ts = commit_t.get(did, [])
                violations.append(Violation("duplicated", node, did, f"its effect was committed {c} times",
                                            first_seen.get(did), ts[-1] if ts else None))
            elif did not in expected[node]:
                violations.append(Violation("duplicated", node, did, "committed but never sent to this node", first_seen.get(did)))
        violations += _ack_order(node, events, _unrecorded_commits(rows, events), policy, first_seen, counts)
    order = {"lost": 0, "duplicated": 1, "acked_before_commit": 2}
    return sorted(violations, key=lambda v: order[v.kind]), counts


def _unrecorded_commits(rows: list[tuple[str, int]], events: list[dict]) -> set[str]:
    """Ids the database holds from transactions with no ``committed`` record: the node was killed
    between its commit and the record's write."""
    recorded = {e["tx"] for e in events if e["event"] == "committed"}
    return {did for did, tx in rows if tx not in recorded}


def _ack_order(node: str, events: list[dict], unrecorded: set[str], policy: Policy, first_seen: dict,
               counts: dict) -> list[Violation]:
    out = []
    committed: set[str] = set()
    verdict: dict[str, str] = {}       # delivery -> the deduplicator's last verdict on it
    last_delivery = None
    in_flight_acked = policy.consequence["IN_FLIGHT"] == "ack_and_drop"
    answers = record_format().verdicts  # either spelling records.yaml reads -> the answer
    for e in events:
        ev = e["event"]
        if ev == "received":
            last_delivery = e["delivery"]
        elif ev == "dedup":
            verdict[last_delivery] = answers.get(e["verdict"], e["verdict"])
        elif ev == "committed":
            committed.add(e["id"])
        elif ev == "acked":
            counts["acks"] += 1
            v = verdict.get(e["delivery"])
            if e["id"] in committed or (v == "IN_FLIGHT" and in_flight_acked):
                continue
            if v == "DUPLICATE" and e["id"] in unrecorded:
                counts["commit_records_lost_to_kills"] += 1
                continue
            out.append(Violation("acked_before_commit", node, e["id"],
                                 f"delivery {e['delivery']} (verdict {v}) acknowledged before any commit of its id",
                                 first_seen.get(e["id"]), e["t"]))
    return out


class Torture:
    """One run of the harness."""

    def __init__(self, folder: str | Path, seed: int, cycles: int, *, nodes: list[str] | None = None, flows: int = 2,
                 profile: str = "corda-os", node_cmd: str | None = None, bridge_cmd: str | None = None,
                 variant: str | None = None, node_cmd_for: dict[str, str] | None = None,
                 unarmed: tuple[str, ...] = (), keep_going: bool = False, point_wait: float | None = None,
                 drain_timeout: float | None = None, log=None):
        """``node_cmd`` and ``bridge_cmd``: the command templates (spec/corda/node.md; default the
        reference's); ``variant`` names the reference variant ``node_cmd`` runs, for the report
        alone; ``unarmed``: the kinds of process (node, bridge) that cannot arm crash points."""
        from rmkit.protocols.corda.model import corda_spec
        from rmkit.reference_impl.corda.variants import node_cmd as reference_node_cmd

        self.numbers = contract().harness
        self.folder, self.seed, self.cycles = Path(folder), seed, cycles
        self.nodes = nodes or ["A", "B"]
        self.profile, self.variant, self.keep_going = profile, variant, keep_going
        if node_cmd is None:
            node_cmd = reference_node_cmd(variant or "reference")
            self.variant = variant or "reference"
        self.unarmed = tuple(k for k in ARMABLE if k in unarmed)
        self.point_wait = point_wait or self.numbers["point_wait_s"]
        self.step = self.numbers["credit_step_s"]
        self.drain_timeout = drain_timeout or self.numbers["drain_timeout_s"]
        self.policy = Policy.of_profile(profile)
        self.schedule = plan(seed, cycles, self.nodes, corda_spec(profile).crash_points,
                             tuple(k for k in ARMABLE if k not in self.unarmed))
        # each cycle may add up to 1 + point_wait / step messages per flow (see _wait_paused)
        self.messages = cycles * (2 + int(self.point_wait / self.step)) + self.numbers["extra_messages"]
        self.cluster = Cluster(self.folder, self.nodes, self.policy, flows=flows, messages=self.messages, profile=profile,
                               node_cmd=node_cmd, bridge_cmd=bridge_cmd, node_cmd_for=node_cmd_for, paced=True)
        self.node_cmd, self.bridge_cmd = self.cluster.node_cmd, self.cluster.bridge_cmd
        self.credit = 0
        self.log = log or (lambda line: None)

    def _bump(self) -> None:
        self.credit = min(self.credit + 1, self.messages)
        self.cluster.set_credit(self.credit)

    def _wait_paused(self, comp: str) -> bool:
        """Until the target pauses at its armed point; more traffic every ``credit_step_s`` while it waits."""
        paused = self.cluster.channel(comp, "paused")
        deadline = time.monotonic() + self.point_wait
        next_bump = time.monotonic() + self.step
        while time.monotonic() < deadline:
            if paused.exists():
                return True
            if not self.cluster.alive(comp):
                self.cluster.restart_dead()
            if time.monotonic() >= next_bump:
                self._bump()
                next_bump += self.step
            time.sleep(0.01)
        return False

    def _run_cycle(self, c: Cycle, t0: float, result: Result) -> None:
        self._bump()
        kind, *names = c.target.split("-")
        if kind == "broker":
            time.sleep(c.delay)
            c.t = time.monotonic() - t0
            self.cluster.kill_broker(names[0])
            c.restart_s = self.cluster.restart_broker(names[0])
            result.broker_restarts_s.append(c.restart_s)
            # its clients notice the lost connection and exit (3); any still running is killed
            deadline = time.monotonic() + self.numbers["broker_clients_exit_s"]
            while time.monotonic() < deadline and any(self.cluster.alive(x) for x in self.cluster.clients_of(names[0])):
                time.sleep(0.02)
            for x in self.cluster.clients_of(names[0]):
                self.cluster.kill(x)
        elif c.point is None:
            time.sleep(c.delay)
            c.t = time.monotonic() - t0
            self.cluster.kill(c.target)
        else:
            arm(self.cluster.channel(c.target, "arm"), c.point, c.k)
            c.reached = self._wait_paused(c.target)
            c.t = time.monotonic() - t0
            self.cluster.kill(c.target)
        self.cluster.restart_dead()

    def _interim(self) -> bool:
        """A duplicate or an early acknowledgement already shows (losses only show at the end)."""
        v, _ = audit(self.cluster, self.credit, self.policy)
        return any(x.kind != "lost" for x in v)

    def _check_cluster(self) -> None:
        """A broker or process that died on its own (no kill of the harness) ends the run: what
        was on its way can no longer arrive, and the audit would blame the node for it."""
        if self.cluster.unexpected:
            raise ComponentFailed("; ".join(dict.fromkeys(self.cluster.unexpected)))

    def _drain(self) -> None:
        """Let every message arrive: until each receiver holds every expected id, or nothing moved
        for ``drain_timeout`` seconds; then until the records are quiet (late duplicates) for
        ``drain_settle_s``."""
        expected = self.cluster.expected(self.credit)
        sizes, moved = None, time.monotonic()
        while time.monotonic() - moved < self.drain_timeout:
            self.cluster.restart_dead()
            self._check_cluster()
            done = all(expected[n] <= set(self.cluster.effects(n)) for n in self.nodes)
            now_sizes = [self.cluster.events(n).stat().st_size if self.cluster.events(n).exists() else 0 for n in self.nodes]
            if now_sizes != sizes:
                sizes, moved = now_sizes, time.monotonic()
            elif done and time.monotonic() - moved > self.numbers["drain_settle_s"]:
                return
            time.sleep(0.1)

    def run(self) -> Result:
        t0, self._t0_unix = time.monotonic(), time.time()
        result = Result(self.seed, self.cycles, 0, self.variant, self.profile, 0, 0.0, self.schedule,
                        node_cmd=self.node_cmd, bridge_cmd=self.bridge_cmd, unarmed=list(self.unarmed))
        try:
            self.cluster.start()
            result.startup_s = time.monotonic() - t0
            for c in self.schedule:
                self._run_cycle(c, t0, result)
                result.cycles_run += 1
                self.log(c.describe())
                self._check_cluster()
                if not self.keep_going and c.n % self.numbers["interim_audit_every"] == 0 and self._interim():
                    self.log(f"a violation shows after cycle {c.n}: crashes stop, the run drains and is audited")
                    break
            result.cycles_s = time.monotonic() - t0 - result.startup_s
            self._drain()
        except RecordsUnreadable as e:   # an interim audit found a record that does not fit its format
            result.error = f"the audit cannot read the node's records: {e}"
            if result.startup_s and not result.cycles_s:
                result.cycles_s = time.monotonic() - t0 - result.startup_s
        except ComponentFailed as e:
            result.error = f"the cluster could not run: {e}"
            if result.startup_s and not result.cycles_s:
                result.cycles_s = time.monotonic() - t0 - result.startup_s
        finally:
            self.cluster.stop()
        result.elapsed_s = time.monotonic() - t0
        if result.error:
            return result
        try:
            export_tables(self.cluster)
            result.violations, result.counts = audit(self.cluster, self.credit, self.policy)
        except ComponentFailed as e:   # the node's records or effects table cannot be read
            result.error = f"the audit cannot read the node's records: {e}"
            return result
        result.messages = result.counts["expected"]
        if result.counts["committed"] == 0:
            result.error = "no message was committed: the run checked nothing"
        return result

    def culprits(self, v: Violation, result: Result) -> list[Cycle]:
        """The cycles that ran while the message was on its way (from its first record to the one
        showing the violation, or to the end of the cycles for a loss)."""
        start = self._t0_unix
        lo = (v.first_t / 1000 - start - 1.0) if v.first_t else 0.0
        hi = (v.last_t / 1000 - start + 0.5) if v.last_t else float("inf")
        return [c for c in result.schedule[:result.cycles_run] if lo <= c.t <= hi]
