"""A ``--jobs`` share keys a line without parsing it where the line's text settles its id
(conformance/corda/parallel.py ``share_of``): every line whose record has an id goes where the
parsed id sends it (``rmkit audit``'s rule), so the records of one message meet in one share."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmkit.conformance.corda.checker import CordaLogChecker
from rmkit.conformance.corda.parallel import share_of
from rmkit.processes import key_share

KEY = CordaLogChecker().key

LINES = [
    b'{"t":1,"node":"bob","event":"committed","id":"N-f1-1-0","tx":1}',   # the usual line: not parsed
    b'{"t":1,"node":"bob","event":"committed","id": "N-f1-2-0","tx":1}',  # spaced: parsed
    b'{"id":"R-1","node":"bob","id":"R-2"}',                              # given twice: the last counts
    b'{"node":"bob","id":"R-\\u0041"}',                                   # an escape
    b'{"node":"bob","id":"R-\\"q"}',                                      # an escaped quote
    b'{"node":"bob","id":"R-\xc3\x84"}',                                  # not ASCII
    b'{"node":"bob","id":""}',                                            # empty
    b'{"node":"bob","id":17}',                                            # a number
    b'\xef\xbb\xbf{"node":"bob","id":"R-bom"}',                           # a byte order mark
    b'{"node":"bob","delivery":"id","id":"R-3"}',                         # the name as a value too
    b'{"node":"bob","delivery":"x\\"id\\":\\"R-9","id":"R-4"}',            # the name inside a value
    b'{"node":"bob","x":{"id":"R-5"},"id":"R-6"}',                        # a nested key besides
    b'{"sender":"6f1c","xid":"R-7","id":"R-8"}',                          # a longer name ending in it
]
# lines with no top-level id: unreadable without one, reported by whichever share gets them
NO_ID = [
    b'{"node":"bob","x":{"id":"R-5"}}',
    b'{"a\\"id":"q1"}',
    b'not json "id":"nj"',
    b'\xff{"id":"bad-utf8"}',
]


@pytest.mark.parametrize("n", [2, 3, 7])
def test_a_line_with_an_id_goes_where_its_parsed_id_sends_it(n):
    for line in LINES:
        assert KEY.of_line(line) is not None, line
        assert share_of(line, n, KEY) == key_share(KEY.of_line(line), n), line


def test_lines_without_an_id_go_to_some_share():
    for line in NO_ID:
        assert KEY.of_line(line) is None
        assert 0 <= share_of(line, 3, KEY) < 3


def test_a_log_checked_in_shares_finds_what_one_process_finds(tmp_path):
    lines = [json.dumps({"t": 1 + k, "node": "bob", "event": ev, "id": f"N-f{k % 7}-{k}-0", **extra})
             for k in range(60) for ev, extra in (("received", {"delivery": f"ID:{k}", "sender": "s", "seq": k, "session": "s1"}),
                                                 ("dedup", {"verdict": "NEW"}), ("committed", {"tx": k}))]
    lines += [orjson.dumps({"t": 99, "node": "bob", "event": "committed", "id": "N-f1-1-0", "tx": 5}).decode()]  # again
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    one = CordaLogChecker(jobs=1, max_examples=0).run([str(log)])
    two = CordaLogChecker(jobs=2, max_examples=0).run([str(log)])
    assert one.counts == two.counts and "CORDA-DEDUP-001" in one.counts
    assert [(v.rule, v.subject) for v in one.violations] == [(v.rule, v.subject) for v in two.violations]


@pytest.mark.parametrize("n", [2, 3, 7, 254])
def test_the_compiled_dealer_keys_every_line_it_reads_as_the_python_reading_does(n):
    """The compiled dealer of a batch (conformance/corda/_keyshares.pyx) gives each line it reads the
    share the line's own reading gives (the parsed id's, where the text settles it), and leaves
    every other line to that reading (255)."""
    parallel = pytest.importorskip("rmkit.conformance.corda.parallel")
    if parallel._LINE_SHARES is None:
        pytest.skip("the dealer was not compiled here (no C compiler at install): lines are dealt in Python")
    from rmkit.conformance.corda.parallel import _fast_key

    odd = [b"", b"   ", b'"id"id":"R-x"', b'{"id":"R-1"', b'{"id":"unclosed', b'{"id":"R-2"} "id"', b'{"ID":"R-3"}']
    lines = LINES + NO_ID + odd + [f'{{"t":{k},"node":"bob","id":"N-f{k % 9}-{k}-0"}}'.encode() for k in range(500)]
    got = parallel._LINE_SHARES(lines, *_fast_key(KEY), n)
    assert len(got) == len(lines)
    read = [(line, s) for line, s in zip(lines, got) if s != 255]
    assert len(read) > 500  # (the usual lines are read)
    for line, s in read:
        assert s == share_of(line, n, KEY), line
        if KEY.of_line(line) is not None:  # (a line without a top-level id: reported by whichever share gets it)
            assert s == key_share(KEY.of_line(line), n), line
    assert got[0] == share_of(LINES[0], n, KEY) and got[1] == 255 and got[4] == 255  # (read; spaced, escaped: not)


# lines made of the fast reading's own pieces (the quoted name, its needle, quotes, colons,
# backslashes): names that overlap, repeat, close early or hold an escape
PIECES = st.sampled_from([b'"id"', b'"id":"', b'"', b':', b'\\', b'id', b'x', b'{', b'}', b',', b'"id"id":"'])


@settings(max_examples=300, deadline=None)
@given(line=st.lists(PIECES, max_size=12).map(b"".join), n=st.sampled_from([2, 3, 7]))
def test_the_compiled_dealer_reads_near_misses_as_the_python_reading_does(line, n):
    """Every line the compiled dealer reads gets the share the Python fast reading gives it
    (``parallel.keyer``), on lines built from the reading's own pieces."""
    parallel = pytest.importorskip("rmkit.conformance.corda.parallel")
    if parallel._LINE_SHARES is None:
        pytest.skip("the dealer was not compiled here (no C compiler at install): lines are dealt in Python")
    from rmkit.conformance.corda.parallel import _fast_key

    got = parallel._LINE_SHARES([line], *_fast_key(KEY), n)[0]
    name, needle = _fast_key(KEY)
    settled = line.count(name) == 1 and needle in line
    if settled:
        start = line.find(needle) + len(needle)
        end = line.find(b'"', start)
        settled = end >= 0 and b"\\" not in line[start:end]
    assert (got != 255) == settled, line
    if settled:
        assert got == share_of(line, n, KEY), line


