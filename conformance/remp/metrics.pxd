# The C fields of the REMP checker's latency histogram (metrics.py is its code, in Cython's pure
# Python mode): the checker cimports it, so that its add, per message and source, is a C call.

cdef class LatencyHistogram:
    cdef public dict buckets
    cdef public object max, min, total

    cpdef add(self, v)
