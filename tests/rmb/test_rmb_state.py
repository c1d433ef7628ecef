"""What the RMB checker keeps of an open request (conformance/rmb/state.py): a record is
kept as its line and given back, decoded again, as the record the rules would have read; the
records' log order is known without sorting them."""

from __future__ import annotations

import orjson

from rmkit.conformance.rmb.state import Request
from rmkit.conformance.rmb.typedread import typed_records
from rmkit.protocols.rmb.records import Rec

MSG = {"ver": 1, "uid": "u-1", "cmd": "py.echo", "exp": 900, "try": 2, "dat": "aGk=", "src": 1, "dst": [2],
       "ret": "client.u-1", "shm": "", "now": 1790000000, "sig": "65" + "ab" * 64}


def line(t: float, msg, event: str = "http-post", **kw) -> bytes:
    return orjson.dumps({"format": "rmkit-rmb-log/1", "time": t, "who": "twin-1", "event": event, "direction": "out",
                         "queue": None, "endpoint": "/rmb-remote", "status": 202, "peer": "2@127.0.0.1:7002",
                         "uid": "u-1", "message": msg, "note": None, **kw})


def rec(ref: int, t: float, msg, event: str = "http-post", **kw) -> Rec:
    obj = orjson.loads(line(t, msg, event, **kw))
    return Rec(ref, obj)


FIELDS = ("ref", "time", "who", "twin", "event", "queue", "endpoint", "status", "peer", "uid", "msg", "note")


def fields(r) -> tuple:
    return tuple(orjson.dumps(getattr(r, k)) for k in FIELDS)  # (JSON bytes: 1 and 1.0, true and 1 differ)


def test_a_record_held_as_its_line_is_given_back_as_read():
    decode = typed_records().decode
    r = Request()
    lines = [(1, line(1.0, MSG)), (2, line(1.1, {**MSG, "try": 2.0}, event="http-answer")),
             (3, line(1.2, None, event="forward-job", note="u-1:2"))]
    for ref, text in lines:
        r.hold(ref, text, orjson.loads(text)["time"])
    got, ordered = r.records(decode)
    assert ordered
    assert [fields(g) for g in got] == [fields(Rec(ref, orjson.loads(text))) for ref, text in lines]


def test_records_kept_and_lines_held_are_judged_in_log_order():
    decode = typed_records().decode
    r = Request()
    r.append(rec(5, 2.0, None, event="forward-job", note="u-1:2"))
    r.hold(3, line(1.0, MSG), 1.0)
    r.hold(9, line(2.0, MSG, event="http-answer"), 2.0)
    r.append(rec(4, 3.0, MSG))
    got, ordered = r.records(decode)
    assert ordered and [g.ref for g in got] == [3, 5, 9, 4]


def test_the_log_order_of_the_records_is_known_as_they_are_added():
    r = Request()
    for ref, t in ((1, 1.0), (2, 1.0), (3, 2.0)):
        r.append(rec(ref, t, None))
    assert r.ordered
    r.append(rec(4, 1.5, None))  # a time that goes back: the records need sorting
    assert not r.ordered
    r = Request()
    r.append(rec(5, 1.0, None))
    r.append(rec(4, 1.0, None))  # one time, read out of position order
    assert not r.ordered


def test_the_log_order_of_lines_held_is_known_as_they_are_held():
    decode = typed_records().decode
    r = Request()
    for ref, t in ((1, 1.0), (2, 1.0), (3, 2.0)):
        r.hold(ref, line(t, MSG), t)
    got, ordered = r.records(decode)
    assert ordered and [g.ref for g in got] == [1, 2, 3]
    r.hold(4, line(1.5, MSG), 1.5)  # a time that goes back: the judgment sorts them (checker.Requests.judge)
    got, ordered = r.records(decode)
    assert not ordered and [g.ref for g in got] == [1, 2, 3, 4]
