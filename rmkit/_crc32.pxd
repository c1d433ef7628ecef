# cython: language_level=3
"""CRC-32 (IEEE 802.3, reflected: zlib's ``crc32``) for the compiled ``--jobs`` dealers, in one
place: :func:`rmkit.processes.key_share` deals a key by ``zlib.crc32`` of its bytes, and a
compiled dealer that finds the key in a line's text without decoding it must give the same share
(each protocol's dealer cimports this file). The checksum runs over bytes a dealer may read one
at a time (folding a key's case as it goes, say), so it is a step a byte, inlined in the caller's
loop, not a call into zlib per key.

Only declarations and inline C: a module that cimports it holds its own copy of the 256-entry
table (1 KB) and fills it once, at import, with ``crc32_fill_table()``."""

from libc.stdint cimport uint32_t

cdef extern from *:
    """
    static uint32_t rmkit_crc32_table[256];

    static void rmkit_crc32_fill_table(void) {
        uint32_t c;
        int i, k;
        for (i = 0; i < 256; i++) {
            c = (uint32_t) i;
            for (k = 0; k < 8; k++)
                c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
            rmkit_crc32_table[i] = c;
        }
    }

    /* a running checksum starts at RMKIT_CRC32_START, takes each byte, and ends by crc32_end */
    #define RMKIT_CRC32_START 0xFFFFFFFFu

    static inline uint32_t rmkit_crc32_byte(uint32_t c, unsigned char b) {
        return rmkit_crc32_table[(c ^ b) & 0xFF] ^ (c >> 8);
    }

    static inline uint32_t rmkit_crc32_end(uint32_t c) {
        return c ^ 0xFFFFFFFFu;
    }

    static inline uint32_t rmkit_crc32_bytes(const unsigned char* p, Py_ssize_t size) {
        uint32_t c = RMKIT_CRC32_START;
        Py_ssize_t i;
        for (i = 0; i < size; i++)
            c = rmkit_crc32_byte(c, p[i]);
        return rmkit_crc32_end(c);
    }
    """
    uint32_t CRC32_START "RMKIT_CRC32_START"
    void crc32_fill_table "rmkit_crc32_fill_table" ()
    uint32_t crc32_byte "rmkit_crc32_byte" (uint32_t c, unsigned char b) nogil
    uint32_t crc32_end "rmkit_crc32_end" (uint32_t c) nogil
    uint32_t crc32_bytes "rmkit_crc32_bytes" (const unsigned char* p, Py_ssize_t size) nogil
