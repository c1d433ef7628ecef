# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled form of :func:`rmkit.linescan.deal_by_key` (see there for what it promises).

A ``--jobs`` reader deals every line of a chunk to the share its key's value names. In Python,
finding each line's key costs more than a third of what a share spends on the lines it deals; here
one C loop over the chunk finds the key (looking only where its rarest byte is), proves the reading and copies each share's
lines, so the reader's work per line is a few byte compares. Built when the machine has a C
compiler (``pip install`` compiles it; it is optional): without it, the reader deals each chunk as
it deals any batch, in Python with numpy, with the same results (``tests/test_linescan.py`` holds
the two equal).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdlib cimport free, malloc
from libc.string cimport memchr, memcmp, memcpy


cdef Py_ssize_t _pivot(const unsigned char* line, Py_ssize_t size, const unsigned char* k, Py_ssize_t klen):
    """The index in the key of its byte that is rarest in ``line`` (the batch's first): every
    occurrence of the key holds that byte at that index, so the key is looked for only where it
    is found (a record's keys share quotes with every field, but a letter with few)."""
    cdef Py_ssize_t best = 0, best_count = size + 1, i, count, at
    cdef const unsigned char* p
    for i in range(klen):
        count = 0
        at = 0
        while at < size:
            p = <const unsigned char*> memchr(line + at, k[i], size - at)
            if p == NULL:
                break
            count += 1
            at = p - line + 1
        if count < best_count:
            best, best_count = i, count
    return best


