# The C types of the RMB log rules' common ground (logjudge.py is their code, in Cython's pure
# Python mode). The handlers cimport them (setup.py mirrors this file under the package's installed
# name), so that a request's group and the profile's values are read as struct fields and the
# group's questions (a message's key, its problems, its signature's verdict, a twin's backlog
# life) are C calls; where nothing is compiled the .py runs as it is and this file means nothing.

cdef class Ctx:
    cdef public dict b, settings, _queues
    cdef public object directory, profile, started
    cdef public object accepted, remote, reply, tol, horizon, after_post, job_re
    cdef public object open_age_limit, open_expired, well_formed_sig, try_min, try_max, retry_any
    cpdef object attempts(self, object msg)
    cpdef object retryable(self, object status)
    cpdef object command_queue(self, object cmd)

cdef class Findings:
    cdef public list found, pending

cdef class Group:
    cdef public Ctx c
    cdef public list recs
    cdef public Findings out
    cdef public dict lasting, _sig, _alike, _distinct, _lives, memo, ev
    cpdef object key(self, object msg)
    cpdef object problems(self, object msg)
    cdef list _entry(self, object msg)
    cpdef object of(self, object event, object twin=*)
    cpdef object sig_verdict(self, object msg)
    cpdef object life(self, object twin)
    cpdef object judge(self, object judges)
