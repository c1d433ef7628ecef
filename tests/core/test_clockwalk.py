"""The walk of a share's batches over the log's packed clock blocks (:mod:`rmkit.clockwalk`).

The blocks here are a toy protocol's: pickled (refs, (a column of ``10 * ref``,)), refs either a
range (given as its first ref, the block's lines consecutive) or a list. The expected pieces follow
from the planting: each batch gets the block lines after the previous batch's last line up to
its own last line, the share's own lines marked; the lines after the share's last come last."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from rmkit.clockwalk import own_positions, with_clock


def pack(refs) -> bytes:
    refs = list(refs)
    consecutive = refs and refs == list(range(refs[0], refs[0] + len(refs)))
    return pickle.dumps((refs[0] if consecutive else refs, [10 * r for r in refs]))


def unpack(data: bytes):
    first, column = pickle.loads(data)
    return (range(first, first + len(column)) if type(first) is int else first), (column,)


def piece(refs, columns, own):
    """(every line's ref, the column as cut, the share's own refs): what a consumer would build."""
    assert [10 * r for r in refs] == list(columns[0])  # the columns are cut where the refs are
    return list(refs), list(columns[0]), [refs[i] for i in own]


def walked(batches, blocks):
    return [(list(refs), lines, pieces) for refs, lines, pieces in with_clock(batches, blocks, unpack, piece)]


def taken(out) -> list[list[int]]:
    """Per yielded batch: the other shares' refs it carries (its pieces' refs, own ones left out)."""
    return [[r for refs, _, own in pieces for r in refs if r not in own] for _, _, pieces in out]


def test_a_block_is_cut_at_each_batchs_last_line():
    out = walked([([2, 5], ["b", "e"]), ([8], ["h"])], [pack(range(1, 11))])
    assert [(refs, lines) for refs, lines, _ in out] == [([2, 5], ["b", "e"]), ([8], ["h"]), ([], [])]
    assert [[(p[0], p[2]) for p in pieces] for _, _, pieces in out] == [
        [([1, 2, 3, 4, 5], [2, 5])], [([6, 7, 8], [8])], [([9, 10], [])]]


def test_a_batch_spanning_several_blocks_gets_a_piece_of_each_in_log_order():
    out = walked([([8], ["h"])], [pack([1, 2, 3]), pack([4, 6]), pack([7, 8, 9]), pack([11])])
    assert [[p[0] for p in pieces] for _, _, pieces in out] == [[[1, 2, 3], [4, 6], [7, 8]], [[9]], [[11]]]
    assert taken(out) == [[1, 2, 3, 4, 6, 7], [9], [11]]


def test_the_blocks_after_the_last_batch_come_one_by_one():
    out = walked([([1], ["a"])], [pack([1, 2]), pack([3, 5]), pack(range(6, 9))])
    assert [(refs, pieces) for refs, _, pieces in out] == [
        ([1], [([1], [10], [1])]), ([], [([2], [20], [])]), ([], [([3, 5], [30, 50], [])]),
        ([], [([6, 7, 8], [60, 70, 80], [])])]


def test_no_batch_at_all_still_gives_every_block():
    assert taken(walked([], [pack([1, 2]), pack([4])])) == [[1, 2], [4]]


def test_the_shares_own_lines_are_marked_in_range_and_list_coded_blocks():
    for block in (pack(range(1, 7)), pack([1, 2, 3, 4, 5, 6])):
        out = walked([(range(2, 4), ["b", "c"]), ([5, 6], ["e", "f"])], [block])
        assert taken(out) == [[1], [4]], block


def test_empty_batches_and_empty_blocks_are_passed_over():
    out = walked([([], []), ([3], ["c"]), (range(4, 4), []), ([7], ["g"])],
                 [pack([]), pack([1, 2, 3]), pack([]), pack([5, 7]), pack([]), pack([9])])
    assert [refs for refs, _, _ in out] == [[3], [7], []]
    assert taken(out) == [[1, 2], [5], [9]]


def test_a_batch_before_any_block_line_gets_no_piece():
    out = walked([([1], ["a"]), ([2], ["b"]), ([9], ["i"])], [pack([5, 6])])
    assert taken(out) == [[], [], [5, 6]] and out[0][2] == out[1][2] == []


def test_a_block_is_read_only_when_the_share_reaches_it():
    blocks = [pack([1, 2]), pack([3, 4]), pack([5, 6]), pack([7, 8])]
    read = []

    def reading():
        for i, b in enumerate(blocks):
            read.append(i)
            yield b

    walk = with_clock(iter([([1], ["a"]), ([4], ["d"])]), reading(), unpack, piece)
    next(walk)  # block 0 cut at line 1: its rest held, nothing further read
    assert read == [0]
    next(walk)  # blocks 0 (rest) and 1 taken, block 2 read to find it starts after line 4
    assert read == [0, 1, 2]
    assert [p[0] for p in next(walk)[2]] == [[5, 6]]
    assert read == [0, 1, 2]
    next(walk)
    assert read == [0, 1, 2, 3]


def test_own_positions():
    assert own_positions(range(10, 20), [3, 10, 12, 19, 25]) == [0, 2, 9]
    assert own_positions([10, 12, 15, 19], range(12, 20)) == [1, 2, 3]
    assert own_positions([10, 12, 15, 19], [11, 13, 14, 20]) == []
    assert own_positions([], [1]) == own_positions([1, 2], []) == []


@st.composite
def logs(draw):
    """A log's record refs cut into blocks, a share's lines among them and its batches."""
    n = draw(st.integers(0, 40))
    refs = sorted(draw(st.sets(st.integers(1, 60), min_size=n, max_size=n)))
    cuts = sorted(draw(st.sets(st.integers(0, len(refs)), max_size=8)) | {0, len(refs)})
    blocks = [refs[a:b] for a, b in zip(cuts, cuts[1:])] + draw(st.lists(st.just([]), max_size=1))
    own = sorted(draw(st.sets(st.integers(1, 60), max_size=20)))
    bcuts = sorted(draw(st.sets(st.integers(0, len(own)), max_size=6)) | {0, len(own)})
    batches = [own[a:b] for a, b in zip(bcuts, bcuts[1:])]
    return refs, blocks, own, batches


@given(logs())
def test_every_other_line_comes_once_with_the_batch_it_precedes(log):
    refs, blocks, own, batches = log
    out = walked([(b, [str(r) for r in b]) for b in batches], map(pack, blocks))
    mine = set(own)
    expected, prev = [], 0
    for b in (b for b in batches if b):
        expected.append([r for r in refs if prev < r <= b[-1] and r not in mine])
        prev = b[-1]
    assert taken(out)[:len(expected)] == expected
    assert [r for t in taken(out)[len(expected):] for r in t] == [r for r in refs if r > prev]
    assert all(len(p) == 1 and p[0][0] for _, _, p in out[len(expected):])  # the rest: a non-empty block each
    # every line of a piece is the block's, and the own ones marked are exactly the share's
    assert [r for _, _, pieces in out for p in pieces for r in p[0]] == refs
    assert all(set(p[2]) == set(p[0]) & mine for _, _, pieces in out for p in pieces)
