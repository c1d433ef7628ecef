"""``rmkit corda up`` and the cluster under it: the verdict of a run (every message committed
once, nothing died, everything stopped), what happens when a process dies or the run is
interrupted (SIGINT, SIGTERM: exit 2 and nothing left running), and the options' checks. The run
loop is tested on a fake cluster; a few tests start real brokers (ActiveMQ Classic)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rmkit.reference_impl.corda.activemq import ActiveMQ, available

needs_broker = pytest.mark.skipif(available() is not None, reason=str(available()))


def running_under(folder) -> list[str]:
    """The processes (JVMs, nodes, bridges) whose command line names ``folder``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(folder) in cmd and int(d.name) != os.getpid():
                out.append(f"{d.name}: {cmd[:200]}")
    return out


# -- the run loop, on a fake cluster ---------------------------------------------------------------
EXPECTED = {"A": {"N-Bf0-1-0", "N-Bf0-2-0"}, "B": {"N-Af0-1-0", "N-Af0-2-0"}}


class FakeCluster:
    """Stands in for :class:`rmkit.reference_impl.corda.cluster.Cluster`: ``script`` says, poll by
    poll, what the databases hold (``effects``: node -> ids) and what died; a callable entry runs
    at that poll (it may raise or send a signal). Past the script the run must have ended."""

    script: list = []
    start_error: BaseException | None = None
    stop_problems: list = []
    made: list = []

    def __init__(self, folder, nodes, policy, *, flows=2, messages=10, **kw):
        self.folder, self.nodes = Path(folder), list(nodes)
        self.polls, self.stops, self.started = 0, 0, False
        type(self).made.append(self)

    def start(self):
        self.started = True
        if self.start_error is not None:
            raise self.start_error

    def bridge_names(self):
        return ["bridge-A-B", "bridge-B-A"]

    def expected(self, credit=None):
        return {n: set(ids) for n, ids in EXPECTED.items()}

    def _now(self):
        if self.polls >= len(self.script):
            raise AssertionError("the run went on past its end")
        step = self.script[self.polls]
        if callable(step):
            self.polls += 1
            step()
            return self._now()
        return step

    def dead(self):
        return self._now().get("dead", [])

    def effects(self, node):
        step = self._now()
        if node == self.nodes[-1]:
            self.polls += 1
        return list(step.get(node, []))

    def records(self):
        (self.folder / "records").mkdir(parents=True, exist_ok=True)
        return self.folder / "records"

    def events(self, node):
        return self.records() / f"events-{node}.jsonl"

    def db(self, node):
        return self.folder / f"{node}.sqlite"

    def stop(self):
        self.stops += 1
        return list(self.stop_problems)


ALL = {n: sorted(ids) for n, ids in EXPECTED.items()}
HALF = {"A": ["N-Bf0-1-0"], "B": ["N-Af0-1-0"]}


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """``rmkit corda up`` on a FakeCluster (no broker needed); returns (run, the fake class)."""
    from rmkit.cli import main
    from rmkit.conformance.corda import cli as corda_cli
    from rmkit.reference_impl.corda import cluster

    class Fake(FakeCluster):
        script, start_error, stop_problems, made = [], None, [], []

    monkeypatch.setattr(cluster, "Cluster", Fake)
    monkeypatch.setattr(corda_cli, "_need_broker", lambda: None)
    monkeypatch.setattr(corda_cli.time, "sleep", lambda s: None)

    def run(*extra):
        return main(["corda", "up", "--dir", str(tmp_path / f"run{len(Fake.made)}"), *extra])
    return run, Fake


def test_up_passes_when_every_message_is_committed_once(fake, capsys):
    run, Fake = fake
    Fake.script = [HALF, ALL]
    assert run() == 0
    assert "4 of 4 messages committed" in capsys.readouterr().out and Fake.made[0].stops >= 1


def test_up_ends_with_exit_2_naming_what_died(fake, capsys):
    run, Fake = fake
    Fake.script = [HALF, {**HALF, "dead": ["broker A is not running (see broker.log)"]}]
    assert run() == 2
    err = capsys.readouterr().err
    assert "broker A is not running" in err and "no verdict" in err and "internal error" not in err, err
    assert Fake.made[0].stops >= 1


