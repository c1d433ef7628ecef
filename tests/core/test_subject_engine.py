"""The core's streaming engine (rmkit/subjects.py): subjects judged once the log's clock passes
their horizon, late records handed over, memory following the open subjects, and the log's clock
(two sources; the slowest partition still delivering)."""

from __future__ import annotations

import math

import pytest

from rmkit.subjects import LogClock, SubjectEngine, slowest_partition


class Recorder:
    """A protocol in miniature: a subject is the list of its records; its horizon is the latest
    record's time plus ``grace``; judgments and late records are written down."""

    def __init__(self, grace: float = 10.0, remember_s: float = 0.0, clock: LogClock | None = None):
        self.grace = grace
        self.judged: list[tuple] = []
        self.lates: list[tuple] = []
        self.engine = SubjectEngine(self.open_subject, self.add, self.judge, self.on_late, clock=clock,
                                    remember_s=remember_s)

    def open_subject(self, key, t, record):
        return []

    def add(self, subject, t, record):
        subject.append(record)
        return t + self.grace if t is not None else None

    def judge(self, key, subject, at_end):
        self.judged.append((key, tuple(subject), at_end))
        return len(subject)

    def on_late(self, key, t, record, memo):
        self.lates.append((key, record, memo))


def test_a_subject_is_judged_once_the_clock_passes_its_horizon_and_not_before():
    r = Recorder(grace=10)
    e = r.engine
    e.feed(0, "a", "a0", source="s1")
    e.feed(1, "b", "b0", source="s2")
    e.feed(10, "x", "x0", source="s1")
    e.feed(10, "y", "y0", source="s2")   # the clock is at 10: a's horizon (10) is not passed
    assert r.judged == []
    e.feed(10.5, "y", "y1", source="s1")
    assert r.judged == []  # one source alone at 10.5: the clock stays at 10
    e.feed(10.5, "y", "y2", source="s2")  # the clock passes 10: a is judged, b (11) is not
    assert r.judged == [("a", ("a0",), False)]
    assert e.open == 3
    e.finish()
    assert [k for k, _, _ in r.judged] == ["a", "b", "x", "y"]
    assert dict((k, end) for k, _, end in r.judged) == {"a": False, "b": True, "x": True, "y": True}


def test_a_horizon_moves_on_with_later_records():
    r = Recorder(grace=10)
    e = r.engine
    e.feed(0, "a", "a0", source="s1")
    e.feed(8, "a", "a1", source="s2")   # a's horizon is now 18
    e.feed(15, "z", "z0", source="s1")
    e.feed(15, "z", "z1", source="s2")  # the clock at 15 passed the first horizon (10), not 18
    assert r.judged == []
    e.feed(19, "z", "z2", source="s1")
    e.feed(19, "z", "z3", source="s2")
    assert r.judged == [("a", ("a0", "a1"), False)]


def test_a_late_record_goes_to_the_late_handler_with_the_memo_until_remember_s_past_the_horizon():
    r = Recorder(grace=5, remember_s=20)
    e = r.engine
    e.feed(0, "a", "a0", source="s1")
    e.feed(0, "a", "a1", source="s2")
    e.feed(6, "x", "x0", source="s1")
    e.feed(6, "y", "y0", source="s2")
    assert [k for k, _, _ in r.judged] == ["a"]  # (horizon 5)
    e.feed(7, "a", "a-late", source="s1")
    assert r.lates == [("a", "a-late", 2)] and e.late == 1
    assert set(e.subjects) == {"x", "y"}  # the late record opened nothing
    e.feed(25, "a", "a-late-2", source="s2")  # still within 20 s of a's horizon
    assert e.late == 2
    e.feed(26, "a", "a-new", source="s1")  # past it: a new subject of the same key
    assert e.late == 2 and "a" in e.subjects and e.opened == 4


def test_a_record_past_its_open_subjects_horizon_closes_it_whatever_the_clock():
    """One reading of a log sees the subject's record only (its clock is behind), another sees
    others that moved the clock: both cut the log into the same subjects."""
    def run(with_others: bool):
        r = Recorder(grace=5, remember_s=100)
        e = r.engine
        e.feed(0, "a", "a0", source="s1")
        if with_others:
            e.feed(9, "b", "b0", source="s1")
            e.feed(9, "c", "c0", source="s2")
        e.feed(10, "a", "a-after", source="s1")
        e.feed(300, "a", "a-again", source="s1")
        e.finish()
        return [x for x in r.judged if x[0] == "a"], r.lates

    alone, others = run(False), run(True)
    assert alone[0][:1] == others[0][:1] == [("a", ("a0",), False)]
    assert alone[1] == others[1] == [("a", "a-after", 2 - 1)]
    assert alone[0][1][:2] == others[0][1][:2] == ("a", ("a-again",))


