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
    ``ref_at`` is the fact's ref (its place in the log).

    Facts are appended to a short list of tuples and moved to the columns a chunk at a time (a
    column's values in one call), which costs a fraction of moving each as it comes."""

    __slots__ = ("shape", "ref_at", "cols", "pending", "_in_order", "_last")

    CHUNK = 4096

    def __init__(self, shape: str, ref_at: int = 0):
        self.shape, self.ref_at = shape, ref_at
        self.cols = [array("q") if k == "i" else [] for k in shape]
        self.pending: list[tuple] = []   # appended, not yet in the columns
        self._in_order = True  # every ref appended so far was above the one before (log order)
        self._last = -1

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

    def _flush(self) -> None:
        chunk, self.pending = self.pending, []
        if not chunk:
            return
        refs = [f[self.ref_at] for f in chunk]
        if self._in_order and not (refs[0] > self._last and all(a < b for a, b in zip(refs, refs[1:]))):
            self._in_order = False
        self._last = refs[-1]
        for k, col in enumerate(self.cols):
            values = [f[k] for f in chunk]
            if type(col) is list:
                col.extend(values)
                continue
            values = [_NONE if v is None else v for v in values]
            try:
                if min(values) >= 0:
                    col.extend(values)
                    continue
            except (TypeError, OverflowError):
                pass
            # (a number the column cannot hold: the column becomes a list, exact as ever)
            self.cols[k] = wide = [None if v == _NONE else v for v in col]
            wide.extend(None if v == _NONE else v for v in values)

    def __len__(self) -> int:
        return len(self.cols[0]) + len(self.pending)

    @staticmethod
    def _col(col):
        if type(col) is list:
            return col
        return (None if v == _NONE else v for v in col)

    def __iter__(self):
        self._flush()
        return zip(*map(self._col, self.cols))

    def __getitem__(self, i: int) -> tuple:
        self._flush()
        return tuple(None if type(c) is not list and c[i] == _NONE else c[i] for c in self.cols)

    def __setitem__(self, i: int, fact: tuple) -> None:
        self._flush()
        for k, v in enumerate(fact):
            col = self.cols[k]
            if type(col) is list:
                col[i] = v
            elif v is None:
                col[i] = _NONE
            elif type(v) is int and 0 <= v < 1 << 63:
                col[i] = v
            else:
                self.cols[k] = wide = [None if x == _NONE else x for x in col]
                wide[i] = v

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"Facts({list(self)!r})"

    def __getstate__(self):
        self._flush()
        return {"shape": self.shape, "ref_at": self.ref_at, "cols": self.cols, "_in_order": self._in_order,
                "_last": self._last}

    def __setstate__(self, state) -> None:
        self.pending = []
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
