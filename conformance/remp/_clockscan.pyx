# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled reading of a chunk's clock events (:func:`rmkit.conformance.remp.clocktrack.chunk_summary`):
the time and source of every plain receipt line, found in one C pass over the chunk's text, packed
as C numbers, with no Python object per line.

Why: a ``--jobs`` share's reader reads the events of every line of its chunk for the other shares,
which then take them on their clocks. Decoded by msgspec into Python objects (a struct, two
strings and a number per line), pickled for the pipe and unpickled at the other end, that was
most of the CPU the shares spend beyond one process's.

What is read here: a line that is one JSON object on its line (JSON whitespace around its
tokens allowed), whose keys and string values are printable ASCII without escapes, whose other
values are integers (of at most 18 digits), ``true``, ``false`` or ``null``, and which holds ``kind`` (a string),
``source_id`` (a string) and, if anything, ``timestamp`` (``null`` or a non-negative integer of at
most 18 digits), each once: the reading of :class:`.clocktrack._Plain` then gives its event
(the time where it is above 0, the source id, case folded when asked). Any other line (a nested
value, a fraction, an escape, a byte beyond ASCII, a key twice, a line that is not JSON) is left
to the Python reading of one line, which says what its event is: every line it reads here is
valid JSON, read by the same rules, so the two agree (``tests/remp/test_clockscan.py``). Built
where the machine has a C compiler (it is optional): without it, a chunk is read by msgspec.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_FromUnsignedLongLong
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy

cdef extern from "Python.h":
    object PyUnicode_DecodeLatin1(const char* s, Py_ssize_t size, const char* errors)
    int __builtin_ctzll(unsigned long long x) nogil
    int __builtin_ctz(unsigned int x) nogil

cdef extern from *:
    """
    /* A bit per byte of p[0:16] that ends a plain string (a quote, a backslash, a byte that is not
       printable ASCII); the lowest is the first. SSE2 where the compiler targets it, else bytes. */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static inline unsigned int rmkit_string_stops16(const unsigned char* p) {
        __m128i v = _mm_loadu_si128((const __m128i*) p);
        __m128i stop = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\\\')));
        stop = _mm_or_si128(stop, _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));  /* (signed: 0x80-0xff too) */
        stop = _mm_or_si128(stop, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
        return (unsigned int) _mm_movemask_epi8(stop);
    }
    #else
    static inline unsigned int rmkit_string_stops16(const unsigned char* p) {
        unsigned int mask = 0;
        for (int k = 0; k < 16; k++) {
            unsigned char c = p[k];
            if (c == '"' || c == '\\\\' || c < 0x20 || c > 0x7e) mask |= 1u << k;
        }
        return mask;
    }
    #endif
    """
    unsigned int rmkit_string_stops16(const unsigned char* p) nogil

NO_WRITER = 0xFFFFFFFF  # a line's writer index where the line holds no record (or is left to Python)
cdef enum:
    TABLE = 1024  # distinct writers a chunk's table tells apart by hash (more share one slot's chain: still correct)

cdef uint64_t ONES = 0x0101010101010101ULL
cdef uint64_t HIGHS = 0x8080808080808080ULL


cdef inline uint64_t _stops(uint64_t w):
    """The high bit of each byte of ``w`` that ends a plain string: a quote, or a byte that is
    not printable ASCII or is a backslash. The lowest bit set is exact (a borrow or carry can
    only mark a byte after a true one), which is all :func:`_plain_string` reads."""
    cdef uint64_t low = (w - ONES * 0x20) & ~w & HIGHS  # a byte below 0x20
    cdef uint64_t high = ((w + ONES * (127 - 0x7e)) | w) & HIGHS  # a byte above 0x7e
    cdef uint64_t b = w ^ (ONES * 0x5c)
    cdef uint64_t q = w ^ (ONES * 0x22)
    return low | high | ((b - ONES) & ~b & HIGHS) | ((q - ONES) & ~q & HIGHS)


