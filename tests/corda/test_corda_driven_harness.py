"""The Corda driven harness keeps its own promises: a crash is done, not said (the implementation is
killed and started again on the scenario's database), a run that checked nothing has no verdict,
no process outlives a run (SIGTERM or a timeout included), a history-dependent fault and an
implementation that breaks after its hello are failures with their scenario, not tool errors, and
replay and JSON reports say what to do."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from proc_support import kill_all, processes_running, running
from rmkit.cli import main
from rmkit.conformance.corda.driven.adapters import ReferenceReceiver, reference_factory
from rmkit.conformance.corda.driven.suite import search

PY = sys.executable
REFERENCE = "rmkit.conformance.corda.driven.adapters:reference_factory"


def conform(tmp_path, *extra) -> list[str]:
    return ["conform", "--protocol", "corda", "--derandomize", "--regressions", str(tmp_path / "reg"), *extra]


def write(tmp_path, name: str, body: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


# ---- 1. a crash is done for real ---------------------------------------------------------------
# A node that keeps its processed ids in a Python set: on a crash *message* it would drop only its
# work in progress and pass; killed and started again, it forgets every id it committed.
MEMORY_NODE = """
import json, os, sys
processed, working, acks = set(), {}, []
for line in sys.stdin:
    event = json.loads(line)
    kind, reply = event["type"], {}
    if kind == "hello":   # a new scenario: a new, empty node
        processed, working, acks = set(), {}, []
        reply = {"ok": True, "pid": os.getpid()}
    elif kind == "deliver":
        dedup_id, pair = event["message"]["dedup_id"], [event["tag"], event["conn"]]
        if dedup_id in working:
            reply = {"answer": "IN_FLIGHT"}
        elif dedup_id in processed:
            reply = {"answer": "DUPLICATE"}
            acks.append(pair)
        else:
            reply = {"answer": "NEW"}
            working[dedup_id] = pair
    elif kind == "tick":
        commits = list(working)
        processed.update(commits)
        acks += list(working.values())
        working = {}
        reply = {"commits": commits, "acks": acks}
        acks = []
    elif kind == "crash":
        working, acks = {}, []
    elif kind == "broker_restart":
        acks = []
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""


def test_a_process_that_keeps_processed_ids_in_memory_fails_dedup_005(tmp_path, capsys):
    node = write(tmp_path, "memory_node.py", MEMORY_NODE)
    code = main(conform(tmp_path, "--profile", "spec", "--role", "receiver", "--impl-cmd", f"{PY} {node}",
                        "--max-examples", "200"))
    out = capsys.readouterr().out
    assert code == 1, out
    assert "CORDA-DEDUP-005" in out, out


class MemoryOnlyReceiver(ReferenceReceiver):
    """The reference node, its database ignored: what it commits lives in the object only."""

    def make_node(self, profile, database=None):
        return super().make_node(profile, None)


def test_a_python_implementation_that_keeps_memory_only_fails_dedup_005():
    r = search(MemoryOnlyReceiver, "spec", max_examples=200)
    assert r.failure is not None, "a node that forgets what it committed passed"
    assert "CORDA-DEDUP-005" in {v.rule for v in r.failure.strict}, [v.render() for v in r.failure.violations]


def test_the_reference_passes_as_a_process_with_real_restarts(tmp_path, capsys):
    ref = f"{PY} -m rmkit.conformance.corda.driven.adapters ROLE"
    # few scenarios: each restarts the process about three times
    assert main(conform(tmp_path, "--profile", "spec", "--role", "receiver", "--impl-cmd", ref, "--max-examples", "6")) == 0, \
        capsys.readouterr()


class Recorder(ReferenceReceiver):
    """The reference, writing down every event it is sent and every object made."""

    events: list = []
    made: list = []

    def __init__(self, role="receiver"):
        super().__init__(role)
        Recorder.made.append(self)

    def handle(self, event):
        Recorder.events.append((id(self), dict(event)))
        return super().handle(event)


