# cython: annotation_typing=False
"""The log's clock for the shares of a REMP check: what each record of a log tells the clock.

Why: a share of ``rmkit check --jobs`` or of ``rmkit audit`` judges the records of some messages
only, but the checker's decisions follow the *log's* clock (the latest time two different sources
reached, held back to the slowest Kafka partition still delivering): when a message closes, when a
receipt is late, when a judged message's tomb is forgotten. A share whose clock were computed from
its own records would lag the log's, and judge a receipt appended late as one of a message still
open. So every share is given, besides its own lines, the *clock events* of the others' lines, and
runs the one checker's clock over all of them in log order (:meth:`RempLogChecker.feed`): its
clock is then the log's at every record.

A clock event is what the checker reads of a record for its clock alone, no more: ``(line, time,
who, partition)`` for every line the checker counts as a record (a receipt, or a Kafka record
holding one): the time it uses (the receipt's ``timestamp`` when usable, else the Kafka record's),
who wrote it (the source id as the checker compares it, or the message id where a receipt names no
source) and its Kafka partition ((topic, partition), or None). A line that is no record (blank, not
JSON, not an object, a tombstone, an envelope whose value is broken, an object with no field of a
receipt) gives no event, as the checker does not count it. The reading is the checker's own
(:mod:`rmkit.logread`'s Kafka rules, the same tests of a usable time), with a decoder that reads
those few fields and skips the rest.
"""

from __future__ import annotations

import os
import pickle
from itertools import compress
from operator import attrgetter
from typing import Any, Optional

import msgspec
import orjson

from rmkit.linescan import braced_lines
from rmkit.logread import kafka_value_field, split_lines, unwrap_kafka

_UNSET = msgspec.UNSET
# orjson reads an integer literal beyond 64 unsigned bits as a float: no usable time, as the checker finds
_INT_END = 1 << 64


class _Fields(msgspec.Struct, gc=False):
    """A line's fields the clock reads (any other field is skipped); absent ones UNSET."""

    kind: Any = _UNSET
    message_id: Any = _UNSET
    source_id: Any = _UNSET
    timestamp: Any = _UNSET
    signature: Any = _UNSET
    # a Kafka record (or kcat -J envelope): its receipt, time and partition
    value: msgspec.Raw = _UNSET
    payload: msgspec.Raw = _UNSET
    ts: Any = _UNSET
    topic: Any = _UNSET
    partition: Any = _UNSET


_decode = msgspec.json.Decoder(_Fields).decode
_RECEIPT_FIELDS = ("kind", "message_id", "source_id", "timestamp", "signature")  # a record has at least one


def _usable(ts) -> bool:
    return type(ts) is int and 0 <= ts < _INT_END


def _receipt_event(f: _Fields, kts, fold: bool):
    """(time, who) of a receipt read as :class:`_Fields`, None when it has no field of a receipt."""
    if f.kind is _UNSET and f.message_id is _UNSET and f.source_id is _UNSET and f.timestamp is _UNSET \
            and f.signature is _UNSET:
        return None
    ts = f.timestamp
    t = (ts if _usable(ts) else 0) or kts  # (0 or unusable: the Kafka record's time, if any)
    src = f.source_id
    if type(src) is str:
        who = src.lower() if fold else src
    else:
        mid = f.message_id
        who = None if mid is _UNSET else mid
    return t, who


def line_event(line: bytes, fold: bool):
    """(time, who, partition) of one line, or None when the checker counts no record on it."""
    body = line[:-1] if line[-1:] == b"\n" else line
    try:
        f = _decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _general_event(body, fold)
    if f.kind is _UNSET and (f.value is not _UNSET or f.payload is not _UNSET):  # a Kafka record or kcat envelope
        raw = f.value if f.value is not _UNSET else f.payload
        head = bytes(raw)[:1]
        if head != b"{":  # a value held as a string, null, or broken: the general reading's rules
            return _general_event(body, fold)
        try:
            inner = _decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return _general_event(body, fold)
        ktime = f.timestamp if f.timestamp is not _UNSET else f.ts if f.ts is not _UNSET else None
        kts = ktime if type(ktime) is int and 0 < ktime < _INT_END else None
        got = _receipt_event(inner, kts, fold)
        if got is None:
            return None
        part = f.partition
        return got + (((None if f.topic is _UNSET else f.topic), part) if type(part) is int else None,)
    got = _receipt_event(f, None, fold)
    return None if got is None else got + (None,)


