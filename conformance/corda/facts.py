# cython: annotation_typing=False
"""A share's facts across message ids (:class:`.share.Share`: its commits, sequence-number uses and
sends), kept as compressed columns: a list of tuples of one shape whose fields are kept a chunk of
facts at a time, each field's values of the chunk as one compressed run of 64-bit numbers.

Why: the exact check (no declared bound) keeps a few facts per message to the end of the log, for
the checks that span ids (:mod:`.spanning`). As tuples, a commit's fact costs about 200 bytes (the
tuple and an int object per number); as plain columns, 8 bytes a field, still about 90 bytes per
settled message, as much as all else the check keeps of it. Stored as the differences between
successive values (the refs, sequence numbers and transactions of successive facts mostly grow by
small steps, and a chunk's names are a few codes), compressed, a field costs a byte or less. The
facts read back as the same tuples, a chunk at a time, in the order they were appended
(:meth:`Facts.__iter__`), and say whether that order is the log's (:attr:`Facts.in_order`), so that
the merge streams them in log order without sorting (or sorts them, as before, where a share was
not given its records in order).

A message id is kept by its number in the share's key store (:class:`rmkit.keystore.KeyStore`, a
"k" field), where it is held once, in a bytes arena, with the packed tracks' ids.
"""

from __future__ import annotations

import zlib
from array import array
from itertools import accumulate, chain
from operator import sub

from rmkit.lazy import numpy_module

try:
    import cython
except ImportError:  # not compiled, and Cython not installed
    from rmkit import _cython_shadow as cython

_NONE = -1  # an absent value (None) in a number field: its values are refs, counts and codes, never negative
_NUMBER_TYPES = {int, type(None)}
_ZERO = (0,)
# (C constants where compiled: the differences' bounds are then tested in C integers)
_LLMAX = cython.declare(cython.longlong, (1 << 63) - 1)
_LLMIN = cython.declare(cython.longlong, -(1 << 63))


def _deltas(numbers) -> bytes:
    """The differences between successive ``numbers`` (the first from 0), as 64-bit numbers,
    compressed; OverflowError where a number or a difference does not fit 64 bits. (Without numpy:
    a share's process need not load it, about 15 MB of every process's memory; the merge's checks
    across ids load it.)"""
    if cython.compiled:
        return zlib.compress(_deltas_c(numbers, False), 1)
    return zlib.compress(array("q", map(sub, numbers, chain(_ZERO, numbers))).tobytes(), 1)


def _sums(blob: bytes) -> list:
    """The numbers :func:`_deltas` kept."""
    if cython.compiled:
        return _sums_c(zlib.decompress(blob))
    deltas = array("q")
    deltas.frombytes(zlib.decompress(blob))
    return list(accumulate(deltas))


# Compiled, the differences are taken and summed in C integers (the same bytes as the array's
# "q", native order), not as a Python int per value and step: a chunk's field is 4,096 values.
@cython.cfunc
@cython.locals(n=cython.Py_ssize_t, i=cython.Py_ssize_t, v=cython.longlong, prev=cython.longlong, counts=cython.bint)
def _deltas_c(values: list, counts: bool):
    """The differences of ``values`` before compression. ``counts``: the values of an "i" field,
    read as :func:`_counts` reads them (None where it keeps none); else numbers (OverflowError
    where one, or a difference, is beyond 64 bits)."""
    n = len(values)
    out = cython.declare(bytearray, bytearray(8 * n))
    c = cython.declare(cython.p_char, out)
    p = cython.declare(cython.p_longlong, cython.cast(cython.p_longlong, c))
    prev = 0
    for i in range(n):
        x = values[i]
        if not counts:
            v = x  # (OverflowError beyond 64 bits, as the array's)
        elif x is None:
            v = _NONE
        elif type(x) is int:
            try:
                v = x
            except OverflowError:
                return None
            if v < 0:
                return None
        else:
            return None
        if (prev < 0 and v > _LLMAX + prev) or (prev > 0 and v < _LLMIN + prev):
            if counts:
                return None
            raise OverflowError("a difference beyond 64 bits")
        p[i] = v - prev
        prev = v
    return out


def _counts(values: list):
    """An "i" field's values of a chunk (ints >= 0, None) as :func:`_deltas` keeps them (None as
    -1), or None where one is not such a number (negative, not an int, beyond 64 bits): the field
    is then kept as its values."""
    if cython.compiled:  # (checked and differenced in one pass)
        data = _deltas_c(values, True)
        return None if data is None else zlib.compress(data, 1)
    nones = values.count(None)
    if not set(map(type, values)) <= _NUMBER_TYPES:
        return None
    numbers = [_NONE if v is None else v for v in values] if nones else values
    if numbers and min(numbers) < (_NONE if nones else 0) or nones and numbers.count(_NONE) != nones:
        return None
    try:
        return _deltas(numbers)
    except OverflowError:
        return None


