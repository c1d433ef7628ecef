"""What the annotations of a module written for Cython's pure Python mode (:mod:`rmkit.logclock`)
mean where it runs as plain Python and Cython is not installed: nothing. (Cython's own ``cython``
module does the same where it is installed.)"""

compiled = False
int = longlong = ulonglong = bint = Py_ssize_t = void = object


def declare(_type=None, value=None, **__):
    """A declared name's value (None where none is given), as Cython's own shadow gives it."""
    return value


def cast(_, value):
    return value


def _same(f):
    return f


cclass = ccall = cfunc = _same


def locals(**_):
    return _same
