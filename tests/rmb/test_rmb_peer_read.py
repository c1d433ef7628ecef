"""RMB's ``--jobs`` on plain files: the shares read the log themselves, each dealing the others
their lines of its chunks with the clock's events of the chunk (the core's rmkit/peerread.py,
conformance/rmb/checker.py ``_read_by_peers``). Each share must check what it checks when it
reads every line itself; a share that fails or dies, or an input that cannot be read further,
must end the run as it ends when each share reads the log whole."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest
from peer_read_support import break_at, odd_inputs as make_odd_inputs, the_break, with_chunk

import rmkit.peerread as peerread
from rmkit.conformance.rmb import checker
from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards
from rmkit.render.jsonout import render_json

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "fixtures" / "rmb" / "rules"
DIRECTORY = str(RULES / "directory.json")


def _report(inputs: list[str], jobs: int) -> dict:
    rep = RmbLogChecker(RmbShards("spec", DIRECTORY, max_examples=0), jobs=jobs).run(inputs)
    out = orjson.loads(render_json(rep))
    for name in ("elapsed_s", "records_per_s", "jobs"):  # (how the run went, not what it found)
        out["metrics"].pop(name, None)
    return out


@pytest.fixture(scope="module")
def odd_inputs(tmp_path_factory) -> list[str]:
    """Every spec rule fixture's lines (each rule's violation planted; times jump back where one
    fixture follows another), cut into three inputs with what a chunk boundary could break
    (peer_read_support.odd_inputs)."""
    manifest = json.loads((RULES / "manifest.json").read_text(encoding="utf-8"))
    lines = [line for e in manifest["fixtures"] if e["profile"] == "spec"
             for line in (RULES / e["file"]).read_bytes().splitlines()]
    assert len(lines) > 100
    return make_odd_inputs(tmp_path_factory.mktemp("rmb-odd"), lines, orjson.dumps({"time": 1, "note": "x" * 70_000}))


@pytest.mark.parametrize("chunk", [2048, 1 << 20])
@pytest.mark.parametrize("jobs", [2, 3])
def test_shares_reading_report_what_one_process_reports(odd_inputs, monkeypatch, jobs, chunk):
    read: list = []
    monkeypatch.setattr(checker, "peer_batches", with_chunk(peerread.peer_batches, chunk, read))
    one = _report(odd_inputs, 1)
    assert one["unreadable"] >= 3 and one["violations"]  # (the odd lines, the planted violations)
    assert _report(odd_inputs, jobs) == one
    assert read  # (share 0, here, read by its peers' dealing)


def test_each_share_reading_the_log_whole_reports_the_same(odd_inputs, monkeypatch):
    """The other way of --jobs (standard input, gzip: each share reads every line and keeps its
    own) on the same files."""
    want = _report(odd_inputs, 2)
    monkeypatch.setattr(checker, "readable", lambda inputs: False)
    monkeypatch.setattr(checker, "peer_batches", None)  # (not called)
    assert _report(odd_inputs, 2) == want


def test_a_share_that_dies_ends_the_run_instead_of_hanging_it(odd_inputs, monkeypatch):
    real = checker._read_by_peers

    def dying(shards, inputs, k, n, net, problems, progress):
        if k == 1:
            os._exit(9)  # killed: no report, its pipes closed
        yield from real(shards, inputs, k, n, net, problems, progress)

    monkeypatch.setattr(checker, "_read_by_peers", dying)
    with pytest.raises(RuntimeError):  # (share 0, here, stopped waiting for share 1's chunks)
        RmbLogChecker(RmbShards("spec"), jobs=2).run(odd_inputs)


def test_a_share_that_fails_is_the_failure_the_run_reports(odd_inputs, monkeypatch):
    """Share 0, in this process, stops because share 1 stopped sending: share 1's own failure is
    what the run raises, not share 0's wait."""
    real = checker._read_by_peers

    def failing(shards, inputs, k, n, net, problems, progress):
        for i, batch in enumerate(real(shards, inputs, k, n, net, problems, progress)):
            if k == 1 and i == 2:
                raise ValueError("share 1 failed here")
            yield batch

    monkeypatch.setattr(checker, "_read_by_peers", failing)
    monkeypatch.setattr(checker, "peer_batches", with_chunk(peerread.peer_batches, 2048))
    with pytest.raises(ValueError, match="share 1 failed here"):
        RmbLogChecker(RmbShards("spec"), jobs=2).run(odd_inputs)


def test_an_input_that_breaks_off_is_reported_where_it_broke(odd_inputs, monkeypatch):
    """A read error in the middle of a plain file: the lines before it are checked, the line at
    the break is reported unreadable once (by the share that owns the chunk), the rest of that
    input is not read, and the next input is read whole."""
    first, second = Path(odd_inputs[0]), Path(odd_inputs[2])
    whole = RmbLogChecker(RmbShards("spec", max_examples=0), jobs=1).run([str(second)])
    broken, before = break_at(monkeypatch, first, 2048)
    monkeypatch.setattr(checker, "peer_batches", with_chunk(peerread.peer_batches, 2048))
    for jobs in (2, 3):
        rep = RmbLogChecker(RmbShards("spec", max_examples=0), jobs=jobs).run([str(first), str(second)])
        breaks = [p for p in rep.input_problems if Path(p.file).name == "first.jsonl"]
        assert [p.line for p in breaks] == [before + 1]
        assert the_break(broken, before) in breaks[0].error
        assert rep.unreadable == 1 + whole.unreadable


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_follows_the_whole_log(odd_inputs, tmp_path, jobs, monkeypatch):
    """The check reports the bytes of every input in order, up to its size, as one reader does (in
    shares, share 0, in this process): what the command line's progress bar shows. (Plain lines:
    the one reader counts the bytes of the lines it keeps, without a byte order mark or an
    over-long line's.)"""
    monkeypatch.setattr(checker, "peer_batches", with_chunk(peerread.peer_batches, 2048))
    inputs = []
    for i, path in enumerate(odd_inputs):
        plain = tmp_path / f"plain-{i}.jsonl"
        plain.write_bytes(b"".join(line + b"\n" for line in Path(path).read_bytes().splitlines()
                                   if line.startswith(b"{") and len(line) < 4096))
        inputs.append(str(plain))
    seen: dict[int, list] = {}
    calls: list[int] = []
    check = RmbLogChecker(RmbShards("spec"), jobs=jobs)

    def progress(idx, done):
        seen.setdefault(idx, []).append(done)
        calls.append(idx)

    check.progress = progress
    check.run(inputs)
    assert calls == sorted(calls)
    for idx, path in enumerate(inputs):
        size = os.path.getsize(path)
        if size:
            assert seen[idx] == sorted(seen[idx]) and seen[idx][-1] == size