@cython.cfunc
@cython.locals(n=cython.Py_ssize_t, i=cython.Py_ssize_t, s=cython.longlong)
def _sums_c(data: bytes) -> list:
    n = len(data) // 8
    c = cython.declare(cython.p_char, data)
    p = cython.declare(cython.p_longlong, cython.cast(cython.p_longlong, c))
    out = [0] * n
    s = 0
    for i in range(n):
        s += p[i]  # (each sum is a value _deltas_c read: within 64 bits)
        out[i] = s
    return out


class _Codes(dict):
    """Value -> its code in ``names`` (a value not coded yet is given the next)."""

    def __init__(self, names: list):
        super().__init__({v: c for c, v in enumerate(names)})
        self.names = names

    def __missing__(self, value):
        code = self[value] = len(self.names)
        self.names.append(value)
        return code


class Facts:
    """A list of fact tuples whose fields are ``shape`` ("i": an int >= 0 or None, most often; "s":
    anything hashable, most often an interned string, kept by its code in the facts' names; "k": a
    string kept in ``keys``, a :class:`rmkit.keystore.KeyStore`), appended in order; iterated as
    the same tuples (a "k" field as an equal string). Field ``ref_at`` is the fact's ref (its place
    in the log).

    Facts are appended to a short list of tuples and moved to the compressed chunks ``CHUNK`` at a
    time. A chunk's field whose numbers do not fit 64 bits (or are negative) is kept as the list of
    its values, exact as ever."""

    __slots__ = ("shape", "ref_at", "keys", "number_of", "chunks", "count", "pending", "names", "codes", "_in_order", "_last",
                 "_open", "_open_at", "_dirty")

    CHUNK = 4096

    def __init__(self, shape: str, ref_at: int = 0, keys=None, number_of=None):
        if "k" in shape and keys is None:
            raise ValueError(f"facts of shape {shape!r} need a key store")
        self.shape, self.ref_at, self.keys = shape, ref_at, keys
        # a "k" field's value -> its number in ``keys`` (adding it): ``keys.add`` unless the owner
        # knows a quicker way for the values it appends
        self.number_of = number_of or (keys.add if keys is not None else None)
        self.chunks: list[list] = []     # per chunk, per field: its compressed numbers, or a list of its values
        self.count = 0                   # facts in the chunks
        self.pending: list[tuple] = []   # appended, not yet in the chunks
        self.names: list = []            # an "s" field's values, by code
        self.codes = _Codes(self.names)
        self._in_order = True  # every ref appended so far was above the one before (log order)
        self._last = -1
        # the chunk last read by index, as its fields' lists of values (changed: to be written back)
        self._open, self._open_at, self._dirty = None, -1, False

    @property
    def in_order(self) -> bool:
        """Every ref appended was above the one before: the facts are in log order."""
        self._flush()
        return self._in_order

    def append(self, fact: tuple) -> None:
        pending = self.pending
        pending.append(fact)
        if len(pending) >= self.CHUNK:
            self._flush()

    def flush(self) -> None:
        """The facts appended so far moved to the chunks (their ids into the key store: a share
        flushes all its facts before the store travels with them)."""
        self._flush()

    def _flush(self) -> None:
        self._close()
        chunk, self.pending = self.pending, []
        if not chunk:
            return
        refs = [f[self.ref_at] for f in chunk]
        if self._in_order:
            try:
                if not (refs[0] > self._last and all(a < b for a, b in zip(refs, refs[1:]))):
                    self._in_order = False
            except TypeError:  # (a ref that is not a number)
                self._in_order = False
        self._last = refs[-1]
        self.chunks.append(self._pack([[f[k] for f in chunk] for k in range(len(self.shape))]))
        self.count += len(chunk)

    # a chunk ---------------------------------------------------------------------------------
    def _pack(self, fields: list[list]) -> list:
        out = []
        for kind, values in zip(self.shape, fields):
            if kind == "s":
                codes = self.codes  # (its own subscript: ``__missing__`` only for a new value)
                numbers = [codes[v] for v in values]
            elif kind == "k":
                add = self.number_of
                numbers = [_NONE if v is None else add(v) for v in values]
            else:
                # (not numbers, a negative one (-1 stands for None), or one beyond 64 bits: kept as they are)
                blob = _counts(values)
                out.append(list(values) if blob is None else blob)
                continue
            out.append(_deltas(numbers))
        return out

    def _unpack(self, chunk: list) -> list[list]:
        return [self._values(kind, blob) for kind, blob in zip(self.shape, chunk)]

    def _values(self, kind: str, blob) -> list:
        """One field of a chunk as its values."""
        if type(blob) is list:
            return blob
        numbers = _sums(blob)
        if kind == "s":
            names = self.names
            return [names[c] for c in numbers]
        if kind == "k":
            key = self.keys.key
            return [None if n == _NONE else key(n) for n in numbers]
        return [None if n == _NONE else n for n in numbers]

    def _chunk(self, i: int) -> list[list]:
        """Chunk ``i`` as its fields' lists of values (kept open for the next index into it)."""
        if self._open_at != i:
            self._close()
            self._open, self._open_at = self._unpack(self.chunks[i]), i
        return self._open

    def _close(self) -> None:
        if self._dirty:
            self.chunks[self._open_at] = self._pack(self._open)
        self._open, self._open_at, self._dirty = None, -1, False

    def numbers(self, k: int):
        """Field ``k`` of every fact, as numbers in a numpy array (an "s" field's codes in
        :attr:`names`, a "k" field's numbers in the key store, -1 for None); None where a chunk keeps
        the field as values."""
        np = numpy_module()
        self._flush()
        parts = []
        for chunk in self.chunks:
            blob = chunk[k]
            if type(blob) is list:
                return None
            parts.append(np.cumsum(np.frombuffer(zlib.decompress(blob), dtype=np.int64)))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def fields(self, picked: tuple[int, ...]):
        """The fields ``picked`` of every fact, as tuples, in the order appended: only those fields
        read back (an id from the key store, the costliest, only where picked)."""
        self._flush()
        shape = self.shape
        return chain.from_iterable(zip(*[self._values(shape[k], chunk[k]) for k in picked]) for chunk in self.chunks)

    # the list --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.count + len(self.pending)

    def __iter__(self):
        return self.fields(tuple(range(len(self.shape))))

    def __getitem__(self, i: int) -> tuple:
        self._flush()
        if not 0 <= i < self.count:
            raise IndexError(i)
        fields = self._chunk(i // self.CHUNK)
        return tuple(f[i % self.CHUNK] for f in fields)

    def __setitem__(self, i: int, fact: tuple) -> None:
        self._flush()
        if not 0 <= i < self.count:
            raise IndexError(i)
        fields = self._chunk(i // self.CHUNK)
        for f, v in zip(fields, fact):
            f[i % self.CHUNK] = v
        self._dirty = True

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"Facts({list(self)!r})"

    def __getstate__(self):
        self._flush()
        return {"shape": self.shape, "ref_at": self.ref_at, "keys": self.keys, "chunks": self.chunks,
                "count": self.count, "names": self.names, "_in_order": self._in_order, "_last": self._last}

    def __setstate__(self, state) -> None:
        self.pending, self.keys = [], None
        self._open, self._open_at, self._dirty = None, -1, False
        for k, v in state.items():
            setattr(self, k, v)
        self.number_of = self.keys.add if self.keys is not None else None
        self.codes = _Codes(self.names)


def in_log_order(lists, key=None, picked: tuple[int, ...] | None = None):
    """The facts of every share's list in ``lists``, in log order (by their ref; ``key`` picks it
    where it is not a fact's first field): the lists merged as they stream where each is in log
    order, else sorted as a whole (as the merge always did). ``picked``: only those fields of each
    fact (as :meth:`Facts.fields` reads them; ``key`` then applies to the picked tuple)."""
    lists = list(lists)
    if picked is not None:
        streams = [fields_of([f], picked) for f in lists]
    else:
        streams = lists
    if all(getattr(f, "in_order", False) for f in lists):
        if len(streams) == 1:
            return iter(streams[0])
        return merged(streams, key=key)
    return iter(sorted(chain.from_iterable(streams), key=key))


def ids_at(lists, refs: set, ref_at: int, id_at: int) -> dict:
    """Ref -> id of the facts of ``lists`` whose ref is in ``refs`` (for the findings of a pass
    that read the facts without their ids, the costliest field to read back)."""
    if not refs:
        return {}
    return {ref: mid for ref, mid in fields_of(lists, (ref_at, id_at)) if ref in refs}


def fields_of(lists, picked: tuple[int, ...]):
    """The fields ``picked`` of every fact of every list in ``lists``, as tuples, list after list
    (for a pass over the facts that needs neither the log's order nor every field)."""
    for facts in lists:
        if isinstance(facts, Facts):
            yield from facts.fields(picked)
        else:
            for f in facts:
                yield tuple([f[k] for k in picked])


_END = object()  # an iterable spent (:func:`merged`)


@cython.locals(k=cython.Py_ssize_t, i=cython.Py_ssize_t, best=cython.Py_ssize_t)
def merged(iterables, key=None):
    """``heapq.merge(*iterables, key=key)``: each iterable in order by ``key`` (a fact's first field
    where None), equal keys in the order of the iterables, then of each.

    The shares' facts interleave line by line, so heapq.merge steps its heap in Python for every
    fact: a third of a second per half a million at the end of a ``--jobs`` check, when nothing
    else runs. Here (compiled) a C loop compares the few iterables' heads and yields the least,
    the first of equals."""
    its = [iter(x) for x in iterables]
    k = len(its)
    if k == 1:
        yield from its[0]
        return
    heads = [next(it, _END) for it in its]
    keys = [None if h is _END else h[0] if key is None else key(h) for h in heads]
    while True:
        best = -1
        low = None
        for i in range(k):
            if heads[i] is not _END and (best < 0 or keys[i] < low):
                best, low = i, keys[i]
        if best < 0:
            return
        yield heads[best]
        h = heads[best] = next(its[best], _END)
        if h is not _END:
            keys[best] = h[0] if key is None else key(h)
