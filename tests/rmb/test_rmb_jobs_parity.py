"""`rmkit check --protocol rmb` reports the same with ``--jobs 1``, ``2`` and ``3`` where a line's time
jumps back: a request's own line, written after the log's clock (kept by the other requests' lines)
has passed the request's horizon, with a time before that horizon. One process has judged the
request by then and takes the line as late (judged alone); a share that saw only its own requests'
lines would still hold the request open and judge the line with it. Every share's clock takes the
other shares' lines too (conformance/rmb/checker.py), so each decides as one process does."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards
from rmkit.processes import key_share

REPO = Path(__file__).resolve().parents[2]
DIRECTORY = str(REPO / "fixtures" / "rmb" / "rules" / "directory.json")
JOBS = (2, 3)


def _builder():
    spec = importlib.util.spec_from_file_location("mk_rmb", REPO / "fixtures" / "rmb" / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    return mk


def _uids(prefix: str, apart_from: str | None, count: int, apart=None) -> list[str]:
    """``count`` uids none of which shares a share with ``apart_from`` for any of :data:`JOBS`
    (nor, with ``apart(uid, other)``, any other way of sharing a log)."""
    out, i = [], 0
    while len(out) < count:
        uid = f"{prefix}-0000-4000-8000-{i:012d}"
        i += 1
        if apart_from is None or (all(key_share(uid, n) != key_share(apart_from, n) for n in JOBS)
                                  and (apart is None or apart(uid, apart_from))):
            out.append(uid)
    return out


def _planted_log(path: Path, apart=None) -> dict:
    """A request, other requests every second for 80 s after it, and a copy of the request's
    accepted POST planted 2 s before the request's horizon but written 4 s after it. The other
    requests share no share with the request (``apart``: as :func:`_uids` takes it)."""
    mk = _builder()
    log = mk.Log("spec")
    grace = 30 + 1.5  # logcheck.yaml: horizon_s + clock_tolerance_s
    (uid,) = _uids("0a0a0a0a", None, 1)
    req = log.request(uid, t=0.0, exp=30)
    log.sent(req, 0.0)
    signed = log.copy(req, 2, 0.03)
    log.accepted(signed, 0.035)
    log.post(signed, 0.04, log.b["accepted"]["status"])
    log.answer(req, 2, 0.2)
    last = max(x["time"] for x in log.lines) - mk.T0
    horizon = last + 30 + grace  # the request's horizon: its last record, its life (exp 30), the grace
    for i, other in enumerate(_uids("0b0b0b0b", uid, 80, apart)):
        log.exchange(other, t=1.0 + i)
    lines = sorted(log.lines, key=lambda x: x["time"])
    repost = next(x for x in lines if x["event"] == "http-post" and x["uid"] == uid)
    at = next(i for i, x in enumerate(lines) if x["time"] - mk.T0 > horizon + 4)
    lines.insert(at, {**repost, "time": round(mk.T0 + horizon - 2, 3)})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return {"line": at + 1, "uid": uid}


def _found(report) -> list[tuple]:
    """A report's findings as the comparisons here hold them: rule, explanation, evidence lines."""
    return sorted((v.rule, v.explanation, tuple(sorted(e.line for e in v.evidence))) for v in report.violations)


def _findings(path: Path, jobs: int):
    report = RmbLogChecker(RmbShards("spec", DIRECTORY, max_examples=0), jobs=jobs).run([str(path)])
    return report, _found(report)


@pytest.mark.parametrize("jobs", JOBS)
def test_a_line_before_its_requests_horizon_written_after_it_is_judged_alike_in_shares(tmp_path, jobs):
    log = tmp_path / "planted.jsonl"
    planted = _planted_log(log)
    one, one_found = _findings(log, 1)
    assert one.unreadable == 0 and one.metrics["late_records"] == 1  # the planted line comes after its request was judged
    assert not any(planted["line"] in lines for _, _, lines in one_found)  # judged alone, the POST breaks no rule
    shares, shares_found = _findings(log, jobs)
    assert shares.metrics["jobs"] == jobs
    assert shares_found == one_found
    assert dict(shares.counts) == dict(one.counts)
    assert shares.metrics["late_records"] == 1


