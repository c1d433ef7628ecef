"""--jobs on plain files: the shares read the log themselves and deal each other its lines
(rmkit/peerread.py). Each must see what one reader would give it, numbered alike; a share that
dies or an input that cannot be read further must end the run as the one reader's run ends."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from peer_read_support import break_at, the_break

import rmkit.peerread as peerread
from rmkit.conformance.remp import parallel
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.logread import UTF8_BOM, numbered_batches
from rmkit.render.jsonout import render_json

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "fixtures" / "remp" / "logs"

lines_st = st.lists(st.sampled_from([b"", b"a", b"bb", b"\r", b"x" * 37, b'{"k":1}']), max_size=40)


@settings(max_examples=300, deadline=None)
@given(lines=lines_st, newline_at_end=st.booleans(), bom=st.booleans(), chunk=st.integers(4, 70),
       tail=st.sampled_from([1, 2, 5, 1 << 16]))
def test_chunks_hold_the_lines_one_reader_reads(tmp_path_factory, lines, newline_at_end, bom, chunk, tail):
    data = (UTF8_BOM if bom else b"") + b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    path = tmp_path_factory.mktemp("chunks") / "log.jsonl"
    path.write_bytes(data)
    want = [line for _, batch in numbered_batches(0, str(path), terminated=True) for line in batch]
    assert [line[:-1] for line in want] == [line for _, batch in numbered_batches(0, str(path)) for line in batch]
    got = []
    old = peerread._TAIL_BYTES
    peerread._TAIL_BYTES = tail  # the search for a chunk's last line end, a few bytes at a time
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            for ch in peerread.plan([str(path)], chunk):
                part, text = peerread.read_chunk(fd, ch)
                assert text == b"".join(part)
                got += part
        finally:
            os.close(fd)
    finally:
        peerread._TAIL_BYTES = old
    assert got == want


def test_plan_refuses_chunks_no_longer_than_a_byte_order_mark(tmp_path):
    (tmp_path / "a").write_bytes(b"x")
    with pytest.raises(ValueError, match="chunk_bytes"):
        peerread.plan([str(tmp_path / "a")], 3)


def test_only_plain_files_are_read_by_the_shares(tmp_path):
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(b"{}\n")
    packed = tmp_path / "b.log"  # gzip without the suffix: known by its magic bytes
    packed.write_bytes(gzip.compress(b"{}\n"))
    assert peerread.readable([str(plain)])
    assert not peerread.readable([str(plain), str(packed)])
    assert not peerread.readable([str(plain), "-"])
    assert not peerread.readable([str(tmp_path)])


def _report(inputs: list[str], jobs: int) -> dict:
    rep = RempLogChecker("spec", lifetime_s=60, jobs=jobs, max_examples=0).run(inputs)
    out = orjson.loads(render_json(rep))
    for name in ("elapsed_s", "receipts_per_s", "jobs"):
        out["metrics"].pop(name, None)
    return out


@pytest.fixture(scope="module")
def odd_inputs(tmp_path_factory) -> list[str]:
    """Three inputs with what a chunk boundary could break: a byte order mark, blank lines, a
    last line without a newline, an empty file, a line longer than the test's chunks."""
    d = tmp_path_factory.mktemp("odd")
    faults = (LOGS / "sim-spec-faults.jsonl").read_bytes().splitlines()
    first = d / "first.jsonl"
    first.write_bytes(UTF8_BOM + b"\n".join(faults[:1500]) + b"\n\n")
    empty = d / "empty.jsonl"
    empty.write_bytes(b"")
    rest = d / "rest.jsonl"
    long_line = orjson.dumps({"kind": "PutIntoQueue", "note": "x" * 70_000})
    rest.write_bytes(b"\n".join(faults[1500:2000] + [b"", long_line] + faults[2000:]))  # no newline at the end
    return [str(first), str(empty), str(rest)]


@pytest.mark.parametrize("chunk", [4096, 1 << 20])
@pytest.mark.parametrize("jobs", [2, 3])
def test_shares_reading_report_what_one_process_reports(odd_inputs, monkeypatch, jobs, chunk):
    monkeypatch.setattr(peerread, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(parallel, "peer_batches", _with_chunk(peerread.peer_batches, chunk))
    assert peerread.readable(odd_inputs)
    assert _report(odd_inputs, jobs) == _report(odd_inputs, 1)


def _with_chunk(fn, chunk):
    def batches(*args, **kwargs):
        return fn(*args, chunk_bytes=chunk, **kwargs)
    return batches


def test_dealt_lines_report_what_shares_reading_report(odd_inputs, monkeypatch):
    """The other way of --jobs (standard input, gzip: one reader deals the lines) on the same files."""
    want = _report(odd_inputs, 2)
    dealt = []
    real = parallel._deal
    monkeypatch.setattr(parallel, "readable", lambda inputs: False)
    monkeypatch.setattr(parallel, "_deal", lambda *args: (dealt.append(1), real(*args))[1])
    assert _report(odd_inputs, 2) == want
    assert dealt == [1]  # (the one reader dealt the lines)


def test_a_share_that_dies_ends_the_run_instead_of_hanging_it(odd_inputs, monkeypatch):
    real = parallel._read_by_peers

    def dying(conn, checker, inputs, k, links, counting):
        if k == 1:
            os._exit(9)  # killed: no report, its pipes closed
        yield from real(conn, checker, inputs, k, links, counting)

    monkeypatch.setattr(parallel, "_read_by_peers", dying)
    with pytest.raises(RuntimeError, match="share 1 of the --jobs run stopped without a report"):
        RempLogChecker("spec", jobs=2).run(odd_inputs)


def test_an_input_that_breaks_off_is_reported_where_it_broke(tmp_path, monkeypatch):
    """A read error in the middle of a plain file: the lines before it are checked, the line at
    the break is reported unreadable once (by the share that owns the chunk), the rest of that
    input is not read, and the next input is read whole."""
    src = (LOGS / "sim-spec-clean.jsonl").read_bytes()
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_bytes(src)
    second.write_bytes(src[:20_000].rsplit(b"\n", 1)[0] + b"\n")
    chunk = 64 << 10
    broken, before = break_at(monkeypatch, first, chunk)
    monkeypatch.setattr(parallel, "peer_batches", _with_chunk(peerread.peer_batches, chunk))
    for jobs in (2, 3):
        rep = RempLogChecker("spec", lifetime_s=60, jobs=jobs, max_examples=0).run([str(first), str(second)])
        assert [(Path(p.file).name, p.line) for p in rep.input_problems] == [("first.jsonl", before + 1)]
        assert the_break(broken, before) in rep.input_problems[0].error
        assert rep.records == before + len(second.read_bytes().splitlines())


def test_progress_counts_every_byte_of_the_lines(odd_inputs):
    seen: dict[int, list] = {}
    calls: list[int] = []

    def progress(idx, done):
        seen.setdefault(idx, []).append(done)
        calls.append(idx)

    RempLogChecker("spec", jobs=2, progress=progress).run(odd_inputs)
    assert calls == sorted(calls)  # in the inputs' order, as one reader reports them
    for idx, path in enumerate(odd_inputs):
        size = os.path.getsize(path)
        if not size:
            assert idx not in seen
            continue
        assert seen[idx] == sorted(seen[idx]) and seen[idx][-1] == size
