"""`rmkit check`'s default --jobs: one process per idle core for large logs, one where fewer than two
cores are idle (the shares split the work well but win only on cores of their own:
docs/check-jobs.md), one for stdin and small logs."""

from __future__ import annotations

import json

import pytest

from rmkit import logread
from rmkit.conformance.remp import checker as remp
from rmkit.logread import MIN_PARALLEL_BYTES, auto_jobs, idle_cores

RECEIPT = {"kind": "PutIntoQueue", "message_id": "ab" * 32, "timestamp": 1700000000000, "source_id": "cd" * 32, "signature": ""}


@pytest.fixture
def large(tmp_path):
    """A log over the size one process is kept for (its first line, then sparse blank space)."""
    path = tmp_path / "receipts.jsonl"
    with open(path, "wb") as f:
        f.write(json.dumps(RECEIPT).encode() + b"\n")
        f.truncate(MIN_PARALLEL_BYTES + 1)
    return str(path)


@pytest.mark.parametrize("cores, idle, want", [
    (1, 1.0, 1),
    (2, 2.0, 2), (2, 1.6, 2), (2, 1.4, 1), (2, 0.0, 1),   # a 2-core machine: two processes only with both cores idle
    (4, 4.0, 4), (4, 2.7, 3), (4, 0.3, 1),
    (16, 16.0, 8),                                         # at most 8
])
def test_the_default_is_one_process_per_idle_core(large, monkeypatch, cores, idle, want):
    monkeypatch.setattr(logread, "usable_cores", lambda: cores)
    monkeypatch.setattr(logread, "idle_cores", lambda n: idle)
    assert auto_jobs([large]) == want


def test_stdin_and_small_logs_are_one_process_however_idle_the_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(logread, "usable_cores", lambda: 8)
    monkeypatch.setattr(logread, "idle_cores", lambda n: 8.0)
    small = tmp_path / "small.jsonl"
    small.write_text(json.dumps(RECEIPT) + "\n")
    assert auto_jobs([str(small)]) == 1 and auto_jobs(["-"]) == 1 and auto_jobs([str(tmp_path / "missing.jsonl")]) == 1


def test_idle_cores_are_the_kernels_idle_time_on_this_process_cores_else_the_load_average(monkeypatch):
    ticks = iter([(100, 1000), (250, 1200)])  # of 200 ticks on the cores, 150 idle
    monkeypatch.setattr(logread, "_cpu_ticks", lambda cpus: next(ticks))
    assert idle_cores(2, window_s=0) == pytest.approx(1.5)

    def unreadable(cpus):
        raise OSError("no /proc")

    monkeypatch.setattr(logread, "_cpu_ticks", unreadable)
    monkeypatch.setattr(logread.os, "getloadavg", lambda: (0.5, 0.0, 0.0))
    assert idle_cores(2, window_s=0) == pytest.approx(1.5)
    monkeypatch.setattr(logread.os, "getloadavg", lambda: (3.5, 0.0, 0.0))
    assert idle_cores(2, window_s=0) == 0.0


def test_the_window_starts_at_import_and_the_checks_own_start_counts_as_idle(monkeypatch):
    """A default run does not wait the whole window at its decision: it began when the kit's
    reading was imported, and the CPU the command spent since (its own start, on the core the
    check then runs on) is not other work. A mark too old to tell about now is not used."""
    now = logread.time.monotonic()
    monkeypatch.setattr(logread, "_IMPORTED", (now - 1.0, logread.time.process_time() - 0.5, (100, 1000)))
    monkeypatch.setattr(logread, "_cpu_ticks", lambda cpus: (150, 1200))  # of 200 ticks, 50 idle
    monkeypatch.setattr(logread.os, "sysconf", lambda name: 100)  # 0.5 s of this process's CPU: 50 ticks
    slept = []
    monkeypatch.setattr(logread.time, "sleep", slept.append)
    assert idle_cores(2) == pytest.approx(1.0, abs=0.02) and not slept
    monkeypatch.setattr(logread, "_IMPORTED", (now - 10.0, 0.0, (0, 0)))
    ticks = iter([(100, 1000), (250, 1200)])
    monkeypatch.setattr(logread, "_cpu_ticks", lambda cpus: next(ticks))
    assert idle_cores(2) == pytest.approx(1.5) and slept and 0 < slept[0] <= 0.2


def test_the_kernels_counters_are_read_per_core():
    got = logread._cpu_ticks(None)
    if got is None:
        pytest.skip("no /proc/stat here")
    idle, total = got
    assert 0 <= idle <= total
    one = logread._cpu_ticks({min(logread.os.sched_getaffinity(0))})
    assert one is not None and one[1] < total or logread.os.cpu_count() == 1


def test_a_run_with_the_default_jobs_takes_what_auto_jobs_picks(tmp_path, monkeypatch):
    picked = []
    monkeypatch.setattr(remp, "auto_jobs", lambda inputs: picked.append(inputs) or 1)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(RECEIPT) + "\n")
    assert remp.RempLogChecker("spec", jobs=None).run([str(path)]).records == 1 and picked == [[str(path)]]