def deal_by_key(bytes text, bytes key, int n, bytes fold):
    """(picks, texts) for the terminated lines of ``text``, or None when a line does not prove
    the fast reading; as :func:`rmkit.linescan.deal_by_key`."""
    cdef const unsigned char* buf = <const unsigned char*> PyBytes_AS_STRING(text)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(text)
    cdef const unsigned char* k = <const unsigned char*> PyBytes_AS_STRING(key)
    cdef Py_ssize_t klen = PyBytes_GET_SIZE(key)
    cdef const unsigned char* table = <const unsigned char*> PyBytes_AS_STRING(fold)
    if n < 1 or n > 256 or PyBytes_GET_SIZE(fold) < 256 or klen < 2 or k[0] != 34 or size == 0 or buf[size - 1] != 10:
        return None
    cdef Py_ssize_t nlines = 0, at = 0
    cdef const unsigned char* nl
    while at < size:  # the lines: each ends with its newline
        nl = <const unsigned char*> memchr(buf + at, 10, size - at)
        at = (nl - buf) + 1
        nlines += 1
    cdef unsigned char* share = <unsigned char*> malloc(nlines + 1)
    cdef Py_ssize_t* ends = <Py_ssize_t*> malloc((nlines + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* total = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
    cdef char** dest = <char**> malloc(n * sizeof(char*))
    if share == NULL or ends == NULL or total == NULL or dest == NULL:
        free(share)
        free(ends)
        free(total)
        free(dest)
        raise MemoryError()
    cdef Py_ssize_t i, j, start, end, found, opening, pivot, x
    cdef unsigned char pb
    cdef const unsigned char* p
    cdef const unsigned char* closing
    cdef unsigned char s
    cdef list picks, texts
    cdef char* out
    try:
        for j in range(n):
            total[j] = 0
        pivot = _pivot(buf, <const unsigned char*> memchr(buf, 10, size) - buf, k, klen)
        pb = k[pivot]
        start = 0
        for i in range(nlines):
            end = <const unsigned char*> memchr(buf + start, 10, size - start) - buf  # this line's newline
            ends[i] = end
            # the quoted key exactly once in the line (occurrences that overlap counted apart),
            # looked for where its pivot byte is
            found = -1
            x = start + pivot
            while x < end:
                p = <const unsigned char*> memchr(buf + x, pb, end - x)
                if p == NULL:
                    break
                x = p - buf
                if x - pivot + klen <= end and memcmp(p - pivot, k, klen) == 0:
                    if found >= 0:
                        return None
                    found = x - pivot
                x += 1
            if found < 0:
                return None
            opening = found + klen + 1  # a colon right after the key, then the value's opening quote
            if opening >= end or buf[found + klen] != 58 or buf[opening] != 34:
                return None
            closing = <const unsigned char*> memchr(buf + opening + 1, 34, end - opening - 1)
            if closing == NULL or closing == buf + opening + 1:  # not closed in the line; an empty value
                return None
            s = table[closing[-1]]
            if s >= n:
                return None
            share[i] = s
            total[s] += end + 1 - start
            start = end + 1
        picks = []
        texts = []
        for j in range(n):
            texts.append(PyBytes_FromStringAndSize(NULL, total[j]))
            dest[j] = PyBytes_AS_STRING(texts[j])
            pick = PyBytes_FromStringAndSize(NULL, nlines)
            out = PyBytes_AS_STRING(pick)
            for i in range(nlines):
                out[i] = share[i] == j
            picks.append(pick)
        start = 0
        for i in range(nlines):
            end = ends[i] + 1
            s = share[i]
            memcpy(dest[s], buf + start, end - start)
            dest[s] += end - start
            start = end
        return picks, texts
    finally:
        free(share)
        free(ends)
        free(total)
        free(dest)


def braced_lines(bytes text):
    """How many lines ``text`` holds (lines, each ending with its newline) when every one starts
    with "{" and ends with "}", else 0; as :func:`rmkit.linescan.braced_lines`."""
    cdef const unsigned char* buf = <const unsigned char*> PyBytes_AS_STRING(text)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(text), start = 0, end, count = 0
    cdef const unsigned char* nl
    if size == 0 or buf[size - 1] != 10:
        return 0
    while start < size:
        nl = <const unsigned char*> memchr(buf + start, 10, size - start)
        end = nl - buf
        if end - start < 2 or buf[start] != 123 or buf[end - 1] != 125:
            return 0
        count += 1
        start = end + 1
    return count


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* A 64-bit hash of a line's bytes, eight at a time (xxHash64's round and final mix on one lane):
       a few instructions per eight bytes, where Python's hash of bytes (SipHash-1-3) takes about
       three per byte. */
    static inline uint64_t rmkit_line_hash(const unsigned char* p, Py_ssize_t size) {
        const uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL, P3 = 0x165667B19E3779F9ULL;
        uint64_t h = P3 ^ ((uint64_t) size * P1), w;
        Py_ssize_t j = 0;
        for (; j + 8 <= size; j += 8) {
            memcpy(&w, p + j, 8);
            w *= P2; w = (w << 31) | (w >> 33); w *= P1;
            h ^= w; h = ((h << 27) | (h >> 37)) * P1 + P2;
        }
        w = 0;
        if (j < size) {
            memcpy(&w, p + j, (size_t) (size - j));
            w *= P2; w = (w << 31) | (w >> 33); w *= P1;
            h ^= w; h = ((h << 27) | (h >> 37)) * P1 + P2;
        }
        h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32;
        return h;
    }
    """
    unsigned long long rmkit_line_hash(const unsigned char* p, Py_ssize_t size)


def line_hashes(list lines):
    """A 64-bit hash of each line, as signed numbers (a list, one per line): equal lines hash
    alike, lines that differ almost never do (as Python's ``hash``, which a line that is not bytes
    gets), for about a fifth of the instructions of ``hash`` over a line of a few hundred bytes: what a
    checker knows a redelivered (byte-identical) record line by."""
    cdef Py_ssize_t n = len(lines), i
    cdef list out = [None] * n
    cdef object line
    for i in range(n):
        line = lines[i]
        if type(line) is bytes:
            out[i] = <long long> rmkit_line_hash(<const unsigned char*> PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line))
        else:
            out[i] = hash(line)
    return out