def test_up_is_no_pass_when_a_process_did_not_stop_cleanly(fake, capsys):
    run, Fake = fake
    Fake.script, Fake.stop_problems = [ALL], ["node-A had ended: it was killed by SIGKILL (see node-A.log)"]
    assert run() == 2
    assert "not stopped cleanly: node-A had ended" in capsys.readouterr().err


@pytest.mark.parametrize("duplicate, code", [(False, 2), (True, 1)])
def test_up_whose_duration_runs_out_has_no_verdict_unless_a_duplicate_showed(fake, capsys, monkeypatch, duplicate, code):
    from rmkit.conformance.corda import cli as corda_cli

    run, Fake = fake
    clock = iter(range(0, 1000, 5))
    monkeypatch.setattr(corda_cli.time, "monotonic", lambda: next(clock))
    step = {"A": HALF["A"] * (2 if duplicate else 1), "B": HALF["B"]}
    Fake.script = [step] * 5
    assert run("--duration", "12") == code
    captured = capsys.readouterr()
    assert ("--duration 12 s ran out with 2 of 4 messages not committed: no verdict" in captured.err) != duplicate
    assert f"duplicates: {int(duplicate)}" in captured.out


def test_up_does_not_count_a_message_committed_twice_as_committed_exactly_once(fake, capsys):
    run, Fake = fake
    Fake.script = [{"A": ALL["A"] + ALL["A"][:1], "B": ALL["B"]}]
    assert run() == 1
    out = capsys.readouterr().out
    assert "3 of 4 messages committed exactly once" in out and "duplicates: 1" in out, out


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_up_duration_must_be_a_positive_number_of_seconds(fake, capsys, value):
    run, Fake = fake
    with pytest.raises(SystemExit) as e:
        run("--duration", value)
    assert e.value.code == 2 and "--duration" in capsys.readouterr().err and Fake.made == []


def test_up_cluster_that_cannot_start_is_stopped(fake, capsys):
    from rmkit.reference_impl.corda.cluster import ComponentFailed

    run, Fake = fake
    Fake.start_error = ComponentFailed("node-A exited with 1 at start")
    assert run() == 2
    assert "node-A exited with 1 at start" in capsys.readouterr().err and Fake.made[0].stops >= 1


def _interrupt():
    raise KeyboardInterrupt


@pytest.mark.parametrize("at", [0, 1])
def test_up_interrupted_at_any_poll_is_stopped_and_has_no_verdict(fake, capsys, at):
    run, Fake = fake
    Fake.script = [HALF] * at + [_interrupt]
    assert run() == 2
    err = capsys.readouterr().err
    assert "interrupted; no verdict" in err and "internal error" not in err, err
    assert Fake.made[0].stops >= 1


def test_up_interrupted_while_starting_is_stopped(fake, capsys):
    run, Fake = fake
    Fake.start_error = KeyboardInterrupt()
    assert run() == 2
    assert "interrupted; no verdict" in capsys.readouterr().err and Fake.made[0].stops >= 1


def test_up_stopped_by_sigterm_stops_the_cluster_and_exits_2(fake, capsys):
    run, Fake = fake
    reached = []

    def sigterm():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)   # (the handler runs before this ends)

    def before(signum, frame):   # what a SIGTERM would meet without a handler of the command
        reached.append(signum)
        raise RuntimeError("SIGTERM reached the handler from before the run")

    old = signal.signal(signal.SIGTERM, before)
    try:
        Fake.script = [HALF, sigterm]
        code = run()
        assert signal.getsignal(signal.SIGTERM) is before   # given back after the run
    finally:
        signal.signal(signal.SIGTERM, old)
    err = capsys.readouterr().err
    assert code == 2 and reached == [] and "interrupted; no verdict" in err, err
    assert Fake.made[0].stops >= 1


def test_a_signal_inside_a_held_block_waits_for_its_end():
    from rmkit.interrupts import Interrupted, held, signals_interrupt

    done = []
    with pytest.raises(Interrupted):
        with signals_interrupt():
            with held():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                done.append("the block ran to its end")
    assert done