def test_without_remember_s_a_record_after_the_judgment_opens_a_new_subject():
    r = Recorder(grace=5)
    e = r.engine
    e.feed(0, "a", "a0", source="s1")
    e.feed(6, "z", "z0", source="s1")
    e.feed(6, "z", "z1", source="s2")
    e.feed(7, "a", "a1", source="s2")
    e.finish()
    assert [(k, recs) for k, recs, _ in r.judged] == [("a", ("a0",)), ("z", ("z0", "z1")), ("a", ("a1",))]
    assert e.late == 0 and e.opened == 3


def test_a_subject_without_a_horizon_waits_for_the_end():
    r = Recorder()
    r.add = lambda subject, t, record: (subject.append(record), math.inf)[1]
    r.engine.add = r.add
    e = r.engine
    for t in range(100):
        e.feed(t, "a", t, source=t % 2)
    assert r.judged == []
    e.finish()
    assert r.judged[0][0] == "a" and r.judged[0][2] is True


def test_records_without_time_join_their_subject_and_move_no_clock():
    r = Recorder(grace=1)
    e = r.engine
    e.feed(0, "a", "a0", source="s1")
    e.feed(None, "a", "a1", source="s2")
    e.feed(None, "b", "b0", source="s2")
    assert e.clock.now == 0 and r.judged == []
    e.finish()
    assert ("a", ("a0", "a1"), True) in r.judged and ("b", ("b0",), True) in r.judged


def test_memory_follows_the_open_subjects_not_the_log():
    """A long log (200,000 records of 50,000 subjects, each living 3 s, a record every 0.01 s):
    the subjects open at once stay near what one horizon holds, not the log's length."""
    r = Recorder(grace=1.0)
    e = r.engine
    n = 0
    for i in range(50_000):
        for j in range(4):
            t = i * 0.05 + j * 0.5  # records of one subject spread over 1.5 s, subjects overlapping
            e.feed(round(t, 3), i, j, source=j % 2)
            n += 1
    assert n == 200_000
    assert e.peak_open <= 60, e.peak_open  # about (1.5 s of life + 1 s grace) / 0.05 s
    assert e.judged >= 49_900 and e.open < 60
    e.finish()
    assert e.judged == 50_000 and e.open == 0 and len(e._due) == 0


def test_memory_of_remembered_judgments_is_bounded_too():
    r = Recorder(grace=1.0, remember_s=2.0)
    e = r.engine
    for i in range(20_000):
        e.feed(i * 0.1, i, "r", source=i % 2)
    assert len(e.memos) <= 40 and len(e._forget) <= 40


# -- the clock ---------------------------------------------------------------------------------
def test_one_source_running_ahead_moves_the_clock_no_further_than_the_second_source():
    c = LogClock()
    c.advance(10, "a")
    assert c.now == 10  # one source so far: its time
    c.advance(11, "b")
    assert c.now == 10
    c.advance(10_000, "a")  # a wrong clock: alone at 10,000
    assert c.now == 11
    c.advance(12, "b")
    assert c.now == 12
    assert c.final() == 12


def test_the_clock_never_goes_back():
    c = LogClock()
    for t, s in [(5, "a"), (7, "b"), (3, "a"), (2, "c"), (6, "c")]:
        c.advance(t, s)
    assert c.now == 6  # the latest two sources reached: b at 7, c at 6 (a at 5)


def test_the_clock_waits_for_the_slowest_partition_still_delivering():
    """A backlog: partition 0 is read ahead to 100 while partition 1 is at 10."""
    c = LogClock(partition_idle_records=1000)
    c.advance(10, source="x", partition=1)
    for t in range(0, 101, 10):
        c.advance(t, source=t % 3, partition=0)
    assert c.now == 10  # held by partition 1
    c.advance(20, source="y", partition=1)
    assert c.now == 20
    for t in range(30, 101, 10):
        c.advance(t, source=t % 3, partition=1)
    assert c.now == 90  # both partitions at 100, reached by one source alone: 90 is the two-source time
    assert c.final() == 90


def test_an_idle_partition_stops_holding_the_clock():
    c = LogClock(partition_idle_records=50)
    c.advance(1, "a", partition=0)
    c.advance(1, "b", partition=1)
    for i in range(40):
        c.advance(2 + i, ("a", "b")[i % 2], partition=0)
    assert c.now == 1  # partition 1 still holds it
    for i in range(40, 100):
        c.advance(2 + i, ("a", "b")[i % 2], partition=0)
    assert c.now >= 90  # partition 1 went idle after 50 records
    assert c.final() >= c.now


def test_final_lifts_the_partitions_hold():
    c = LogClock()
    c.advance(5, "a", partition=0)
    c.advance(50, "b", partition=1)
    c.advance(60, "a", partition=1)
    assert c.now == 5
    assert c.final() == 50


def test_slowest_partition_skips_the_idle():
    assert slowest_partition({0: 5, 1: 9}, {0: 10, 1: 200}, 100) == (9, 1)
    assert slowest_partition({0: 5}, {0: 10}, 100) == (None, None)