cdef inline Py_ssize_t _ws(const unsigned char* p, Py_ssize_t i, Py_ssize_t end):
    while i < end and (p[i] == 32 or p[i] == 9 or p[i] == 13):
        i += 1
    return i


cdef inline Py_ssize_t _plain_string(const unsigned char* p, Py_ssize_t i, Py_ssize_t end):
    """The index just past the string opening at ``i`` (its quote), if every byte in it is printable
    ASCII without escapes; -1 otherwise (the line is left to Python). Sixteen bytes at a step
    where the processor has SSE2, else eight."""
    cdef Py_ssize_t j = i + 1
    cdef uint64_t w, stop
    cdef unsigned int mask
    cdef unsigned char c
    while j + 16 <= end:
        mask = rmkit_string_stops16(p + j)
        if mask:
            j += __builtin_ctz(mask)
            return j + 1 if p[j] == 34 else -1
        j += 16
    while j + 8 <= end:
        memcpy(&w, p + j, 8)
        stop = _stops(w)
        if stop:
            j += __builtin_ctzll(stop) >> 3
            return j + 1 if p[j] == 34 else -1
        j += 8
    while j < end:
        c = p[j]
        if c == 34:
            return j + 1
        if c < 0x20 or c > 0x7e or c == 92:
            return -1
        j += 1
    return -1


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


cdef inline bint _key(const unsigned char* p, Py_ssize_t start, Py_ssize_t size, const char* name, Py_ssize_t n):
    return size == n and memcmp(p + start, name, n) == 0


cdef int _line(const unsigned char* p, Py_ssize_t i, Py_ssize_t end, uint64_t* t, Py_ssize_t* src, Py_ssize_t* src_len):
    """Read the line p[i:end]: 1 with its time (0: none) and source id's span, 0 where it is left
    to Python."""
    cdef Py_ssize_t k, klen, j
    cdef bint kind = False, stamp = False
    cdef uint64_t v
    src[0] = -1
    t[0] = 0
    i = _ws(p, i, end)
    if i >= end or p[i] != 123:
        return 0
    i = _ws(p, i + 1, end)
    while True:
        if i >= end or p[i] != 34:
            return 0  # (an empty object, or no key: left to Python)
        j = _plain_string(p, i, end)
        if j < 0:
            return 0
        k, klen = i + 1, j - i - 2
        i = _ws(p, j, end)
        if i >= end or p[i] != 58:
            return 0
        i = _ws(p, i + 1, end)
        if i >= end:
            return 0
        if p[i] == 34:
            j = _plain_string(p, i, end)
            if j < 0:
                return 0
            if _key(p, k, klen, b"kind", 4):
                if kind:
                    return 0
                kind = True
            elif _key(p, k, klen, b"source_id", 9):
                if src[0] >= 0:
                    return 0
                src[0], src_len[0] = i + 1, j - i - 2
            elif _key(p, k, klen, b"timestamp", 9):
                return 0  # (a time that is a string: left to Python)
        elif 48 <= p[i] <= 57:
            j = _integer(p, i, end, &v)
            if j < 0:
                return 0
            if _key(p, k, klen, b"timestamp", 9):
                if stamp:
                    return 0
                stamp = True
                t[0] = v
            elif _key(p, k, klen, b"kind", 4) or _key(p, k, klen, b"source_id", 9):
                return 0
        elif p[i] == 45:  # a negative integer: no time (left to Python where it is one)
            j = _integer(p, i + 1, end, &v)
            if j < 0 or _key(p, k, klen, b"timestamp", 9) or _key(p, k, klen, b"kind", 4) or _key(p, k, klen, b"source_id", 9):
                return 0
        else:
            j = _literal(p, i, end)
            if j < 0:
                return 0  # (a nested value, a fraction, anything else: left to Python)
            if _key(p, k, klen, b"timestamp", 9):
                if stamp or p[i] != 110:  # (null: no time; true or false: left to Python)
                    return 0
                stamp = True
            elif _key(p, k, klen, b"kind", 4) or _key(p, k, klen, b"source_id", 9):
                return 0
        i = _ws(p, j, end)
        if i >= end:
            return 0
        if p[i] == 44:
            i = _ws(p, i + 1, end)
            continue
        if p[i] != 125:
            return 0
        break
    if _ws(p, i + 1, end) != end or not kind or src[0] < 0:
        return 0
    return 1


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