def _general_event(body: bytes, fold: bool):
    """The reading of :meth:`RempLogChecker._feed`'s general path (orjson into a dict)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    kts = part = None
    if kafka_value_field(obj) is not None:
        rec = obj
        obj, kts, _, err, _ = unwrap_kafka(rec)
        if err or obj is None:
            return None
        part = rec.get("partition")
        part = (rec.get("topic"), part) if type(part) is int else None
    if obj.keys().isdisjoint(_RECEIPT_FIELDS):
        return None
    ts = obj.get("timestamp")
    t = (ts if type(ts) is int and ts >= 0 else 0) or kts
    src = obj.get("source_id")
    who = (src.lower() if fold else src) if type(src) is str else obj.get("message_id")
    return t, who, part


class _Plain(msgspec.Struct, gc=False):
    """A receipt as nearly every line holds one: a kind, a source id, a time that is an integer
    within 64 bits, or none (any other line is read by :func:`line_event`)."""

    kind: str
    source_id: str
    timestamp: Optional[int] = None


class _Record(msgspec.Struct, gc=False):
    """A Kafka record as nearly every line of a dump holds one: its receipt a :class:`_Plain`."""

    value: _Plain
    kind: Any = _UNSET  # (a line with a kind is a receipt, not a record: read by line_event)
    timestamp: Any = _UNSET
    ts: Any = _UNSET
    topic: Any = None
    partition: Any = None


_decode_plain = msgspec.json.Decoder(_Plain).decode
_decode_record = msgspec.json.Decoder(_Record).decode


def _decode_all(decode, lines: list) -> list:
    """Each line decoded, None where ``decode`` refuses it (one C loop that goes on after a
    refused line)."""
    out: list = []
    fields = map(decode, lines)
    while True:
        try:
            out.extend(fields)
            return out
        except (msgspec.DecodeError, msgspec.ValidationError):
            out.append(None)


def chunk_events(lines: list, fold: bool) -> tuple[bytes, list, list, list]:
    """The clock events of a chunk's lines, one per line: (a byte per line, 1 where the line holds
    a record; each line's time, writer and partition, None where it holds none). Equal writers are
    one string (they travel pickled: each once)."""
    n = len(lines)
    counted = bytearray(n)
    ts: list = [None] * n
    whos: list = [None] * n
    parts: list = [None] * n
    if not n:
        return b"", ts, whos, parts
    names: dict = {}  # source id -> as compared (one string each)
    try:  # a Kafka dump's chunk, or receipts: as its first line
        records = _decode_record(lines[0]).kind is _UNSET
    except (msgspec.DecodeError, msgspec.ValidationError):
        records = False
    held: dict = {}  # (topic, partition) -> one tuple each
    for i, f in enumerate(_decode_all(_decode_record if records else _decode_plain, lines)):
        if f is not None and records:
            if f.kind is not _UNSET:
                f = None
            else:
                ktime = f.timestamp if f.timestamp is not _UNSET else f.ts if f.ts is not _UNSET else None
                part = f.partition
                if type(part) is int:
                    part = (f.topic, part)
                    parts[i] = held.setdefault(part, part)
                f = f.value
        if f is None:
            ev = line_event(lines[i], fold)
            if ev is None:
                continue
            t, who, part = ev
            parts[i] = part if part is None else held.setdefault(part, part)
            if type(who) is str:
                who = names.setdefault(who, who)
        else:
            t = f.timestamp
            if t is None or not 0 < t < _INT_END:
                t = None
            if records and t is None and type(ktime) is int and 0 < ktime < _INT_END:
                t = ktime  # (a receipt stamped 0, or not at all: the Kafka record's time)
            src = f.source_id
            who = names.get(src)
            if who is None:
                who = names[src] = src.lower() if fold else src
        counted[i] = 1
        ts[i] = t
        whos[i] = who
    return bytes(counted), ts, whos, parts


_plain_lines = msgspec.json.Decoder(_Plain).decode_lines
_record_lines = msgspec.json.Decoder(_Record).decode_lines
_TIMESTAMP, _SOURCE, _KIND, _VALUE = attrgetter("timestamp"), attrgetter("source_id"), attrgetter("kind"), attrgetter("value")
_TOPIC, _PARTITION = attrgetter("topic"), attrgetter("partition")


def text_events(text: bytes, fold: bool, lines: list | None = None) -> tuple[bytes, list, list, list]:
    """:func:`chunk_events` of a chunk given as its text (lines, each ending with its newline), as
    its owner in a ``--jobs`` run has it; ``lines``: the same lines split, where the caller split
    them (then they are read). Where it did not and every line is one object on a line of its own,
    the text is decoded at once (one call, no split); any other chunk is split and read line by line."""
    if lines is None:
        n = braced_lines(text)  # (then the values decoded one after the other are the lines', one each)
        if n:
            events = _whole_text(text, n, fold)
            if events is not None:
                return events
        lines = split_lines(text, terminated=True)[0]
    return chunk_events(lines, fold)


def _whole_text(text: bytes, n: int, fold: bool):
    """The events of ``n`` lines that are each one object, where every line decodes as the common
    receipt (:class:`_Plain`) or every line as the common Kafka record (:class:`_Record`); None
    otherwise. The same values as :func:`chunk_events`' loop, a list at a time."""
    recs = None
    try:
        fs = _plain_lines(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        try:
            recs = _record_lines(text)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if len(recs) != n or set(map(_KIND, recs)) != {_UNSET}:  # (a line with a kind is a receipt: read by line_event)
            return None
        fs = list(map(_VALUE, recs))
    if len(fs) != n:
        return None
    ts = list(map(_TIMESTAMP, fs))
    try:
        usable = min(ts) > 0 and max(ts) < _INT_END
    except TypeError:  # a receipt without one
        usable = False
    if not usable:
        ts = [t if t is not None and 0 < t < _INT_END else None for t in ts]
        if recs is not None:  # (a receipt stamped 0, or not at all: the Kafka record's time)
            kts = list(map(_TIMESTAMP, recs))
            try:
                whole = set(map(type, kts)) == {int} and min(kts) > 0 and max(kts) < _INT_END
            except TypeError:
                whole = False
            if whole:  # (every record's own time usable: taken where the receipt's is not)
                ts = [k if t is None else t for t, k in zip(ts, kts)]
            for i in [] if whole else [i for i, t in enumerate(ts) if t is None]:
                r = recs[i]
                ktime = r.timestamp if r.timestamp is not _UNSET else r.ts if r.ts is not _UNSET else None
                if type(ktime) is int and 0 < ktime < _INT_END:
                    ts[i] = ktime
    srcs = list(map(_SOURCE, fs))
    names: dict = {}  # source id -> as compared (one string each)
    if fold:
        get, put = names.get, names.setdefault
        whos = [get(s) or put(s, s.lower()) for s in srcs]
    else:
        whos = list(map(names.setdefault, srcs, srcs))
    if recs is None:
        parts = [None] * n
    else:
        numbers = list(map(_PARTITION, recs))
        topics = set(map(_TOPIC, recs))
        if len(topics) == 1 and set(map(type, numbers)) == {int}:  # (one topic, every partition a number: one tuple each)
            topic = topics.pop()
            parts = list(map({p: (topic, p) for p in set(numbers)}.__getitem__, numbers))
        else:
            held: dict = {}  # (topic, partition) -> one tuple each
            parts = [held.setdefault((r.topic, p), (r.topic, p)) if type(p) is int else None for r, p in zip(recs, numbers)]
    return b"\x01" * n, ts, whos, parts


def _compiled_scan():
    """The compiled reading of a chunk's events (``_clockscan``), or None where it was not built
    (or RMKIT_PURE_PYTHON is set)."""
    if os.environ.get("RMKIT_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from rmkit.conformance.remp import _clockscan
    except ImportError:  # not built (no C compiler at install): chunks are read by msgspec
        return None
    return _clockscan


_scan = _compiled_scan()
_NO_WRITER = 0xFFFFFFFF  # (_clockscan's writer or partition index of a line without one)


def chunk_summary(text: bytes, fold: bool, lines: list | None = None) -> tuple:
    """What a ``--jobs`` reader sends the other shares of its chunk (``text``, each line ending with
    its newline; ``lines``: the same split, where the caller split them): the chunk's events, for
    :func:`others` (or :func:`as_events`) to unfold. Where the compiled reading (``_clockscan``) reads
    the chunk they stay packed as C numbers (a byte per line that holds a record; each line's time
    in 8 bytes, 0 for none; its writer as a 4-byte index into a list of names; its Kafka partition
    likewise, None where no line names one): no Python object per line to make, pickle and
    unpickle. Lines it leaves are read alone (:func:`line_event`); a chunk of another shape is read
    by :func:`text_events`, whose events are returned as they are."""
    got = _scan.receipt_events(text, fold) if _scan is not None and text else None
    if got is None:
        return text_events(text, fold, lines)
    counted, times, writers, names, parts, part_table, left = got
    if left:
        n = len(counted)
        counted, times, writers = bytearray(counted), bytearray(times), bytearray(writers)
        parts = bytearray(b"\xff" * (4 * n)) if parts is None else bytearray(parts)
        tv, wv, pv = memoryview(times).cast("Q"), memoryview(writers).cast("I"), memoryview(parts).cast("I")
        for i, start, end in left:
            ev = line_event(text[start:end], fold)
            if ev is None:
                continue
            t, who, part = ev
            if t is not None and not (type(t) is int and 0 < t < _INT_END):  # (no time an 8-byte column holds)
                return text_events(text, fold, lines)
            counted[i] = 1
            tv[i] = t or 0
            if who is not None:
                wv[i] = len(names)
                names.append(who)
            if part is not None:
                pv[i] = len(part_table)
                part_table.append(part)
        counted, times, writers = bytes(counted), bytes(times), bytes(writers)
        parts = bytes(parts) if part_table else None
    return counted, times, writers, names, (None if parts is None else (parts, part_table))


def as_events(summary: tuple) -> tuple[bytes, list, list, list]:
    """A chunk's events (as :func:`chunk_events` gives them) from its :func:`chunk_summary`."""
    if type(summary[1]) is list:
        return summary
    counted, times, writers, names, parts = summary
    if _scan is not None:
        ts, whos, parts = _scan.event_lists(counted, times, writers, names, *(parts or (None, None)))
    else:  # (packed by a process that had the compiled reading)
        ts = [t or None for t in memoryview(times).cast("Q")]
        whos = [None if w == _NO_WRITER else names[w] for w in memoryview(writers).cast("I")]
        parts = [None] * len(counted) if parts is None else [None if k == _NO_WRITER else parts[1][k] for k in memoryview(parts[0]).cast("I")]
    return counted, ts, whos, parts


def numbered(events: tuple, first: int) -> list[tuple]:
    """The events of the lines that hold a record, each (its line's reference, time, writer,
    partition); ``first``: the reference of the events' first line."""
    counted, ts, whos, parts = events
    return list(compress(zip(range(first, first + len(counted)), ts, whos, parts), counted))


def pack(events: tuple) -> bytes:
    return pickle.dumps(events, pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> tuple:
    """The events :func:`pack` packed."""
    return pickle.loads(data)


def others(events: tuple, first: int, pick: bytes) -> tuple:
    """The events (:func:`chunk_events`) of the lines that hold a record and are not this share's
    (``pick``: a byte per line, 1 where the line is its own), as a block the share's clock takes
    (:meth:`rmkit.logclock.RecordClock.queue`; ``first``: the reference of the events' first line);
    ``events`` may be packed (:func:`chunk_summary`)."""
    counted, ts, whos, parts = as_events(events)
    n = len(counted)
    theirs = (int.from_bytes(counted, "little") & ~int.from_bytes(pick, "little")).to_bytes(n, "little") if n else b""
    return first, theirs, ts, whos, parts


def block(events: list[tuple]) -> tuple:
    """Events (ref, time, writer, partition) as one block for :meth:`RecordClock.queue`."""
    if not events:
        return [], b"", [], [], []
    refs, ts, whos, parts = map(list, zip(*events))
    return refs, b"\x01" * len(refs), ts, whos, parts