def test_the_engine_with_partitions_judges_a_backlog_as_the_log_read_live():
    """One log read live (partitions interleaved record by record) and from a backlog (batches of
    50 records per partition): the same subjects judged, none of them with a late record."""
    def records():
        out = {0: [], 1: []}
        for i in range(400):
            p = i % 2
            t = i * 1.0
            for j in range(3):
                out[p].append((t + j, f"s{i}", j, f"src{j % 2}"))
        return out

    def run(batch: int):
        r = Recorder(grace=5, remember_s=100, clock=LogClock(partition_idle_records=10_000))
        parts = records()
        k = 0
        while any(parts.values()):
            for p in (0, 1):
                chunk, parts[p] = parts[p][:batch], parts[p][batch:]
                for t, key, rec, src in chunk:
                    r.engine.feed(t, key, rec, source=src, partition=p)
                    k += 1
        r.engine.finish()
        return sorted((key, recs) for key, recs, _ in r.judged), r.engine.late

    live, live_late = run(1)
    backlog, backlog_late = run(50)
    assert live_late == 0 and backlog_late == 0
    assert live == backlog and len(live) == 400


def test_a_record_of_no_subject_moves_the_clock_through_tick():
    r = Recorder(grace=1)
    e = r.engine
    e.feed(0, "a", "a0", source="s1")
    e.tick(0, source="s2")
    e.tick(5, source="s1")
    assert r.judged == []  # one source alone at 5
    e.tick(5, source="s2")
    assert [k for k, _, _ in r.judged] == ["a"] and e.opened == 1


def test_finish_judges_a_subject_the_final_clock_passed_as_judged_in_time():
    """Partitions held the clock back; at the end their hold is lifted: a subject whose horizon
    the final clock passed is judged as in time (not at_end), with memos on."""
    r = Recorder(grace=1, remember_s=10)
    e = r.engine
    e.feed(0, "a", "a0", source="s1", partition=0)
    e.feed(50, "b", "b0", source="s2", partition=1)
    e.feed(50.5, "b", "b1", source="s1", partition=1)
    assert r.judged == [] and e.clock.now == 0
    e.finish()
    assert ("a", ("a0",), False) in r.judged and ("b", ("b0", "b1"), True) in r.judged


def _engine_as_python():
    """rmkit/subjects.py run as Python, whether or not the installed module is its compiled form."""
    import importlib.util
    from pathlib import Path

    import rmkit.subjects as subjects

    spec = importlib.util.spec_from_file_location("subjects_as_python", Path(subjects.__file__).with_name("subjects.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _drive(module, seed: int, partitions: bool, remember_s: float, own_clock: bool) -> tuple:
    """A random log through one build of the engine: times that mostly rise, one writer now and then
    far ahead, records without a time, keys that come back after their subject was judged,
    horizons that move on or cannot be told, ticks of no subject; every step written down."""
    import random

    rng = random.Random(seed)
    steps: list = []

    def add(subject, t, record):
        subject.append(record)
        roll = rng.random()
        return None if roll < 0.05 else math.inf if roll < 0.08 else (t if t is not None else 0) + rng.choice([1, 3, 10])

    clock = module.LogClock(partition_idle_records=25) if own_clock else None
    e = module.SubjectEngine(lambda key, t, record: [], add,
                             lambda key, subject, at_end: steps.append(("judged", key, tuple(subject), at_end)) or len(subject),
                             lambda key, t, record, memo: steps.append(("late", key, t, record, memo)),
                             clock=clock, remember_s=remember_s)
    t = 1000
    for i in range(600):
        t += rng.choice([0, 0, 1, 2, 7])
        source = rng.choice(["a", "b", "c"]) if rng.random() < 0.97 else "ahead"
        time = None if rng.random() < 0.04 else (t + 500 if source == "ahead" else t - rng.randrange(0, 8))
        part = rng.choice([0, 1, 2]) if partitions and rng.random() < 0.9 else None
        if rng.random() < 0.1 and time is not None:
            e.tick(time, source, part)
        else:
            e.feed(time, f"k{rng.randrange(40)}", i, source, part)
        steps.append((e.clock.now, e.open, e.opened, e.judged, e.late, e.peak_open, len(e.memos)))
    e.finish()
    return steps, e.clock.final()


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("partitions", [False, True])
def test_the_compiled_engine_steps_as_the_python_one(seed, partitions):
    """setup.py compiles rmkit/subjects.py where a C compiler is found (its C types in subjects.pxd):
    the compiled engine judges, hands over late records and counts exactly as the file run as
    Python, step by step, with and without memos and with its own clock or one given."""
    pure = _engine_as_python()
    for remember_s, own_clock in ((0.0, False), (20.0, True)):
        assert _drive(__import__("rmkit.subjects").subjects, seed, partitions, remember_s, own_clock) \
            == _drive(pure, seed, partitions, remember_s, own_clock)
