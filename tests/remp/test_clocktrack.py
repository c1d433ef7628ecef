"""What a share is given of the other shares' lines (:mod:`rmkit.conformance.remp.clocktrack`)
moves its clock exactly as those lines move one process's: a share that holds no line of a log
but is given every line's clock event ends with the clock of one process that read the whole log
(its time, its two-source time, its latest record's time and writer, its partitions' watermarks,
the records counted), on the fixtures' logs, a Kafka dump read from a backlog, and lines that
each take another path of the checker's reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from log_blocks_support import log_blocks
from rmkit.conformance.remp import clocktrack
from rmkit.conformance.remp.bulk_sim import BulkConfig, generate
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.conformance.remp.clocktrack import block, chunk_events, line_event, numbered, others, text_events
from rmkit.conformance.remp.sharded import RempShards

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "remp" / "logs"
T0 = 1_700_000_000_000
A, B, C = ("%064x" % (0xA0 + k) for k in range(3))
MID = "%064x" % 0x5E


def receipt(t, src=A, mid=MID, **more) -> dict:
    return {"kind": "PutIntoQueue", "message_id": mid, "timestamp": t, "source_id": src, "signature": "", **more}


def kafka(value, t=T0, partition=0, **more) -> dict:
    return {"topic": "remp", "partition": partition, "offset": 1, "timestamp": t, "key": MID, "value": value, **more}


# each line takes a path of the checker's reading (a record, with or without time, or no record)
EDGES = [json.dumps(x) for x in [
    receipt(T0), receipt(T0 + 5, src=B), receipt(T0 + 900, src=A.upper()),   # a source id case-folded
    receipt(T0 + 1000, src=7), receipt(T0 + 1100, src=None, mid=None),       # no source id: the message id writes
    receipt(0), receipt(1.7e12), receipt(None), receipt("soon"), receipt(True),  # no usable time
    receipt(1 << 64, src=C), receipt((1 << 64) - 1, src=C),                     # beyond 64 bits: a float to orjson
    receipt(T0 + 2000, src=B, kind="NoSuchKind"), {"kind": "PutIntoQueue"}, {"message_id": MID},
    {"hello": "world"}, [1, 2], "text", None,                                   # no field of a receipt: no record
    kafka(receipt(0, src=B), t=T0 + 3000), kafka(receipt(T0 + 3100, src=C), partition=2),
    kafka(json.dumps(receipt(0, src=A)), t=T0 + 3200, partition=1),            # a value held as a string
    kafka("{not json"), kafka(12), kafka(None), kafka([1]), kafka('"a string"'),  # broken values, a tombstone
    kafka(receipt(0, src=C), t=0), kafka(receipt(0, src=C), t=-5), kafka(receipt(0, src=C), t="x"),
    kafka({"hello": 1}, t=T0 + 3300), kafka(receipt(T0 + 3400, src=A), partition="p"),  # no receipt; no partition number
    {"topic": "remp", "partition": 3, "ts": T0 + 3500, "payload": receipt(0, src=B)},  # a kcat envelope
    {"partition": 3, "timestamp": T0 + 3600, "value": receipt(0, src=A)},            # no topic
    {"kind": "PutIntoQueue", "value": 1, "timestamp": T0 + 3700, "source_id": C},    # a kind: a receipt, not an envelope
    receipt(T0 + 4000, src=C, mc_block_id="ab"),
]] + ["", "   ", "{", '{"timestamp": 1', '{"source_id": "%s", "timestamp": %d} trailing' % (A, T0 + 5000),
      '{"kind":"PutIntoQueue","timestamp":%d,"source_id":"%s","timestamp":%d}' % (T0 + 9999, C, T0 + 4100)]  # a key twice: the last one


def clock_state(c: RempLogChecker) -> tuple:
    k = c.clock
    return c.hwm, k.pair, c.end_mark, k.top and (k.top, k.top_who), dict(k.part_wm), dict(k.part_seen), k.low


def one_process(path: Path, profile: str, lines: list[bytes]) -> RempLogChecker:
    c = RempLogChecker(profile, max_examples=0, partition_idle_receipts=7)
    c.begin([str(path)], shared=True)
    c.feed([(range(1, len(lines) + 1), lines)])
    return c


def clock_only(path: Path, profile: str, lines: list[bytes], every: int = 0) -> RempLogChecker:
    """A share given the log's clock events, holding no line of it (``every`` 0) or every
    ``every``-th line (its feed loop then takes the others' events between its own records)."""
    shards = RempShards(RempLogChecker(profile, max_examples=0, partition_idle_receipts=7)._kwargs)
    own = [(i, line) for i, line in enumerate(lines, start=1) if every and i % every == 0]
    return shards.check_share([str(path)], [([i for i, _ in own], [x for _, x in own])],
                              clock=log_blocks(shards, lines))


def logs(tmp: Path):
    yield from ((p, "ever-node" if "ever-node" in p.name else "spec") for p in sorted(LOGS.glob("*.jsonl")))
    manifest = generate(BulkConfig(seed=3, messages=600, validators=4, profile="ever-node", lifetime_s=6, files=1,
                                   violations=0.05, kafka=True), str(tmp / "kafka"), jobs=1)
    yield tmp / "kafka" / manifest["files"][0]["file"], "ever-node"
    edges = tmp / "edges.jsonl"
    edges.write_text("\n".join(EDGES) + "\n")
    yield edges, "spec"
    yield edges, "ever-node"


def test_a_share_given_every_lines_clock_events_keeps_the_one_process_clock(tmp_path):
    seen = 0
    for path, profile in logs(tmp_path):
        lines = [line + b"\n" for line in path.read_bytes().split(b"\n")[:-1]]
        one = one_process(path, profile, lines)
        share = clock_only(path, profile, lines)
        assert one.hwm is not None
        assert share.others_seen == share.seq == one.seq == one._rep.records, path.name  # the records counted
        assert share._rep.records == 0
        assert clock_state(share) == clock_state(one), path.name
        for every in (2, 3, 11):  # (11: its own records further apart than a partition may idle, 7)
            holding = clock_only(path, profile, lines, every)
            assert holding.seq == one.seq and holding._rep.records + holding.others_seen == one.seq, path.name
            assert clock_state(holding) == clock_state(one), path.name
        seen += bool(one.clock.part_wm)
    assert seen >= 2  # Kafka partitions among the logs


def test_the_events_name_the_lines_that_hold_a_record():
    lines = [x.encode() for x in EDGES]
    got = {i for i, *_ in numbered(chunk_events(lines, fold=True), 0)}
    assert 0 in got and 13 in got and 14 in got  # receipts, one with a field of a receipt only
    assert not got & {15, 16, 17, 18}  # no field of a receipt, not an object
    events = {i: (t, who, part) for i, t, who, part in numbered(chunk_events(lines, fold=True), 0)}
    assert events[2][1] == A and numbered(chunk_events(lines[2:3], fold=False), 0)[0][2] == A.upper()
    assert events[3][1] == MID and events[4][1] is None  # no source id: the message id, if any
    assert events[19] == (T0 + 3000, B, ("remp", 0))  # a stamp of 0: the Kafka record's time


@pytest.mark.parametrize("fold", [True, False])
def test_a_line_that_ends_with_its_newline_is_read_as_without(fold):
    lines = [x.encode() for x in EDGES]
    assert chunk_events([x + b"\n" for x in lines], fold) == chunk_events(lines, fold)


def test_a_share_is_given_the_events_of_the_lines_that_are_not_its_own():
    lines = [x.encode() for x in EDGES]
    events = chunk_events(lines, True)
    every = numbered(events, 100)
    pick = bytes(i % 3 == 1 for i in range(len(lines)))
    assert taken(others(events, 100, pick)) == [e for e in every if not pick[e[0] - 100]]
    assert taken(others(events, 100, bytes(len(lines)))) == every and taken(others(events, 100, b"\1" * len(lines))) == []
    assert taken(block(every)) == every


def taken(block: tuple) -> list[tuple]:
    """The events of a block (rmkit.logclock.RecordClock.queue) the clock takes, (ref, time, writer, partition)."""
    refs, take, ts, whos, parts = block
    return [(refs + i if type(refs) is int else refs[i], ts[i], whos[i], parts[i]) for i in range(len(take)) if take[i]]


def partitioned(n: int = 900) -> list[bytes]:
    """A Kafka dump of three partitions read in bursts of 10 records each (a partition idle for
    more than 7 records between its bursts), every fourth record an older time than its partition's
    latest (a watermark it does not move), receipts stamped 0 (the record's time counts)."""
    lines, marks = [], [T0, T0, T0]
    for i in range(n):
        p = (i // 10) % 3
        t = marks[p] - 5 if i % 4 == 3 else T0 + 10 * i + 700 * p
        marks[p] = max(marks[p], t)
        lines.append(json.dumps(kafka(receipt(0, src="%064x" % (0xB0 + i % 4), mid="%064x" % (i // 3)), t=t, partition=p))
                     .encode() + b"\n")
    return lines


@pytest.mark.parametrize("every", [2, 5, 11])
def test_a_shares_clock_is_the_logs_at_each_of_its_records(every, tmp_path):
    """On a dump whose partitions idle and whose records often move no watermark: at each of a
    share's own records its clock, and the record each partition last delivered, are one
    process's at that line."""
    lines = partitioned()
    path = tmp_path / "parts.jsonl"
    one = RempLogChecker("ever-node", max_examples=0, partition_idle_receipts=7)
    one.begin([str(path)], shared=True)
    want = {}
    for i, line in enumerate(lines, start=1):
        one.feed([([i], [line])])
        want[i] = one.hwm, dict(one.clock.part_seen)
    shards = RempShards(one._kwargs)
    share = RempLogChecker(**one._kwargs)
    share.begin([str(path)], shared=True)
    got = {}

    def batches():  # one own line a batch: the share's clock is read before the next is handed over
        for i in range(every, len(lines) + 1, every):
            yield [i], [lines[i - 1]]
            got[i] = share.hwm, dict(share.clock.part_seen)  # (kept on the checker as they move; the record count at the end)

    from rmkit.conformance.remp.sharded import _with_others

    share.feed(_with_others(batches(), log_blocks(shards, lines)))
    assert len(got) == len(lines) // every
    assert got == {i: want[i] for i in got}
    assert len({h for h, _ in got.values()}) > 20  # the clock moved all along
    assert share.seq == one.seq and clock_state(share) == clock_state(one)


@pytest.mark.parametrize("fold", [True, False])
def test_a_chunk_s_events_are_each_lines_own_reading(tmp_path, fold):
    """Chunks of receipts, and of Kafka records holding them, are read by a decoder of the common
    line; each line's event is still what the reading of that line alone gives."""
    chunks = 0
    for path, _ in logs(tmp_path):
        lines = path.read_bytes().split(b"\n")[:-1]
        for at in range(0, len(lines), 64):
            chunk = lines[at:at + 64]
            counted, ts, whos, parts = chunk_events(chunk, fold)
            alone = [line_event(line, fold) for line in chunk]
            assert [bool(c) for c in counted] == [e is not None for e in alone], path.name
            assert [(t, w, p) for c, t, w, p in zip(counted, ts, whos, parts) if c] == [e for e in alone if e is not None]
            chunks += 1
    upper = [json.dumps(receipt(T0 + i, src=A.upper() if i % 2 else B)).encode() for i in range(5)]
    stamped = [json.dumps(kafka(receipt(0 if i % 2 else T0 + i, src=C), t=T0 + 10 * i, partition=i % 2)).encode() for i in range(5)]
    for chunk in (upper, stamped):
        assert list(zip(*chunk_events(chunk, fold)[1:])) == [line_event(line, fold) for line in chunk]
    assert chunks > 10


def _tricky() -> list[bytes]:
    """Lines that start with "{" and end with "}" but are not one receipt each: two values on a
    line, a value whose line is followed by a line holding nothing, a value left open, a receipt
    with a kind among Kafka records."""
    a = json.dumps(receipt(T0 + 1)).encode()
    b = json.dumps(receipt(T0 + 2, src=B)).encode()
    k = json.dumps(kafka(receipt(0, src=C), t=T0 + 3)).encode()
    return [[a, a + b" " + b, b], [a + b" " + b, b"{}"], [a, b"{" + a[1:-1] + b"," + b'"x":{}', b"}"], [k, a, k],
            [k, k.replace(b'"value"', b'"kind":"Timeout","value"'), k], [a, b"{" + b[1:]], [k, b"{}", k]]


@pytest.mark.parametrize("fold", [True, False])
def test_a_chunk_s_events_read_from_its_text_are_its_lines(tmp_path, fold):
    """The events of a chunk given as its text (what a --jobs share that dealt the chunk from its
    text has) are those of its lines read one by one, on the fixtures' logs, on Kafka dumps whose
    receipts are stamped 0, and on texts whose every line looks like one object but is not."""
    chunks = [[x + b"\n" for x in chunk] for chunk in _tricky()]
    for path, _ in logs(tmp_path):
        lines = path.read_bytes().split(b"\n")[:-1]
        chunks += [[x + b"\n" for x in lines[at:at + 64]] for at in range(0, len(lines), 64)]
    chunks.append([json.dumps(kafka(receipt(0 if i % 2 else T0 + i, src=C), t=T0 + 10 * i, partition=i % 2)).encode() + b"\n"
                   for i in range(5)])
    whole = 0
    for chunk in chunks:
        text = b"".join(chunk)
        assert text_events(text, fold) == chunk_events(chunk, fold) == text_events(text, fold, chunk)
        whole += clocktrack._whole_text(text, len(chunk), fold) is not None
    assert 10 < whole < len(chunks)  # (most read at once, the tricky ones line by line)