def receipt_events(bytes text, bint fold, bint bounded=True):
    """The clock events of the lines of ``text`` (each ending with its newline, the last one may
    not): (a byte per line, 1 where this reading found a record; each line's time as 8 bytes,
    native order, 0 for none; each line's writer as a 4-byte index into the names, NO_WRITER for
    none; the names, each source id once (case folded with ``fold``); the lines left to Python as
    (line number, start, end) in the text). With ``bounded``, None when more than one line in
    sixteen (and eight) is left, or the first four are: a chunk of another shape (a Kafka dump's,
    its receipts nested), which msgspec reads faster."""
    cdef const unsigned char* p = <const unsigned char*> PyBytes_AS_STRING(text)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(text), at = 0, end, n = 0, line, src, src_len, slot, j, most_left
    cdef const unsigned char* nl
    cdef uint64_t t, h
    cdef list names = [], left = []
    cdef uint64_t hashes[TABLE]
    cdef Py_ssize_t starts[TABLE]
    cdef Py_ssize_t lens[TABLE]
    cdef uint32_t index[TABLE]
    cdef uint32_t which
    cdef unsigned char folded[256]
    cdef unsigned char c
    cdef bytearray counted, times, writers
    cdef uint64_t* ts
    cdef uint32_t* ws
    cdef char* cs
    while at < size:  # (the lines, counted first: the packed columns are made at their size)
        nl = <const unsigned char*> memchr(p + at, 10, size - at)
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
        ws[line] = NO_WRITER
        ts[line] = 0
        if not _line(p, at, end, &t, &src, &src_len):
            left.append((line, at, end))
            if len(left) > most_left or (bounded and line == 3 and len(left) == 4):  # (the first four: another shape)
                return None
        else:
            cs[line] = 1
            ts[line] = t
            h = _hash(p + src, src_len)
            slot = h & (TABLE - 1)
            which = NO_WRITER
            for j in range(8):  # (a few probes; a source id found in none gets a name of its own)
                if lens[slot] < 0:
                    break
                if hashes[slot] == h and lens[slot] == src_len and memcmp(p + starts[slot], p + src, src_len) == 0:
                    which = index[slot]
                    break
                slot = (slot + 1) & (TABLE - 1)
            if which == NO_WRITER:
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
    return bytes(counted), bytes(times), bytes(writers), names, left


def event_lists(bytes counted, bytes times, bytes writers, list names):
    """The times and writers of :func:`receipt_events` as lists, one item per line (None where
    none): the form a share's clock takes (:meth:`rmkit.logclock.RecordClock.queue`)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(counted), i
    cdef const uint64_t* ts = <const uint64_t*> PyBytes_AS_STRING(times)
    cdef const uint32_t* ws = <const uint32_t*> PyBytes_AS_STRING(writers)
    cdef Py_ssize_t known = PyList_GET_SIZE(names)
    cdef list tl = [None] * n, wl = [None] * n
    cdef object o
    if PyBytes_GET_SIZE(times) != 8 * n or PyBytes_GET_SIZE(writers) != 4 * n:
        raise ValueError("packed clock events: columns of different lengths")
    for i in range(n):
        if ts[i]:
            tl[i] = PyLong_FromUnsignedLongLong(ts[i])
        if ws[i] != NO_WRITER:
            if ws[i] >= known:
                raise ValueError("packed clock events: a writer index past the names")
            o = <object> PyList_GET_ITEM(names, ws[i])
            wl[i] = o
    return tl, wl
