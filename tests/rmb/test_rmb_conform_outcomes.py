"""`rmkit conform --protocol rmb`: how a run ends and what its reports say. A daemon that dies while
generated scenarios run is reported as the crash it is (not shrunk against a dead daemon into a
scenario that never failed); the JSON and JUnit reports give each failure its rule, the evidence and
what to do."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from rmb_support import redis_server_or_skip
from rmkit.conformance.rmb.driven import suite
from rmkit.conformance.rmb.driven.harness import Harness
from rmkit.conformance.rmb.driven.judge import Rules
from rmkit.render.conform import render_json, render_text

SERVE = "--twin {twin} --directory {directory} --seed {seed} --redis {redis} --listen {listen} --profile {profile}"
REFERENCE = "{python} -m rmkit.reference_impl.rmb.cli serve " + SERVE


def kill(h: Harness) -> None:
    os.killpg(h.proc.pid, signal.SIGKILL)
    h.proc.wait()


@pytest.fixture
def started():
    """A harness with the reference daemon running (a short patience: the tests kill it)."""
    redis_server_or_skip()
    loop = asyncio.new_event_loop()
    h = Harness(REFERENCE, "spec", response_s=1)
    loop.run_until_complete(h.start())
    yield h, loop
    loop.run_until_complete(h.stop())
    loop.close()


@pytest.fixture
def dead_daemon(started):
    """A harness whose daemon started and was then killed (the kit's twins and Redis still run)."""
    kill(started[0])
    return started


def test_a_daemon_that_died_is_not_shrunk_against(dead_daemon):
    """Every scenario fails once the daemon is gone: shrinking would only pick the simplest of
    them, a scenario that never made the daemon fail."""
    h, loop = dead_daemon
    g = suite.search(h, loop, Rules("spec"), max_examples=20, derandomize=True, seed=None, time_budget=None,
                     slow_retries=False, shrink_budget_s=60)
    assert g.failing is not None and g.failing.crashed
    assert g.examples == 1, g.examples
    assert g.shrink_runs == 0, g.shrink_runs


def test_a_crash_during_generation_is_reported_and_saved_as_it_happened(started, tmp_path, monkeypatch):
    """The daemon dies in the first generated scenario: that scenario is the failure, reported and
    saved as run (not rerun against a dead daemon, not called shrunk)."""
    h, loop = started
    monkeypatch.setattr(suite, "catalogue", lambda profile, slow: [])
    run_scenario = suite.run_scenario

    async def dies_first(h, sc, ctx=None):
        if h.alive():
            kill(h)
        return await run_scenario(h, sc, ctx)
    monkeypatch.setattr(suite, "run_scenario", dies_first)
    rep = suite.run_suite(h, loop, max_examples=20, derandomize=True, seed=None, time_budget=None, catalogue_only=False,
                          regressions=[], save_dir=tmp_path)
    assert rep.verdict(Rules("spec")) == "fail"
    assert rep.final is rep.generated.failing and rep.final.crashed
    assert rep.final.scenario.title.startswith("the implementation exited during this scenario"), rep.final.scenario.title
    text = render_text(suite.core_report(rep))
    assert "the implementation exited" in text
    assert len(rep.saved) == 1


# ---- every failure in a machine-readable report: rule, evidence, what to do -----------------------
def _failing_report():
    from rmkit.conformance.rmb.driven.judge import ActResult, Check
    from rmkit.conformance.rmb.driven.scenario import Scenario

    act = {"act": "send", "dst": ["p2"], "exp": 30, "try": 3, "answers": {"p2": ["400"]}}
    res = ActResult(act, [Check("RMB-RETRY-003", False, "3 attempt(s) to twin 2 answered ['400', '400', '400'] (expected 1)")],
                    ["+  0.10s POST twin 2 /rmb-remote uid=u1; sig ok -> kit answered 400"])
    rep = suite.ConformReport("my-rmb", "spec", runs=[suite.ScenarioRun(Scenario("catalogue-04", "spec", [act]), [res])])
    return rep


def test_the_json_report_gives_each_failure_its_title_and_what_to_do():
    import json

    doc = json.loads(render_json(suite.core_report(_failing_report())))
    [scenario] = doc["scenarios"]
    assert scenario["verdict"] == "fail" and scenario["rules"] == ["RMB-RETRY-003"] and doc["exit"] == 1
    failure = scenario["extras"]["failures"][0]
    rules = Rules("spec")
    assert failure["rule"] == "RMB-RETRY-003" and failure["evidence"]
    assert failure["title"] == rules.title("RMB-RETRY-003")
    assert failure["advice"] == rules.advice("RMB-RETRY-003")


def test_replay_json_gives_each_failure_its_evidence_and_what_to_do(tmp_path, capsys):
    import json

    from rmkit.cli import main
    from rmkit.conformance.rmb.driven.scenario import Scenario, write_scenario

    redis_server_or_skip()
    sc = Scenario("saved", "spec", [{"act": "send", "dst": ["p2"], "exp": 30, "try": 3, "answers": {"p2": ["400"]}}])
    path = write_scenario(tmp_path / "rmb-spec-x.json", sc)
    cmd = "{python} -m rmkit.conformance.rmb.examples retries-on-4xx serve " + SERVE
    assert main(["replay", "--protocol", "rmb", str(path), "--impl-cmd", cmd, "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "fail"
    failure = next(f for f in doc["failures"] if f["rule"] == "RMB-RETRY-003")
    assert failure["advice"] == Rules("spec").advice("RMB-RETRY-003")
    assert any("POST twin 2" in line for line in failure["evidence"]), failure


def test_the_junit_report_has_a_case_per_rule_with_the_failure_its_advice_and_evidence():
    from xml.etree import ElementTree as ET

    rep = _failing_report()
    root = ET.fromstring(suite.render_junit(rep))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    rules = Rules("spec")
    assert set(cases) >= {r.id for r in rules.spec.rules if rules.mode(r.id) != "off"}
    failure = cases["RMB-RETRY-003"].find("failure")
    assert failure is not None and "3 attempt(s) to twin 2" in failure.get("message")
    assert rules.advice("RMB-RETRY-003") in failure.text and "POST twin 2 /rmb-remote" in failure.text
    assert cases["RMB-REMOTE-009"].find("skipped") is not None  # no scenario reaches it: not checked, never passed
    suite_el = root.find("testsuite")
    assert suite_el.get("failures") == "1"


def test_conform_takes_format_junit(tmp_path, capsys):
    """Refused before as a usage error; now the run goes ahead (here: to a daemon that cannot start)."""
    import sys

    from rmkit.cli import main

    redis_server_or_skip()
    code = main(["conform", "--protocol", "rmb", "--format", "junit", "--impl-cmd", f"{sys.executable} -c 'import sys; sys.exit(3)'",
                 "--catalogue-only", "--regressions", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "exited at start (status 3)" in err, err


# ---- a choice the profile leaves open passes either way ------------------------------------------
@pytest.mark.parametrize("profile", ["spec", "rmb-go"])
def test_a_daemon_that_refuses_old_and_expired_requests_passes_where_the_profile_leaves_it_open(profile):
    """RMB-REMOTE-006/007 are off in spec and rmb-go: refusing such a request with 400 is the
    daemon's choice, not a request it accepted and then failed to hand on (RMB-REMOTE-005)."""
    from test_rmb_conform import REFERENCE, Driven, variant_cmd

    for cmd in (variant_cmd("refuses-stale"), REFERENCE):  # refuses them; accepts them
        with Driven(cmd, profile) as d:
            runs = d.run(["remote request: old_now", "remote request: expired"])
            assert d.failed_rules(runs) == set(), [line for r in runs for line in suite.describe_run(r, d.rules)]


def _refused_request_log(tmp_path, *, now: int, exp: int):
    """A spec-profile log of one request twin 2's remote endpoint refused with 400 at t=1790000001."""
    import json

    msg = {"ver": 1, "uid": "0b0e5a1c-1111-4a11-8a11-000000000011", "cmd": "py.echo", "exp": exp, "try": 2, "dat": "aGk=", "src": 1,
           "dst": [2], "ret": "client.0b0e5a1c", "shm": "", "now": now, "sig": "65" + "ab" * 64}
    rec = {"format": "rmkit-rmb-log/1", "time": 1790000001.05, "who": "twin-2", "event": "http-answer", "direction": "in",
           "queue": None, "endpoint": "/rmb-remote", "status": 400, "peer": "127.0.0.1", "uid": msg["uid"], "message": msg,
           "note": "refused: message expired"}
    path = tmp_path / "twin-2.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    return path


@pytest.mark.parametrize("now, exp, why", [(1790000001 - 50, 10, "expired 40 s ago"), (1790000001 - 121, 3600, "sent 121 s ago")])
def test_a_log_where_an_old_or_expired_request_was_refused_passes_where_the_profile_leaves_it_open(tmp_path, capsys, now, exp, why):
    import json

    from rmkit.cli import main

    log = _refused_request_log(tmp_path, now=now, exp=exp)
    for profile in ("spec", "rmb-go"):
        code = main(["check", "--protocol", "rmb", "--profile", profile, "--format", "json", str(log)])
        doc = json.loads(capsys.readouterr().out)
        assert code == 0, (profile, why, doc.get("violations"))


def test_a_log_where_a_fresh_request_was_refused_still_fails_remote_001(tmp_path, capsys):
    from rmkit.cli import main

    log = _refused_request_log(tmp_path, now=1790000001 - 5, exp=3600)
    assert main(["check", "--protocol", "rmb", "--profile", "spec", str(log)]) == 1
    assert "RMB-REMOTE-001" in capsys.readouterr().out
