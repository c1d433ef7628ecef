# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled part of an RMB ``--jobs`` reader's dealing (:func:`rmkit.conformance.rmb.checker._own_lines`):
each line's share found in one C pass over the line, without decoding it.

A line's share is :func:`rmkit.processes.key_share` of its key (:func:`.checker.line_key`: its
own uid, case folded, where that is a string). Here the line's top-level object is walked (its
strings skipped escape by escape, its values' brackets counted), and where it holds one ``uid``
key whose value is a string of printable ASCII without escapes, the share is the CRC-32 of that
string in lower case, modulo the shares: what key_share gives. Any other line (no such uid, a
second uid key, an escape or a byte beyond ASCII in it, a line that is not an object) is left
to the Python reading (share 255), which says what its key is. A line that is not JSON where
it is walked past may be dealt by its uid where the Python reading would send it to share 0:
whichever share reads it reports it unreadable, and no share judges it, so the report is the same.
Built where the machine has a C compiler (``pip install`` compiles it; it is optional): without
it every line takes the Python reading, with the same shares (tests/rmb/test_rmb_dealing.py
holds the two equal).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport uint32_t
from libc.string cimport memchr

from rmkit._crc32 cimport CRC32_START, crc32_byte, crc32_end, crc32_fill_table
from rmkit._plainstring cimport plain_string_end

crc32_fill_table()

cdef enum:
    UNSETTLED = 255  # the Python reading tells this line's share


cdef inline Py_ssize_t _ws(const unsigned char* p, Py_ssize_t i, Py_ssize_t size):
    while i < size and (p[i] == 32 or p[i] == 9 or p[i] == 10 or p[i] == 13):
        i += 1
    return i


cdef inline Py_ssize_t _string_end(const unsigned char* p, Py_ssize_t i, Py_ssize_t size, bint* escaped):
    """The index just past the string opening at ``i`` (a quote), -1 if it does not close. A plain
    string (printable ASCII, no escape: most of a line's) is found in words (:mod:`rmkit._plainstring`);
    any other by a search for its closing quote, escape by escape."""
    cdef const unsigned char* q
    cdef const unsigned char* b
    cdef Py_ssize_t plain = plain_string_end(p, i, size)
    if plain >= 0:
        return plain
    i += 1
    while i < size:
        q = <const unsigned char*> memchr(p + i, 34, size - i)  # the next quote: the end, unless escaped
        if q == NULL:
            return -1
        b = <const unsigned char*> memchr(p + i, 92, q - (p + i))
        if b == NULL:
            return q - p + 1
        escaped[0] = True
        i = b - p + 2  # (past the escape and the byte it escapes)
    return -1


cdef Py_ssize_t _value_end(const unsigned char* p, Py_ssize_t i, Py_ssize_t size):
    """The index just past the value at ``i`` (skipped, not validated), -1 where it runs off the line."""
    cdef bint escaped = False
    cdef Py_ssize_t depth = 0
    cdef unsigned char c
    if i >= size:
        return -1
    c = p[i]
    if c == 34:
        return _string_end(p, i, size, &escaped)
    if c == 123 or c == 91:
        while i < size:
            c = p[i]
            if c == 34:
                i = _string_end(p, i, size, &escaped)
                if i < 0:
                    return -1
                continue
            if c == 123 or c == 91:
                depth += 1
            elif c == 125 or c == 93:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return -1
    while i < size and p[i] != 44 and p[i] != 125 and p[i] != 93 and p[i] != 32 and p[i] != 9 and p[i] != 10 and p[i] != 13:
        i += 1
    return i


cdef int _share(const unsigned char* p, Py_ssize_t size, uint32_t n):
    cdef Py_ssize_t i = _ws(p, 0, size), key_start, key_end, end
    cdef Py_ssize_t uid_start = -1, uid_end = -1
    cdef bint escaped
    cdef uint32_t crc
    cdef unsigned char c
    if i >= size or p[i] != 123:
        return UNSETTLED
    i = _ws(p, i + 1, size)
    if i < size and p[i] == 125:
        return UNSETTLED  # (an empty object: no uid)
    while True:
        if i >= size or p[i] != 34:
            return UNSETTLED
        escaped = False
        key_start = i + 1
        i = _string_end(p, i, size, &escaped)
        if i < 0 or escaped:
            return UNSETTLED
        key_end = i - 1
        i = _ws(p, i, size)
        if i >= size or p[i] != 58:
            return UNSETTLED
        i = _ws(p, i + 1, size)
        if key_end - key_start == 3 and p[key_start] == 117 and p[key_start + 1] == 105 and p[key_start + 2] == 100:
            if uid_start >= 0 or i >= size or p[i] != 34:
                return UNSETTLED  # a second uid, or one that is no string
            escaped = False
            end = _string_end(p, i, size, &escaped)
            if end < 0 or escaped:
                return UNSETTLED
            uid_start, uid_end = i + 1, end - 1
            i = end
        else:
            i = _value_end(p, i, size)
            if i < 0:
                return UNSETTLED
        i = _ws(p, i, size)
        if i >= size:
            return UNSETTLED
        if p[i] == 44:
            i = _ws(p, i + 1, size)
            continue
        if p[i] == 125:
            break
        return UNSETTLED
    if _ws(p, i + 1, size) != size or uid_start < 0:
        return UNSETTLED
    crc = CRC32_START
    for i in range(uid_start, uid_end):
        c = p[i]
        if c < 32 or c > 126:
            return UNSETTLED
        if 65 <= c <= 90:
            c += 32
        crc = crc32_byte(crc, c)
    return crc32_end(crc) % n


def uid_shares(list lines, int n):
    """One byte per line of ``lines`` (bytes): its share of ``n`` by its uid, or 255 where the
    Python reading is to tell (see the module's text); None when ``n`` is not 1 to 254 or a line
    is not bytes."""
    if n < 1 or n > 254:
        return None
    cdef Py_ssize_t count = PyList_GET_SIZE(lines), j
    out = PyBytes_FromStringAndSize(NULL, count)
    cdef unsigned char* dest = <unsigned char*> PyBytes_AS_STRING(out)
    cdef object line
    for j in range(count):
        line = <object> PyList_GET_ITEM(lines, j)
        if type(line) is not bytes:
            return None
        dest[j] = _share(<const unsigned char*> PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line), <uint32_t> n)
    return out
