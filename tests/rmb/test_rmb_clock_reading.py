"""What a ``--jobs`` share's clock takes of the other shares' lines (``RmbShards._clock_reader``,
read without building the message) is exactly what the record reading makes of them: a line is a
record for the clock where and only where the loop reads it as one, with the same time and
writer. Lines the fast reading cannot settle alone go to the record reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmkit.conformance.rmb.checker import RmbShards
from rmkit.conformance.rmb.typedread import typed_records

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "fixtures" / "rmb" / "rules"
MANIFEST = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))

T0 = 1_790_000_000.0
SIG = "65" + "ab" * 64

MESSAGE = {"ver": 1, "uid": "00000000-0000-4000-8000-000000000001", "cmd": "py.echo", "exp": 30, "try": 2, "dat": "aGk=",
           "src": 1, "dst": [2], "ret": "client.x", "shm": "", "now": int(T0), "sig": SIG}


def line(**changes) -> bytes:
    rec = {"format": "rmkit-rmb-log/1", "time": T0, "who": "twin-1", "event": "http-post", "direction": "out",
           "queue": None, "endpoint": "/rmb-remote", "status": 202, "peer": "2@127.0.0.1:7002",
           "uid": MESSAGE["uid"], "message": dict(MESSAGE), "note": None}
    message = changes.pop("message_changes", None)
    rec.update(changes)
    if message is not None:
        rec["message"] = {**MESSAGE, **message}
    return json.dumps(rec, separators=(",", ":")).encode()


CLEAN = line()

# lines whose message or fields the fast reading must not take at face value
CRAFTED = {
    "clean": CLEAN,
    "message null": line(message=None, event="forward-job", note=f"{MESSAGE['uid']}:2", peer=None, status=None),
    "message field the spec does not name": line(message_changes={"extra": 1}),
    "message number beyond a double": CLEAN.replace(b'"exp":30', b'"exp":1e400'),
    "message integer beyond 64 bits": CLEAN.replace(b'"exp":30', b'"exp":' + str(1 << 70).encode()),
    "message integer beyond any double": CLEAN.replace(b'"exp":30', b'"exp":' + b"9" * 400),
    "message holding an object": line(message_changes={"dat": {"a": 1}}),
    "message holding an array in an array": line(message_changes={"dst": [[2]]}),
    "message a string": line(message="text"),
    "time before 2000": line(time=900_000_000.0),
    "time a year ahead": line(time=T0 + 4e9),
    "backlog-set with a note that is no TTL": line(event="backlog-set", note="ttl -5 s"),
    "backlog-set with a TTL": line(event="backlog-set", note="ttl 30 s"),
    "forward job to no twin id": line(event="forward-job", note=f"{MESSAGE['uid']}:" + "9" * 40, message=None),
    "writer no twin": line(who="twin-x"),
    "peer no twin": line(peer="x@127.0.0.1:7002"),
    "field unknown": CLEAN[:-1] + b',"more":1}',
    "field missing": CLEAN.replace(b'"note":null,', b"").replace(b',"note":null', b""),
    "the reader's own field": CLEAN[:-1] + b',"rmkit:ref":1}',
    "not JSON": b"{not json",
    "blank": b"   ",
}


def _fixture_lines() -> list[bytes]:
    out = []
    for e in MANIFEST["fixtures"]:
        out += (ROOT / e["file"]).read_bytes().splitlines()
    return out


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_the_clock_takes_a_crafted_line_as_the_record_reading_does(name):
    shards = RmbShards("spec")
    record_of, clock_of = shards._record_reader(), shards._clock_reader()
    raw = CRAFTED[name]
    rec, got = record_of(raw, 7), clock_of(raw, 7)
    assert (got is None) == (rec is None), name
    if rec is not None:
        assert (got.time, got.who) == (rec.time, rec.who)


def test_the_clock_takes_every_fixture_line_as_the_record_reading_does():
    shards = RmbShards("spec")
    record_of, clock_of = shards._record_reader(), shards._clock_reader()
    lines = _fixture_lines()
    assert len(lines) > 100
    for i, raw in enumerate(lines):
        rec, got = record_of(raw, i), clock_of(raw, i)
        assert (got is None) == (rec is None), raw[:200]
        if rec is not None:
            assert (got.time, got.who) == (rec.time, rec.who), raw[:200]


def test_a_clean_line_is_read_for_the_clock_without_its_message():
    """The common line takes the fast reading (which builds no message), not the record reading."""
    got = typed_records().clock_event(CLEAN)
    assert got is not None and got.time == T0 and got.who == "twin-1"
    assert not isinstance(got.msg, dict)
    assert typed_records().clock_event(CRAFTED["message number beyond a double"]) is None


def test_the_share_loops_reading_is_the_typed_reading():
    """The share loop's reading (its writer and peer caches read in the loop) gives what
    TypedRecords.decode and clock_event give, line by line, a writer or peer that names no twin
    seen before and after the lines that name one."""
    from rmkit.conformance.rmb.checker import _typed_reading
    from rmkit.conformance.rmb.typedread import TypedRecords

    reader = TypedRecords()
    read, clock = _typed_reading(reader), _typed_reading(reader, clock=True)
    crafted = list(CRAFTED.values())
    lines = crafted + _fixture_lines() + crafted
    for i, raw in enumerate(lines):
        assert read(raw, i) == reader.decode(raw, i), raw[:200]
        assert clock(raw, i) == reader.clock_event(raw), raw[:200]
    assert read(CLEAN, 3).ref == 3 and read(CLEAN, 3).twin == 1
