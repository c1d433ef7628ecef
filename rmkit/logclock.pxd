# The compiled clock's C declarations (rmkit/logclock.py is its code, in Cython's pure Python mode).
# A compiled module that steps the clock per record cimports this file (as a checker's feed loop
# may), so that its calls of advance and take_queued are C calls, not Python ones; where
# nothing is compiled the .py runs as it is and these lines mean nothing.

cdef class RecordClock:
    cdef public object now          # the clock (None until a time is known)
    cdef public object top          # the latest time any writer reached,
    cdef public object top_who      # that writer,
    cdef public object top_ref      # and that record's reference
    cdef public object pair         # the two-writer time
    cdef public int sources         # distinct writers seen, counted up to 2
    cdef public dict part_wm        # partition -> its watermark (the latest time it delivered)
    cdef public dict part_seen      # partition -> the record number of its last record
    cdef public object low          # the slowest partition's watermark,
    cdef public object holder       # and that partition (None: to be found again)
    cdef public long long partition_idle
    cdef public bint single_writer
    cdef public bint idle_every_record
    cdef public list pending        # blocks of records queued (see queue)
    cdef Py_ssize_t _block          # the first block not wholly taken,
    cdef Py_ssize_t _line           # and its first line not taken
    # what take_queued found: the last record number, the records taken, the next queued reference
    cdef public long long q_seq
    cdef public long long q_taken
    cdef public object q_next

    cpdef int advance(self, t, who, part, long long seq, ref)
    cdef void _partition(self, t, part, long long seq)
    cpdef int take_queued(self, before, long long seq, passing, long long every)
