"""A share's batches walked together with the log's packed clock blocks (``rmkit audit``).

Why: a share of a distributed check holds the records of some subjects only, but its checker's
decisions follow the *log's* clock. So a pass over the log first packs the clock events of every
file split into blocks (the checker's ``clock_block``), and every share is handed all of them, in
log order: between two of its own records its clock must take every other share's record that
lies between them, as one process's clock would. This module is that walk, once for every
protocol; what a protocol adds is how a block unpacks and what a piece of one looks like.

The walk (:func:`with_clock`):

- a block is unpacked only when the share's batches reach it, and the part of it not yet given
  is the only one held besides the share's own lines and the pieces of its current batch (which
  its consumer holds until the batch's last line anyway): the log's events, a few bytes a record
  over the whole log, never sit in a share's memory at once;
- a batch is given the events of every block line up to the batch's last line: its consumer
  interleaves them with the batch's own lines and must have all that come before the last one.
  A block that reaches past it is cut there, its later part kept for the next batch;
- the share's own lines are marked in each piece (their positions, ``own``): the share's loop
  takes its own records itself, and a record the clock took twice would count and step twice;
- the blocks after the share's last line come after its last batch, one at a time, so that its
  clock ends where the log's does.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Callable, Iterable, Iterator, Sequence

# a block unpacked: (its lines' references, ascending: a range or a list; its columns, each a
# sequence with one entry per line)
Unpacked = tuple[Sequence[int], tuple]


def with_clock(batches: Iterable, blocks: Iterable[bytes], unpack: Callable[[bytes], Unpacked],
               piece: Callable[[Sequence[int], tuple, list[int]], object]) -> Iterator[tuple]:
    """A share's ``(refs, lines)`` batches (log order; batches without lines are left out), each
    as ``(refs, lines, pieces)``: ``pieces`` holds a piece of every block, or part of a block,
    whose lines lie after the previous batch's last line and not after this batch's last line, in
    log order (none: an empty list); then ``([], [], [piece])`` for each block (or rest of one)
    after the share's last line.

    ``blocks``: the log's packed clock blocks in log order (they do not overlap). ``unpack(data)``:
    a block's (refs, columns) (:data:`Unpacked`); the walk cuts the refs and every column alike.
    ``piece(refs, columns, own)``: what the consumer takes of a block's part; ``own``: the
    ascending positions in it of the share's own lines (which the consumer must not take)."""
    blocks = iter(blocks)
    held: Unpacked | None = None  # the block being taken: the part of it not given yet
    for refs, lines in batches:
        if not len(refs):
            continue
        last = refs[-1]
        pieces: list = []
        while True:
            if held is None:
                data = next(blocks, None)
                if data is None:
                    break
                held = unpack(data)
            brefs, columns = held
            if len(brefs) and brefs[0] > last:
                break
            cut = bisect_right(brefs, last)
            if cut == len(brefs):  # (the whole rest of the block: no copy)
                if cut:
                    pieces.append(piece(brefs, columns, own_positions(brefs, refs)))
                held = None
                continue
            head = brefs[:cut]
            pieces.append(piece(head, tuple(c[:cut] for c in columns), own_positions(head, refs)))
            held = brefs[cut:], tuple(c[cut:] for c in columns)
            break
        yield refs, lines, pieces
    if held is not None:
        yield [], [], [piece(*held, [])]
    for data in blocks:
        brefs, columns = unpack(data)
        if len(brefs):
            yield [], [], [piece(brefs, columns, [])]


def own_positions(brefs: Sequence[int], own: Sequence[int]) -> list[int]:
    """The positions in ``brefs`` (a block's references, ascending: a range of step 1 or a list)
    of the references in ``own`` (ascending), in order."""
    if not len(own) or not len(brefs):
        return []
    lo, hi = brefs[0], brefs[-1]
    mine = own[bisect_left(own, lo):bisect_right(own, hi)]
    if type(brefs) is range:
        return [ref - lo for ref in mine]
    out = []
    i = 0
    for ref in mine:
        i = bisect_left(brefs, ref, i)
        if brefs[i] == ref:  # (ref <= hi: i is within brefs)
            out.append(i)
    return out