def test_a_log_with_odd_lines_checked_in_shares_finds_what_one_process_finds(tmp_path):
    """Batches dealt by the compiled dealer and batches that hold a line it leaves (a blank line, an
    escaped id) are read alike (the log spans several batches, the odd lines in its first)."""
    lines = [json.dumps({"t": 1 + k, "node": "bob", "event": ev, "id": f"N-f{k % 7}-{k}-0", **extra}, separators=(",", ":"))
             for k in range(12000) for ev, extra in (("received", {"delivery": f"ID:{k}", "sender": "s", "seq": k, "session": "s1"}),
                                                   ("dedup", {"verdict": "NEW"}), ("committed", {"tx": k}))]
    lines[4000:4000] = ["", '{"t":5,"node":"bob","event":"committed","id":"N-f1-\\u0031-0","tx":77}', "not json"]
    lines.append('{"t":99999,"node":"bob","event":"committed","id":"N-f3-11000-0","tx":5}')  # again, in the last batch
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    one = CordaLogChecker(jobs=1, max_examples=0).run([str(log)])
    for jobs in (2, 3):
        more = CordaLogChecker(jobs=jobs, max_examples=0).run([str(log)])
        assert (one.counts, one.records, one.unreadable) == (more.counts, more.records, more.unreadable)
        assert sorted((v.rule, v.subject) for v in one.violations) == sorted((v.rule, v.subject) for v in more.violations)
    assert one.unreadable == 1 and one.counts["CORDA-DEDUP-001"] == 2 and one.records == 36002
