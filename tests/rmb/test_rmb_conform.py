"""`rmkit conform --protocol rmb`: a daemon driven at its real wire (its own redis-server, kit
twins over HTTP). The reference passes, faulty variants are caught by the rule they break, legal
variants pass; the exit contract; saved scenarios replay. The full matrix (every profile, every
variant, generated scenarios with shrinking) is behind ``slow``."""

from __future__ import annotations

import asyncio
import json
import re
import sys

import pytest

from proc_support import kill_all, procs_whose, running
from rmb_support import redis_server_or_skip
from rmkit.cli import main
from rmkit.conformance.rmb.driven.harness import PLACEHOLDERS, Harness, expand_command
from rmkit.conformance.rmb.driven.judge import Rules, planned_attempts
from rmkit.conformance.rmb.driven.scenario import Scenario, catalogue, read_scenario, write_scenario
from rmkit.conformance.rmb.driven.suite import describe_run, run_batches, search
from rmkit.conformance.rmb.examples.variants import FAULTY, LEGAL, MUTANTS
from rmkit.protocols.rmb.model import rmb_spec
from rmkit.errors import UsageError

SERVE = ("--twin {twin} --directory {directory} --seed {seed} --redis {redis} --listen {listen} --profile {profile}")
REFERENCE = "{python} -m rmkit.reference_impl.rmb.cli serve " + SERVE


def variant_cmd(name: str) -> str:
    return f"{{python}} -m rmkit.conformance.rmb.examples {name} serve " + SERVE


class Driven:
    """One daemon under a harness, its event loop kept for the module's tests."""

    def __init__(self, cmd: str, profile: str):
        redis_server_or_skip()
        self.loop = asyncio.new_event_loop()
        self.h = Harness(cmd, profile)
        self.loop.run_until_complete(self.h.start())
        self.rules = Rules(profile)

    def run(self, titles: list[str] | None = None):
        """The catalogue scenarios with these titles (all when None), at once; their runs."""
        cat = catalogue(self.h.profile, self.h.b["retry_delay_s"] >= 1)
        chosen = [sc for sc in cat if titles is None or sc.title in titles]
        assert titles is None or len(chosen) == len(titles), f"unknown titles in {titles}"

        return run_batches(self.h, self.loop, chosen)

    def failed_rules(self, runs) -> set[str]:
        return {c.rule for r in runs for _, c in r.failures(self.rules)} | ({"crash"} if any(r.crashed for r in runs) else set())

    def close(self):
        self.loop.run_until_complete(self.h.stop())
        self.loop.close()

    def __enter__(self) -> "Driven":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@pytest.fixture(scope="module")
def reference():
    d = Driven(REFERENCE, "spec")
    yield d
    d.close()


CHEAP = ["request, reply", "fan-out to two twins, both reply", "a 4xx is final", "connection closed, then accepted",
         "unknown destination", "local twin", "forged reply", "remote request: bad_sig", "remote request: tampered_unsigned",
         "remote request: good", "forward job of an expired request", "invalid local message: empty_dst",
         "proxy envelope: good payload"]


def test_reference_passes_cheap_scenarios_with_checks_of_many_rules(reference):
    runs = reference.run(CHEAP)
    assert reference.failed_rules(runs) == set(), [line for r in runs if r.failed(reference.rules)
                                                   for line in describe_run(r, reference.rules)]
    checked = {c.rule for r in runs for a in r.acts for c in a.checks}
    assert {"RMB-SIG-006", "RMB-BACKLOG-001", "RMB-REPLY-005", "RMB-REPLY-006", "RMB-RETRY-003", "RMB-DIR-001", "RMB-LOCAL-003",
            "RMB-REMOTE-003", "RMB-SIG-005", "RMB-REPLY-007", "RMB-BACKLOG-002", "RMB-LOCAL-002",
            "RMB-PROXY-005"} <= checked


def test_the_report_shows_http_exchanges_and_redis_operations(reference):
    run, = reference.run(["request, reply"])
    evidence = "\n".join(run.acts[0].evidence)
    assert "POST twin 2 /rmb-remote" in evidence and "sig ok" in evidence and "backlog at arrival: present, TTL" in evidence
    assert re.search(r"redis \[[0-9.:]+\] .*backlog\.", evidence), evidence  # the daemon's own SET of the backlog entry
    assert "kit: client pushed to msgbus.system.local" in evidence
    assert not re.search(r"redis \[[0-9.:]+\] (RPOP|PTTL)", evidence), evidence  # the kit's own reads are not the daemon's


