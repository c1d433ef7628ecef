"""Driven conformance for Corda P2P: the reference receiving node passes in every profile, legal
variants (acknowledgement batching, another commit order across sessions) pass, and each faulty
node is caught on its rule, within 60 s, with a scenario shrunk to at most 12 steps."""

import json
import sys
import threading
import time

import pytest

from clock_support import PLANTED_DELAY, cpu_spent
from rmkit.cli import main
from rmkit.conformance.corda.driven import examples as ex
from rmkit.conformance.corda.driven.adapters import reference_factory
from rmkit.conformance.corda.driven.suite import search

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]
FAULTY = [  # (example, profile, the rule it must be caught on)
    ("ack_before_commit", "corda-os", "CORDA-ACK-001"),
    ("dedup_only_in_memory", "corda-os", "CORDA-DEDUP-005"),
    ("fast_path_without_db_read", "corda-ent-fastpath", "CORDA-DEDUP-006"),
    ("ack_in_flight", "corda-os", "CORDA-DEDUP-004"),
    # its id is written a tick after the commit: the catalogue's crash right after the commit finds
    # it first, CORDA-DEDUP-005 (a copy in between with no restart is CORDA-DEDUP-001: test_corda_driven_judge)
    ("duplicate_after_restart", "corda-os", "CORDA-DEDUP-005"),
]


@pytest.mark.parametrize("profile", PROFILES)
def test_reference_passes(profile):
    r = search(reference_factory, profile, max_examples=100)
    assert r.failure is None, r.failure and [v.render() for v in r.failure.violations]
    assert r.examples == 100


def test_fast_path_finding_is_reported_not_failed():
    """The fast path's second commit is the profile's known departure (rules.yaml known_departure):
    no failure, and CORDA-DEDUP-001's own line says it was broken so, never "pass"."""
    from rmkit.conformance.corda.driven import report

    r = search(reference_factory, "corda-ent-fastpath", max_examples=200)
    assert r.failure is None and "CORDA-DEDUP-007" in r.findings
    row = next(x for x in report.rule_rows(r) if x["id"] == "CORDA-DEDUP-001")
    assert row["verdict"] == "known departure" and "reported as CORDA-DEDUP-007" in row["evidence"], row


@pytest.mark.parametrize("name,profile,rule", FAULTY)
def test_faulty_example_is_caught_and_shrunk(name, profile, rule):
    with cpu_spent(60):
        r = search(ex.FAULTY[name], profile, max_examples=500)
    assert r.failure is not None, f"{name} passed"
    assert len(r.failure.actions) <= 12, r.failure.actions
    assert rule in {v.rule for v in r.failure.strict}, [v.render() for v in r.failure.violations]


def test_ack_in_flight_is_legal_in_corda_os_2021():
    assert search(ex.AckInFlight, "corda-os-2021", max_examples=100).failure is None


@pytest.mark.parametrize("name", sorted(ex.LEGAL))
@pytest.mark.parametrize("profile", ["spec", "corda-os"])
def test_legal_variant_passes(name, profile):
    r = search(ex.LEGAL[name], profile, max_examples=100)
    assert r.failure is None, r.failure and [v.render() for v in r.failure.violations]


