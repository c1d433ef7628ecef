"""What the RMB log checker keeps of a request while it is open (:class:`Request`), and the text
its records share.

Memory follows the requests still open (:mod:`.checker`): a request whose TTL is long is held
for as long, every record of it decoded. Most of a record is text that other records repeat: a
log has few writers, events, endpoints and peers, and the lines of one request carry the
same uid, signature, ret queue, command and payload again and again (the sender's copy, the
receiver's, the handler's), and often the whole message (the sender's POST and the receiver's
answer log one message). Each distinct message and text is kept once, so that an open request
costs about a third less than its records decoded one by one. Sharing never changes what the rules
see: a message is replaced only by one that serializes to the same bytes (the same fields, in the
same order, of the same JSON types), a string only by an equal string.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

# the message fields whose text the distinct messages of one request repeat (the longest first: the
# signature alone is 130 characters); dst is a list and not shared (equal lists may hold ints and floats)
SHARED_FIELDS = ("sig", "ret", "uid", "cmd", "dat", "shm")

# a log's writers, endpoints and peers: few distinct texts on many lines (notes and queues
# name a request: "backlog.$uid", its ret, "$uid:$dst"; they are shared within the request).
# The table is bounded: past it a text is kept as read (a log of many peers costs only memory).
LINE_TEXTS_MAX = 50_000


class LineTexts:
    """One copy of each text of the record fields many lines repeat."""

    __slots__ = ("texts", "get")

    def __init__(self):
        self.texts: dict[str, str] = {}
        self.get = self.texts.get

    def _hold(self, v):
        if v is not None and len(self.texts) < LINE_TEXTS_MAX:
            self.texts[v] = v
        return v

    def share(self, rec) -> None:
        """Replace ``rec``'s line texts by the copies already held (and hold the new ones)."""
        get, hold = self.get, self._hold
        rec.who = get(rec.who) or hold(rec.who)  # (the event is one of the schema's: held once already)
        rec.endpoint = get(rec.endpoint) or hold(rec.endpoint)
        rec.peer = get(rec.peer) or hold(rec.peer)


class Request:
    """The records of one open request (one uid), in the order read, whether that is their order
    in the log (time, then position: a reader in position order sees them so unless a time goes
    back), and the message texts they share (:data:`SHARED_FIELDS`: the first record's
    values, to which later equal ones are replaced)."""

    __slots__ = ("recs", "shared", "messages", "last", "last_ref", "ordered")

    def __init__(self):
        self.recs: list = []
        self.shared: dict[str, Any] | None = None
        self.messages: dict[int, dict] = {}  # hash of a message's JSON -> the message, as first read
        self.last, self.last_ref = -math.inf, -1  # the place of the last record read
        self.ordered = True

    def append(self, rec) -> None:
        """Add ``rec`` as read."""
        self.recs.append(rec)
        t = rec.time
        if t > self.last:
            self.last, self.last_ref = t, rec.ref
        elif t == self.last and rec.ref > self.last_ref:
            self.last_ref = rec.ref
        else:
            self.ordered = False

    def add(self, rec) -> None:
        """Add ``rec``, its texts shared with the request's other records."""
        self.append(rec)
        msg = rec.msg
        shared = self.shared
        if type(msg) is dict:
            try:
                blob = orjson.dumps(msg)
            except TypeError:  # (a value JSON cannot hold: the message is kept as read)
                blob = None
            if blob is not None:
                key = hash(blob)
                got = self.messages.get(key)
                if got is None:
                    self.messages[key] = msg
                elif got is not msg and orjson.dumps(got) == blob:  # (the hash alone could collide)
                    rec.msg = got
                    msg = None
        if msg is not None and type(msg) is dict:
            if shared is None:
                shared = self.shared = {k: v for k in SHARED_FIELDS if type(v := msg.get(k)) is str}
            else:
                for k in SHARED_FIELDS:
                    v = msg.get(k)
                    if type(v) is str:
                        kept = shared.get(k)
                        if kept is None:
                            shared[k] = v
                        elif kept is not v and kept == v:
                            msg[k] = kept
        if shared is not None:
            uid = rec.uid
            if uid is not None:
                kept = shared.get("uid")
                if kept is not None and kept is not uid and kept == uid:
                    rec.uid = kept
            queue = rec.queue
            if queue is not None:
                kept = shared.get("ret")
                if kept is not None and kept is not queue and kept == queue:
                    rec.queue = kept