@pytest.mark.parametrize("name,titles", [("retries-on-4xx", ["a 4xx is final"]), ("signs-wrong-fields", ["request, reply"])])
def test_faulty_variant_is_caught_by_its_rule(name, titles):
    cls, profile, expect = FAULTY[name]
    with Driven(variant_cmd(name), profile) as d:
        failed = d.failed_rules(d.run(titles))
    assert failed & expect, failed


def test_legal_variant_passes():
    with Driven(variant_cmd("counter-uids"), "spec") as d:
        runs = d.run(["request, reply", "fan-out to two twins, both reply", "remote request: good"])
        assert d.failed_rules(runs) == set()


BAD_DAT = ["invalid local message: bad_dat", "remote request: bad_dat"]


@pytest.mark.parametrize("cmd", [REFERENCE, variant_cmd("takes-any-dat")], ids=["refuses", "forwards"])
def test_a_non_base64_dat_may_be_refused_or_forwarded_as_given(cmd):
    """The documents leave open whether a valid body decodes dat (behaviour.yaml non_base64_dat):
    both readings pass; one that does neither fails RMB-LOCAL-002."""
    with Driven(cmd, "spec") as d:
        assert d.failed_rules(d.run(BAD_DAT)) == set()


def test_a_non_base64_dat_dropped_silently_fails_local_002():
    with Driven(variant_cmd("drops-bad-dat"), "spec") as d:
        assert d.failed_rules(d.run(BAD_DAT[:1])) == {"RMB-LOCAL-002"}


def test_an_implementation_that_cannot_start_exits_2(capsys, tmp_path):
    redis_server_or_skip()
    code = main(["conform", "--protocol", "rmb", "--impl-cmd", f"{sys.executable} -c 'import sys; sys.exit(3)'",
                 "--catalogue-only", "--regressions", str(tmp_path)])
    assert code == 2
    assert "exited at start (status 3)" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys, tmp_path):
    assert main(["conform", "--protocol", "rmb", "--impl", "x:y", "--regressions", str(tmp_path)]) == 2
    assert "--impl-cmd" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "rmkit-rmb-scenario/1", "profile": "spec", "acts": [{"act": "send", "dst": ["nobody"], "exp": 30, "try": 1}]}))
    assert main(["replay", "--protocol", "rmb", str(bad), "--impl-cmd", "true"]) == 2
    assert "acts[0].dst" in capsys.readouterr().err


def test_placeholders_are_filled_and_other_braces_kept():
    words = expand_command("d --r {redis} --k {key_file} '{\"a\": 1}' {listen}", {p: f"<{p}>" for p in PLACEHOLDERS})
    assert words == ["d", "--r", "<redis>", "--k", "<key_file>", '{"a": 1}', "<listen>"]
    with pytest.raises(UsageError):
        expand_command("", {})


def test_attempts_follow_the_profile():
    spec, rs, go = (rmb_spec().behaviour(p) for p in ("spec", "rmb-rs-v1", "rmb-go"))
    assert planned_attempts(spec, ["400"], 3) == (1, False)  # an HTTP error is final
    assert planned_attempts(go, ["400"], 3) == (3, False)  # rmb-go retries any failure
    assert planned_attempts(spec, ["close", "accept"], 3) == (2, True)
    assert planned_attempts(rs, ["close"], 9) == (5, False)  # try clamped to 5
    assert planned_attempts(spec, ["close"], 0) == (1, False)  # try 0 is one attempt


def test_saved_scenario_replays_and_fails_the_faulty_daemon(tmp_path, capsys):
    redis_server_or_skip()
    sc = Scenario("saved", "spec", [{"act": "send", "dst": ["p2"], "exp": 30, "try": 3, "answers": {"p2": ["400"]}}])
    path = write_scenario(tmp_path / "rmb-spec-x.json", sc)
    assert read_scenario(path).acts == sc.acts
    assert main(["replay", "--protocol", "rmb", str(path), "--impl-cmd", variant_cmd("retries-on-4xx")]) == 1
    out = capsys.readouterr().out
    assert "RMB-RETRY-003" in out and "POST twin 2" in out


def test_freedoms_quote_their_sources_verbatim():
    from test_rmb_spec import SHARED, _norm

    if SHARED is None:
        pytest.skip("the seed documents are not beside this checkout")
    seed = _norm(next((SHARED / "seeds").glob("004_*.txt")).read_text(encoding="utf-8"))
    ref = _norm((SHARED / "reference" / "rmb-as-built.md").read_text(encoding="utf-8"))
    fr = rmb_spec().raw["freedoms"]
    for f in fr["freedoms"]:
        assert set(f["breaks"]) <= set(rmb_spec().rules.ids()), f["id"]
        for src in f["sources"]:
            if "quote" in src:
                assert _norm(src["quote"]) in seed, (f["id"], src["quote"])
            else:
                assert _norm(src["fact"].split("] ", 1)[1]) in ref, (f["id"], src["fact"])