def test_brokers_starting_when_the_run_is_interrupted_give_up_and_are_stopped(tmp_path):
    """SIGINT while the brokers start (in threads), under the handlers `rmkit corda up` runs with:
    each start under way gives up, then all are stopped. The signal is sent as soon as every start
    is under way (not after a fixed delay, which a loaded machine can outlast), so it may come
    while the threads are still being started; a start that was not told to give up waits far
    longer than any machine needs to deliver it."""
    import threading

    from rmkit.reference_impl.corda.cluster import Cluster
    from rmkit.reference_impl.corda.node import Policy

    from rmkit.interrupts import signals_interrupt

    main = threading.main_thread().ident
    under_way = threading.Barrier(2, action=lambda: signal.pthread_kill(main, signal.SIGINT))

    class SlowBroker:
        def __init__(self):
            self.abandon, self.proc, self.base, self.log = threading.Event(), None, tmp_path, []

        def start(self, timeout=60):
            self.log.append("start")
            under_way.wait()
            if not self.abandon.wait(60):
                self.log.append("started after the interruption")
            self.log.append("start ended")

        def running(self):
            return False

        def stop(self, grace=15):
            self.log.append("stop")
            return True

    cluster = Cluster(tmp_path / "run", ["A", "B"], Policy.of_profile("corda-os"))
    cluster.brokers = {n: SlowBroker() for n in cluster.nodes}
    with pytest.raises(KeyboardInterrupt), signals_interrupt():
        cluster.start()
    for b in cluster.brokers.values():
        assert b.log == ["start", "start ended", "stop"]


@pytest.mark.parametrize("nodes", ["Ä,B", "A,\u0663", "A,B c"])
def test_up_node_names_are_those_the_spec_ids_allow(fake, capsys, nodes):
    """A node's name starts its flows' names, the seeds of N- ids: spec/corda/messages.yaml allows
    letters A-Z, a-z and digits there (str.isalnum would take Ä or an Arabic-Indic digit)."""
    run, Fake = fake
    Fake.script = [ALL]
    assert run("--nodes", nodes) == 2
    err = capsys.readouterr().err
    assert "--nodes" in err and "cannot name a node" in err and Fake.made == [], err


