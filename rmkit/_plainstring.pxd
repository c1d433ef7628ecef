# cython: language_level=3
"""The end of a plain JSON string, found sixteen or eight bytes at a step, for the compiled
readers that walk a line's text without decoding it (a protocol's clock scan or dealer): in one
place, as :mod:`rmkit._crc32` is. A *plain* string is one whose every byte is printable ASCII
(0x20 to 0x7e) and none a backslash, so that its bytes are its text; most strings of a log line
are. A caller that must also read other strings (escapes, bytes beyond ASCII) takes
:func:`plain_string_end` first and its own slower reading where it gives -1.

Only declarations and inline C (no module of its own). The sixteen-byte step uses SSE2 where the
compiler targets it (byte by byte elsewhere); the eight-byte step reads a word and finds its first
flagged byte by the machine's byte order."""

from libc.stdint cimport uint64_t
from libc.string cimport memcpy

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

    /* The high bit of each byte of a word read from memory that ends a plain string: a quote, a
       backslash, or a byte that is not printable ASCII. The first flagged byte in memory order is
       exact (a borrow or carry can only mark a byte after a true one, in the word's arithmetic
       order); rmkit_first_stop says which byte that is. */
    static inline uint64_t rmkit_string_stops8(uint64_t w) {
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
        uint64_t low = (w - ones * 0x20) & ~w & highs;       /* a byte below 0x20 */
        uint64_t high = ((w + ones * (127 - 0x7e)) | w) & highs;  /* a byte above 0x7e */
        uint64_t b = w ^ (ones * 0x5c), q = w ^ (ones * 0x22);
        return low | high | ((b - ones) & ~b & highs) | ((q - ones) & ~q & highs);
    }

    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    /* (big-endian: the first byte in memory is the word's highest, and a borrow runs the other way:
       the flags are read again byte by byte from the highest flagged one down) */
    static inline int rmkit_first_stop(const unsigned char* p, uint64_t stop) {
        for (int k = 0; k < 8; k++) {
            unsigned char c = p[k];
            if (c == '"' || c == '\\\\' || c < 0x20 || c > 0x7e) return k;
        }
        return 8;
    }
    #else
    static inline int rmkit_first_stop(const unsigned char* p, uint64_t stop) {
        (void) p;
        return __builtin_ctzll(stop) >> 3;
    }
    #endif

    static inline unsigned int rmkit_ctz(unsigned int x) { return (unsigned int) __builtin_ctz(x); }
    """
    unsigned int rmkit_string_stops16(const unsigned char* p) nogil
    uint64_t rmkit_string_stops8(uint64_t w) nogil
    int rmkit_first_stop(const unsigned char* p, uint64_t stop) nogil
    unsigned int rmkit_ctz(unsigned int x) nogil


cdef inline Py_ssize_t plain_string_end(const unsigned char* p, Py_ssize_t i, Py_ssize_t end) nogil:
    """The index just past the string opening at ``i`` (its quote), if every byte in it is printable
    ASCII without escapes and it closes before ``end``; -1 otherwise. Sixteen bytes at a step, then
    eight in a word, then the rest."""
    cdef Py_ssize_t j = i + 1
    cdef uint64_t w, stop
    cdef unsigned int mask
    cdef unsigned char c
    while j + 16 <= end:
        mask = rmkit_string_stops16(p + j)
        if mask:
            j += rmkit_ctz(mask)
            return j + 1 if p[j] == 34 else -1
        j += 16
    while j + 8 <= end:
        memcpy(&w, p + j, 8)
        stop = rmkit_string_stops8(w)
        if stop:
            j += rmkit_first_stop(p + j, stop)
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