# ---- the full matrix --------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("profile", ["spec", "rmb-rs-v1", "rmb-go"])
def test_reference_passes_the_catalogue_and_generated_scenarios_in_every_profile(profile):
    assert_passes(REFERENCE, profile, examples=10 if profile == "rmb-go" else 25)


def assert_passes(cmd: str, profile: str, examples: int) -> None:
    """The whole catalogue and ``examples`` generated scenarios pass."""
    with Driven(cmd, profile) as d:
        assert d.failed_rules(d.run()) == set()
        g = search(d.h, d.loop, d.rules, max_examples=examples, derandomize=True, seed=None, time_budget=None,
                   slow_retries=d.h.b["retry_delay_s"] >= 1)
        assert g.failing is None, g.failing and g.failing.scenario.acts


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAULTY))
def test_every_faulty_variant_is_caught_by_the_catalogue_and_found_and_shrunk_by_the_generator(name):
    cls, profile, expect = FAULTY[name]
    with Driven(variant_cmd(name), profile) as d:
        assert d.failed_rules(d.run()) & expect
        g = search(d.h, d.loop, d.rules, max_examples=200, derandomize=True, seed=None, time_budget=None,
                   slow_retries=d.h.b["retry_delay_s"] >= 1, shrink_budget_s=90)
        assert g.failing is not None, f"{name}: not found in {g.examples} generated scenarios"
        assert len(g.failing.scenario.acts) == 1  # shrunk to one act


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LEGAL))
def test_every_legal_variant_passes(name):
    assert_passes(variant_cmd(name), "spec", examples=15)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_rule_mutant_fails_by_its_rule(name):
    """Per-rule verdicts rest on evidence: the catalogue's checks of a rule fail a daemon that breaks it."""
    cls, profile, rule = MUTANTS[name]
    with Driven(variant_cmd(name), profile) as d:
        assert rule in d.failed_rules(d.run())


@pytest.mark.parametrize("act, field", [
    ({"answers": ["400"]}, "acts[0].answers: ['400'] is not of type 'object'"),  # spec/schema/rmb-scenario.schema.json
    ({"replies": ["good"]}, "acts[0].replies: ['good'] is not of type 'object'"),
    ({"answers": {"zz": ["400"]}}, "acts[0].answers.zz: expected a destination of"),
    ({"try": True}, "acts[0].try: True is not of type 'integer'"),
])
def test_a_saved_scenario_with_a_malformed_act_names_the_field(tmp_path, act, field):
    """Read before anything starts: a usage error naming the file and field, not an internal error."""
    from rmkit.conformance.rmb.driven.scenario import FORMAT
    from rmkit.errors import UsageError

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": FORMAT, "profile": "spec",
                                "acts": [{"act": "send", "dst": ["p2"], "exp": 30, "try": 2, **act}]}))
    with pytest.raises(UsageError, match=re.escape(f"{path}: field {field}")):
        read_scenario(path)


# ---- replies of one send: a late one waits for the others -------------------------------------------
LATE_AND_GOOD = {"format": "rmkit-rmb-scenario/1", "profile": "spec", "acts": [
    {"act": "send", "dst": ["p2", "p3"], "exp": 2, "try": 0, "answers": {"p2": ["accept"], "p3": ["accept"]},
     "replies": {"p2": "late", "p3": "good"}}]}


def test_a_saved_scenario_with_a_late_and_a_good_reply_passes_the_reference(tmp_path, capsys):
    """The good reply is posted while the backlog lives, not after the late one waited it out."""
    redis_server_or_skip()
    path = tmp_path / "late-good.json"
    path.write_text(json.dumps(LATE_AND_GOOD))
    code = main(["replay", "--protocol", "rmb", str(path), "--impl-cmd", REFERENCE])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "pass (" in out


def test_generated_sends_with_a_late_reply_expire_within_the_act():
    """exp 2, every kit twin accepts at once, and no down destination whose retries outlive it."""
    from hypothesis import given, settings

    from rmkit.conformance.rmb.driven.scenario import acts_strategy

    seen = []

    @settings(max_examples=300, derandomize=True, database=None, deadline=None)
    @given(acts_strategy(slow_retries=True))
    def check(act):
        if act["act"] == "send" and "late" in (act.get("replies") or {}).values():
            seen.append(act)
            assert act["exp"] == 2 and "down" not in act["dst"] and "age" not in act
            assert all(plan == ["accept"] for plan in act["answers"].values())
    check()
    assert seen


