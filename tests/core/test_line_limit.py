"""The line-size limit (logread.MAX_LINE_BYTES, docs/input-limits.md): a line past it is reported
with its number and stands as a blank line, the lines after it are read and keep their numbers;
the --jobs readers (rmkit/peerread.py) give the same lines and the same reports as the one reader."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rmkit.logread as logread
import rmkit.peerread as peerread
from rmkit.logread import UTF8_BOM, numbered_batches

LIMIT = 50


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(logread, "MAX_LINE_BYTES", LIMIT)
    monkeypatch.setattr(peerread, "MAX_LINE_BYTES", LIMIT)


def _one_reader(path, chunk_bytes, terminated):
    errors = []
    lines = [line for _, batch in numbered_batches(0, str(path), chunk_bytes=chunk_bytes, terminated=terminated,
                                                   on_error=lambda n, why: errors.append((n, why)))
             for line in batch]
    return lines, errors


def _peer_reader(path, chunk_bytes):
    lines, errors = [], []
    fd = os.open(path, os.O_RDONLY)
    try:
        for ch in peerread.plan([str(path)], chunk_bytes):
            text, longs = peerread.read_chunk_text_bounded(fd, ch)
            errors += [(len(lines) + i + 1, logread.line_too_long(size)) for i, size in longs]
            lines += logread.split_lines(text, terminated=True)[0]
    finally:
        os.close(fd)
    return lines, errors


SIZES = st.lists(st.sampled_from([0, 1, 7, LIMIT - 1, LIMIT, LIMIT + 1, 3 * LIMIT, 10 * LIMIT]), max_size=12)


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # the limit is the same for every example
@given(sizes=SIZES, newline_at_end=st.booleans(), bom=st.booleans(), chunk=st.integers(4, 120),
       tail=st.sampled_from([1, 3, 1 << 16]))
def test_lines_past_the_limit_are_blank_and_reported_alike_by_both_readers(tmp_path_factory, small_limit, sizes, newline_at_end,
                                                                            bom, chunk, tail):
    lines = [b"x" * n for n in sizes]
    data = (UTF8_BOM if bom else b"") + b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    path = tmp_path_factory.mktemp("limit") / "log.jsonl"
    path.write_bytes(data)
    # planted: what the lines must be and which are reported (a last empty line without newline is no line)
    kept = lines if newline_at_end or not lines or lines[-1] else lines[:-1]
    want = [line if len(line) <= LIMIT else b"" for line in kept]
    want_errors = [(i, logread.line_too_long(len(line))) for i, line in enumerate(kept, 1) if len(line) > LIMIT]
    assert _one_reader(path, chunk, False) == (want, want_errors)
    assert _one_reader(path, chunk, True) == ([line + b"\n" for line in want], want_errors)
    old = peerread._TAIL_BYTES
    peerread._TAIL_BYTES = tail
    try:
        assert _peer_reader(path, max(chunk, 4)) == ([line + b"\n" for line in want], want_errors)
    finally:
        peerread._TAIL_BYTES = old


def test_without_on_error_a_line_past_the_limit_is_an_input_error(tmp_path, small_limit):
    from rmkit.errors import InputError

    (tmp_path / "log").write_bytes(b"a\n" + b"x" * (LIMIT + 1) + b"\nb\n")
    with pytest.raises(InputError, match="line 2: line too long"):
        list(logread.iter_line_batches(str(tmp_path / "log")))


@pytest.mark.parametrize("protocol, jobs", [("rmb", "1"), ("rmb", "2"), ("corda", "1"), ("corda", "2"), ("remp", "1"), ("remp", "2")])
def test_check_reports_the_line_and_reads_on(tmp_path, capsys, small_limit, protocol, jobs):
    from rmkit.cli import main

    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"a": "' + b"x" * LIMIT + b'"}\n{"b": 1}\n')
    assert main(["check", "--protocol", protocol, "--jobs", jobs, "--format", "json", str(log)]) == 2
    doc = json.loads(capsys.readouterr().out)
    lines = {p["line"]: p for p in doc["input_problems"]}
    assert "line too long" in str(lines[1]) and 2 in lines, doc["input_problems"]


@pytest.mark.slow  # writes 100 MB and reads it three times
@pytest.mark.parametrize("argv", [["--protocol", "rmb"], ["--protocol", "corda"], ["--jobs", "2"]])
def test_a_100_mb_line_is_refused_in_bounded_memory_and_time(tmp_path, argv):
    """Bounds: the memory of a check without the line (here under 200 MB of RSS in any process;
    it took 560 MB) and CPU time linear in the bytes read (here under 10 s; it took a minute)."""
    import resource
    import subprocess
    import sys

    log = tmp_path / "huge.jsonl"
    with open(log, "wb") as f:  # in pieces: a child's peak memory counts the test's own at the fork
        f.write(b'{"kind": "x", "pad": "')
        for _ in range(100):
            f.write(b"a" * 1_000_000)
        f.write(b'"}\n{"kind": "y"}\n')
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "rmkit", "check", "--format", "json", *argv, str(log)], capture_output=True,
                          timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    problems = json.loads(done.stdout)["input_problems"]
    assert done.returncode == 2 and "line too long (100,000,024 bytes)" in str(problems[0]) and problems[0]["line"] == 1, problems
    assert after.ru_maxrss < 200 * 1024, after.ru_maxrss  # KB: the largest child so far
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 10
