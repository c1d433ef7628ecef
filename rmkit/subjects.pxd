# The compiled streaming engine's C declarations (rmkit/subjects.py is its code, in Cython's pure
# Python mode). A compiled checker that feeds the engine per record may cimport this file, so that
# its calls of feed and tick are C calls; where nothing is compiled the .py runs as it is and these
# lines mean nothing.

from rmkit.logclock cimport RecordClock

cdef class LogClock:
    cdef public RecordClock rule
    cdef public long long seq       # records taken (those with a time)

    cpdef bint advance(self, t, source=*, partition=*)


cdef class _Open:
    cdef public object subject
    cdef public object horizon      # None: not told yet


cdef class SubjectEngine:
    cdef public object open_subject, add, judge, on_late
    cdef public object clock        # the clock the engine steps (a LogClock, or one of its kind)
    cdef LogClock _log_clock        # the clock where it is a LogClock (its steps taken in C), else None
    cdef public object remember_s
    cdef public dict subjects       # key -> _Open (the subject and its horizon)
    cdef public dict memos          # key -> (horizon, memo) of a judged subject, while remembered
    cdef public list _due           # heap of (horizon, order, key): a subject's horizon when queued
    cdef public list _forget        # heap of (time to forget, order, key)
    cdef public long long _order
    cdef public long long opened, judged, late, peak_open

    cpdef feed(self, t, key, record, source=*, partition=*)
    cpdef tick(self, t, source=*, partition=*)
    cdef _passed(self, now)
    cdef _sweep(self, now)
    cdef _close(self, key, subject, bint at_end, horizon)