# ---- the backlog's TTL has a lower bound too ------------------------------------------------------
def test_a_backlog_ttl_shorter_than_exp_fails_backlog_001(reference):
    with Driven(variant_cmd("short-ttl"), "spec") as d:
        failed = d.failed_rules(d.run(["request, reply"]))
    assert "RMB-BACKLOG-001" in failed, failed
    runs = reference.run(["request, reply", "fan-out to two twins, both reply", "a client's now 5 s old, retried"])
    assert reference.failed_rules(runs) == set()


# ---- re-stamping now (rmb-rs-v1) can fail ----------------------------------------------------------
def test_a_daemon_that_keeps_the_clients_now_fails_retry_004_in_rmb_rs_v1():
    """The catalogue's client sends a now 5 s old: rmb-rs-v1 re-stamps it before each attempt."""
    with Driven(variant_cmd("keeps-now"), "rmb-rs-v1") as d:
        failed = d.failed_rules(d.run([sc.title for sc in catalogue("rmb-rs-v1", False) if sc.acts[0]["act"] == "send"]))
    assert failed == {"RMB-RETRY-004"}, failed
    with Driven(REFERENCE, "rmb-rs-v1") as d:
        assert d.failed_rules(d.run(["a client's now 5 s old, retried", "request, reply"])) == set()


def test_exp_is_judged_relative_to_now_in_rmb_rs_v1_too():
    """RMB-MSG-004 is strict in rmb-rs-v1: its mutant (exp sent as an absolute time) fails there by
    that rule, and the per-rule table counts the reference's clean runs as covering it."""
    from rmkit.conformance.rmb.driven.coverage import rule_verdicts

    titles = ["request, reply", "fan-out to two twins, both reply"]
    with Driven(variant_cmd("absolute-exp"), "rmb-rs-v1") as d:
        assert "RMB-MSG-004" in d.failed_rules(d.run(titles))
    with Driven(REFERENCE, "rmb-rs-v1") as d:
        runs = d.run(titles)
        assert d.failed_rules(runs) == set()
        report = type("Report", (), {"runs": runs, "final": None})()
        assert rule_verdicts(report, d.rules)["RMB-MSG-004"] == ("pass", 2)


def test_a_send_acts_age_is_checked_when_read(tmp_path):
    from rmkit.conformance.rmb.driven.scenario import FORMAT

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": FORMAT, "profile": "spec",
                                "acts": [{"act": "send", "dst": ["p2"], "exp": 4, "try": 2, "age": 3}]}))
    with pytest.raises(UsageError, match=re.escape(f"{path}: field acts[0].age: expected an integer >= 0, at most half of exp")):
        read_scenario(path)


# ---- the reply's ret field: the document asks for the queue only -----------------------------------
def test_a_reply_pushed_to_ret_with_its_ret_field_unchanged_passes_spec_and_fails_rmb_rs_v1():
    titles = ["request, reply", "fan-out to two twins, both reply"]
    with Driven(variant_cmd("keeps-reply-ret"), "spec") as d:
        assert d.failed_rules(d.run(titles)) == set()
    with Driven(variant_cmd("keeps-reply-ret"), "rmb-rs-v1") as d:
        assert d.failed_rules(d.run(titles)) == {"RMB-REPLY-005"}


# ---- a run that checked nothing has no verdict -----------------------------------------------------
def test_a_replay_that_checks_nothing_exits_2(tmp_path, capsys):
    redis_server_or_skip()
    path = tmp_path / "go-proxy.json"
    path.write_text(json.dumps({"format": "rmkit-rmb-scenario/1", "profile": "rmb-go", "acts": [{"act": "proxy", "variant": "good"}]}))
    assert main(["replay", "--protocol", "rmb", str(path), "--impl-cmd", REFERENCE]) == 2
    assert "checked nothing" in capsys.readouterr().err


def test_no_profile_ships_scenarios_that_check_nothing():
    for profile in ("spec", "rmb-rs-v1", "rmb-go"):
        proxies = [sc.title for sc in catalogue(profile, profile == "rmb-go") if sc.acts[0]["act"] == "proxy"]
        assert bool(proxies) == (rmb_spec().behaviour(profile)["proxy"] is not None), (profile, proxies)


# ---- the daemon's process group and the kit's own processes are always stopped ----------------------
def _group(pgid: int) -> list[int]:
    return procs_whose(2, pgid)


def _children(pid: int) -> list[int]:
    return procs_whose(1, pid)


