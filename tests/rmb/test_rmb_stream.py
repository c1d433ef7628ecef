"""The RMB log checker streams: requests are judged once the log's clock has passed their horizon
and then forgotten (memory follows the open requests), a record of a request already judged is
late and judged alone, and the typed reading of lines gives the same reports as the general one."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rmkit.conformance.rmb import checker as rmb_checker
from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "fixtures" / "rmb" / "rules"
MANIFEST = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))
DIRECTORY = str(ROOT / MANIFEST["directory"])


def _builder():
    spec = importlib.util.spec_from_file_location("mk_rmb_stream", REPO / "fixtures" / "rmb" / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    return mk


def check(path: Path, jobs: int = 1, profile: str = "spec"):
    return RmbLogChecker(RmbShards(profile, DIRECTORY), jobs=jobs).run([str(path)])


def findings(rep) -> list:
    return sorted((v.rule, v.subject, v.explanation, tuple(e.line for e in v.evidence)) for v in rep.violations)


def long_log(path: Path, requests: int, every_s: float = 1.0) -> None:
    """``requests`` whole requests (TTL 30 s), one every ``every_s`` seconds."""
    mk = _builder()
    with open(path, "w", encoding="utf-8") as f:
        for i in range(requests):
            log = mk.Log("spec")
            log.exchange(f"{i:08x}-0000-4000-8000-000000000000", t=i * every_s)
            f.write(log.text())


def test_memory_follows_the_open_requests_not_the_log(tmp_path):
    """600 requests over ten minutes, each living its TTL (30 s) plus the checker's horizon and
    tolerance (31.5 s): about 62 are open at once, however long the log."""
    log = tmp_path / "long.jsonl"
    long_log(log, 600)
    rep = check(log)
    assert rep.verdict == "pass" and rep.subjects == 601  # (the clients' local messages: one group without uid)
    assert rep.metrics["late_records"] == 0
    assert 55 <= rep.metrics["peak_open_requests"] <= 70, rep.metrics["peak_open_requests"]


def test_a_request_judged_before_its_records_end_is_not_judged_again_by_a_late_record(tmp_path):
    """A record of a request that comes far past its horizon is late: the request was judged
    without it, and the record alone is judged by the message rules (a malformed message)."""
    mk = _builder()
    log = mk.Log("spec")
    req = log.exchange("0b0e5a1c-2222-4a11-8a11-000000000001", t=0.0)
    log.exchange("0b0e5a1c-2222-4a11-8a11-000000000002", t=100.0)
    bad = {**req, "dst": []}  # RMB-MSG-006 in the late record's own message
    log.rec(120.0, 1, "http-post", "out", endpoint=log.b["remote_endpoint"], status=None, peer="2@127.0.0.1:7002",
            msg=bad, note="attempt 1: connection error: ClientConnectorError")
    log.exchange("0b0e5a1c-2222-4a11-8a11-000000000003", t=200.0)
    path = tmp_path / "late.jsonl"
    path.write_text(log.text(), encoding="utf-8")
    rep = check(path)
    assert rep.metrics["late_records"] == 1
    rules = {v.rule for v in rep.violations}
    assert "RMB-MSG-006" in rules
    # judged alone: no request rule (a POST without a backlog entry, attempts, fan-out) for it
    assert not rules & {"RMB-BACKLOG-001", "RMB-RETRY-001", "RMB-RETRY-003", "RMB-FANOUT-001", "RMB-FWD-001"}, rules


def test_jobs_cut_a_long_log_into_the_same_requests_as_one_process(tmp_path):
    log = tmp_path / "long.jsonl"
    long_log(log, 300, every_s=0.5)
    one, two = check(log), check(log, jobs=2)
    assert findings(one) == findings(two)
    assert (one.records, one.subjects, one.counts) == (two.records, two.subjects, two.counts)


@pytest.mark.parametrize("profile", sorted({e["profile"] for e in MANIFEST["fixtures"]}))
def test_the_typed_reading_gives_the_reports_of_the_general_reading(profile, monkeypatch):
    """Every rule fixture of the profile, read with the typed decoder and without it (every line
    through the general reading): the same findings, counts and unreadable lines."""
    paths = [ROOT / e["file"] for e in MANIFEST["fixtures"] if e["profile"] == profile]
    typed = [RmbLogChecker(RmbShards(profile, DIRECTORY)).run([str(p)]) for p in paths]

    class Untyped:
        def decode(self, line, ref):
            return None

        def clock_event(self, line):
            return None

    monkeypatch.setattr(rmb_checker, "typed_records", lambda: Untyped())
    general = [RmbLogChecker(RmbShards(profile, DIRECTORY)).run([str(p)]) for p in paths]
    for p, a, b in zip(paths, typed, general):
        assert findings(a) == findings(b), p.name
        assert (a.counts, a.records, a.subjects, a.unreadable) == (b.counts, b.records, b.subjects, b.unreadable), p.name


def _local_log(path: Path, exp: int, answer_after: float | None) -> None:
    """A client's message that breaks the schema (an empty dst; no uid: its daemon gives it none),
    with ``exp``, answered on its ret ``answer_after`` seconds later (None: never), among clean
    requests every 5 s for 400 s (the log's clock moves on past every horizon)."""
    mk = _builder()
    log = mk.Log("spec")
    bad = {**log.request("", t=1.0, exp=exp), "dst": [], "src": 0}
    lines = []
    for i in range(80):
        log.exchange(f"{i:08x}-0000-4000-8000-0000000000aa", t=i * 5.0)
    log.rec(1.0, 1, "local-request", "in", queue=log.b["local_queue"], msg=bad)
    if answer_after is not None:
        log.rec(1.0 + answer_after, 1, "error-to-ret", "out", queue=bad["ret"],
                msg={**bad, "src": 1, "dst": [0], "dat": "", "err": "dst: empty", "sig": ""})
    lines = sorted(log.lines, key=lambda x: x["time"])  # in time order, as the daemon writes it
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines), encoding="utf-8")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_message_without_uid_answered_after_a_grace_period_is_answered(tmp_path, jobs):
    """A record that names no request waits for its answer as long as a request's would (its exp
    and the grace), not only for the grace period the window of such records keeps."""
    path = tmp_path / "late-answer.jsonl"
    _local_log(path, exp=300, answer_after=100.0)
    rep = check(path, jobs=jobs)
    assert "RMB-LOCAL-002" not in rep.counts, findings(rep)
    _local_log(path, exp=300, answer_after=None)
    assert check(path, jobs=jobs).counts.get("RMB-LOCAL-002") == 1


def test_an_answer_after_the_messages_horizon_comes_too_late(tmp_path):
    """Past its exp and the grace (and the two grace periods the window holds) an answer is late,
    as a keyed request's record would be."""
    path = tmp_path / "too-late.jsonl"
    _local_log(path, exp=10, answer_after=120.0)
    assert check(path).counts.get("RMB-LOCAL-002") == 1
