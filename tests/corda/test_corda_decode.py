"""The typed decoding of Corda records (conformance/corda/decode.py) accepts exactly what the general
reading (orjson and RecordFormat.read) finds usable, with the same kind and the same values, so that
a finding never depends on the way a line took: on every line of every fixture, and on lines made
to sit on each edge of the format (missing, null, empty, out of range, of the wrong type, unknown
event or verdict, several values on one line), alone and inside batches."""

from __future__ import annotations

import orjson
import pytest
from msgspec import UNSET

from conftest import REPO
from rmkit.conformance.corda.decode import TypedRecords
from rmkit.protocols.corda.records import ROW, record_format

FIXTURES = sorted((REPO / "fixtures" / "corda" / "rules").glob("*/*.jsonl"))
BASE = {"t": 1767225600007, "node": "bob", "id": "N-f1-1-0"}
RECEIVED = {**BASE, "event": "received", "sender": "u-1", "seq": 1, "session": "s1", "delivery": "ID:1"}
ROW_ = {"node": "bob", "id": "N-f1-1-0", "sender": "u-1", "seq": 1, "tx": 7, "t": 1767225600007}


def edge_lines() -> list[bytes]:
    out = []
    for base in (RECEIVED, {**BASE, "event": "dedup", "verdict": "NEW"}, {**BASE, "event": "committed", "tx": 3},
                 {**BASE, "event": "acked", "delivery": "ID:1"}, {**BASE, "event": "sent", "sender": "u", "seq": None, "session": "s"},
                 ROW_):
        out.append(orjson.dumps(base))
        for name in [*base, "verdict", "seq", "sender", "delivery", "tx", "session", "event"]:
            for value in (None, "", "x", 0, -1, 1 << 63, (1 << 64) - 1, 1 << 70, 1.0, True, [], {}, "NEW", "new",
                          "New", "IN_FLIGHT", "dedup", "received"):
                out.append(orjson.dumps({**base, name: value}) if not isinstance(value, int) or value < 1 << 64
                           else orjson.dumps(base)[:-1] + f',"{name}":{value}}}'.encode())
            out.append(orjson.dumps({k: v for k, v in base.items() if k != name}))
    out += [b"", b"   ", b"[]", b"null", b"1", b"{", b'"text"', orjson.dumps(RECEIVED) + b"," + orjson.dumps(RECEIVED),
            orjson.dumps({"kafka": RECEIVED}), orjson.dumps({**RECEIVED, "unknown": [1, 2]})]
    return out


def general(fmt, line):
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    kind, problems = fmt.read(obj)
    return None if problems else (kind, obj)


def same(typed: TypedRecords, rec, expect) -> None:
    kind, obj = expect
    assert typed.kind[type(rec)][0] == kind
    if kind != ROW:
        assert typed.kind[type(rec)][1] == obj["event"]
    for name in type(rec).__struct_fields__:
        got = getattr(rec, name)
        assert (got is UNSET and name not in obj) or got == obj[name], (name, got, obj)


@pytest.mark.parametrize("lines", [edge_lines()] + [p.read_bytes().splitlines() for p in FIXTURES],
                         ids=["edges"] + [f"{p.parent.name}/{p.name}" for p in FIXTURES])
def test_typed_records_are_exactly_the_usable_ones(lines):
    fmt = record_format()
    typed = TypedRecords(fmt)
    alone = [typed.decode_batch([line])[0] for line in lines]
    together = typed.decode_batch(lines)
    assert len(together) == len(lines)
    for line, one, many in zip(lines, alone, together):
        expect = general(fmt, line)
        for rec in (one, many):
            if rec is None:
                # refused: the general reading takes the line (and says what is wrong with it, or
                # reads an integer the typed reading cannot hold)
                assert expect is None or any(type(v) is int and v > (1 << 63) - 1 for v in expect[1].values()), line
            else:
                assert expect is not None, line
                same(typed, rec, expect)
    assert sum(r is not None for r in alone) > len(lines) // 5  # the edges are not all refused


def test_a_clean_batch_is_decoded_whole():
    typed = TypedRecords()
    lines = [orjson.dumps(RECEIVED)] * 3 + [orjson.dumps({**BASE, "event": "dedup", "verdict": "NEW"})]
    calls = []
    typed._each = lambda ls: calls.append(ls) or []
    assert len(typed.decode_batch(lines)) == 4 and not calls
    assert len(typed.decode_batch([orjson.dumps(ROW_)] * 2)) == 2 and not calls
