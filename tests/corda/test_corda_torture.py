"""The crash-point harness on real brokers (ActiveMQ Classic) and real databases (SQLite): the
reference node loses and duplicates nothing while nodes, bridges and brokers are killed; each
faulty variant of the node is caught. Small runs by default; 200-cycle runs and the variants that
need a particular interleaving are marked slow."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rmkit.protocols.corda.model import corda_spec
from rmkit.conformance.corda.torture import Torture, _ack_order, plan
from rmkit.reference_impl.corda.activemq import available
from rmkit.reference_impl.corda.crashpoints import CrashPoints, arm, parse
from rmkit.reference_impl.corda.message import Message
from rmkit.reference_impl.corda.node import Policy
from rmkit.reference_impl.corda.records import EventLog, read_events

needs_broker = pytest.mark.skipif(available() is not None, reason=str(available()))
OS = Policy.of_profile("corda-os")


# -- without a broker --------------------------------------------------------------------------------
def test_the_schedule_comes_from_the_seed_alone():
    points = corda_spec("corda-os").crash_points
    a, b, c = plan(7, 50, ["A", "B"], points), plan(7, 50, ["A", "B"], points), plan(8, 50, ["A", "B"], points)
    assert [x.describe() for x in a] == [x.describe() for x in b] != [x.describe() for x in c]
    named = {x.point for x in a if x.point}
    assert named <= set(points) and {"receiver_between_commit_and_ack", "sender_after_checkpoint"} <= named
    assert any(x.target.startswith("broker-") for x in plan(7, 200, ["A", "B"], points))


def test_every_crash_point_of_the_spec_is_hooked_in_a_process():
    """The harness arms the spec's crash points by name: each process role must pass its points."""
    import inspect
    import re

    from rmkit.reference_impl.corda import bridge_node, node

    hooked = set(re.findall(r'reach\("([a-z_]+)"\)', inspect.getsource(node) + inspect.getsource(bridge_node)))
    points = corda_spec("corda-os").crash_points
    assert hooked == {p for p, role in points.items() if role != "broker"}
    assert {role for p, role in points.items() if p not in hooked} == {"broker"}   # a broker is killed, not armed


def test_records_have_the_fields_of_each_event(tmp_path):
    m = Message("N-Af0-3-0", "A:Af0", False, "Af0:3", "u1", 7)
    log = EventLog(tmp_path / "e.jsonl", "B")
    log.write("received", m, delivery="ID:1")
    log.write("dedup", m, verdict="NEW")
    log.write("committed", m, tx=4)
    log.write("acked", m, delivery="ID:1")
    log.write("sent", Message("N-Af0-3-0", "A:Af0", False, "Af0:3"))
    with pytest.raises(ValueError):
        log.write("dedup", m, verdict="new")
    base = {"t", "node", "event", "id", "sender", "seq", "session"}
    got = read_events(tmp_path / "e.jsonl")
    assert [set(e) - base for e in got] == [{"delivery"}, {"verdict"}, {"tx"}, {"delivery"}, set()]
    assert got[2] == {**got[2], "node": "B", "id": "N-Af0-3-0", "sender": "A/u1", "seq": 7, "session": "A:Af0", "tx": 4}
    assert got[4]["sender"] == "A" and got[4]["seq"] is None   # a re-send during recovery
    (tmp_path / "e.jsonl").open("ab").write(b'{"t": 1, "cut sh')   # a line cut short by a kill is left out
    assert len(read_events(tmp_path / "e.jsonl")) == 5


def test_a_crash_point_armed_while_running_fires_at_its_pass(tmp_path):
    assert parse("receiver_before_commit:2:pause") == ("receiver_before_commit", 2, "pause")
    with pytest.raises(ValueError):
        parse("p:0")
    hooks = CrashPoints("node-A", tmp_path)
    hooks.reach("receiver_before_commit")   # not armed: passes
    arm(tmp_path / "node-A.arm", "receiver_before_commit", 2)
    code = ("import sys; from rmkit.reference_impl.corda.crashpoints import CrashPoints\n"
            f"h = CrashPoints('node-A', {str(tmp_path)!r})\n"
            "h.reach('sender_after_checkpoint'); h.reach('receiver_before_commit'); print('first', flush=True)\n"
            "h.reach('receiver_before_commit'); print('never')")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "first\n"
        for _ in range(200):
            if (tmp_path / "node-A.paused").exists():
                break
            __import__("time").sleep(0.05)
        assert (tmp_path / "node-A.paused").read_text() == "receiver_before_commit"
    finally:  # the paused process sleeps for ever: never left behind, whatever failed
        p.kill()
        p.wait()
    assert "never" not in p.stdout.read()


