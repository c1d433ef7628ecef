"""A share's facts across ids kept as columns (conformance/corda/facts.py) read back as the tuples
appended, in their order, and say whether that order is the log's."""

from __future__ import annotations

import heapq
import pickle
from operator import itemgetter

from hypothesis import given
from hypothesis import strategies as st

from rmkit.conformance.corda.facts import Facts, fields_of, in_log_order, merged


def _commits(n: int, step: int = 3) -> list[tuple]:
    return [(i * step, "bob", f"N-f1-{i}-0", "s1", "6f1c", None if i % 3 else i, None if i % 2 else i + 1)
            for i in range(n)]


def test_columns_read_back_as_the_tuples_appended():
    rows = _commits(3 * Facts.CHUNK + 5)  # (several chunks moved to the columns, and some not yet)
    facts = Facts("issssii")
    for r in rows:
        facts.append(r)
    assert len(facts) == len(rows) and list(facts) == rows and facts.in_order
    facts[5] = (*rows[5][:6], 77)
    rows[5] = (*rows[5][:6], 77)
    assert facts[5] == rows[5] and list(facts) == rows
    again = pickle.loads(pickle.dumps(facts))
    assert list(again) == rows and again.in_order
    # a pass that picks some fields reads back those of the same tuples, a list of facts after a
    # plain list (and a field kept as its values: a number beyond 64 bits)
    facts.append((len(rows) * 3, "bob", "N-f1-x-0", "s2", "6f1c", 2 ** 64, None))
    rows.append((len(rows) * 3, "bob", "N-f1-x-0", "s2", "6f1c", 2 ** 64, None))
    assert list(facts.fields((3, 6, 2))) == [(r[3], r[6], r[2]) for r in rows]
    assert list(fields_of([facts, rows[:2]], (5, 1))) == [(r[5], r[1]) for r in rows + rows[:2]]


def test_a_number_a_column_cannot_hold_is_kept_exactly():
    facts = Facts("isis")
    for f in [(5, "a", 2 ** 64, "m"), (3, "a", -5, "m"), (9, "a", None, "m")]:
        facts.append(f)
    assert list(facts) == [(5, "a", 2 ** 64, "m"), (3, "a", -5, "m"), (9, "a", None, "m")]


def test_order_is_told_and_merged_or_sorted_accordingly():
    ordered, shuffled = Facts("sisi", 3), Facts("sisi", 3)
    for f in [("a", 1, "m", 4), ("a", 2, "m", 8)]:
        ordered.append(f)
    for f in [("b", 1, "n", 9), ("b", 2, "n", 2)]:
        shuffled.append(f)
    assert ordered.in_order and not shuffled.in_order
    ref = lambda f: f[3]  # noqa: E731
    assert list(in_log_order([ordered, shuffled], key=ref)) == sorted([*ordered, *shuffled], key=ref)
    other = Facts("sisi", 3)
    other.append(("c", 1, "o", 5))
    assert [f[3] for f in in_log_order([ordered, other], key=ref)] == [4, 5, 8]


def test_the_reused_numbers_found_from_the_columns_are_those_found_one_use_at_a_time():
    """spanning._reused (the facts' numbers, sorted) against _reused_by_dict (each number's first
    id), on shares that reuse numbers within a share, across shares, and use one id's number twice
    (each id in one share, as the shares are keyed by id)."""
    import random

    from rmkit.keystore import KeyStore

    from rmkit.conformance.corda.share import Share
    from rmkit.conformance.corda.spanning import _reused, _reused_by_dict

    rnd = random.Random(7)
    shares, ref = [], 0
    for k in range(3):
        store = KeyStore()
        share = Share(seqs=Facts("siki", 3, keys=store), sent_seqs=Facts("isik", keys=store))
        for _ in range(3 * Facts.CHUNK):
            ref += 1
            sender, seq, mid = rnd.choice(["a", "b", "c"]), rnd.randrange(20_000), f"N-f{k}-{rnd.randrange(30_000)}-0"
            if rnd.random() < 0.5:
                share.sent_seqs.append((ref, sender, seq, mid))
            else:
                share.seqs.append((sender, seq, mid, ref))
        shares.append(share)
    expect = _reused_by_dict(shares)
    assert expect and _reused(shares) == expect


# sorted lists of small keys (many ties within and across lists), tagged with where each item came from
_runs = st.lists(st.lists(st.integers(0, 12), max_size=40).map(sorted), min_size=1, max_size=4)


@given(_runs)
def test_the_merge_gives_heapq_merge_order_ties_included(keys):
    lists = [[(k, i, j) for j, k in enumerate(ks)] for i, ks in enumerate(keys)]
    key = itemgetter(0)
    assert list(merged(lists, key=key)) == list(heapq.merge(*lists, key=key))
    assert list(merged([iter(x) for x in lists])) == list(heapq.merge(*lists, key=key))
    backwards = [[(-k, i, j) for k, i, j in x] for x in lists]  # (a key that is not the first field)
    assert list(merged(backwards, key=lambda f: -f[0])) == list(heapq.merge(*backwards, key=lambda f: -f[0]))
