"""Brokers, bridges and nodes on loopback, as processes: one ActiveMQ Classic broker per node (free
ports, a data folder each under one run folder), one node process per node, one bridge process per
ordered pair of nodes (n(n-1) bridges). Every process is started, killed (SIGKILL) and stopped by
its PID; a broker restart keeps its folder and STOMP port. ``rmkit corda up`` and the crash-point
harness drive it.

Nodes and bridges are whatever commands the cluster is given (``--node-cmd``, ``--bridge-cmd``):
templates whose placeholders (spec/corda/node.yaml, explained in spec/corda/node.md) are filled per
process. The reference node and bridge are two such commands (:mod:`.variants`); nothing here
knows them."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

from .activemq import ActiveMQ
from .node import Policy, flow_plan
from . import variants
from rmkit.protocols.corda.nodespec import contract, environment, fill
from rmkit.interrupts import held

HOST = "127.0.0.1"


class ComponentFailed(Exception):
    """A process of the cluster could not run (not a crash the harness caused)."""


def ended(code: int) -> str:
    """How a process ended, from its return code."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return "exited with 3 (lost its broker connection)" if code == 3 else f"exited with {code}"


class Cluster:
    """``node_cmd`` and ``bridge_cmd`` are the command templates (default: the reference node and
    bridge); ``node_cmd_for`` gives some nodes another command (a run that mixes implementations)."""

    def __init__(self, folder: str | Path, nodes: list[str], policy: Policy, *, flows: int = 2, messages: int = 10,
                 profile: str = "corda-os", node_cmd: str | None = None, bridge_cmd: str | None = None,
                 node_cmd_for: dict[str, str] | None = None, paced: bool = False, heartbeat_ms: int | None = None):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.records().mkdir(exist_ok=True)
        self.nodes, self.policy, self.flows, self.messages = list(nodes), policy, flows, messages
        self.profile, self.paced = profile, paced
        self.node_cmd = node_cmd or variants.node_cmd()
        self.bridge_cmd = bridge_cmd or variants.bridge_cmd()
        self.node_cmd_for = dict(node_cmd_for or {})
        self.numbers = contract().harness
        self.heartbeat_ms = heartbeat_ms or self.numbers["heartbeat_ms"]
        self.brokers = {n: ActiveMQ(str(self.folder / f"broker-{n}")) for n in nodes}
        self.procs: dict[str, subprocess.Popen] = {}
        self.starts: dict[str, int] = {}
        self.unexpected: list[str] = []
        self.stopped = False
        if paced:
            self.set_credit(0)

    # -- names -------------------------------------------------------------------------------------
    def node_names(self) -> list[str]:
        return [f"node-{n}" for n in self.nodes]

    def bridge_names(self) -> list[str]:
        return [f"bridge-{a}-{b}" for a in self.nodes for b in self.nodes if a != b]

    def components(self) -> list[str]:
        return self.node_names() + self.bridge_names()

    def clients_of(self, broker: str) -> list[str]:
        """The processes connected to a node's broker: the node, its bridges and those into it."""
        return [c for c in self.components() if broker in c.split("-")[1:]]

    def db(self, node: str) -> Path:
        return self.folder / f"{node}.sqlite"

    def records(self) -> Path:
        """The run's records (each node's events, the processed-ids export), in a folder of their
        own: the run's folder also holds process logs and the brokers' journals (``*.log`` files),
        which a check or an audit given the whole folder would read as unreadable records."""
        return self.folder / "records"

    def events(self, node: str) -> Path:
        return self.records() / f"events-{node}.jsonl"

    def credit_file(self) -> Path:
        return self.folder / "credit"

    def channel(self, comp: str, what: str) -> Path:
        """A process's file of the crash-point channel: ``arm``, ``paused`` or ``ready``."""
        return self.folder / f"{comp}.{what}"

    def values(self, comp: str) -> dict[str, str]:
        """The placeholders of a process's command (spec/corda/node.yaml) and their values."""
        kind, *names = comp.split("-")
        files = {"ARM": str(self.channel(comp, "arm")), "PAUSED": str(self.channel(comp, "paused")),
                 "READY": str(self.channel(comp, "ready")), "HEARTBEAT_MS": str(self.heartbeat_ms)}
        if kind == "node":
            n = names[0]
            plan = flow_plan(n, [p for p in self.nodes if p != n], self.flows)
            return {"NODE": n, "PEERS": ",".join(p for p in self.nodes if p != n),
                    "FLOWS": ",".join(f"{flow}:internal.peers.{peer}" for flow, peer in plan),
                    "MESSAGES": str(self.messages), "BROKER_HOST": HOST, "BROKER_PORT": str(self.brokers[n].stomp_port),
                    "INBOUND": f"p2p.inbound.{n}", "DB": str(self.db(n)), "RECORDS": str(self.events(n)),
                    "PROFILE": self.profile, "POLICY": self.policy.to_json(), "CREDIT": str(self.credit_file()), **files}
        a, b = names
        return {"BRIDGE": comp, "LOCAL_HOST": HOST, "LOCAL_PORT": str(self.brokers[a].stomp_port),
                "OUTBOUND": f"internal.peers.{b}", "REMOTE_HOST": HOST, "REMOTE_PORT": str(self.brokers[b].stomp_port),
                "INBOUND": f"p2p.inbound.{b}", "IN_ORDER": "true" if self.policy.in_order_bridge else "false", **files}

    def argv(self, comp: str) -> list[str]:
        """The process's command: its template with the placeholders filled."""
        kind, *names = comp.split("-")
        if kind == "node":
            return fill(self.node_cmd_for.get(names[0], self.node_cmd), self.values(comp), "--node-cmd")
        return fill(self.bridge_cmd, self.values(comp), "--bridge-cmd")

    # -- processes ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Brokers, then every process, until each is ready. Whatever ends a start early (a process
        that cannot start, SIGINT, SIGTERM) stops everything started so far first."""
        self.stopped = False
        try:
            self._start_brokers()
            for c in self.components():
                self.spawn(c)
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def _start_brokers(self) -> None:
        """Every broker at once, each in a thread. An interruption makes the starts under way give
        up, and waits until each has ended, before the stop. The wait is on an event each start
        sets when it ends, not on ``Thread.join``: a join that a KeyboardInterrupt cut short can
        return at once the next time, with the thread still running."""
        errors: list[str] = []
        finished = {n: threading.Event() for n in self.brokers}

        def up(name: str, b: ActiveMQ) -> None:
            try:
                b.start(self.numbers["broker_start_timeout_s"])
            except Exception as e:   # reported below
                errors.append(str(e))
            finally:
                finished[name].set()

        for b in self.brokers.values():
            b.abandon.clear()
        started: list[str] = []
        try:
            with held():   # every thread started, or none (in a run that handles signals)
                for name, b in self.brokers.items():
                    threading.Thread(target=up, args=(name, b), daemon=True).start()
                    started.append(name)
            for e in finished.values():
                e.wait()
        except BaseException:   # interrupted: the starts under way give up, and end, before the stop
            for b in self.brokers.values():
                b.abandon.set()
            with held():
                for name in started:   # (also when the signal came while the threads were starting)
                    finished[name].wait()
            raise
        if errors:
            raise ComponentFailed("; ".join(errors))

    def wait_ready(self, timeout: float | None = None) -> None:
        """Until every process is connected to its brokers (each touches its ``READY`` file)."""
        timeout = timeout or self.numbers["ready_timeout_s"]
        deadline = time.monotonic() + timeout
        while not all(self.channel(c, "ready").exists() for c in self.components()):
            brokers_down = self.brokers_down()
            if brokers_down:
                raise ComponentFailed("; ".join(brokers_down))
            for c in self.components():
                p = self.procs[c]
                if p.poll() is not None and p.returncode != contract().link_lost:
                    raise ComponentFailed(f"{c} {ended(p.returncode)} at start (see {self.folder / (c + '.log')})")
            self.restart_dead()   # a lost connection while starting (3): again
            if time.monotonic() > deadline:
                late = [c for c in self.components() if not self.channel(c, "ready").exists()]
                raise ComponentFailed(f"{', '.join(late)} did not create its READY file within {timeout:g} s "
                                      f"(spec/corda/node.md; see the logs in {self.folder})")
            time.sleep(0.05)

    def spawn(self, comp: str) -> None:
        for what in ("arm", "paused", "ready"):
            self.channel(comp, what).unlink(missing_ok=True)
        argv, env = self.argv(comp), {**os.environ, **environment(self.values(comp))}
        try:
            with open(self.folder / f"{comp}.log", "ab") as log, held():   # the process started and its PID recorded, or neither
                self.procs[comp] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                    env=env)
        except OSError as e:
            raise ComponentFailed(f"{comp}: cannot start {argv[0]!r}: {e.strerror or e}") from None
        self.starts[comp] = self.starts.get(comp, 0) + 1

    def alive(self, comp: str) -> bool:
        p = self.procs.get(comp)
        return p is not None and p.poll() is None

    def kill(self, comp: str) -> None:
        p = self.procs.get(comp)
        if p is not None and p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()

    def brokers_down(self) -> list[str]:
        """The brokers that are not running, each said with its log."""
        return [f"broker {n} is not running (see {b.base / 'broker.log'})" for n, b in self.brokers.items() if not b.running()]

    def dead(self) -> list[str]:
        """What is not running of what was started: brokers, then processes, each said with how
        it ended and its log (empty: everything runs)."""
        out = self.brokers_down()
        for comp in self.components():
            p = self.procs.get(comp)
            if p is not None and p.poll() is not None:
                out.append(f"{comp} {ended(p.returncode)} (see {self.folder / (comp + '.log')})")
        return out

    def restart_dead(self) -> list[str]:
        """Start again every process that is no longer running; an exit that is neither a kill nor
        a lost broker connection (3) is remembered as unexpected, and so is a broker not running
        (then nothing is started: it could not connect, and would only slow the stop down)."""
        restarted = []
        down = self.brokers_down()
        if down:
            self.unexpected += down
            return restarted
        for comp in self.components():
            p = self.procs.get(comp)
            if p is None or p.poll() is not None:
                if p is not None and p.returncode not in (contract().clean, contract().link_lost, -signal.SIGKILL):
                    self.unexpected.append(f"{comp} {ended(p.returncode)} (see {self.folder / (comp + '.log')})")
                self.spawn(comp)
                restarted.append(comp)
        return restarted

    def kill_broker(self, node: str) -> None:
        self.brokers[node].kill()

    def restart_broker(self, node: str) -> float:
        """Start a killed broker again on its folder and port; seconds until it answers STOMP."""
        t0 = time.monotonic()
        try:
            self.brokers[node].start(self.numbers["broker_start_timeout_s"])
        except RuntimeError as e:
            raise ComponentFailed(f"broker {node} did not restart: {e}") from None
        return time.monotonic() - t0

    def set_credit(self, n: int) -> None:
        tmp = self.folder / "credit.tmp"
        tmp.write_text(str(n))
        os.replace(tmp, self.credit_file())

    def stop(self) -> list[str]:
        """Stop every process by its PID (SIGTERM; SIGKILL after ``stop_grace_s``), then the brokers (a signal
        waits until the stop is over). Returns what did not stop cleanly: a broker or process that
        was no longer running, one that ended with another code than 0 on SIGTERM, one that needed
        SIGKILL. A cluster already stopped is not stopped again ([])."""
        with held():
            if self.stopped:
                return []
            problems = [f"{comp} had ended: it {ended(p.returncode)} (see {self.folder / (comp + '.log')})"
                        for comp, p in self.procs.items() if p.poll() is not None]
            running = {comp: p for comp, p in self.procs.items() if p.poll() is None}
            for p in running.values():
                os.kill(p.pid, signal.SIGTERM)
            grace = self.numbers["stop_grace_s"]
            deadline = time.monotonic() + grace
            for comp, p in running.items():
                try:
                    p.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait()
                    problems.append(f"{comp} did not stop within {grace:g} s of SIGTERM: killed")
                    continue
                if p.returncode != contract().clean:
                    problems.append(f"{comp} {ended(p.returncode)} when stopped (see {self.folder / (comp + '.log')})")
            for n, b in self.brokers.items():
                if b.proc is not None and not b.running():
                    problems.append(f"broker {n} had ended: it {ended(b.proc.returncode)} (see {b.base / 'broker.log'})")
                if not b.stop(self.numbers["broker_stop_grace_s"]):
                    problems.append(f"broker {n} did not stop within {self.numbers['broker_stop_grace_s']:g} s of SIGTERM: killed")
            self.stopped = True
            return problems

    # -- what the databases hold -------------------------------------------------------------------
    def committed(self, node: str) -> list[tuple[str, int]]:
        """(dedup id, tx) of every effect committed at a node, in commit order, from the ``effects``
        table of its database (spec/corda/node.yaml ``database``)."""
        if not self.db(node).exists():
            return []
        c = sqlite3.connect(f"file:{self.db(node)}?mode=ro", uri=True, timeout=10)
        try:
            return list(c.execute("SELECT dedup_id, tx FROM effects ORDER BY rowid"))
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):   # the node has not created its tables yet
                return []
            raise ComponentFailed(f"{self.db(node)}: the audit cannot read the effects table (dedup_id, tx): {e}") from None
        finally:
            c.close()

    def effects(self, node: str) -> list[str]:
        """The dedup id of every effect committed at a node (an id twice: a duplicated effect)."""
        return [did for did, _ in self.committed(node)]

    def expected(self, credit: int | None = None) -> dict[str, set[str]]:
        """node -> the dedup ids its database must hold once each: every message of every flow of
        its peers, up to ``credit`` messages per flow."""
        from .message import flow_id

        n = self.messages if credit is None else min(credit, self.messages)
        out: dict[str, set[str]] = {x: set() for x in self.nodes}
        for x in self.nodes:
            for flow, peer in flow_plan(x, [p for p in self.nodes if p != x], self.flows):
                out[peer].update(flow_id(flow, k, 0) for k in range(1, n + 1))
        return out


class _ProcessedTable:
    """A node's ``processed`` table read-only (a node's database is its own: nothing is created in it)."""

    COLUMNS = "dedup_id, sender_uuid, peer, sequence_number, tx, inserted_at"

    def __init__(self, path: Path):
        self.path = path

    def processed_rows(self) -> list[tuple]:
        if not self.path.exists():
            return []
        c = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        try:
            return list(c.execute(f"SELECT {self.COLUMNS} FROM processed ORDER BY tx, rowid"))
        except sqlite3.OperationalError:   # no such table, or not in the reference's shape: nothing to export
            return []
        finally:
            c.close()


def export_tables(cluster: Cluster) -> int:
    """Every node's processed-id table, where its database has one in the shape of spec/corda/node.yaml
    (``database.tables.processed``), as ``processed.jsonl`` in the run's records folder (beside the
    events files); returns the number of rows."""
    from .records import export_processed

    return export_processed({n: _ProcessedTable(cluster.db(n)) for n in cluster.nodes}, cluster.records() / "processed.jsonl")
