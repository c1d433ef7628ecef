# The C fields of the REMP log checker's state classes (state.py is their code, in Cython's pure
# Python mode). The checker cimports them (setup.py mirrors this file under the package's
# installed name), so that a receipt's message and source are read and written as struct fields;
# where nothing is compiled the .py runs as it is and this file means nothing.

cdef class _Slotted:  # (the repr of them all)
    pass

cdef class SourceState(_Slotted):
    cdef public object role, pos, last_ref, last_kind, queued, first_t, receipts

cdef class BlockState(_Slotted):
    cdef public object first_t, accepted, collator, collator_ref

cdef class Final(_Slotted):
    cdef public object block, ref, t, src

cdef class Tomb(_Slotted):
    cdef public object fin, first_t, id

cdef class MessageState(_Slotted):
    cdef public object id, first_ref, first_t, close_t, last_seq, srcs, kmask, fin, blocks
    cdef public object fn_rej, sent_t, put_t, seen, fin_count, blk, total
    cdef public unsigned long long seen_bits  # (a bit per hash's low 6 bits)
