"""Corda's exact ``--jobs`` on plain files: the shares read the log themselves and deal each other
its lines (the core's rmkit/peerread.py, as REMP's shares do). Each share must check what it
checks when it reads every input itself, numbered alike; a share that fails or dies, or an input
that cannot be read further, must end the run as it ends when each share reads the log whole."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from peer_read_support import break_at, odd_inputs as make_odd_inputs, the_break, with_chunk

import rmkit.peerread as peerread
from rmkit.conformance.corda import parallel
from rmkit.conformance.corda.checker import CordaLogChecker
from rmkit.render.jsonout import render_json

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "fixtures" / "corda" / "rules" / "spec"


def _report(inputs: list[str], jobs: int) -> dict:
    rep = CordaLogChecker("spec", settled=True, jobs=jobs, max_examples=0).run(inputs)
    out = orjson.loads(render_json(rep))
    for name in ("elapsed_s", "receipts_per_s", "jobs", "shares"):  # (how the run went, not what it found)
        out["metrics"].pop(name, None)
    return out


@pytest.fixture(scope="module")
def odd_inputs(tmp_path_factory) -> list[str]:
    """Every spec rule fixture's records (each rule's violation planted), cut into three inputs
    with what a chunk boundary could break (peer_read_support.odd_inputs)."""
    lines = [line for path in sorted(RULES.glob("*.jsonl")) for line in path.read_bytes().splitlines()]
    assert len(lines) > 100
    long_line = orjson.dumps({"t": 1, "node": "bob", "event": "sent", "id": "N-long", "note": "x" * 70_000})
    return make_odd_inputs(tmp_path_factory.mktemp("corda-odd"), lines, long_line)


@pytest.mark.parametrize("chunk", [4096, 1 << 20])
@pytest.mark.parametrize("jobs", [2, 3])
def test_shares_reading_report_what_one_process_reports(odd_inputs, monkeypatch, jobs, chunk):
    read: list = []
    monkeypatch.setattr(parallel, "peer_batches", with_chunk(peerread.peer_batches, chunk, read))
    one = _report(odd_inputs, 1)
    assert one["unreadable"] >= 3 and one["violations"]  # (the odd lines, the planted violations)
    assert _report(odd_inputs, jobs) == one
    assert read  # (share 0, here, read by its peers' dealing)


def test_each_share_reading_the_log_whole_reports_the_same(odd_inputs, monkeypatch):
    """The other way of --jobs (standard input, gzip, a declared bound: each share reads every
    input and keeps its lines) on the same files."""
    want = _report(odd_inputs, 2)
    monkeypatch.setattr(parallel, "readable", lambda inputs: False)
    monkeypatch.setattr(parallel, "peer_batches", None)  # (not called)
    assert _report(odd_inputs, 2) == want


def test_a_share_that_dies_ends_the_run_instead_of_hanging_it(odd_inputs, monkeypatch):
    real = parallel._read_by_peers

    def dying(checker, inputs, k, n, net):
        if k == 1:
            os._exit(9)  # killed: no report, its pipes closed
        yield from real(checker, inputs, k, n, net)

    monkeypatch.setattr(parallel, "_read_by_peers", dying)
    with pytest.raises(RuntimeError):  # (share 0, here, stopped waiting for share 1's chunks)
        CordaLogChecker("spec", jobs=2).run(odd_inputs)


def test_a_share_that_fails_is_the_failure_the_run_reports(odd_inputs, monkeypatch):
    """Share 0, in this process, stops because share 1 stopped sending: share 1's own failure is
    what the run raises, not share 0's wait."""
    real = parallel._read_by_peers

    def failing(checker, inputs, k, n, net):
        for i, batch in enumerate(real(checker, inputs, k, n, net)):
            if k == 1 and i == 2:
                raise ValueError("share 1 failed here")
            yield batch

    monkeypatch.setattr(parallel, "_read_by_peers", failing)
    monkeypatch.setattr(parallel, "peer_batches", with_chunk(peerread.peer_batches, 4096))
    with pytest.raises(ValueError, match="share 1 failed here"):
        CordaLogChecker("spec", jobs=2).run(odd_inputs)


def test_an_input_that_breaks_off_is_reported_where_it_broke(odd_inputs, monkeypatch):
    """A read error in the middle of a plain file: the lines before it are checked, the line at
    the break is reported unreadable once (by the share that owns the chunk), the rest of that
    input is not read, and the next input is read whole."""
    first, second = Path(odd_inputs[0]), Path(odd_inputs[2])
    whole = CordaLogChecker("spec", settled=True, jobs=1, max_examples=0).run([str(second)])
    broken, before = break_at(monkeypatch, first, 1024)
    monkeypatch.setattr(parallel, "peer_batches", with_chunk(peerread.peer_batches, 1024))
    for jobs in (2, 3):
        rep = CordaLogChecker("spec", settled=True, jobs=jobs, max_examples=0).run([str(first), str(second)])
        breaks = [p for p in rep.input_problems if Path(p.file).name == "first.jsonl"]
        assert [p.line for p in breaks] == [before + 1]
        assert the_break(broken, before) in breaks[0].error
        assert rep.unreadable == 1 + whole.unreadable


def test_progress_follows_the_whole_log(odd_inputs):
    """Share 0 (this process) reports the bytes of every input in order, as one reader does."""
    seen: dict[int, list] = {}
    calls: list[int] = []
    checker = CordaLogChecker("spec", jobs=2)

    def progress(idx, done):
        seen.setdefault(idx, []).append(done)
        calls.append(idx)

    checker.progress = progress
    checker.run(odd_inputs)
    assert calls == sorted(calls)
    for idx, path in enumerate(odd_inputs):
        size = os.path.getsize(path)
        if size:
            assert seen[idx] == sorted(seen[idx]) and seen[idx][-1] == size
