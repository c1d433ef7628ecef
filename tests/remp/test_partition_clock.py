"""The log's clock follows Kafka partitions: a dump read from a backlog (a consumer catching up reads
hundreds of records of one partition, then of the next) is judged as the same dump read live.

The dump: one simulated ever-node log (planted violations, ground truth in the simulator's
manifest), its records spread over six partitions by key with one hot partition (half the keys and
more), as a keyed producer spreads them; read once in time order (partitions interleaved finely, as
live) and once in batches of 500 records per partition in turn (a backlog). With the hot partition
read at the rate of the others, the quiet partitions run ahead in time by more than a message stays
open: the two-source clock alone then closes the hot partition's messages before their receipts
are read. The test checks that the dump is such a backlog, so that it can fail.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import orjson
import pytest

from log_blocks_support import log_blocks
from rmkit.conformance.remp.bulk_sim import BulkConfig, expected_findings, generate
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.subjects import slowest_partition
from rmkit.conformance.remp.sharded import RempShards
from rmkit.logread import unwrap_kafka

PROFILE, LIFETIME = "ever-node", 6
PARTITIONS = 6
SLOTS = (0,) * 11 + (1, 2, 3, 4, 5)  # key hash -> partition: partition 0 carries 11 of 16 keys
BATCH = 500  # records a consumer takes from one partition at a time (Kafka's max.poll.records default)
HEAD = re.compile(rb'^\{"topic":"([^"]*)","partition":\d+,"offset":\d+,')
KEY = re.compile(rb'"key":"([0-9a-fA-F]{8})')


def spread(lines: list[bytes]) -> list[tuple[int, bytes]]:
    """(partition, line) of each record in log (time) order, partition and offset rewritten in place
    (the rest of the line as the simulator wrote it); a line that names no key (a damaged record
    the simulator planted) stays in the partition of the record before it."""
    offsets = [0] * PARTITIONS
    p, out = 0, []
    for line in lines:
        head, key = HEAD.match(line), KEY.search(line)
        if head and key:
            p = SLOTS[int(key.group(1), 16) % len(SLOTS)]
            line = b'{"topic":"%s","partition":%d,"offset":%d,' % (head.group(1), p, offsets[p]) + line[head.end():]
            offsets[p] += 1
        out.append((p, line))
    return out


def backlog(records: list[tuple[int, bytes]]) -> list[bytes]:
    """The records as a consumer catching up reads them: BATCH of partition 0, of 1, ..., again."""
    queues = [[line for p, line in records if p == k] for k in range(PARTITIONS)]
    out, i = [], 0
    while any(i < len(q) for q in queues):
        for q in queues:
            out += q[i:i + BATCH]
        i += BATCH
    return out


def widest_lead(lines: list[bytes]) -> int:
    """The most the latest partition was ahead of the slowest, in ms, while the lines are read."""
    marks: dict[int, int] = {}
    lead = 0
    for line in lines:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        t = rec.get("timestamp")
        if type(t) is int:
            marks[rec["partition"]] = max(marks.get(rec["partition"], 0), t)
            lead = max(lead, max(marks.values()) - min(marks.values()))
    return lead


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    out = tmp_path_factory.mktemp("partitions")
    manifest = generate(BulkConfig(seed=5, messages=8000, validators=4, profile=PROFILE, lifetime_s=LIFETIME, files=1,
                                   violations=0.01, kafka=True), str(out / "sim"), jobs=1)
    records = spread((out / "sim" / manifest["files"][0]["file"]).read_bytes().splitlines())
    live, behind = out / "live.jsonl", out / "backlog.jsonl"
    live.write_bytes(b"".join(line + b"\n" for _, line in records))
    behind.write_bytes(b"".join(line + b"\n" for line in backlog(records)))
    planted = [v for v in manifest["violations"] + manifest["natural"]]
    return live, behind, planted


def check(path: Path, **kw):
    return RempLogChecker(PROFILE, lifetime_s=LIFETIME, max_examples=0, **kw).run([str(path)])


def findings(report) -> tuple:
    pairs = sorted((v.rule, v.subject) for v in report.violations if v.subject is not None)
    return dict(report.counts), pairs, report.metrics["late_receipts"], report.records, report.subjects, report.verdict


def test_the_dump_read_from_a_backlog_is_judged_as_the_dump_read_live(dump):
    live, behind, planted = dump
    lines = behind.read_bytes().splitlines()
    assert sorted(lines) == sorted(live.read_bytes().splitlines())  # one dump, two readings
    closes = RempLogChecker(PROFILE, lifetime_s=LIFETIME).close_after_ms
    assert widest_lead(lines) > closes > 2 * widest_lead(live.read_bytes().splitlines())  # a backlog that could fail the check
    want = check(live)
    got = check(behind)
    assert findings(got) == findings(want)
    assert got.metrics["late_receipts"] == 0
    # and both are the simulator's ground truth: every planted violation, nothing else
    expected = Counter(v["rule"] for v in planted)
    assert {(v["rule"], v["message_id"]) for v in planted if v["message_id"]} == set(findings(got)[1])
    assert got.counts.get("REMP-INPUT-001", 0) == expected["REMP-INPUT-001"] and expected["REMP-INPUT-001"]
    assert len(expected) > 5


def test_jobs_and_the_audits_shares_judge_the_backlog_as_one_process(dump):
    _, behind, _ = dump
    one = findings(check(behind))
    assert findings(check(behind, jobs=2)) == one
    shards = RempShards(RempLogChecker(PROFILE, lifetime_s=LIFETIME, max_examples=0)._kwargs)
    own: dict[int, tuple[list, list]] = {k: ([], []) for k in range(3)}
    for lineno, line in enumerate(behind.read_bytes().splitlines(), start=1):
        try:
            rec = orjson.loads(line)
            mid = (unwrap_kafka(rec)[0] or {}).get("message_id")
        except (orjson.JSONDecodeError, AttributeError):
            mid = None
        k = sum(mid.lower().encode()) % 3 if isinstance(mid, str) else lineno % 3
        own[k][0].append(lineno)
        own[k][1].append(line)
    inputs = [str(behind)]
    merged = shards.merge(inputs, [shards.check_share(inputs, [rows]) for rows in own.values() if rows[0]])
    assert findings(merged) == one
    # given the log's clock events, each share's clock is the log's at every record
    lines = [line + b"\n" for line in behind.read_bytes().splitlines()]
    clock = log_blocks(shards, lines)
    merged = shards.merge(inputs, [shards.check_share(inputs, [rows], clock) for rows in own.values() if rows[0]])
    assert findings(merged) == one


# -- the rule itself, record by record ----------------------------------------------------------
def kafka(partition: int, t: int, n: int, source: str) -> bytes:
    mid = f"{n:064x}"
    value = {"kind": "PutIntoQueue", "message_id": mid, "timestamp": 0, "source_id": source, "signature": ""}
    return json.dumps({"topic": "remp", "partition": partition, "offset": n, "timestamp": t, "key": mid, "value": value}).encode()


def clock_after(lines: list[bytes], idle: int = 50) -> list:
    c = RempLogChecker(PROFILE, max_examples=0, partition_idle_receipts=idle)
    c.begin(["log"], shared=True)
    out = []
    for i, line in enumerate(lines, start=1):
        c.feed([([i], [line])])
        out.append(c.hwm)
    return out


SRC = ["%064x" % (0xA0 + k) for k in range(4)]


def test_the_clock_is_the_slowest_partitions_time_and_an_idle_partition_holds_it_no_longer():
    t0 = 1_700_000_000_000
    ahead = [kafka(1, t0 + 1000 * i, 1000 + i, SRC[i % 2]) for i in range(20)]  # partition 1 runs 19 s ahead
    slow = [kafka(0, t0 + 100 * i, i, SRC[2 + i % 2]) for i in range(20)]       # partition 0: 1.9 s
    clock = clock_after(ahead + slow)
    assert clock[19] == t0 + 18_000  # one partition so far: its two-source time
    assert clock[-1] == t0 + 18_000  # held there (the clock never goes back)...
    lines = slow + ahead + [kafka(0, t0 + 2000 + 100 * i, 100 + i, SRC[2 + i % 2]) for i in range(10)]
    clock = clock_after(lines)
    assert clock[39] == t0 + 1900  # ...while read the other way round, partition 0 holds it at its own time
    assert clock[-1] == t0 + 2900
    # partition 0 ends; partition 1 goes on: 50 receipts on, partition 0 is idle and holds nothing
    more = [kafka(1, t0 + 20_000 + 1000 * i, 2000 + i, SRC[i % 2]) for i in range(60)]
    clock = clock_after(lines + more)
    at = len(lines)
    assert clock[at + 48] == t0 + 2900  # 49 receipts after partition 0's last: still held
    assert clock[at + 50] > t0 + 60_000  # idle: the clock follows partition 1 (its two-source time)
    # partition 0 delivers again: it joins, and holds the clock from where it is, never moving it back
    back = clock_after(lines + more + [kafka(0, t0 + 3000, 300, SRC[2]), kafka(1, t0 + 90_000, 3000, SRC[1])])
    assert back[-2] == back[-3] and back[-1] == back[-3]


def test_the_slowest_partition_is_the_least_watermark_of_the_partitions_still_delivering():
    wm = {("t", 0): 500, ("t", 1): 900, ("t", 2): 100}
    seen = {("t", 0): 10, ("t", 1): 12, ("t", 2): 3}
    assert slowest_partition(wm, seen, 0) == (100, ("t", 2))
    assert slowest_partition(wm, seen, 4) == (500, ("t", 0))  # partition 2 idle
    assert slowest_partition(wm, seen, 100) == (None, None)  # every partition idle


def test_a_dump_written_partition_after_partition_is_judged_by_its_planted_violations(tmp_path):
    """`rmkit simulate --kafka -o DIR` writes one partition per file, each a later time window: a
    partition that ended holds the running clock until it is idle, and the log's end is judged by
    the two-source time (every partition is done), so the last file's messages are judged as
    without partitions. One process and --jobs 2 find exactly the manifest's findings."""
    manifest = generate(BulkConfig(seed=1, messages=900, files=3, violations=0.05, lifetime_s=30, profile=PROFILE, kafka=True),
                        str(tmp_path), jobs=1)
    paths = [str(tmp_path / f["file"]) for f in manifest["files"]]
    for jobs in (1, 2):
        report = RempLogChecker(PROFILE, lifetime_s=30, max_examples=0, jobs=jobs).run(paths)
        got = {(v.rule, v.subject) for v in report.violations if v.rule != "REMP-INPUT-001"}
        got |= {("REMP-INPUT-001", Path(p.file).name, p.line) for p in report.input_problems}
        want = expected_findings(manifest)
        assert got == want, (jobs, sorted(want - got)[:5], sorted(got - want)[:5])