def test_each_scenario_has_its_own_database_kept_across_a_crash_and_removed_at_the_end():
    Recorder.events, Recorder.made = [], []
    scenarios = 30   # enough that the derandomized search draws crashes
    r = search(Recorder, "spec", max_examples=scenarios)   # the named scenarios first: crashes in every window
    kinds = [e["type"] for _, e in Recorder.events]
    assert "crash" not in kinds, "the crash is still a message to the implementation"
    hellos = [(obj, e) for obj, e in Recorder.events if e["type"] == "hello"]
    assert all(e.get("database") for _, e in hellos), hellos
    # each scenario: a hello with a new database, then (after every crash) a new object on the same one
    databases = [e["database"] for _, e in hellos]
    assert len(set(databases)) == scenarios + len(r.named)
    assert len(Recorder.made) > 1, "a crash did not build a new object from the factory"
    for first, again in zip(hellos, hellos[1:]):
        if again[1]["database"] == first[1]["database"]:
            assert again[0] != first[0], "restarted on the same database, but the same object"
    assert not any(os.path.exists(os.path.dirname(d)) for d in databases), "the temporary folder was left behind"


def test_a_crash_kills_the_process_and_starts_another_on_the_same_database(tmp_path):
    from rmkit.conformance.corda.driven.adapters import ProcessImplementation

    node = write(tmp_path, "pid_node.py", """
        import json, os, sys
        for line in sys.stdin:
            event = json.loads(line)
            sys.stdout.write(json.dumps({"pid": os.getpid(), "database": event.get("database"), "saw": event["type"]}) + "\\n")
            sys.stdout.flush()
    """)
    impl = ProcessImplementation(f"{PY} {node}", "receiver", 5)
    try:
        first = impl.handle({"type": "hello", "role": "receiver", "profile": "spec"})
        assert first["database"], "hello carries no database"
        assert impl.handle({"type": "crash"}) == {}
        after = impl.handle({"type": "tick"})
        assert after["pid"] != first["pid"], "the same process after a crash"
        assert running([first["pid"]]) == [], "the crashed process still runs"
        assert impl.handle({"type": "hello", "role": "receiver", "profile": "spec"})["database"] != first["database"]
    finally:
        impl.close()
    assert running([after["pid"]]) == []


# ---- 2. a run that checked nothing has no verdict ------------------------------------------------
ANSWERS_NOTHING = "sh -c 'while read l; do echo {}; done'"


@pytest.mark.parametrize("extra", [["--max-examples", "1"], ["--max-examples", "0"]])
def test_an_implementation_answering_nothing_is_judged_on_the_named_scenarios(tmp_path, capsys, extra):
    """The catalogue delivers messages on every run, so a node answering {} to a delivery fails there."""
    code = main(conform(tmp_path, "--impl-cmd", ANSWERS_NOTHING, *extra))
    captured = capsys.readouterr()
    assert code == 1, captured
    assert "CORDA-DEDUP-003" in captured.out and "answer None" in captured.out, captured.out


def test_a_spent_time_budget_with_nothing_delivered_is_no_pass():
    """The one scenario a spent --time-budget still runs is the empty one: no message reached the node."""
    from rmkit.conformance.corda.driven.suite import overall

    r = search(reference_factory, "spec", max_examples=50, time_budget=1e-9, named=False)
    assert r.examples == 1 and r.failure is None
    assert r.verdict == "nothing checked" and overall([r]) == "nothing checked"


def test_max_examples_0_replays_the_saved_scenarios_only(tmp_path, capsys):
    """As for REMP: 0 generates nothing; the saved scenarios are still replayed, and they check something."""
    (tmp_path / "reg").mkdir()
    steps = [["arrive", 0, False], ["deliver"], ["tick"]]
    (tmp_path / "reg" / "corda-receiver-spec-0.json").write_text(json.dumps({"role": "receiver", "profile": "spec",
                                                                              "steps": steps}))
    assert main(conform(tmp_path, "--role", "receiver", "--impl", REFERENCE, "--max-examples", "0")) == 0


def test_replaying_a_scenario_without_steps_is_exit_2(tmp_path, capsys):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"protocol": "corda", "role": "receiver", "profile": "spec", "steps": []}))
    code = main(["replay", "--protocol", "corda", str(path), "--impl", REFERENCE])
    captured = capsys.readouterr()
    assert code == 2 and "nothing checked" in captured.err, captured
    assert "pass" not in captured.out.split()


