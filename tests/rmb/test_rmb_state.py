"""What the RMB checker keeps of an open request (conformance/rmb/state.py): records that repeat a
message or its texts share one copy, and sharing never changes what the rules read (a message is
shared only with one of the same JSON bytes: 1 and 1.0, true and 1 are other messages); the
records' log order is known without sorting them."""

from __future__ import annotations

import orjson

from rmkit.conformance.rmb.state import LineTexts, Request
from rmkit.protocols.rmb.records import Rec

MSG = {"ver": 1, "uid": "u-1", "cmd": "py.echo", "exp": 900, "try": 2, "dat": "aGk=", "src": 1, "dst": [2],
       "ret": "client.u-1", "shm": "", "now": 1790000000, "sig": "65" + "ab" * 64}


def rec(ref: int, t: float, msg, event: str = "http-post", **kw) -> Rec:
    line = {"time": t, "who": "twin-1", "event": event, "queue": None, "endpoint": "/rmb-remote", "status": 202,
            "peer": "2@127.0.0.1:7002", "uid": "u-1", "message": msg, "note": None, **kw}
    return Rec(ref, orjson.loads(orjson.dumps(line)))  # (each record its own decoded objects, as read)


def test_a_message_logged_twice_is_kept_once():
    r = Request()
    a, b = rec(1, 1.0, MSG), rec(2, 1.1, MSG, event="http-answer")
    r.add(a)
    r.add(b)
    assert b.msg is a.msg and b.msg == MSG


def test_equal_values_of_other_json_types_are_other_messages():
    r = Request()
    r.add(rec(1, 1.0, MSG))
    for change in ({"try": 2.0}, {"ver": True}, {"dst": [2.0]}):
        other = rec(2, 1.1, {**MSG, **change})
        r.add(other)
        assert orjson.dumps(other.msg) == orjson.dumps({**MSG, **change})  # the rules read what the line said


def test_texts_of_other_messages_of_the_request_are_shared():
    r = Request()
    first = rec(1, 1.0, MSG)
    pushed = rec(2, 1.2, {**MSG, "ret": "msgbus.system.reply"}, event="to-handler", queue="client.u-1")
    r.add(first)
    r.add(pushed)
    assert pushed.msg is not first.msg
    assert pushed.msg["sig"] is first.msg["sig"] and pushed.msg["uid"] is first.msg["uid"]
    assert pushed.uid is first.msg["uid"] and pushed.queue is first.msg["ret"]
    assert pushed.msg["ret"] == "msgbus.system.reply"


def test_a_logs_writers_endpoints_and_peers_are_held_once():
    texts = LineTexts()
    a, b = rec(1, 1.0, None), rec(2, 1.0, None)
    texts.share(a)
    texts.share(b)
    assert b.who is a.who and b.endpoint is a.endpoint and b.peer is a.peer


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
