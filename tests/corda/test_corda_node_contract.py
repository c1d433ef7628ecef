"""The node contract of the Corda crash-point harness (spec/corda/node.md, spec/corda/node.yaml):
command templates and their placeholders, the records' JSON Schema, the plan for processes that
cannot arm crash points, the options of the commands; then, on real brokers, a node written from
the contract alone passes and its faulty twin is caught."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rmkit.protocols.corda.nodespec import contract, environment, fill
from rmkit.protocols.corda.model import corda_spec
from rmkit.conformance.corda.torture import RecordsUnreadable, Torture, plan, read_records
from rmkit.reference_impl.corda.activemq import available
from rmkit.reference_impl.corda.cluster import Cluster, ComponentFailed
from rmkit.reference_impl.corda.message import Message
from rmkit.reference_impl.corda.node import Policy
from rmkit.reference_impl.corda.records import EventLog
from rmkit.reference_impl.corda.variants import VARIANTS, bridge_cmd, node_cmd

needs_broker = pytest.mark.skipif(available() is not None, reason=str(available()))
ROOT = Path(__file__).resolve().parents[2]
MINIMAL = f"{shlex.quote(sys.executable)} -m rmkit.conformance.corda.examples.minimal_node"


class PortOnly:
    """A broker that is never started: the cluster only asks its port."""

    def __init__(self, port):
        self.stomp_port = port


def cluster(tmp_path, **kw) -> Cluster:
    c = Cluster(tmp_path / "run", ["A", "B", "C"], Policy.of_profile("spec"), **kw)
    c.brokers = {n: PortOnly(61000 + i) for i, n in enumerate(c.nodes)}
    return c


# -- command templates ------------------------------------------------------------------------------
def test_placeholders_are_replaced_as_whole_words_and_a_value_never_splits_an_argument():
    values = {"NODE": "A", "DB": "/tmp/my db/A.sqlite", "POLICY": '{"a": 1}'}
    argv = fill("run NODE NODES DB_FILE --db=DB 'x NODE y' --policy POLICY MY_NODE NODE.log", values)
    assert argv == ["run", "A", "NODES", "DB_FILE", "--db=/tmp/my db/A.sqlite", "x A y", "--policy", '{"a": 1}',
                    "MY_NODE", "A.log"]
    assert environment(values)["RMKIT_CORDA_DB"] == "/tmp/my db/A.sqlite"


def test_every_placeholder_of_the_spec_gets_a_value_and_is_documented(tmp_path):
    c = cluster(tmp_path)
    text = (ROOT / "spec" / "corda" / "node.md").read_text()
    for kind, comp in (("node", "node-B"), ("bridge", "bridge-A-C")):
        words = set(contract().words(kind))
        assert set(c.values(comp)) == words, kind
        for w in words:
            assert f"`{w}`" in text, f"spec/corda/node.md does not explain {w}"
    v = c.values("node-B")
    assert v["FLOWS"] == "Bf0:internal.peers.A,Bf1:internal.peers.C" and v["PEERS"] == "A,C"
    assert v["INBOUND"] == "p2p.inbound.B" and v["BROKER_PORT"] == "61001" and v["PROFILE"] == "corda-os"
    assert json.loads(v["POLICY"])["consequence"]["IN_FLIGHT"] == "discard"
    b = c.values("bridge-A-C")
    assert (b["OUTBOUND"], b["INBOUND"], b["LOCAL_PORT"], b["REMOTE_PORT"], b["IN_ORDER"]) == \
        ("internal.peers.C", "p2p.inbound.C", "61000", "61002", "true")   # the spec profile keeps order


def test_the_reference_processes_are_ordinary_templates_of_the_spec_placeholders():
    """The reference node and bridge are run through --node-cmd and --bridge-cmd like any other:
    every capitalised word of their templates is a placeholder of the spec."""
    for template, kind in [*((node_cmd(v), "node") for v in VARIANTS), (bridge_cmd(), "bridge")]:
        words = set(re.findall(r"\b[A-Z][A-Z_]+\b", template))
        assert words and words <= set(contract().words(kind)), words - set(contract().words(kind))


def test_the_small_node_has_every_crash_point_of_a_node():
    """Written from the contract: it passes each crash point the spec gives the sender and receiver roles."""
    from rmkit.conformance.corda.examples import minimal_node

    source = Path(minimal_node.__file__).read_text()
    points = corda_spec("corda-os").crash_points
    assert set(re.findall(r'crash_point\("([a-z_]+)"\)', source)) == {p for p, r in points.items() if r in ("sender", "receiver")}


def test_a_node_whose_command_cannot_start_is_a_harness_failure(tmp_path):
    c = cluster(tmp_path, node_cmd=str(tmp_path / "no-such-node") + " --name NODE")
    with pytest.raises(ComponentFailed, match="node-A: cannot start"):
        c.spawn("node-A")


def test_the_harness_numbers_come_from_the_spec(tmp_path, monkeypatch):
    from dataclasses import replace

    from rmkit.conformance.corda import torture
    from rmkit.protocols.corda import nodespec

    changed = replace(contract(), harness={**contract().harness, "point_wait_s": 1.0, "credit_step_s": 0.25,
                                           "extra_messages": 7})
    monkeypatch.setattr(torture, "contract", lambda: changed)
    monkeypatch.setattr(nodespec, "contract", lambda: changed)
    run = Torture(tmp_path / "run", 1, 10)
    assert (run.point_wait, run.step, run.messages) == (1.0, 0.25, 10 * (2 + 4) + 7)


# -- the records --------------------------------------------------------------------------------------
def test_the_record_line_schema_is_generated_from_records_yaml_and_judges_lines(tmp_path):
    import jsonschema

    from rmkit.conformance.corda.recordschema import render

    path = ROOT / "spec" / "schema" / "corda-record-line.schema.json"
    assert path.read_text() == render(), "regenerate: python -m rmkit.conformance.corda.recordschema > " + str(path)
    validator = jsonschema.Draft202012Validator(json.loads(path.read_text()))
    log = EventLog(tmp_path / "e.jsonl", "B")
    m = Message("N-Af0-3-0", "A:Af0", False, "Af0:3", "u1", 7)
    log.write("received", m, delivery="ID:1")
    log.write("dedup", m, verdict="NEW")
    log.write("committed", m, tx=4)
    log.write("acked", m, delivery="ID:1")
    lines = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert all(validator.is_valid(x) for x in lines)
    planted = [{**lines[1], "verdict": "Maybe"}, {k: v for k, v in lines[2].items() if k != "tx"},
               {**lines[3], "event": "acknowledged"}, {**lines[0], "seq": -1}]
    assert [validator.is_valid(x) for x in planted] == [False] * 4


def test_records_that_do_not_fit_their_format_name_file_line_and_field(tmp_path):
    f = tmp_path / "events-A.jsonl"
    ok = {"t": 1, "node": "A", "event": "sent", "id": "N-Af0-1-0", "sender": "A/u", "seq": 1, "session": "A:Af0"}
    f.write_text(json.dumps(ok) + "\n" + json.dumps({**ok, "event": "dedup"}) + "\n")
    with pytest.raises(RecordsUnreadable, match=rf"{re.escape(str(f))}:2: field verdict: missing"):
        read_records(f)
    f.write_text(json.dumps(ok) + "\n" + '{"t": 2, "cut sh')   # a line cut short by a kill at the end
    assert read_records(f) == [ok]


# -- the plan ---------------------------------------------------------------------------------------
def test_processes_that_cannot_arm_crash_points_get_kills_at_random_times():
    points = corda_spec("corda-os").crash_points
    armed = plan(5, 200, ["A", "B"], points)
    no_nodes = plan(5, 200, ["A", "B"], points, armed=("bridge",))
    none = plan(5, 200, ["A", "B"], points, armed=())
    assert any(c.point and c.target.startswith("node-") for c in armed)
    assert [c.target for c in no_nodes] == [c.target for c in armed]   # the same targets, in the same order
    assert not any(c.point and c.target.startswith("node-") for c in no_nodes)
    assert any(c.point and c.target.startswith("bridge-") for c in no_nodes)
    assert all(c.point is None for c in none) and all(0 <= c.delay <= contract().harness["plan"]["random_delay_max_s"]
                                                      for c in none)


# -- the commands -----------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, said", [
    (["--variant", "memory_dedup", "--node-cmd", "x"], "--variant and --node-cmd"),
    (["--node-cmd", "python 'unclosed"], "--node-cmd"),
    (["--bridge-cmd", ""], "--bridge-cmd: expected a command"),
])
def test_bad_commands_are_usage_errors_before_the_run(tmp_path, capsys, monkeypatch, argv, said):
    from rmkit.cli import main
    from rmkit.conformance.corda import cli as corda_cli, torture

    def not_run(*a, **kw):
        raise AssertionError("the run started")

    monkeypatch.setattr(corda_cli, "_need_broker", lambda: None)
    monkeypatch.setattr(torture, "Torture", not_run)
    assert main(["corda", "torture", "--dir", str(tmp_path / "run"), *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and "the run started" not in err, err


def test_the_replay_command_names_the_node_command_and_what_was_not_armed():
    from rmkit.conformance.corda.cli import replay_command
    from rmkit.conformance.corda.torture import Result

    r = Result(3, 50, 50, None, "corda-os", 0, 0.0, [], node_cmd="my node --db DB", bridge_cmd=bridge_cmd(),
               unarmed=["node"])
    assert shlex.split(replay_command(r)) == ["rmkit", "corda", "torture", "--seed", "3", "--cycles", "50", "--node-cmd",
                                              "my node --db DB", "--profile", "corda-os", "--no-node-points"]
    r.variant, r.bridge_cmd = "memory_dedup", "my bridge"
    assert "--variant memory_dedup" in replay_command(r) and "--bridge-cmd 'my bridge'" in replay_command(r)


def test_help_points_to_the_contract(capsys):
    from rmkit.cli import main

    for cmd in ("torture", "up"):
        with pytest.raises(SystemExit):
            main(["corda", cmd, "--help"])
        assert "spec/corda/node.md" in capsys.readouterr().out


# -- on real brokers: a node written from the contract alone ---------------------------------------
@needs_broker
def test_a_node_written_from_the_contract_passes_and_its_faulty_twin_is_caught(tmp_path):
    """One run: node A is the small node, node B the same with its processed ids in memory. What B
    received is duplicated after its restarts; A must come out clean. Seed 29 kills B between a
    commit and its acknowledgement in three of the ten cycles: the broker then redelivers a copy
    the restarted B has forgotten, whatever the interleaving."""
    r = Torture(tmp_path / "run", 29, 10, node_cmd=MINIMAL, node_cmd_for={"B": MINIMAL + " --memory-dedup"},
                keep_going=True, drain_timeout=6).run()
    assert r.error is None and r.cycles_run == 10, r.error
    at = {n: [v for v in r.violations if v.node == n] for n in "AB"}
    assert at["A"] == [], [v.__dict__ for v in at["A"]]
    assert {v.kind for v in at["B"]} == {"duplicated"}
    assert any(c.reached for c in r.schedule) and r.counts["committed"] > 0
    rows = (tmp_path / "run" / "records" / "processed.jsonl").read_text().splitlines()
    assert len(rows) == r.counts["committed"]   # its processed table, in the reference's shape, is exported
    # its records are what the log checker reads: it finds the duplicates at B, none at A
    from rmkit.conformance.corda.checker import CordaLogChecker

    records = tmp_path / "run" / "records"
    report = CordaLogChecker("corda-os", settled=True, max_examples=0).run(sorted(str(p) for p in records.iterdir()))
    assert report.unreadable == 0
    assert {v.subject for v in report.violations if v.rule == "CORDA-DEDUP-001"} == {v.id for v in at["B"]}, report.counts


@needs_broker
def test_corda_up_runs_a_node_command_too(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rmkit", "corda", "up", "--messages", "5", "--dir", str(tmp_path / "run"),
                        "--node-cmd", MINIMAL], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "20 of 20 messages committed exactly once" in r.stdout, r.stdout + r.stderr


def torture_cli(tmp_path, *argv):
    return subprocess.run([sys.executable, "-m", "rmkit", "corda", "torture", "--quiet", "--dir", str(tmp_path / "run"),
                           *argv], capture_output=True, text=True, timeout=900)


@needs_broker
def test_the_faulty_twin_is_caught_through_the_command_with_its_schedule_and_a_replay_command(tmp_path):
    r = torture_cli(tmp_path, "--seed", "29", "--cycles", "10", "--node-cmd", MINIMAL + " --memory-dedup")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL:" in r.stdout and "duplicated" in r.stdout and re.search(r"cycle +\d+ t=.*kill -9", r.stdout), r.stdout
    replay = shlex.split(next(line for line in r.stdout.splitlines() if "replay the schedule:" in line).split(": ", 1)[1])
    assert replay[:7] == ["rmkit", "corda", "torture", "--seed", "29", "--cycles", "10"]
    assert replay[replay.index("--node-cmd") + 1] == MINIMAL + " --memory-dedup"


@needs_broker
@pytest.mark.slow
def test_the_node_written_from_the_contract_passes_fifty_cycles_through_the_command(tmp_path):
    r = torture_cli(tmp_path, "--seed", "7", "--cycles", "50", "--node-cmd", MINIMAL, "--format", "json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["cycles_run"] == 50 and report["counts"]["committed"] == report["counts"]["expected"] > 0


@needs_broker
@pytest.mark.slow
def test_a_node_that_cannot_arm_crash_points_gets_kills_at_random_times(tmp_path):
    """A node that never reads ARM: with --no-node-points every node cycle is a kill at a random
    time; the bridges keep their crash points."""
    r = torture_cli(tmp_path, "--seed", "3", "--cycles", "20", "--node-cmd", MINIMAL, "--no-node-points", "--format", "json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    cycles = json.loads(r.stdout)["schedule"]
    assert not any(c["point"] and c["target"].startswith("node-") for c in cycles)
    assert any(c["point"] is None and c["target"].startswith("node-") for c in cycles)


class RecordsCluster:
    """The cluster of a run whose node A wrote a record without its verdict (and whose cycles do nothing)."""

    def __init__(self, folder):
        self.folder, self.nodes, self.unexpected = folder, ["A", "B"], []
        self.node_cmd = self.bridge_cmd = "x"
        (folder / "events-A.jsonl").write_text('{"t": 1, "node": "A", "event": "dedup", "id": "N-Bf0-1-0"}\n')

    def start(self):
        pass

    def stop(self):
        return []

    def set_credit(self, n):
        pass

    def restart_dead(self):
        return []

    def expected(self, credit=None):
        return {"A": set(), "B": set()}

    def committed(self, node):
        return []

    def effects(self, node):
        return []

    def events(self, node):
        return self.folder / f"events-{node}.jsonl"


def test_a_record_that_does_not_fit_its_format_is_no_verdict_naming_file_line_and_field(tmp_path, monkeypatch):
    from rmkit.conformance.corda import torture

    run = Torture(tmp_path / "run", 1, 2, drain_timeout=0.2)
    run.cluster = RecordsCluster(tmp_path)
    monkeypatch.setattr(run, "_run_cycle", lambda c, t0, result: None)
    monkeypatch.setattr(torture, "export_tables", lambda cluster: 0)
    r = run.run()
    assert r.exit_code == 2 and r.violations == [], r.error
    assert f"{tmp_path / 'events-A.jsonl'}:1: field verdict: missing" in r.error, r.error