# ---- 3. no process outlives a run ---------------------------------------------------------------
SLOW_LINGERING = """
import json, sys, time
from rmkit.conformance.corda.driven.adapters import reference_factory
with open(sys.argv[1], "a") as f:
    f.write(f"{__import__('os').getpid()}\\n")
impl = reference_factory("receiver")
for line in sys.stdin:
    time.sleep(0.02)
    sys.stdout.write(json.dumps(impl.handle(json.loads(line))) + "\\n")
    sys.stdout.flush()
time.sleep(300)   # shuts down slowly once its input ends
"""


@pytest.mark.slow
def test_sigterm_stops_the_run_with_exit_2_and_every_process_it_started(tmp_path):
    node = write(tmp_path, "slow_node.py", SLOW_LINGERING)
    pids = tmp_path / "pids"
    proc = subprocess.Popen([PY, "-m", "rmkit", *conform(tmp_path, "--role", "receiver", "--impl-cmd",
                                                         f"{PY} {node} {pids}", "--max-examples", "100")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while len(started) < 3 and time.monotonic() < deadline:   # a few crashes done: mid-run
            time.sleep(0.1)
            started = [int(x) for x in pids.read_text().split()] if pids.exists() else []
        assert len(started) >= 3, "the implementation was not restarted"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 2, (proc.returncode, err)
        assert b"interrupted" in err, err
        time.sleep(0.3)
        assert running(started) == [], "an implementation process outlived the run"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(started)


def test_an_implementation_that_times_out_leaves_no_process_of_its_group_behind(tmp_path, capsys):
    marker = str(3000 + uuid.uuid4().int % 6000)
    code = main(conform(tmp_path, "--role", "receiver", "--impl-cmd", f"sh -c 'sleep {marker}; true'",
                        "--timeout", "0.5", "--max-examples", "2"))
    try:
        assert code == 2, capsys.readouterr()
        time.sleep(0.2)
        assert processes_running(f"sleep {marker}") == [], "the command's child outlived the run"
    finally:
        kill_all(processes_running(f"sleep {marker}"))


def test_closing_stops_a_process_that_lingers_after_its_input_ends(tmp_path):
    from rmkit.conformance.corda.driven.adapters import ProcessImplementation

    node = write(tmp_path, "slow_node.py", SLOW_LINGERING)
    pids = tmp_path / "pids"
    impl = ProcessImplementation(f"{PY} {node} {pids}", "receiver", 5)
    impl.handle({"type": "hello", "role": "receiver", "profile": "spec"})
    start = time.monotonic()
    impl.close()
    started = [int(x) for x in pids.read_text().split()]
    try:
        assert time.monotonic() - start < 300   # stopped, not waited out
        assert running(started) == []
    finally:
        kill_all(started)


# ---- 4. a history-dependent fault is a failure, not an internal error -----------------------------
class OnceAckBeforeCommit(ReferenceReceiver):
    """Acknowledges at once the 30th NEW copy it is ever handed (in this Python process), and no
    other: the failing scenario passes when it is replayed."""

    count = 0

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        if reply["answer"] == "NEW":
            OnceAckBeforeCommit.count += 1
            if OnceAckBeforeCommit.count == 30:
                reply["acks"] = [[event["tag"], event["conn"]]]
        return reply


def test_a_failure_that_does_not_come_back_is_reported_unshrunk_and_marked(tmp_path, capsys):
    OnceAckBeforeCommit.count = 0
    code = main(conform(tmp_path, "--profile", "spec", "--role", "receiver", "--impl",
                        f"{__name__}:OnceAckBeforeCommit", "--max-examples", "300"))
    captured = capsys.readouterr()
    assert code == 1, captured
    assert "internal error" not in captured.err and "CORDA-ACK-001" in captured.out, captured
    assert "not reproducible" in captured.out, captured.out


# ---- 5. an implementation that breaks after its hello fails its scenario --------------------------
class RaisesOnBrokerRestart(ReferenceReceiver):
    def on_broker_restart(self, event):
        raise RuntimeError("lost its consumer")


def test_an_implementation_that_raises_after_hello_fails_with_the_scenario_shrunk_and_saved(tmp_path, capsys):
    code = main(conform(tmp_path, "--role", "receiver", "--impl", f"{__name__}:RaisesOnBrokerRestart",
                        "--max-examples", "100"))
    captured = capsys.readouterr()
    assert code == 1, captured
    assert "could not be driven" not in captured.err, captured.err
    out = captured.out
    assert "FAIL" in out and "broker_restart" in out and "raised RuntimeError: lost its consumer" in out, out
    assert "what to do:" in out, out
    saved = list((tmp_path / "reg").glob("corda-receiver-spec-*.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text())["steps"] == [["broker_restart"]], saved
    assert main(["replay", "--protocol", "corda", str(saved[0]), "--impl", f"{__name__}:RaisesOnBrokerRestart"]) == 1
    assert "raised RuntimeError" in capsys.readouterr().out


def test_a_process_that_answers_garbage_after_hello_fails_its_scenario(tmp_path, capsys):
    node = write(tmp_path, "garbage_node.py", """
        import json, sys
        for line in sys.stdin:
            event = json.loads(line)
            if event["type"] == "deliver":
                sys.stdout.write("oops\\n")
            else:
                sys.stdout.write(json.dumps({"ok": True} if event["type"] == "hello" else {}) + "\\n")
            sys.stdout.flush()
    """)
    code = main(conform(tmp_path, "--role", "receiver", "--impl-cmd", f"{PY} {node}", "--max-examples", "50"))
    captured = capsys.readouterr()
    assert code == 1, captured
    assert "not a JSON reply to deliver: 'oops'" in captured.out, captured.out


def test_an_implementation_that_fails_at_its_first_hello_is_still_not_driven(tmp_path, capsys):
    code = main(conform(tmp_path, "--role", "receiver", "--impl-cmd", "sh -c 'echo nope; cat >/dev/null'",
                        "--max-examples", "5"))
    captured = capsys.readouterr()
    assert code == 2 and "could not be driven as receiver: at the hello" in captured.err, captured
    assert not list((tmp_path / "reg").glob("*.json"))


# ---- 6. replay's format and advice; JSON reports carry advice and the exchange ---------------------
ACK_BEFORE_COMMIT = "rmkit.conformance.corda.driven.examples:AckBeforeCommit"


def saved_failure(tmp_path) -> str:
    path = tmp_path / "ack.json"
    path.write_text(json.dumps({"protocol": "corda", "role": "receiver", "profile": "spec",
                                "steps": [["arrive", 0, False], ["deliver"]]}))
    return str(path)


def test_replay_writes_json_when_asked(tmp_path, capsys):
    code = main(["replay", "--protocol", "corda", saved_failure(tmp_path), "--impl", ACK_BEFORE_COMMIT,
                 "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["verdict"] == "fail"
    v = doc["violations"][0]
    assert v["rule"] == "CORDA-ACK-001" and v["advice"], doc
    assert doc["exchange"] and doc["steps"] == [["arrive", 0, False], ["deliver"]]


def test_replay_text_says_what_to_do(tmp_path, capsys):
    assert main(["replay", "--protocol", "corda", saved_failure(tmp_path), "--impl", ACK_BEFORE_COMMIT]) == 1
    out = capsys.readouterr().out
    assert "CORDA-ACK-001" in out and "what to do:" in out, out


def test_a_json_conform_report_carries_the_advice_and_the_exchange(tmp_path, capsys):
    assert main(conform(tmp_path, "--role", "receiver", "--impl", ACK_BEFORE_COMMIT, "--max-examples", "50",
                        "--format", "json")) == 1
    failure = next(s for s in json.loads(capsys.readouterr().out)["scenarios"] if s["failure"])["extras"]
    assert failure["violations"][0]["advice"], failure
    assert failure["exchange"] and any("deliver" in line for line in failure["exchange"]), failure


# ---- 7. an implementation module that fails at import ----------------------------------------------
@pytest.mark.parametrize("body,says", [("def factory(role):\n    return (\n", "SyntaxError"),
                                       ("raise RuntimeError('needs a setting')\n", "needs a setting")])
def test_a_module_that_fails_at_import_is_exit_2_with_the_cause(tmp_path, monkeypatch, capsys, body, says):
    name = f"impl_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(conform(tmp_path, "--impl", f"{name}:factory", "--max-examples", "5"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "internal error" not in err and f"cannot load {name}" in err and says in err, err