def test_up_dir_naming_a_file_is_a_usage_error(fake, capsys, tmp_path):
    from rmkit.cli import main

    run, Fake = fake
    (tmp_path / "f").write_text("")
    assert main(["corda", "up", "--dir", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert f"--dir {tmp_path / 'f'}: expected a folder, found a file" in err and "internal error" not in err, err
    assert Fake.made == []


@pytest.mark.parametrize("bad, said", [
    (["--profile", "nope"], "has no profile 'nope'"),
    (["--policy", "{not json"], "--policy"),
    (["--policy", '{"fast_path": false}'], "--policy"),
    (["--db", "{missing}/A.sqlite"], "--db"),
    (["--events", "{missing}/e.jsonl"], "--events"),
    (["--crash-at", "receiver_before_commit:0"], "--crash-at"),
])
def test_the_node_started_by_hand_refuses_bad_arguments_with_exit_2(tmp_path, capsys, bad, said):
    """``python -m rmkit.reference_impl.corda.node`` (docs/corda.md: the nodes can be started by hand)
    exits 2 with one line on a bad argument, before any broker is asked, never with a traceback."""
    from rmkit.reference_impl.corda import node

    argv = ["--name", "A", "--port", "1", "--db", str(tmp_path / "A.sqlite"), "--events", str(tmp_path / "e.jsonl")]
    for i in range(0, len(bad), 2):
        value = bad[i + 1].replace("{missing}", str(tmp_path / "missing"))
        if bad[i] in argv:
            argv[argv.index(bad[i]) + 1] = value
        else:
            argv += [bad[i], value]
    assert node.main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err


def test_the_bridge_started_by_hand_refuses_a_bad_crash_point_with_exit_2(capsys):
    from rmkit.reference_impl.corda import bridge_node

    argv = ["--name", "bridge-A-B", "--local-port", "1", "--remote-port", "2", "--peer", "B", "--crash-at", "p:0"]
    assert bridge_node.main(argv) == 2
    err = capsys.readouterr().err
    assert "--crash-at" in err and len(err.strip().splitlines()) == 1, err


# -- on real brokers -------------------------------------------------------------------------------
@needs_broker
def test_a_broker_starts_in_a_folder_whose_name_a_uri_cannot_hold(tmp_path):
    b = ActiveMQ(str(tmp_path / "a b ä+%20")).start()
    try:
        assert (tmp_path / "a b ä+%20" / "data" / "rmkit").is_dir()
    finally:
        b.stop()
    assert running_under(tmp_path) == []


@needs_broker
def test_a_broker_whose_free_port_was_taken_before_it_bound_starts_on_another(tmp_path):
    """A free port is only free when picked: another test's broker may bind it first. The JVM then
    exits ("Address already in use"), and a first start is tried again on fresh ports; a program
    that holds the port and never answers STOMP must not hang the wait for CONNECTED either."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        b = ActiveMQ(str(tmp_path / "b"))
        b.stomp_port = taken.getsockname()[1]
        try:
            b.start(timeout=60)
            assert b.stomp_port != taken.getsockname()[1] and b.running()
        finally:
            b.stop()
    assert running_under(tmp_path) == []


@needs_broker
def test_a_process_that_cannot_start_leaves_nothing_running(tmp_path):
    env = {**os.environ, "RMKIT_CORDA_CRASH": "bogus:0"}   # every node and bridge refuses to start
    r = subprocess.run([sys.executable, "-m", "rmkit", "corda", "up", "--messages", "5", "--dir", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and "exited with 2 at start" in r.stderr, r.stderr
    time.sleep(0.2)
    assert running_under(tmp_path) == []


def up(tmp_path, *extra):
    return subprocess.Popen([sys.executable, "-m", "rmkit", "corda", "up", "--dir", str(tmp_path / "run"), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_line(proc, start: str) -> list[str]:
    lines = []
    while not lines or not lines[-1].startswith(start):
        line = proc.stdout.readline()
        assert line, "".join(lines) + proc.stderr.read()
        lines.append(line)
    return lines


def broker_pid(folder, node: str) -> int:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if f"-Dactivemq.base={folder}/broker-{node}\0" in cmd:
                return int(d.name)
    raise AssertionError(f"no JVM of broker {node}")


def ended_cleanly(proc, folder, timeout=60) -> tuple[int, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.2)
    assert running_under(folder) == [], err
    return proc.returncode, err


@needs_broker
@pytest.mark.slow
def test_a_broker_killed_during_the_run_ends_it_with_exit_2_naming_it(tmp_path):
    proc = up(tmp_path, "--messages", "100000")
    wait_for_line(proc, "  ")   # the first progress line: the flows are sending
    os.kill(broker_pid(tmp_path / "run", "A"), signal.SIGKILL)
    code, err = ended_cleanly(proc, tmp_path)
    assert code == 2 and "broker A is not running" in err and "no verdict" in err, err


@needs_broker
@pytest.mark.slow
@pytest.mark.parametrize("sig, when", [(signal.SIGINT, "starting"), (signal.SIGINT, "up"), (signal.SIGTERM, "starting"),
                                       (signal.SIGTERM, "running")])
def test_up_interrupted_at_any_moment_stops_everything_and_exits_2(tmp_path, sig, when):
    proc = up(tmp_path, "--messages", "100000")
    if when == "starting":   # a broker's JVM started, the cluster not yet up
        deadline = time.monotonic() + 60
        while not (tmp_path / "run" / "broker-B" / "broker.log").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    else:
        wait_for_line(proc, "2 brokers" if when == "up" else "  ")
    proc.send_signal(sig)
    code, err = ended_cleanly(proc, tmp_path)
    assert code == 2 and "interrupted; no verdict" in err and "internal error" not in err, err


@needs_broker
@pytest.mark.slow
def test_torture_stopped_by_sigterm_stops_everything_and_exits_2(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "rmkit", "corda", "torture", "--cycles", "50", "--dir", str(tmp_path / "run"),
                             "--out", str(tmp_path / "report.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while "cycle" not in (line := proc.stderr.readline()):
        assert line, proc.stdout.read()
    proc.send_signal(signal.SIGTERM)
    code, err = ended_cleanly(proc, tmp_path)
    assert code == 2 and "interrupted; no verdict" in err, err
    assert not (tmp_path / "report.json").exists()
