# The key store's C fields and methods (keystore.py is its code, in Cython's pure Python mode). A
# compiled module that looks keys up or puts memos per record cimports this file (as an exact
# checker's share may), so that its calls of add, find, held, memo and put are C calls, not
# Python ones; where nothing is compiled the .py runs as it is and these lines mean nothing.

cdef class KeyStore:
    cdef public object fingerprint
    cdef public object _slots      # see _table
    cdef Py_ssize_t _mask
    cdef public object _fps        # see __init__
    cdef public object _key_at
    cdef public object _keys
    cdef public object _memo_blk   # see _empty_memos
    cdef public object _memo_off
    cdef public object _memo_len
    cdef public list _blocks
    cdef public object _live
    cdef public bytearray _open
    cdef public dict _read
    cdef public bint _zipped       # the sealed blocks are compressed
    cdef Py_ssize_t _raw           # bytes in the sealed blocks while not
    cdef public Py_ssize_t _bytes
    cdef public Py_ssize_t _garbage
    cdef public Py_ssize_t memos

    cdef bint _is(self, Py_ssize_t n, key)
    cdef Py_ssize_t _slot(self, key, long long h)
    cpdef Py_ssize_t find(self, key)
    cpdef Py_ssize_t add(self, key)
    cpdef Py_ssize_t held(self, key)
    cdef Py_ssize_t _block_of(self, Py_ssize_t n)
    cpdef memo(self, Py_ssize_t n)
    cdef _block(self, Py_ssize_t b)
    cpdef put(self, Py_ssize_t n, bytes memo)
    cdef _forget(self, Py_ssize_t n)