def _faulty_log(path: Path, seed: int) -> None:
    """Requests every half second, their lines planted with faults as a bad recorder makes them:
    dropped, written with a time a few seconds back, written again up to 80 s later with a time up
    to 6 s before the log's (near many a request's horizon)."""
    import random

    mk = _builder()
    rnd = random.Random(seed)
    log = mk.Log("spec")
    for i in range(240):
        log.exchange(f"{seed:04x}{i:04x}-0000-4000-8000-000000000000", t=i * 0.5, dst=(2,) if i % 3 else (2, 3))
    lines, out, later = sorted(log.lines, key=lambda x: x["time"]), [], []
    for x in lines:
        t = x["time"]
        while later and later[0][0] <= t:
            _, again = later.pop(0)
            out.append({**again, "time": round(t - rnd.uniform(0, 6), 3)})
        r = rnd.random()
        if r < 0.02:
            continue
        if r < 0.05:
            x = {**x, "time": round(t - rnd.uniform(3, 6), 3)}
        elif r < 0.12:
            later.append((t + rnd.uniform(20, 80), x))
            later.sort(key=lambda e: e[0])
        out.append(x)
    path.write_text("".join(json.dumps(x) + "\n" for x in out), encoding="utf-8")


def _in_shares(path: Path, n: int):
    """The report of ``n`` shares, each run here in turn (as ``--jobs n`` runs them in processes)."""
    from rmkit.conformance.rmb import checker

    shards = RmbShards("spec", DIRECTORY, max_examples=0)
    shares = [checker._check_share(shards, [str(path)], k, n) for k in range(n)]
    report = shards.merge([str(path)], shares)
    return report, _found(report)


@pytest.mark.parametrize("seed", range(4))
def test_shares_report_what_one_process_reports_on_a_log_with_planted_faults(tmp_path, seed):
    log = tmp_path / "faulty.jsonl"
    _faulty_log(log, seed)
    one, one_found = _findings(log, 1)
    assert one.unreadable == 0 and one_found  # the faults break rules
    for n in JOBS:
        shares, found = _in_shares(log, n)
        assert found == one_found, n
        assert shares.metrics["late_records"] == one.metrics["late_records"]


@pytest.mark.parametrize("seed", range(4))
def test_shares_reading_the_log_themselves_report_what_one_process_reports(tmp_path, seed, monkeypatch):
    """``--jobs`` on a plain file: the shares read it in chunks and send each other their lines
    and the clock's events of the chunk (rmkit/peerread.py, checker._ChunkClock); small chunks, so
    that each share reads many, its own lines of them read ahead."""
    from rmkit.conformance.rmb import checker

    log = tmp_path / "faulty.jsonl"
    _faulty_log(log, seed)
    one, one_found = _findings(log, 1)
    real, read = checker.peer_batches, []

    def small_chunks(*args, **kwargs):
        read.append(1)
        return real(*args, **{**kwargs, "chunk_bytes": 4096})

    monkeypatch.setattr(checker, "peer_batches", small_chunks)
    for n in JOBS:
        shares, found = _findings(log, n)
        assert found == one_found, n
        assert (shares.metrics["late_records"], shares.records, shares.subjects) == (one.metrics["late_records"], one.records, one.subjects)
    assert read  # (share 0, here, read by the peers' dealing)


def _audit_shares(path: Path, n: int, clocked: bool = True):
    """The report of ``n`` shares as ``rmkit audit`` runs them, without Spark: each share's own
    lines only (its requests', by the key ``--jobs`` deals by), in batches of a few lines, and the
    log's clock blocks (a block a split, log_blocks_support) for its clock to take between them."""
    from log_blocks_support import log_blocks
    from rmkit.conformance.rmb.checker import line_key

    shards = RmbShards("spec", DIRECTORY, max_examples=0)
    lines = path.read_bytes().splitlines()
    own: dict[int, list] = {k: [] for k in range(n)}
    for ref, line in enumerate(lines, start=1):
        own[key_share(line_key(line), n)].append((ref, line))
    clock = log_blocks(shards, lines) if clocked else None

    def batches(rows, size=13):  # (13: the batches' ends fall inside the blocks, and a batch spans several)
        for i in range(0, len(rows), size):
            yield [r for r, _ in rows[i:i + size]], [x for _, x in rows[i:i + size]]

    shares = [shards.check_share([str(path)], batches(rows), clock) for rows in own.values() if rows]
    report = shards.merge([str(path)], shares)
    return report, _found(report)


@pytest.mark.parametrize("seed", range(4))
def test_audit_shares_given_the_logs_clock_blocks_report_what_one_process_reports(tmp_path, seed):
    log = tmp_path / "faulty.jsonl"
    _faulty_log(log, seed)
    one, one_found = _findings(log, 1)
    assert one.unreadable == 0 and one_found and one.metrics["late_records"] > 0
    for n in (3, 8):
        shares, found = _audit_shares(log, n)
        assert found == one_found, n
        assert shares.metrics["late_records"] == one.metrics["late_records"], n
        assert shares.records == one.records
