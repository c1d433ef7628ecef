"""The compiled reading of a chunk's clock events (``conformance/remp/_clockscan.pyx``) gives every
line the event the Python reading of that line gives (:func:`clocktrack.line_event`), and the
packed events a ``--jobs`` reader sends (:func:`clocktrack.chunk_summary`) unfold to the events
msgspec reads (:func:`clocktrack.chunk_events`): on lines drawn from every form a receipt line may
take (spacing, key order, escapes, bytes beyond ASCII, keys twice, times of every width, nested
values, Kafka envelopes, broken JSON), and on the fixtures' logs."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from hypothesis import example, given, strategies as st

from rmkit.conformance.remp import clocktrack
from rmkit.conformance.remp.clocktrack import as_events, chunk_events, chunk_summary, line_event, others

scan = pytest.importorskip("rmkit.conformance.remp._clockscan", reason="the compiled reading is built where a C compiler is found")

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "remp" / "logs"
T0 = 1_700_000_000_000
IDS = ["%064x" % (0xA0 + k) for k in range(3)] + ["ABCDEF%058x" % 7, "v1", "", "x" * 300, "X" * 300]

keys = st.sampled_from(["kind", "source_id", "timestamp", "message_id", "signature", "sent_to", "value", "k\\u0069nd",
                        "source_\\u0069d", "sourceid", "Kind", "timestamp "])
# (a byte that ends a plain string at every offset of the 8- and 16-byte steps the reading takes)
special = st.sampled_from(["\u00e9", "\t", "\"", "\\", "\u2028", "\x7f", "\x00", "~", " "])
strings = st.one_of(st.sampled_from(IDS + ["PutIntoQueue", "caf\u00e9", "tab\there", "quote\"d", "back\\slash", "\u2028"]),
                    st.text(max_size=8),
                    st.builds(lambda n, c, m: "a" * n + c + "b" * m, st.integers(0, 40), special, st.integers(0, 20)))
integers = st.one_of(st.sampled_from([0, 1, T0, T0 + 17, 10**17, 10**18 - 1, 10**18, 2**63, 2**64 - 1, 2**64, -1, -T0]),
                     st.integers(min_value=-(2**65), max_value=2**65))
scalars = st.one_of(strings, integers, st.sampled_from([None, True, False, 1.5, 1e3, -0.0]))
values = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.sampled_from(["kind", "source_id", "a"]), scalars, max_size=2))


def _dump(pairs: list, spaced: bool, ascii_only: bool) -> bytes:
    """A JSON object of ``pairs`` (a key may come twice; a key drawn with an escape is written as
    it is), compact or spaced."""
    sep, colon = (", ", ": ") if spaced else (",", ":")
    body = sep.join(f'"{k}"{colon}{json.dumps(v, ensure_ascii=ascii_only)}' for k, v in pairs)
    return ("{" + body + "}").encode()


@st.composite
def receipt_lines(draw) -> bytes:
    pairs = [("kind", draw(st.sampled_from(["PutIntoQueue", "Timeout"]))), ("source_id", draw(st.one_of(st.sampled_from(IDS), strings)))]
    if draw(st.booleans()):
        pairs.append(("timestamp", draw(st.one_of(integers, st.none()))))
    pairs += draw(st.lists(st.tuples(keys, values), max_size=3))
    order = draw(st.permutations(range(len(pairs))))
    line = _dump([pairs[i] for i in order], draw(st.booleans()), draw(st.booleans()))
    cut = draw(st.sampled_from([None, None, None, None, -1, 3, 20]))  # a line broken off
    if cut is not None:
        line = line[:cut]
    edge = draw(st.sampled_from([b"", b"", b"", b"", b" ", b"\r", b"\t", b" {}", b"x"]))
    return draw(st.sampled_from([line + edge, edge.strip() + line, line]))


@st.composite
def kafka_lines(draw) -> bytes:
    """A Kafka record (or something like one) around a receipt drawn as above."""
    inner = draw(st.one_of(st.none(), st.just(0), st.fixed_dictionaries(
        {"kind": strings, "source_id": st.sampled_from(IDS), "timestamp": st.one_of(integers, st.none())},
        optional={"signature": strings, "value": scalars, "partition": scalars})))
    record = {"value": inner}
    for name, drawn in (("topic", st.one_of(st.sampled_from(["remp", "remp-2", "T"]), scalars)),
                        ("partition", st.one_of(st.integers(0, 7), scalars)), ("offset", integers),
                        ("timestamp", st.one_of(st.just(T0), integers, scalars)), ("key", strings),
                        ("kind", strings), ("ts", integers), ("payload", scalars), ("source_id", strings)):
        if draw(st.integers(0, 9)) < (7 if name in ("topic", "partition", "offset", "timestamp", "key") else 1):
            record[name] = draw(drawn)
    order = draw(st.permutations(list(record)))
    return _dump([(k, record[k]) for k in order], draw(st.booleans()), draw(st.booleans()))


@st.composite
def other_lines(draw) -> bytes:
    return draw(st.sampled_from([
        b"", b"   ", b"{", b"[1, 2]", b'"text"', b"null", b"{}", "{\"kind\":\"\u00e9\",\"source_id\":\"a\"}".encode(),
        b'{"kind":"A","source_id":"a\xff"}', b'{"kind":"A","source_id":"a"}{"kind":"A","source_id":"b"}']))


chunks = st.lists(st.one_of(receipt_lines(), receipt_lines(), kafka_lines(), kafka_lines(), other_lines()), min_size=1, max_size=40)


def _alone(lines: list[bytes], fold: bool) -> list:
    return [line_event(line, fold) for line in lines]


def _events(lines: list[bytes], fold: bool) -> list:
    counted, ts, whos, parts = lines
    return [(t, w, p) if c else None for c, t, w, p in zip(counted, ts, whos, parts)]


@given(chunks, st.booleans())
@example([b'{"kind":"A","source_id":"a","timestamp":%d,"timestamp":5}' % T0], False)  # a key twice: msgspec takes the last
@example([b'{"k\\u0069nd":"A","source_id":"a","timestamp":5}'], False)  # a key with an escape is still the key
@example([b'{"kind":"A","source_id":"ABC","timestamp":0}', b'{"kind":"A","source_id":"abc","timestamp":00}'], True)
def test_each_line_read_in_c_has_the_event_of_its_python_reading(lines, fold):
    text = b"".join(line.replace(b"\n", b"") + b"\n" for line in lines)
    split = text.split(b"\n")[:-1]
    counted, times, writers, names, parts, part_table, left = scan.receipt_events(text, fold, False)
    ts, whos, ps = scan.event_lists(counted, times, writers, names, parts, part_table)
    alone = _alone(split, fold)
    skipped = {i for i, _, _ in left}
    for i, want in enumerate(alone):
        if i not in skipped:
            assert counted[i] and (ts[i], whos[i], ps[i]) == want, (split[i], want)
    assert all(text[a:b] == split[i] for i, a, b in left)
    summary = chunk_summary(text, fold)
    assert as_events(pickle.loads(pickle.dumps(summary))) == chunk_events([x + b"\n" for x in split], fold)
    assert _events(as_events(summary), fold) == alone


def test_the_common_lines_are_read_in_c_and_the_odd_ones_left():
    """What the reading takes on, and what it leaves (a test of the test above: were every line
    left to Python, it would pass and prove nothing)."""
    plain = [b'{"kind":"PutIntoQueue","message_id":"m","timestamp":%d,"source_id":"%s","signature":"","sent_to":2}' % (T0, IDS[0].encode()),
             b'{"kind": "Timeout", "source_id": "v1", "timestamp": null, "ok": true, "n": -3}',
             b'{"kind":"A","source_id":"v1"}\r', b' \t{"kind":"A" , "source_id" : "v1" ,"timestamp":0 } ',
             b'{"topic":"remp","partition":2,"offset":7,"timestamp":%d,"key":"m","value":{"kind":"A","source_id":"v2","timestamp":0}}' % T0,
             b'{"partition":"p","timestamp":null,"value":{"kind":"A","source_id":"v2","timestamp":5}}',
             b'{"topic":null,"partition":3,"value":{"kind":"A","source_id":"v2"}}',
             b'{"kind":"A","source_id":"v3","value":{"kind":"B","source_id":"v4"}}',
             b'{"timestamp":%d,"value":{"kind":"A","source_id":"v2","timestamp":%d},"partition":0}' % (T0, T0 + 9)]
    odd = [b'{"kind":"A","source_id":"v1","timestamp":1.5}', b'{"kind":"A","source_id":"v1","timestamp":-1}',
           b'{"kind":"A","source_id":"v1","timestamp":1234567890123456789}', b'{"kind":"A","source_id":"v1","timestamp":"5"}',
           b'{"kind":"A","source_id":"v1","timestamp":true}', b'{"kind":"A","source_id":"v1","x":{}}',
           b'{"kind":"A","source_id":"v\\u0031"}', b'{"kind":"A","source_id":"v1","kind":"B"}', b'{"kind":"A"}',
           b'{"source_id":"v1"}', b'{"kind":5,"source_id":"v1"}', b'{"kind":"A","source_id":"v1"} x', b'{"kind":"A","source_id":"v1",}',
           b'{"kind":"A","source_id":"v1","n":01}', b'{"kind":"\xc3\xa9","source_id":"v1"}', b"", b"{}",
           b'{"topic":5,"partition":1,"value":{"kind":"A","source_id":"v2"}}', b'{"partition":-1,"value":{"kind":"A","source_id":"v2"}}',
           b'{"ts":5,"payload":{"kind":"A","source_id":"v2"}}', b'{"ts":5,"value":{"kind":"A","source_id":"v2"}}',
           b'{"value":{"kind":"A","source_id":"v2","value":{}}}', b'{"value":"{\\"kind\\":\\"A\\"}"}', b'{"value":{"kind":"A"}}',
           b'{"value":{"kind":"A","source_id":"v2"},"value":{"kind":"A","source_id":"v2"}}', b'{"timestamp":"x","value":{"kind":"A","source_id":"v2"}}']
    text = b"".join(x + b"\n" for x in plain + odd)
    counted, times, writers, names, parts, part_table, left = scan.receipt_events(text, False, False)
    assert [i for i, _, _ in left] == list(range(len(plain), len(plain) + len(odd)))
    assert list(counted[:len(plain)]) == [1] * len(plain)
    ts, whos, ps = scan.event_lists(counted, times, writers, names, parts, part_table)
    assert ts[:len(plain)] == [T0, None, None, None, T0, 5, None, None, T0 + 9]  # (a record's receipt's time first)
    assert whos[:len(plain)] == ["%064x" % 0xA0, "v1", "v1", "v1", "v2", "v2", "v2", "v3", "v2"]
    assert ps[:len(plain)] == [None] * 4 + [("remp", 2), None, (None, 3), None, (None, 0)]


def test_a_chunk_of_another_shape_is_read_by_msgspec():
    """A chunk of kcat envelopes (each receipt under ``payload``) is left whole to the Python
    reading: its summary is the events themselves, not packed."""
    lines = [json.dumps({"topic": "t", "partition": i % 3, "ts": T0 + i,
                         "payload": {"kind": "A", "source_id": IDS[i % 2], "timestamp": 0}}).encode() + b"\n" for i in range(100)]
    assert scan.receipt_events(b"".join(lines), False) is None
    summary = chunk_summary(b"".join(lines), False)
    assert type(summary[1]) is list and summary == chunk_events(lines, False)


def test_packed_events_unfold_in_python_too(monkeypatch):
    """A share without the compiled reading unfolds packed events as one with it does."""
    lines = [b'{"kind":"A","source_id":"%s","timestamp":%d}\n' % (IDS[i % 3].encode(), T0 + i) for i in range(50)]
    lines[7] = b'{"kind":"A","message_id":"m7","timestamp":%d}\n' % T0  # (left: read alone, its writer the message id)
    lines[9] = b"{}\n"
    summary = chunk_summary(b"".join(lines), True)
    assert type(summary[1]) is bytes
    want = as_events(summary)
    monkeypatch.setattr(clocktrack, "_scan", None)
    assert as_events(summary) == want == chunk_events(lines, True)
    assert others(summary, 5, bytes(50))[2:] == want[1:]


def test_the_fixtures_logs_read_in_c_as_by_msgspec():
    seen = 0
    for path in sorted(LOGS.glob("*.jsonl")):
        lines = path.read_bytes().splitlines(keepends=True)
        for at in range(0, len(lines), 200):
            chunk = lines[at:at + 200]
            text = b"".join(chunk)
            if not text.endswith(b"\n"):
                continue
            for fold in (False, True):
                summary = chunk_summary(text, fold)
                assert as_events(summary) == chunk_events(chunk, fold), path.name
                seen += type(summary[1]) is bytes
    assert seen > 10
