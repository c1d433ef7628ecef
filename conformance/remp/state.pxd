# The C fields of the REMP log checker's state classes (state.py is their code, in Cython's pure
# Python mode). The checker cimports them (setup.py mirrors this file under the package's
# installed name), so that a receipt's message and source are read and written as struct fields;
# where nothing is compiled the .py runs as it is and this file means nothing.

cdef class SourceState:
    cdef public object role, pos, last_ref, last_kind, queued, first_t, receipts

cdef class BlockState:
    cdef public object first_t, accepted, collator, collator_ref

cdef class Final:
    cdef public object block, ref, t, src

cdef class Tomb:
    cdef public object fin, first_t, id

cdef class MessageState:
    cdef public object id, first_ref, first_t, close_t, last_seq, srcs, kmask, fin, blocks
    cdef public object fn_rej, sent_t, put_t, seen, fin_count, blk, total
    cdef public unsigned long long seen_bits  # (a bit per hash's low 6 bits)