def test_no_broker_is_a_lost_link_not_a_crash():
    from rmkit.reference_impl.corda.activemq import _free_port
    from rmkit.reference_impl.corda.stomp_link import LinkLost, StompLink

    with pytest.raises(LinkLost, match="no broker answering"):
        StompLink(_free_port(), connect_timeout=0.3)


def _events(*rows):
    out = []
    for ev, did, extra in rows:
        out.append({"t": 1, "node": "B", "event": ev, "id": did, "sender": "A", "seq": None, "session": "A:Af0", **extra})
    return out


def test_a_runs_records_have_a_folder_of_their_own_that_audit_reads_alone(tmp_path):
    """A run's folder also holds process logs (*.log) and the brokers' journals (KahaDB's db-1.log):
    read as records they are hundreds of unreadable lines. The records (each node's events and the
    processed-ids export) sit in ``records/``, which rmkit audit (a folder) and rmkit check read alone."""
    from rmkit.reference_impl.corda.cluster import Cluster, export_tables
    from rmkit.spark_checks.inputs import expand_paths

    cluster = Cluster(tmp_path / "run", ["A", "B"], OS)
    for n in cluster.nodes:
        EventLog(cluster.events(n), n).write("sent", Message(f"N-{n}f0-1-0", f"{n}:{n}f0", True, "p", "u1", 1))
        (cluster.folder / f"node-{n}.log").write_text("node started\n")
    export_tables(cluster)
    records = cluster.records()
    assert records == cluster.folder / "records"
    found = [Path(f).name for f in expand_paths([str(records)]).read]
    assert found == ["events-A.jsonl", "events-B.jsonl", "processed.jsonl"], found


def test_ack_order_is_judged_per_delivery_and_profile():
    ok = _events(("received", "x", {"delivery": "1"}), ("dedup", "x", {"verdict": "new"}), ("committed", "x", {"tx": 1}),
                 ("acked", "x", {"delivery": "1"}))
    early = _events(("received", "x", {"delivery": "1"}), ("dedup", "x", {"verdict": "new"}), ("acked", "x", {"delivery": "1"}),
                    ("committed", "x", {"tx": 1}))
    in_flight = _events(("received", "x", {"delivery": "1"}), ("dedup", "x", {"verdict": "new"}),
                        ("received", "x", {"delivery": "2"}), ("dedup", "x", {"verdict": "in_flight"}),
                        ("acked", "x", {"delivery": "2"}), ("committed", "x", {"tx": 1}), ("acked", "x", {"delivery": "1"}))
    lost_record = _events(("received", "x", {"delivery": "1"}), ("dedup", "x", {"verdict": "duplicate"}),
                          ("acked", "x", {"delivery": "1"}))
    counts = {"acks": 0, "commit_records_lost_to_kills": 0}
    assert _ack_order("B", ok, set(), OS, {}, counts) == []
    assert [v.kind for v in _ack_order("B", early, set(), OS, {}, counts)] == ["acked_before_commit"]
    assert len(_ack_order("B", in_flight, set(), OS, {}, counts)) == 1            # corda-os: IN_FLIGHT is never acked
    assert _ack_order("B", in_flight, set(), Policy.of_profile("corda-os-2021"), {}, counts) == []   # 2021: acked at once
    upper = [e | {"verdict": e["verdict"].upper()} if "verdict" in e else e for e in in_flight]  # as the reference node writes
    assert _ack_order("B", upper, set(), Policy.of_profile("corda-os-2021"), {}, counts) == []
    assert len(_ack_order("B", lost_record, set(), OS, {}, counts)) == 1
    assert _ack_order("B", lost_record, {"x"}, OS, {}, counts) == []   # committed by a process killed before its record
    assert counts["commit_records_lost_to_kills"] == 1


def test_bad_usage_exits_2(capsys):
    from rmkit.cli import main

    assert main(["corda", "torture", "--cycles", "0"]) == 2
    assert "--cycles" in capsys.readouterr().err


class NotToBeRun:
    """Stands in for Torture where the command must stop before any run."""

    def __init__(self, *a, **kw):
        raise AssertionError("the run started")


