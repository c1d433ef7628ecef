"""A share's facts across message ids (:class:`.share.Share`: its commits, sequence-number uses and
sends), kept as columns: a list of tuples of one shape that holds each field in a column of its
own, integers in an ``array('q')`` and names as references to the strings the share already keeps.

Why: the exact check (no declared bound) keeps a few facts per message to the end of the log, for
the checks that span ids (:mod:`.spanning`). As tuples, a commit's fact costs about 200 bytes (the
tuple and an int object per number); as columns, 8 bytes a field. The columns read back as the
same tuples, one at a time, in the order they were appended (:meth:`Facts.__iter__`), and say
whether that order is the log's (:attr:`Facts.in_order`), so that the merge streams them in log
order without sorting (or sorts them, as before, where a share was not given its records in order).
"""

from __future__ import annotations

import heapq
from array import array
from itertools import chain

_NONE = -1  # an absent number (None) in an int column: the columns hold refs and counts, never negative


class Facts:
    """A list of fact tuples whose fields are ``shape`` ("i": an int >= 0 or None; "s": anything,
    most often an interned string), appended in order; iterated as the same tuples. Field
    ``ref_at`` is the fact's ref (its place in the log)."""

    __slots__ = ("shape", "ref_at", "cols", "in_order", "_last")

    def __init__(self, shape: str, ref_at: int = 0):
        self.shape, self.ref_at = shape, ref_at
        self.cols = [array("q") if k == "i" else [] for k in shape]
        self.in_order = True   # every ref appended so far was above the one before (log order)
        self._last = -1

    def append(self, fact: tuple) -> None:
        ref = fact[self.ref_at]
        if ref <= self._last:
            self.in_order = False
        self._last = ref
        for col, v in zip(self.cols, fact):
            if type(col) is list:
                col.append(v)
            elif v is None:
                col.append(_NONE)
            elif type(v) is int and 0 <= v:
                col.append(v)
            else:  # (a number the column cannot hold: the column becomes a list, exact as ever)
                self._widen(col).append(v)

    def _widen(self, col: array) -> list:
        i = next(k for k, c in enumerate(self.cols) if c is col)
        self.cols[i] = wide = [None if v == _NONE else v for v in col]
        return wide

    def __len__(self) -> int:
        return len(self.cols[0])

    def _col(self, col):
        if type(col) is list:
            return col
        return (None if v == _NONE else v for v in col)

    def __iter__(self):
        return zip(*map(self._col, self.cols))

    def __getitem__(self, i: int) -> tuple:
        return tuple(None if type(c) is not list and c[i] == _NONE else c[i] for c in self.cols)

    def __setitem__(self, i: int, fact: tuple) -> None:
        for k, v in enumerate(fact):
            col = self.cols[k]
            if type(col) is list:
                col[i] = v
            elif v is None:
                col[i] = _NONE
            elif type(v) is int and 0 <= v:
                col[i] = v
            else:
                self._widen(col)[i] = v

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"Facts({list(self)!r})"

    def __getstate__(self):
        return {"shape": self.shape, "ref_at": self.ref_at, "cols": self.cols, "in_order": self.in_order,
                "_last": self._last}

    def __setstate__(self, state) -> None:
        for k, v in state.items():
            setattr(self, k, v)


def in_log_order(lists, key=None):
    """The facts of every share's list in ``lists``, in log order (by their ref; ``key`` picks it
    where it is not a fact's first field): the lists merged as they stream where each is in log
    order, else sorted as a whole (as the merge always did)."""
    lists = list(lists)
    if all(getattr(f, "in_order", False) for f in lists):
        if len(lists) == 1:
            return iter(lists[0])
        return heapq.merge(*lists, key=key)
    return iter(sorted(chain.from_iterable(lists), key=key))