def test_cli_drives_processes_and_replays_saved_scenarios(tmp_path, capsys):
    ref = f"{sys.executable} -m rmkit.conformance.corda.driven.adapters ROLE"
    bad = f"{sys.executable} -m rmkit.conformance.corda.driven.examples ack_before_commit ROLE"
    # few scenarios: every crash starts the process again (the bridge role is driven at the end)
    assert main(["conform", "--protocol", "corda", "--profile", "corda-os", "--role", "receiver", "--impl-cmd", ref,
                 "--max-examples", "6", "--derandomize"]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["conform", "--protocol", "corda", "--profile", "corda-os", "--role", "receiver", "--impl-cmd", bad, "--max-examples", "100",
                 "--derandomize", "--regressions", str(tmp_path), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    failed = next(s for s in doc["scenarios"] if s["failure"])
    assert doc["verdict"] == "fail" and doc["exit"] == 1 and failed["rules"][0] == "CORDA-ACK-001"
    assert failed["extras"]["violations"][0]["rule"] == "CORDA-ACK-001"
    saved = next(tmp_path.glob("*.json"))
    assert main(["replay", "--protocol", "corda", str(saved), "--impl", "rmkit.conformance.corda.driven.examples:AckBeforeCommit"]) == 1
    assert main(["replay", "--protocol", "corda", str(saved), "--impl", "rmkit.conformance.corda.driven.adapters:reference_factory"]) == 0
    assert main(["conform", "--protocol", "corda", "--impl-cmd", str(tmp_path / "missing")]) == 2
    assert main(["conform", "--protocol", "corda", "--role", "sender", "--impl-cmd", ref]) == 2
    assert main(["conform", "--protocol", "corda", "--role", "bridge", "--impl-cmd", ref, "--max-examples", "6",
                 "--derandomize"]) == 0


BRIDGE_FAULTY = [("AckOnSend", "corda-os", "CORDA-BRIDGE-001"), ("NoRollback", "corda-os", "CORDA-BRIDGE-002"),
                 ("Pipelining", "spec", "CORDA-ORDER-001")]


@pytest.mark.parametrize("profile", PROFILES)
def test_reference_bridge_passes_and_reports_the_as_built_findings(profile):
    r = search(reference_factory, profile, max_examples=100, role="bridge")
    assert r.failure is None, r.failure and [v.render() for v in r.failure.violations]
    if profile != "spec":  # as built: oversize dropped, a session reordered after a rollback (non-strict)
        assert {"CORDA-BRIDGE-003", "CORDA-ORDER-001"} <= set(r.findings)


@pytest.mark.parametrize("name,profile,rule", BRIDGE_FAULTY)
def test_faulty_bridge_is_caught_and_shrunk(name, profile, rule):
    from rmkit.conformance.corda.driven import bridge

    with cpu_spent(60):
        r = search(getattr(bridge, name), profile, max_examples=500, role="bridge")
    assert r.failure is not None
    assert len(r.failure.actions) <= 12
    assert rule in {v.rule for v in r.failure.strict}


@pytest.mark.parametrize("name,profile", [("BatchedLocalAcks", "spec"), ("BatchedLocalAcks", "corda-os"),
                                          ("Pipelining", "corda-os")])
def test_legal_bridge_variant_passes(name, profile):
    from rmkit.conformance.corda.driven import bridge

    assert search(getattr(bridge, name), profile, max_examples=100, role="bridge").failure is None


# ---- an implementation that cannot be driven: exit 2 with the cause, in about --timeout --------
class SleepyReceiver:
    """An in-process receiver whose ``handle`` never returns in time."""

    def __init__(self, role):
        pass

    def handle(self, event):
        time.sleep(PLANTED_DELAY)
        return {"ok": True}


HALF_LINE = "sh -c 'printf \"{\\\"ok\\\"\"; exec sleep 1000'"   # half a reply, then silence


def test_a_process_writing_half_a_line_times_out():
    """select fired on the partial line and readline() then blocked for ever: the deadline must hold."""
    from rmkit.conformance.corda.driven.adapters import ImplementationFailed, ProcessImplementation

    impl = ProcessImplementation(HALF_LINE, "receiver", 0.5)
    raised = []

    def hello():   # on a thread, so that a hang fails the test instead of hanging it
        try:
            impl.handle({"type": "hello", "role": "receiver", "profile": "spec"})
        except ImplementationFailed as exc:
            raised.append(str(exc))

    t = threading.Thread(target=hello, daemon=True)
    t.start()
    t.join(PLANTED_DELAY)   # the process sleeps far longer than that
    impl.proc.kill()
    assert not t.is_alive(), f"no timeout: still reading after {PLANTED_DELAY} s"
    assert raised and "no reply to hello within 0.5 s" in raised[0] and "without ending the line" in raised[0], raised
    assert impl.proc.poll() is not None


def test_an_in_process_handle_that_sleeps_times_out():
    """An in-process implementation had no timeout at all: its calls run under --timeout too."""
    from argparse import Namespace

    from rmkit.conformance.corda.driven.adapters import ImplementationFailed, open_factory

    impl = open_factory(Namespace(impl_cmd=None, impl=f"{__name__}:SleepyReceiver", timeout=0.5))("receiver")
    start = time.monotonic()
    with pytest.raises(ImplementationFailed, match=r"handle\(hello\) did not return within 0.5 s"):
        impl.handle({"type": "hello", "role": "receiver", "profile": "spec"})
    assert time.monotonic() - start < PLANTED_DELAY   # cut at --timeout, not waited out


def test_an_implementation_that_cannot_be_driven_is_reported_with_its_cause(capsys):
    """Its failure used to escape into the Hypothesis search, which replayed it against a dead
    process and ended in ``internal error (FlakyFailure ...)``, the cause shown only with --debug."""
    code = main(["conform", "--protocol", "corda", "--role", "receiver", "--impl-cmd", "sh -c 'echo [1]; exec cat >/dev/null'",
                 "--timeout", "2", "--max-examples", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err, err
    assert "could not be driven as receiver: at the hello: not a JSON object reply to hello: '[1]'" in err, err


def test_an_in_process_implementation_that_hangs_stops_the_run_within_the_timeout(capsys):
    start = time.monotonic()
    code = main(["conform", "--protocol", "corda", "--role", "receiver", "--impl", f"{__name__}:SleepyReceiver",
                 "--timeout", "0.5", "--max-examples", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "handle(hello) did not return within 0.5 s (--timeout)" in err, err
    assert time.monotonic() - start < PLANTED_DELAY   # cut at --timeout, not waited out


@pytest.mark.parametrize("doc,field", [
    ({"role": "receiver", "profile": "spec", "steps": [["arrive", 9, True]]}, "steps[0][1]"),
    ({"role": "receiver", "profile": "spec", "steps": [["deliver"], ["arrive", 1, "yes"]]}, "steps[1][2]"),
    ({"role": "receiver", "profile": "spec", "steps": [["arrive", 1]]}, "steps[0]"),
    ({"role": "receiver", "profile": "spec", "steps": [["explode"]]}, "steps[0][0]"),
    ({"role": "bridge", "profile": "spec", "steps": [["broker_restart"]]}, "steps[0][0]"),
    ({"role": "receiver", "profile": "spec", "steps": [["tick", 1]]}, "steps[0]"),
    ({"role": "receiver", "profile": "spec", "steps": ["tick"]}, "steps[0]"),
    ({"role": "wizard", "profile": "spec", "steps": []}, "role"),
    ({"role": "receiver", "profile": "nope", "steps": []}, "profile"),
    ({"role": "receiver", "steps": []}, "profile"),
    ({"role": "receiver", "profile": "spec", "steps": {}}, "steps"),
])
def test_replay_rejects_a_bad_scenario_before_starting_the_implementation(tmp_path, capsys, doc, field):
    """A step the runner does not know was sent to the implementation and its refusal blamed on
    it; a bad argument ended in the kit's own IndexError. Both are the file's fault: exit 2 naming
    the file and the field, and the implementation is not started."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    started = tmp_path / "started"
    code = main(["replay", "--protocol", "corda", str(path), "--impl-cmd", f"sh -c 'touch {started}; exec cat >/dev/null'"])
    err = capsys.readouterr().err
    assert code == 2 and f"FILE {path}: {field}: " in err, err
    assert "internal error" not in err and "could not be driven" not in err and not started.exists()


def test_replay_with_an_implementation_that_cannot_start_is_exit_2_with_the_cause(tmp_path, capsys):
    """It was started outside the code that reports an implementation failure: an internal error."""
    path = tmp_path / "ok.json"
    path.write_text(json.dumps({"role": "receiver", "profile": "spec", "steps": [["tick"]]}))
    assert main(["replay", "--protocol", "corda", str(path), "--impl-cmd", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "could not be driven: --impl-cmd" in err and "cannot start" in err and "internal error" not in err, err


ACK_BEFORE_COMMIT = "rmkit.conformance.corda.driven.examples:AckBeforeCommit"
REFERENCE = "rmkit.conformance.corda.driven.adapters:reference_factory"


def test_a_failure_is_saved_by_default_and_replayed_first(tmp_path, monkeypatch, capsys):
    """The help and docs/corda.md say failures are saved (default: the implementation's own folder
    under .rmkit/regressions) and replayed first; nothing was saved without --regressions and
    nothing was ever replayed. Another implementation's failures are not replayed to it."""
    from rmkit.cli_options import DEFAULT_REGRESSIONS, regressions_of

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RMKIT_REGRESSIONS", raising=False)
    argv = ["conform", "--protocol", "corda", "--role", "receiver", "--derandomize", "--max-examples", "50"]
    assert main(argv + ["--impl", ACK_BEFORE_COMMIT]) == 1
    saved = sorted((tmp_path / regressions_of(DEFAULT_REGRESSIONS, ACK_BEFORE_COMMIT)).glob("corda-receiver-spec-*.json"))
    assert len(saved) == 1 and len(saved[0].stem.rsplit("-", 1)[1]) == 12, saved
    assert f"saved failing scenario: {saved[0].relative_to(tmp_path)}" in capsys.readouterr().out
    assert main(argv + ["--impl", ACK_BEFORE_COMMIT, "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    failed = next(s for s in doc["scenarios"] if s["failure"])
    assert doc["groups"][0]["extras"]["generated"] == 0 and failed["origin"] == "regression"
    assert failed["extras"]["regression"] == str(saved[0].relative_to(tmp_path))
    assert failed["extras"]["violations"][0]["rule"] == "CORDA-ACK-001"
    assert main(argv + ["--impl", REFERENCE, "--format", "json"]) == 0   # not replayed: another implementation's
    assert json.loads(capsys.readouterr().out)["groups"][0]["extras"]["generated"] == 50
    assert main(argv + ["--impl", REFERENCE, "--regressions", str(saved[0].parent)]) == 0   # named: replayed, passed, then generated
    assert "and 50 generated scenarios" in capsys.readouterr().out


def test_two_failures_of_the_same_length_are_saved_apart(tmp_path):
    """The name held only the length: the second failure overwrote the first."""
    from rmkit.conformance.corda.driven.suite import Outcome, SearchResult, save

    paths = {save(SearchResult("spec", 1, 0.0, Outcome("spec", acts, [])), tmp_path)
             for acts in ([("arrive", 0, False)], [("arrive", 1, True)])}
    assert len(paths) == 2 and len(list(tmp_path.glob("corda-receiver-spec-*.json"))) == 2


def test_a_regressions_folder_that_cannot_be_used_stops_the_run_before_it_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RMKIT_REGRESSIONS", raising=False)
    (tmp_path / ".rmkit").mkdir()
    (tmp_path / ".rmkit" / "regressions").write_text("a file in its place\n")
    argv = ["conform", "--protocol", "corda", "--role", "receiver", "--max-examples", "5", "--impl", REFERENCE]
    assert main(argv) == 2
    assert "regressions: expected a folder, found a file" in capsys.readouterr().err
    (tmp_path / ".rmkit" / "regressions").unlink()
    (tmp_path / ".rmkit" / "regressions").mkdir()
    from rmkit.cli_options import DEFAULT_REGRESSIONS, regressions_of

    bad = tmp_path / regressions_of(DEFAULT_REGRESSIONS, REFERENCE) / "corda-receiver-spec-0.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"role": "receiver", "profile": "spec", "steps": [["arrive", 9, False]]}))
    assert main(argv) == 2
    assert f"FILE {bad.relative_to(tmp_path)}: steps[0][1]: " in capsys.readouterr().err


class SlowReference:
    """The reference receiver, 5 ms a call: a scenario takes about a quarter of a second."""

    def __init__(self, role):
        self.impl = reference_factory(role)

    def handle(self, event):
        time.sleep(0.005)
        return self.impl.handle(event)


def test_time_budget_stops_generating(tmp_path, capsys):
    """--time-budget was accepted and ignored: a hundred slow scenarios took their ten seconds."""
    assert main(["conform", "--protocol", "corda", "--role", "receiver", "--impl", f"{__name__}:SlowReference",
                 "--max-examples", "100", "--derandomize", "--time-budget", "1", "--regressions", str(tmp_path)]) == 0
    assert "stopped by --time-budget" in capsys.readouterr().out


def test_a_spent_time_budget_still_runs_one_scenario():
    r = search(reference_factory, "spec", max_examples=50, time_budget=1e-9, named=False)
    assert r.examples == 1 and r.budget_spent and r.failure is None


def test_a_spent_time_budget_still_runs_the_named_scenarios():
    r = search(reference_factory, "spec", max_examples=50, time_budget=1e-9)
    assert r.examples == 0 and r.named and r.budget_spent and r.failure is None
