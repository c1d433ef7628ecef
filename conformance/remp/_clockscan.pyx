# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled reading of a chunk's clock events (:func:`rmkit.conformance.remp.clocktrack.chunk_summary`):
the time, source and Kafka partition of every receipt line, or Kafka record holding one, found in
one C pass over the chunk's text, packed as C numbers, with no Python object per line.

Why: a ``--jobs`` share's reader reads the events of every line of its chunk for the other shares,
which then take them on their clocks. Decoded by msgspec into Python objects (a struct, two
strings and a number per line), pickled for the pipe and unpickled at the other end, that was
most of the CPU the shares spend beyond one process's.

What is read here: a line that is one JSON object on its line (JSON whitespace around its
tokens allowed), whose keys and string values are printable ASCII without escapes, whose other
values are integers (of at most 18 digits), ``true``, ``false`` or ``null``, save one ``value``
that may be such an object, with each key read here once (its strings' ends found by
:func:`rmkit._plainstring.plain_string_end`):

- a receipt: ``kind`` and ``source_id`` strings and, if anything, a ``timestamp`` (``null`` or a
  non-negative integer), as :class:`.clocktrack._Plain` reads it: its time where above 0, its
  source id (case folded when asked);
- a Kafka record: no ``kind``, a ``value`` that is such a receipt, a ``timestamp`` as above, a
  ``topic`` that is a string or ``null`` and a ``partition``, as :class:`.clocktrack._Record`
  reads it: the receipt's time, else the record's; the receipt's source id; (topic, partition)
  where the partition is an integer.

