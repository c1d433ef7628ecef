# The C fields of the Corda log checker's state classes (state.py is their code, in Cython's pure
# Python mode). The share's run and the packing cimport them (setup.py mirrors this file under the
# package's installed name), so that a track's and a copy's fields are read and written as struct
# fields; where nothing is compiled the .py runs as it is and this file means nothing.

cdef class _Slotted:  # (the repr, equality and pickling of them all)
    pass

cdef class Copy(_Slotted):
    cdef public object ref, delivery, sender, seq, session, verdict, vref, done, unread

cdef class Commit(_Slotted):
    cdef public object ref, tx, t

cdef class Ack(_Slotted):
    cdef public object ref, t, answer, copy_ref, verdict_ref

cdef class NewAnswer(_Slotted):
    cdef public object ref, t, sender, seq

cdef class Track(_Slotted):
    cdef public object node, mid, first, copies, commits, rows, acks, new_after, acked, gap

cdef class Memo(_Slotted):
    cdef public object node, commit, row
