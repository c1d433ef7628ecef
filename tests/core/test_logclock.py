"""The log's clock (rmkit.logclock): one rule, compiled or not, stepped a record at a time or over a
queue of other processes' records, and the core engine's LogClock as one of its settings."""

from __future__ import annotations

import importlib.util
import pickle
import random
from pathlib import Path

import pytest

import rmkit.logclock as logclock
from rmkit.logclock import COUNTED, MOVED, PASSED, TOP, RecordClock
from rmkit.subjects import LogClock


def _pure():
    """rmkit/logclock.py run as Python, whether or not the installed module is its compiled form."""
    spec = importlib.util.spec_from_file_location("logclock_as_python", Path(logclock.__file__).with_name("logclock.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PURE = _pure()


def stream(seed: int, n: int = 400, partitions: bool = True) -> list[tuple]:
    """(time or None, writer, partition or None) records: times that mostly rise, a writer that
    runs ahead now and then, partitions that go quiet and come back."""
    rng = random.Random(seed)
    t = 1000
    out = []
    for _ in range(n):
        t += rng.choice([0, 0, 1, 5, 40])
        who = rng.choice(["a", "b", "c", None]) if rng.random() < 0.97 else "ahead"
        time = None if rng.random() < 0.05 else (t + 10_000 if who == "ahead" else t - rng.randrange(0, 60))
        part = None
        if partitions and rng.random() < 0.8:
            part = ("topic", rng.choice([0, 1, 2] if rng.random() < 0.9 else [7]))
        out.append((time, who, part))
    return out


def state(c) -> tuple:
    return c.now, c.top, c.top_who, c.top_ref, c.pair, dict(c.part_wm), dict(c.part_seen), c.final()


def stepped(module, records, idle: int, single: bool = False) -> list[tuple]:
    c = module.RecordClock(idle, single, idle_every_record=single)
    out = []
    for seq, (t, who, part) in enumerate(records, 1):
        got = c.advance(t, who, part, seq, seq) if t is not None else 0
        out.append((got,) + state(c))
    return out


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("single", [False, True])
def test_the_compiled_clock_steps_as_the_python_one(seed, single):
    records = stream(seed)
    assert stepped(logclock, records, 30, single) == stepped(PURE, records, 30, single)


def test_the_clock_never_goes_back_and_two_writers_move_it():
    c = RecordClock()
    assert c.advance(100, "a", None, 1, 1) == TOP and c.now is None  # one writer moves nothing alone
    assert c.advance(200, "a", None, 2, 2) == TOP and c.now is None
    assert c.advance(150, "b", None, 3, 3) == MOVED and c.now == 150
    assert c.advance(120, "b", None, 4, 4) == 0 and c.now == 150
    assert c.advance(300, "b", None, 5, 5) == TOP | MOVED and c.now == 200 and c.top_ref == 5
    assert c.final() == 200
    assert RecordClock(single_writer=True).advance(100, "a", None, 1, 1) == TOP | MOVED


def test_the_slowest_partition_holds_the_clock_until_it_goes_idle():
    c = RecordClock(partition_idle=3)
    c.advance(100, "a", "p0", 1, 1)
    c.advance(500, "b", "p1", 2, 2)
    assert c.now == 100  # p0 holds it at its watermark
    c.advance(510, "a", "p1", 3, 3)
    c.advance(520, "b", "p1", 4, 4)
    assert c.now == 100
    c.advance(530, "a", "p1", 5, 5)  # p0 idle for more than 3 records: it holds nothing
    assert c.now == 520 and c.final() == 520


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("partitions", [False, True])
def test_the_core_engines_clock_is_one_setting_of_the_one_clock(seed, partitions):
    """rmkit.subjects.LogClock (the SubjectEngine's) is RecordClock in one setting: it counts only
    records with a time, lets one writer's time count while the log has shown no other, and looks
    for the slowest partition at every record; a RecordClock so set and so fed steps as it does."""
    core = LogClock(partition_idle_records=30)
    ours = RecordClock(30, single_writer=True, idle_every_record=True)
    for seq, (t, who, part) in enumerate((r for r in stream(seed, partitions=partitions) if r[0] is not None), 1):
        assert core.advance(t, who, part) == bool(ours.advance(t, who, part, seq, seq) & MOVED)
        assert (core.now, core.rule.top, core.rule.pair, core.final()) == (ours.now, ours.top, ours.pair, ours.final())


def queued(module, records, before_every: int, idle: int) -> list[tuple]:
    """The records queued in blocks and taken up to every ``before_every``-th reference, acting on
    each stop as a caller does (noting it, then calling again)."""
    c = module.RecordClock(idle)
    for at in range(0, len(records), 50):
        part = records[at:at + 50]
        c.queue(at + 1, bytes(r[0] is not None or i % 2 for i, r in enumerate(part)), [r[0] for r in part],
                [r[1] for r in part], [r[2] for r in part])
    seq, out = 0, []
    for before in range(before_every, len(records) + before_every + 1, before_every):
        while True:
            seq, why, taken, after = c.advance_queued(before, seq, 1200, 8)
            out.append((before, seq, why, taken, after) + state(c))
            if not why:
                break
    return out


@pytest.mark.parametrize("seed", range(8))
def test_queued_records_are_taken_as_one_by_one_and_the_stops_come_where_they_are_due(seed):
    records = stream(seed)
    got = queued(logclock, records, 7, 30)
    assert got == queued(PURE, records, 7, 30)
    # one by one: the same clock at every stop, records counted as the queue numbers them
    one = RecordClock(30)
    seq = 0
    expected = []
    for i, (t, who, part) in enumerate(records):
        if t is None and not i % 2:
            continue  # (a line that holds no record: not taken)
        seq += 1
        moved = one.advance(t, who, part, seq, i + 1) if t is not None else 0
        why = (PASSED if moved & MOVED and one.now >= 1200 else 0) | (COUNTED if not seq % 8 else 0)
        if why:
            expected.append((seq, why) + state(one))
    assert [(g[1], g[2]) + g[5:] for g in got if g[2]] == expected
    assert sum(g[3] for g in got) == seq


def test_a_clock_with_records_queued_travels_between_processes():
    c = RecordClock(30)
    records = stream(3)
    c.queue(1, b"\1" * len(records), [r[0] for r in records], [r[1] for r in records], [r[2] for r in records])
    c.advance_queued(100, 0, 10**9, 1 << 20)
    copy = pickle.loads(pickle.dumps(c))
    assert state(copy) == state(c)
    assert copy.advance_queued(10**9, 99, 10**9, 1 << 20) == c.advance_queued(10**9, 99, 10**9, 1 << 20)
    assert state(copy) == state(c)