Any other line (an array or another nested object, a fraction, an escape, a byte beyond ASCII, a
key read here twice, a kcat envelope's ``ts`` or ``payload``, a line that is not JSON) is left to
the Python reading of one line, which says what its event is: every line read here is valid
JSON, read by the same rules, so the two agree (``tests/remp/test_clockscan.py``). Built where
the machine has a C compiler (it is optional): without it, a chunk is read by msgspec.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_FromUnsignedLongLong
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy

from rmkit._plainstring cimport plain_string_end

cdef extern from "Python.h":
    object PyUnicode_DecodeLatin1(const char* s, Py_ssize_t size, const char* errors)

cdef uint32_t NO_INDEX = 0xFFFFFFFF  # a line's writer (or partition) index where it has none (or is left to Python)
NO_WRITER = NO_INDEX
cdef enum:
    TABLE = 1024  # distinct writers a chunk's table tells apart by hash (more share one slot's chain: still correct)


cdef inline Py_ssize_t _ws(const unsigned char* p, Py_ssize_t i, Py_ssize_t end):
    while i < end and (p[i] == 32 or p[i] == 9 or p[i] == 13):
        i += 1
    return i


cdef inline Py_ssize_t _integer(const unsigned char* p, Py_ssize_t i, Py_ssize_t end, uint64_t* value):
    """The index just past the non-negative integer at ``i`` (JSON's grammar: no leading zero, at
    most 18 digits, not followed by a fraction or exponent), -1 otherwise."""
    cdef Py_ssize_t j = i
    cdef uint64_t v = 0
    while j < end and 48 <= p[j] <= 57:
        v = v * 10 + (p[j] - 48)
        j += 1
    if j == i or j - i > 18 or (p[i] == 48 and j - i > 1):
        return -1
    if j < end and (p[j] == 46 or p[j] == 101 or p[j] == 69):
        return -1
    value[0] = v
    return j


cdef inline Py_ssize_t _literal(const unsigned char* p, Py_ssize_t i, Py_ssize_t end):
    if end - i >= 4 and (memcmp(p + i, b"true", 4) == 0 or memcmp(p + i, b"null", 4) == 0):
        return i + 4
    if end - i >= 5 and memcmp(p + i, b"false", 5) == 0:
        return i + 5
    return -1


cdef enum:  # the keys this reading tells apart (a bit each in Found.seen)
    K_OTHER = 0
    K_KIND = 1
    K_SOURCE = 2
    K_TIMESTAMP = 3
    K_VALUE = 4
    K_TOPIC = 5
    K_PARTITION = 6
    K_REFUSED = 7  # ts, payload: a kcat envelope, left to Python


cdef struct Found:  # what an object holds of a receipt, or of a Kafka record
    Py_ssize_t src, src_len  # the source id's span (src -1: none)
    Py_ssize_t topic, topic_len  # the topic's span (topic -1: none, or null)
    uint64_t t  # the timestamp (0: none, null, or 0)
    uint64_t partition
    int seen  # a bit per key met (each may come once)
    bint has_partition  # (the partition is an integer)


cdef inline int _key_code(const unsigned char* p, Py_ssize_t k, Py_ssize_t n):
    if n == 4 and memcmp(p + k, b"kind", 4) == 0:
        return K_KIND
    if n == 9:
        if memcmp(p + k, b"source_id", 9) == 0:
            return K_SOURCE
        if memcmp(p + k, b"timestamp", 9) == 0:
            return K_TIMESTAMP
        if memcmp(p + k, b"partition", 9) == 0:
            return K_PARTITION
    elif n == 5:
        if memcmp(p + k, b"value", 5) == 0:
            return K_VALUE
        if memcmp(p + k, b"topic", 5) == 0:
            return K_TOPIC
    elif (n == 2 and memcmp(p + k, b"ts", 2) == 0) or (n == 7 and memcmp(p + k, b"payload", 7) == 0):
        return K_REFUSED
    return K_OTHER


cdef Py_ssize_t _object(const unsigned char* p, Py_ssize_t i, Py_ssize_t end, Found* f, Found* inner):
    """The object opening at p[i] (its brace) read into ``f``: the index just past it, -1 where the
    line is left to Python. A ``value`` that is an object is read into ``inner`` (NULL: left)."""
    cdef Py_ssize_t k, j
    cdef int code
    cdef uint64_t v
    cdef unsigned char c
    f.src = f.topic = -1
    f.src_len = f.topic_len = 0
    f.t = f.partition = 0
    f.seen = 0
    f.has_partition = False
    i = _ws(p, i + 1, end)
    while True:
        if i >= end or p[i] != 34:
            return -1  # (an empty object, or no key)
        j = plain_string_end(p, i, end)
        if j < 0:
            return -1
        code = _key_code(p, i + 1, j - i - 2)
        if code == K_REFUSED:
            return -1
        if code != K_OTHER:
            if f.seen & (1 << code):
                return -1  # (a key twice: msgspec takes the last, the Python reading says so)
            f.seen |= 1 << code
        i = _ws(p, j, end)
        if i >= end or p[i] != 58:
            return -1
        i = _ws(p, i + 1, end)
        if i >= end:
            return -1
        c = p[i]
        if c == 34:
            j = plain_string_end(p, i, end)
            if j < 0 or code == K_TIMESTAMP or code == K_VALUE:
                return -1  # (a time or a value held as a string: left)
            if code == K_SOURCE:
                f.src, f.src_len = i + 1, j - i - 2
            elif code == K_TOPIC:
                f.topic, f.topic_len = i + 1, j - i - 2
            # (a kind: any string; a partition that is a string: no partition)
        elif 48 <= c <= 57:
            j = _integer(p, i, end, &v)
            if j < 0:
                return -1
            if code == K_TIMESTAMP:
                f.t = v
            elif code == K_PARTITION:
                f.partition, f.has_partition = v, True
            elif code != K_OTHER:
                return -1
        elif c == 45:  # a negative integer: left where it is one of the fields read
            j = _integer(p, i + 1, end, &v)
            if j < 0 or code != K_OTHER:
                return -1
        elif c == 123:
            if code != K_VALUE or inner == NULL:
                return -1  # (any other nested object: left)
            j = _object(p, i, end, inner, NULL)
            if j < 0:
                return -1
        else:
            j = _literal(p, i, end)
            if j < 0:
                return -1  # (an array, a fraction, anything else: left)
            if code == K_TIMESTAMP or code == K_TOPIC:
                if c != 110:
                    return -1  # (null: none; true or false: left)
            elif code != K_OTHER and code != K_PARTITION:  # (a partition true, false or null: none)
                return -1
        i = _ws(p, j, end)
        if i >= end:
            return -1
        if p[i] == 44:
            i = _ws(p, i + 1, end)
            continue
        if p[i] != 125:
            return -1
        return i + 1


cdef int _line(const unsigned char* p, Py_ssize_t i, Py_ssize_t end, Found* top, Found* inner):
    """Read the line p[i:end]: 1 where it is a receipt (``top``), 2 where it is a Kafka record
    holding one (``top`` the record, ``inner`` its receipt), 0 where it is left to Python."""
    i = _ws(p, i, end)
    if i >= end or p[i] != 123:
        return 0
    i = _object(p, i, end, top, inner)
    if i < 0 or _ws(p, i, end) != end:
        return 0
    if top.seen & (1 << K_KIND):  # (a kind: a receipt, whatever else it holds)
        return 1 if top.src >= 0 else 0
    # (a value read means an object read into inner: any other value of that key leaves the line)
    if top.seen & (1 << K_VALUE) and inner.seen & (1 << K_KIND) and inner.src >= 0:
        return 2
    return 0


cdef inline uint64_t _hash(const unsigned char* p, Py_ssize_t n):
    """A hash of a source id, eight bytes at a step (equal ids are then compared whole)."""
    cdef uint64_t h = 14695981039346656037ULL ^ <uint64_t> n, w = 0
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL
        h ^= h >> 29
        i += 8
    w = 0
    if i < n:
        memcpy(&w, p + i, n - i)
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL
        h ^= h >> 29
    return h


cdef enum:
    PARTS = 64  # distinct partitions a chunk's table tells apart (more get a tuple each: still correct)


def receipt_events(bytes text, bint fold, bint bounded=True):
    """The clock events of the lines of ``text`` (each ending with its newline, the last one may
    not): (a byte per line, 1 where this reading found a record; each line's time as 8 bytes,
    native order, 0 for none; each line's writer as a 4-byte index into the names, NO_INDEX for
    none; the names, each source id once (case folded with ``fold``); each line's Kafka partition
    as a 4-byte index into the partitions, NO_INDEX for none, or None where no line names one;
    the partitions, each (topic, partition) once; the lines left to Python as (line number,
    start, end) in the text). With ``bounded``, None when more than one line in sixteen (and
    eight) is left, or the first four are: a chunk of another shape, which msgspec reads."""
    cdef const unsigned char* p = <const unsigned char*> PyBytes_AS_STRING(text)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(text), at = 0, end, n = 0, line, src, src_len, slot, j, most_left
    cdef Py_ssize_t nparts = 0
    cdef const unsigned char* nl
    cdef uint64_t t, h
    cdef list names = [], left = [], part_table = []
    cdef uint64_t hashes[TABLE]
    cdef Py_ssize_t starts[TABLE]
    cdef Py_ssize_t lens[TABLE]
    cdef uint32_t index[TABLE]
    cdef Py_ssize_t part_topic[PARTS]
    cdef Py_ssize_t part_topic_len[PARTS]
    cdef uint64_t part_number[PARTS]
    cdef uint32_t which
    cdef unsigned char folded[256]
    cdef unsigned char c
    cdef int kind
    cdef Found top, inner
    cdef Found* rec
    cdef bytearray counted, times, writers, parts = None
    cdef uint64_t* ts
    cdef uint32_t* ws
    cdef uint32_t* ps = NULL
    cdef char* cs
    while at < size:  # (the lines, counted first: the packed columns are made at their size; memchr's
        nl = <const unsigned char*> memchr(p + at, 10, size - at)  # vector search beats bytes.count's byte loop)
        at = size if nl == NULL else nl - p + 1
        n += 1
    most_left = n // 16 + 8 if bounded else n
    counted = bytearray(n)
    times = bytearray(8 * n)
    writers = bytearray(4 * n)
    cs = counted
    ts = <uint64_t*> <char*> times
    ws = <uint32_t*> <char*> writers
    for j in range(TABLE):
        lens[j] = -1
    at = 0
    for line in range(n):
        nl = <const unsigned char*> memchr(p + at, 10, size - at)
        end = size if nl == NULL else nl - p
        ws[line] = NO_INDEX
        ts[line] = 0
        kind = _line(p, at, end, &top, &inner)
        if not kind:
            left.append((line, at, end))
            if len(left) > most_left or (bounded and line == 3 and len(left) == 4):  # (the first four: another shape)
                return None
            at = end + 1
            continue
        cs[line] = 1
        rec = &top
        if kind == 2:  # a Kafka record: its receipt's time, else its own; its partition
            rec = &inner
            ts[line] = inner.t if inner.t else top.t
            if top.has_partition:
                if parts is None:
                    parts = bytearray(b"\xff" * (4 * n))
                    ps = <uint32_t*> <char*> parts
                which = NO_INDEX
                for j in range(nparts):  # (never more than PARTS)
                    if part_number[j] == top.partition and part_topic_len[j] == (top.topic_len if top.topic >= 0 else -1) and (
                            top.topic < 0 or memcmp(p + part_topic[j], p + top.topic, top.topic_len) == 0):
                        which = j
                        break
                if which == NO_INDEX:
                    which = len(part_table)
                    part_table.append((None if top.topic < 0 else PyUnicode_DecodeLatin1(<const char*> p + top.topic, top.topic_len, NULL),
                                       PyLong_FromUnsignedLongLong(top.partition)))
                    if nparts < PARTS:
                        part_topic[nparts], part_topic_len[nparts] = top.topic, (top.topic_len if top.topic >= 0 else -1)
                        part_number[nparts] = top.partition
                        nparts += 1
                ps[line] = which
        else:
            ts[line] = top.t
        src, src_len = rec.src, rec.src_len
        h = _hash(p + src, src_len)
        slot = h & (TABLE - 1)
        which = NO_INDEX
        for j in range(8):  # (a few probes; a source id found in none gets a name of its own)
            if lens[slot] < 0:
                break
            if hashes[slot] == h and lens[slot] == src_len and memcmp(p + starts[slot], p + src, src_len) == 0:
                which = index[slot]
                break
            slot = (slot + 1) & (TABLE - 1)
        if which == NO_INDEX:
            which = len(names)
            if fold and src_len <= 256:
                for j in range(src_len):
                    c = p[src + j]
                    folded[j] = c + 32 if 65 <= c <= 90 else c
                names.append(PyUnicode_DecodeLatin1(<const char*> folded, src_len, NULL))
            elif fold:
                names.append(PyUnicode_DecodeLatin1(<const char*> p + src, src_len, NULL).lower())
            else:
                names.append(PyUnicode_DecodeLatin1(<const char*> p + src, src_len, NULL))
            if lens[slot] < 0:
                hashes[slot], starts[slot], lens[slot], index[slot] = h, src, src_len, which
        ws[line] = which
        at = end + 1
    return bytes(counted), bytes(times), bytes(writers), names, (None if parts is None else bytes(parts)), part_table, left


cdef list _listed(bytes column, list table, Py_ssize_t n, str what):
    cdef const uint32_t* col = <const uint32_t*> PyBytes_AS_STRING(column)
    cdef Py_ssize_t known = PyList_GET_SIZE(table), i
    cdef list out = [None] * n
    cdef object o
    if PyBytes_GET_SIZE(column) != 4 * n:
        raise ValueError(f"packed clock events: the {what} column of another length")
    for i in range(n):
        if col[i] != NO_INDEX:
            if col[i] >= known:
                raise ValueError(f"packed clock events: an index past the {what}")
            o = <object> PyList_GET_ITEM(table, col[i])
            out[i] = o
    return out


def event_lists(bytes counted, bytes times, bytes writers, list names, bytes parts=None, list part_table=None):
    """The times, writers and partitions of :func:`receipt_events` as lists, one item per line
    (None where none): the form a share's clock takes (:meth:`rmkit.logclock.RecordClock.queue`)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(counted), i
    cdef const uint64_t* ts = <const uint64_t*> PyBytes_AS_STRING(times)
    cdef list tl = [None] * n
    if PyBytes_GET_SIZE(times) != 8 * n:
        raise ValueError("packed clock events: the times column of another length")
    for i in range(n):
        if ts[i]:
            tl[i] = PyLong_FromUnsignedLongLong(ts[i])
    return tl, _listed(writers, names, n, "names"), ([None] * n if parts is None else _listed(parts, part_table, n, "partitions"))