# waits until the daemon listens, then a little longer, so that the kit has seen it listen before the
# wrapper exits (the kit polls the port and the process alike)
WAIT_FOR_PORT = """import socket, sys, time
while True:
    try:
        socket.create_connection((sys.argv[1], int(sys.argv[2])), 0.2).close()
        break
    except OSError:
        time.sleep(0.05)
time.sleep(3)
"""


def test_a_daemon_started_through_a_wrapper_is_stopped(tmp_path):
    """The command the kit started exits (``sh -c 'daemon & wait-until-it-listens'``); the daemon
    it left in its session is stopped all the same. (The wrapper once slept 1 s: on a busy machine
    it exited before the daemon listened, and the kit rightly said the implementation had exited.)"""
    import shlex
    import time

    redis_server_or_skip()
    waiter = tmp_path / "wait_for_port.py"
    waiter.write_text(WAIT_FOR_PORT)
    h = Harness(f"sh -c {shlex.quote(REFERENCE + ' & {python} ' + str(waiter) + ' {host} {port}')}", "spec")
    loop = asyncio.new_event_loop()
    members = []
    try:
        loop.run_until_complete(h.start())
        h.proc.wait(timeout=60)
        time.sleep(0.2)
        members = running(_group(h.proc.pid))
        assert members, "the wrapped daemon is not running"
        loop.run_until_complete(h.stop())
        time.sleep(0.2)
        assert running(members) == []
    finally:
        kill_all(members)
        loop.close()


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_an_interrupted_conform_stops_everything_and_exits_2_quietly(tmp_path, sig):
    """SIGTERM (e.g. from `timeout`) or Ctrl-C in the middle of a run: the daemon, its redis-server
    and the temporary folder are gone, exit 2, one line on stderr."""
    import os
    import signal
    import subprocess
    import time

    redis_server_or_skip()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "rmkit", "conform", "--protocol", "rmb", "--impl-cmd", REFERENCE,
                             "--regressions", str(tmp_path / "reg"), "--max-examples", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(tmp)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    kids: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while len(kids) < 2 and time.monotonic() < deadline:  # redis-server and the daemon
            kids = running(_children(proc.pid))
            time.sleep(0.1)
        assert len(kids) >= 2, kids
        time.sleep(4)  # into the catalogue
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)
        time.sleep(0.3)
        assert proc.returncode == 2, err.decode()
        assert len(err.decode().strip().splitlines()) == 1, err.decode()
        assert running(kids) == []
        assert list(tmp.glob("rmkit-conform-rmb-*")) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(kids)


def test_the_html_report_puts_the_verdict_the_broken_rule_and_the_reproduce_command_first():
    """RMB's --html was the text report inside <pre>: now a page with the rules broken, each failing
    scenario with its reproduce command and its exchanges, and the per-rule matrix."""
    import shlex

    from html_support import read_page
    from rmkit.conformance.rmb.driven.suite import ConformReport, render_html

    cls, profile, expect = FAULTY["retries-on-4xx"]
    cmd = variant_cmd("retries-on-4xx")
    with Driven(cmd, profile) as d:
        runs = d.run(["a 4xx is final"])
    rep = ConformReport(implementation="retries-on-4xx", profile=profile, runs=runs, impl_argv=["--impl-cmd", cmd])
    page = read_page(render_html(rep))
    assert page.verdict == "fail"
    assert page.sections[:3] == ["failing", "scenarios-failed", "rules"], page.sections
    assert any(rule in page.text["failing"] for rule in expect), page.text["failing"]
    assert page.reproduce and shlex.split(page.reproduce[0])[:4] == ["rmkit", "conform", "--protocol", "rmb"]
    assert shlex.split(page.reproduce[0])[-2:] == ["--impl-cmd", cmd]
    assert "exchanges and Redis operations" in page.text["scenarios-failed"]


def test_the_junit_failure_says_how_to_reproduce_it():
    import xml.etree.ElementTree as ET

    from rmkit.conformance.rmb.driven.suite import ConformReport, render_junit

    cls, profile, expect = FAULTY["retries-on-4xx"]
    cmd = variant_cmd("retries-on-4xx")
    with Driven(cmd, profile) as d:
        runs = d.run(["a 4xx is final"])
    rep = ConformReport(implementation="retries-on-4xx", profile=profile, runs=runs, impl_argv=["--impl-cmd", cmd])
    failures = [f.text for f in ET.fromstring(render_junit(rep)).iter("failure") if f.get("type") == "rule"]
    assert failures and all("reproduce: rmkit conform --protocol rmb" in t for t in failures), failures