@pytest.fixture
def no_broker_needed(monkeypatch):
    from rmkit.conformance.corda import cli as corda_cli

    monkeypatch.setattr(corda_cli, "_need_broker", lambda: None)


def test_out_naming_a_folder_is_refused_before_the_run(tmp_path, capsys, monkeypatch, no_broker_needed):
    from rmkit.cli import main
    from rmkit.conformance.corda import torture

    monkeypatch.setattr(torture, "Torture", NotToBeRun)
    assert main(["corda", "torture", "--out", str(tmp_path), "--dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"--out {tmp_path}: expected a file to write, found a folder" in err and "the run started" not in err, err


def test_an_interrupted_run_leaves_no_out_file(tmp_path, capsys, monkeypatch, no_broker_needed):
    from rmkit.cli import main
    from rmkit.conformance.corda import torture

    class Interrupted:
        def __init__(self, *a, **kw):
            pass

        def run(self):
            raise KeyboardInterrupt

    monkeypatch.setattr(torture, "Torture", Interrupted)
    out = tmp_path / "report.json"
    assert main(["corda", "torture", "--out", str(out), "--dir", str(tmp_path / "run")]) == 2
    assert "interrupted; no verdict" in capsys.readouterr().err and not out.exists()


def test_an_interrupted_run_says_where_its_temporary_folder_is_kept(tmp_path, capsys, monkeypatch, no_broker_needed):
    """Without --dir the run's folder is temporary: an interrupted run keeps it (its records and
    broker logs) and says where, as rmkit corda up does, instead of leaving it behind unnamed."""
    import tempfile

    from rmkit.cli import main
    from rmkit.conformance.corda import torture

    class Interrupted:
        def __init__(self, *a, **kw):
            pass

        def run(self):
            raise KeyboardInterrupt

    monkeypatch.setattr(torture, "Torture", Interrupted)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["corda", "torture"]) == 2
    err = capsys.readouterr().err
    (kept,) = [p for p in tmp_path.iterdir() if p.name.startswith("rmkit-corda-torture-")]
    assert f"the run's folder is kept: {kept}" in err and "interrupted; no verdict" in err, err


def test_an_unknown_profile_is_refused_before_any_folder_is_made(tmp_path, capsys, monkeypatch, no_broker_needed):
    import tempfile

    from rmkit.cli import main
    from rmkit.conformance.corda import torture

    monkeypatch.setattr(torture, "Torture", NotToBeRun)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["corda", "torture", "--profile", "nope"]) == 2
    err = capsys.readouterr().err
    assert "has no profile 'nope'" in err and "the run started" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_dir_naming_a_file_is_a_usage_error(tmp_path, capsys, monkeypatch, no_broker_needed):
    from rmkit.cli import main
    from rmkit.conformance.corda import torture

    monkeypatch.setattr(torture, "Torture", NotToBeRun)
    (tmp_path / "f").write_text("")
    assert main(["corda", "torture", "--dir", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert f"--dir {tmp_path / 'f'}: expected a folder, found a file" in err and "internal error" not in err, err


def test_cycles_have_an_upper_bound_checked_before_the_schedule_is_planned(tmp_path, capsys, monkeypatch, no_broker_needed):
    from rmkit.cli import main
    from rmkit.conformance.corda import torture
    from rmkit.conformance.corda.cli import MAX_CYCLES

    monkeypatch.setattr(torture, "Torture", NotToBeRun)
    assert main(["corda", "torture", "--cycles", "100000000", "--dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"--cycles 100000000: expected at most {MAX_CYCLES}" in err, err


class DrainCluster:
    """The cluster of a run whose broker A dies during the final drain (and whose cycles do nothing)."""

    def __init__(self, folder):
        self.folder, self.nodes, self.unexpected = folder, ["A", "B"], []

    def start(self):
        pass

    def stop(self):
        return []

    def set_credit(self, n):
        pass

    def restart_dead(self):
        self.unexpected.append("broker A is not running (see broker.log)")
        return []

    def expected(self, credit=None):
        return {"A": {"N-Bf0-1-0"}, "B": {"N-Af0-1-0"}}

    def effects(self, node):
        return []

    def committed(self, node):
        return []

    def events(self, node):
        return self.folder / f"events-{node}.jsonl"

    def db(self, node):
        return self.folder / f"{node}.sqlite"


def test_a_broker_dying_during_the_drain_is_a_harness_failure_not_a_loss(tmp_path, monkeypatch):
    run = Torture(tmp_path / "run", 1, 3, drain_timeout=0.5)
    run.cluster = DrainCluster(tmp_path)
    monkeypatch.setattr(run, "_run_cycle", lambda c, t0, result: None)
    r = run.run()
    assert r.exit_code == 2 and "broker A is not running" in (r.error or "") and r.violations == [], r.error


# -- on real brokers ---------------------------------------------------------------------------------
def torture(tmp_path, **kw):
    return Torture(tmp_path / "run", kw.pop("seed", 3), kw.pop("cycles", 10), **kw).run()


@needs_broker
def test_reference_node_loses_nothing_and_a_node_acking_before_commit_is_caught(tmp_path):
    """One run, so one pair of broker start-ups: node A runs the reference, node B acknowledges
    before its commit. Everything B received is judged; A must come out clean."""
    from rmkit.reference_impl.corda.variants import node_cmd

    r = torture(tmp_path, seed=3, cycles=8, node_cmd_for={"B": node_cmd("ack_before_commit")}, drain_timeout=6)
    assert r.error is None and r.exit_code == 1 and r.cycles_run == 8
    at = {n: [v for v in r.violations if v.node == n] for n in "AB"}
    assert at["A"] == [], [v.__dict__ for v in at["A"]]
    assert "acked_before_commit" in {v.kind for v in at["B"]} and {v.kind for v in at["B"]} <= {"acked_before_commit", "lost"}
    assert r.counts["committed"] > 0
    assert any(c.reached for c in r.schedule)   # a crash point was reached, not only random kills
    records = tmp_path / "run" / "records"
    exported = [json.loads(line) for line in (records / "processed.jsonl").read_text().splitlines()]
    assert {r["node"] for r in exported} == {"A", "B"} and all(set(r) == {"node", "id", "sender", "seq", "tx", "t"} for r in exported)
    assert len(exported) == r.counts["committed"]   # one row per commit of an id, as the effects
    # the records checker finds what the harness found: every early acknowledgement, at B only
    from rmkit.conformance.corda.checker import CordaLogChecker

    report = CordaLogChecker("corda-os", settled=True, max_examples=0).run(sorted(str(p) for p in records.iterdir()))
    assert report.unreadable == 0
    early = {v.subject for v in report.violations if v.rule == "CORDA-ACK-001"}
    assert early == {v.id for v in r.violations if v.kind == "acked_before_commit"}, report.counts


@needs_broker
@pytest.mark.slow
def test_reference_node_alone_passes(tmp_path):
    r = torture(tmp_path, seed=3, cycles=30)
    assert r.exit_code == 0 and r.counts["committed"] == r.counts["expected"] > 0, [v.__dict__ for v in r.violations]


@needs_broker
@pytest.mark.slow
def test_ack_before_commit_is_caught(tmp_path):
    r = torture(tmp_path, seed=3, cycles=10, variant="ack_before_commit")
    assert r.exit_code == 1 and "acked_before_commit" in {v.kind for v in r.violations}


@needs_broker
@pytest.mark.slow
@pytest.mark.parametrize("variant", ["memory_dedup", "fastpath_no_db"])
def test_faulty_deduplicators_are_caught(tmp_path, variant):
    r = torture(tmp_path, seed=1, cycles=60, variant=variant)
    assert r.exit_code == 1 and "duplicated" in {v.kind for v in r.violations}


@needs_broker
@pytest.mark.slow
@pytest.mark.parametrize("profile", ["corda-os-2021", "corda-ent-fastpath", "spec"])
def test_legal_profiles_pass(tmp_path, profile):
    r = torture(tmp_path, seed=5, cycles=40, profile=profile)
    assert r.exit_code == 0, [v.__dict__ for v in r.violations]


@needs_broker
@pytest.mark.slow
def test_two_hundred_cycles_through_the_command(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rmkit.cli", "corda", "torture", "--seed", "11", "--cycles", "200", "--quiet",
                        "--dir", str(tmp_path / "run"), "--format", "json"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert json.loads(r.stdout)["cycles_run"] == 200


@needs_broker
def test_a_broker_killed_during_the_drain_is_a_harness_failure(tmp_path):
    class KillDuringDrain(Torture):
        def _drain(self):
            self.cluster.kill_broker("A")
            super()._drain()

    r = KillDuringDrain(tmp_path / "run", 4, 3).run()
    assert r.exit_code == 2 and "broker A is not running" in r.error and r.violations == [], (r.error, r.violations)
