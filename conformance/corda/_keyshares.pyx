# cython: language_level=3, boundscheck=False, wraparound=False
"""Each line's share of a ``--jobs`` run, a batch of lines in one call: the fast reading of
:func:`rmkit.conformance.corda.parallel.keyer`, compiled. Why: applied line by line in Python, the
reading cost each share about a third of one process's whole check (every share reads and keys
every line of the log), which made a second process on two cores no faster than one."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memchr, memcmp

from rmkit._crc32 cimport crc32_bytes, crc32_fill_table

crc32_fill_table()
cdef const unsigned char* _QUOTE = b'"'


cdef inline Py_ssize_t _find(const unsigned char* s, Py_ssize_t size, const unsigned char* pat, Py_ssize_t plen, Py_ssize_t at):
    """The first occurrence of ``pat`` in ``s`` from ``at`` (bytes.find), -1 where none: memchr to
    each of its first byte, its second byte compared before the whole (most quotes of a line open
    another key or value)."""
    cdef const unsigned char* p
    cdef Py_ssize_t end = size - plen + 1
    while at < end:
        p = <const unsigned char*> memchr(s + at, pat[0], end - at)
        if p == NULL:
            return -1
        at = p - s
        if plen == 1 or (p[1] == pat[1] and memcmp(p, pat, plen) == 0):
            return at
        at += 1
    return -1


def line_shares(list lines, bytes name, bytes needle, int n):
    """One byte per line: its share of ``n`` (at most 255) on the fast reading, 255 where the line
    is not read so (a line that is not bytes, or whose text does not settle its key). The fast
    reading, as :func:`rmkit.conformance.corda.parallel.keyer`'s: ``name`` (the quoted key) occurs
    once in the line (occurrences counted as ``bytes.count`` counts them, none overlapping another),
    ``needle`` (the key, a colon and the value's opening quote) is found in it, and the first quote
    after that closes a value without a backslash: the share is the CRC-32 of the value's bytes
    modulo ``n``."""
    cdef Py_ssize_t count = len(lines), i, size, first, j, k
    cdef const unsigned char* nm = <const unsigned char*> PyBytes_AS_STRING(name)
    cdef Py_ssize_t nlen = PyBytes_GET_SIZE(name)
    cdef const unsigned char* nd = <const unsigned char*> PyBytes_AS_STRING(needle)
    cdef Py_ssize_t ndlen = PyBytes_GET_SIZE(needle)
    cdef const unsigned char* s
    if n < 1 or n > 255 or nlen < 1 or ndlen < 1:
        raise ValueError("line_shares needs 1 <= n <= 255 and non-empty patterns")
    out = PyBytes_FromStringAndSize(NULL, count)
    cdef unsigned char* o = <unsigned char*> PyBytes_AS_STRING(out)
    for i in range(count):
        o[i] = 255
        line = lines[i]
        if not PyBytes_CheckExact(line):
            continue
        s = <const unsigned char*> PyBytes_AS_STRING(line)
        size = PyBytes_GET_SIZE(line)
        first = _find(s, size, nm, nlen, 0)
        if first < 0 or _find(s, size, nm, nlen, first + nlen) >= 0:
            continue  # (not once, counted as bytes.count counts: none overlapping another)
        # the needle's first occurrence: none comes before the name's first (the needle begins
        # with it), most often it is there; else one overlapping it or later
        if ndlen <= size - first and memcmp(s + first, nd, ndlen) == 0:
            j = first
        else:
            j = _find(s, size, nd, ndlen, first + 1)
            if j < 0:
                continue
        j += ndlen
        k = _find(s, size, _QUOTE, 1, j)
        if k < 0 or memchr(s + j, 92, k - j) != NULL:
            continue
        o[i] = crc32_bytes(s + j, k - j) % n
    return out
