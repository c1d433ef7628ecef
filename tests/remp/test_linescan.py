"""The chunk dealer of ``--jobs`` readers (rmkit/linescan.py): the compiled scanner gives the
answer of the readers' dealing without it (the chunk split, the batch proof with numpy, each
share's lines joined) on every text, and that answer is the REMP share rule's (partition_share)
wherever either gives one; a --jobs run reports the same either way."""

from __future__ import annotations

import re
from itertools import compress
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmkit import linescan
from rmkit.conformance.remp import shares
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.conformance.remp.shares import partition_share
from rmkit.logread import split_lines

try:
    from rmkit._linescan import deal_by_key as compiled
except ImportError:  # built by pip install where a C compiler is found
    compiled = None

needs_compiled = pytest.mark.skipif(compiled is None, reason="the compiled line scanner (rmkit._linescan) was not "
                                                            "built here: no C compiler at install")
KEY = b'"message_id"'
LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "remp" / "logs"


def receipt(mid: str, tail: bytes = b"") -> bytes:
    return (b'{"kind":"Finalized","message_id":"%s","timestamp":1700000000000,"source_id":"%s"%s}'
            % (mid.encode(), b"ab" * 32, tail))


HEX = "0123456789abcdefABCDEF"
PLAIN = [receipt("5e" * 31 + "0" + c) + b"\n" for c in HEX]


def in_python(text: bytes, n: int):
    """What a reader deals without the compiled scanner: the chunk's lines split, their shares by
    the batch proof (shares.fast_shares), each share's pick and lines joined; None where the proof
    fails (the reader then applies the rule line by line) or the text is not made of terminated
    lines (a reader's chunk always is)."""
    if not text.endswith(b"\n"):
        return None
    lines = split_lines(text, terminated=True)[0]
    dealt = shares.fast_shares(lines, n, text, terminated=True)
    if dealt is None:
        return None
    picks = shares.share_picks(range(1, len(lines) + 1), lines, n, text, terminated=True)
    return picks, [b"".join(compress(lines, pick)) for pick in picks]


def both(text: bytes, n: int):
    """The Python answer, and the compiled one (the same, or the test fails)."""
    want = in_python(text, n)
    if compiled is not None:
        assert compiled(text, KEY, n, shares._fold_table(n)) == want
    return want


def assert_the_rule(text: bytes, n: int, dealt) -> None:
    """Each share's pick and lines are those partition_share gives each line."""
    lines = text.splitlines(keepends=True)
    rule = [partition_share(line, n) for line in lines]
    assert None not in rule
    picks, texts = dealt
    assert [list(p) for p in picks] == [[int(s == k) for s in rule] for k in range(n)]
    assert texts == [b"".join(compress(lines, p)) for p in picks]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16])
def test_plain_lines_are_dealt_by_the_rule(n):
    text = b"".join(PLAIN * 3)
    dealt = both(text, n)
    assert dealt is not None
    assert_the_rule(text, n, dealt)
    if n <= 10:  # (hex digits reach ten shares at most)
        assert {k for k in range(n) if dealt[1][k]} == set(range(n))  # every share gets lines


@pytest.mark.parametrize("odd", [
    b"\n",  # a blank line
    b'{"kind":"Finalized","message_id" : "abc"}\n',  # spacing the fast reading does not take
    b'{"kind":"Finalized","message_id":""}\n',  # an empty id
    b'{"kind":"Finalized","message_id":17,"x":"y"}\n',  # not a string
    b'{"topic":"t","value":"{\\"kind\\":\\"Finalized\\",\\"message_id\\":\\"abc\\"}"}\n',  # a Kafka value as a string
    b'{"kind":"Finalized","note":"message_id","message_id":"abd"}\n',  # a value that reads like the key: still one key
    receipt("aa" * 32, b',"meta":{"message_id":"%s"}' % (b"bb" * 32)) + b"\n",  # a second key
    b'{"kind":"Finalized","message_id":"abg\n',  # an id that never closes in its line
    b'{"kind":"Finalized","message_id"message_id":"abh"}\n',  # two keys sharing a quote
    b'{"kind":"Finalized","message_id":\n',  # the key at the line's end
    b'{"kind":"Finalized","message_id"\n',
])
@pytest.mark.parametrize("at", [0, 3, None])  # first (where the scanner picks its pivot byte), among others, last
def test_a_line_off_the_fast_reading_leaves_the_chunk_to_the_rule(odd, at):
    lines = list(PLAIN)
    lines.insert(len(lines) if at is None else at, odd)
    text = b"".join(lines)
    keys = len(re.findall(rb'(?="message_id")', odd))  # overlapping ones counted apart
    one_plain_key = keys == 1 and re.search(rb'"message_id":"[^"\n]+"', odd)
    for n in (2, 3):
        dealt = both(text, n)
        assert (dealt is not None) == bool(one_plain_key)
        if dealt is not None:
            assert_the_rule(text, n, dealt)


@pytest.mark.parametrize("text", [b"", PLAIN[0][:-1], PLAIN[0] + PLAIN[1][:-1]])  # empty; no newline at the end
def test_a_text_not_made_of_terminated_lines_is_not_dealt(text):
    assert both(text, 2) is None


@needs_compiled
def test_a_value_whose_last_byte_has_no_share_is_not_dealt():
    fold = bytes([9] * 256)  # every byte's share 9, of 2
    assert compiled(b"".join(PLAIN), KEY, 2, fold) is None


def test_more_shares_than_a_byte_holds_are_not_dealt_at_once():
    assert both(b"".join(PLAIN), 300) is None


_piece = st.sampled_from([
    b'"message_id"', b'\\"message_id\\"', b':', b' ', b'"', b'\\"', b',', b'{', b'}', b'"note":', b"\n",
    b'"message_id":"', b'"message_id":', b'ab', b'C', b'7', b'f', b'_', b'"x"', b'message_id', b'"message_id"message_id"',
])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_piece, max_size=12).map(b"".join), min_size=1, max_size=10),
       st.lists(st.sampled_from(list(HEX)), min_size=0, max_size=10), st.integers(1, 9), st.booleans())
def test_both_scanners_agree_on_any_text_and_follow_the_rule(raw, lasts, n, end_with_newline):
    """Fragments of keys, quotes, escapes and newlines, among plain receipts."""
    plain = [receipt("0" * 63 + c) for c in lasts]
    lines = [x for pair in zip(plain, raw) for x in pair] + raw[len(plain):] + plain[len(raw):]
    text = b"\n".join(lines) + (b"\n" if end_with_newline else b"")
    dealt = both(text, n)
    if dealt is not None:
        assert_the_rule(text, n, dealt)


def _report(inputs, jobs):
    rep = RempLogChecker("spec", lifetime_s=60, jobs=jobs).run(inputs)
    return [(v.rule, v.subject, [(e.line, e.kind) for e in v.evidence]) for v in rep.violations], rep.counts, rep.records


@pytest.mark.parametrize("scanner", ["compiled", "python"])
def test_a_jobs_run_reports_the_same_with_either_scanner(scanner, monkeypatch, tmp_path):
    """A --jobs run of a log with faults, its chunks dealt by the way under test, reports what one
    process reports; the shares (forked) mark each chunk that way dealt (the compiled scanner; or,
    where it is left out, the batch proof of the lines the reader split), so the run is seen to
    have taken that path."""
    if scanner == "compiled" and compiled is None:
        pytest.skip("the compiled line scanner was not built here")
    from rmkit import peerread
    from rmkit.conformance.remp import parallel

    inputs = [str(LOGS / "sim-spec-faults.jsonl")]
    want = _report(inputs, 1)
    marks = tmp_path / "dealt"

    def marking(scan):
        def marked(*args, **kwargs):
            got = scan(*args, **kwargs)
            with open(marks, "a") as f:
                f.write("1" if got is not None else "0")
            return got
        return marked

    if scanner == "compiled":
        monkeypatch.setattr(linescan, "_COMPILED", marking(compiled))
    else:
        monkeypatch.setattr(linescan, "_COMPILED", None)
        monkeypatch.setattr(shares, "fast_shares", marking(shares.fast_shares))
    chunk = 64 << 10  # several chunks per share
    real = peerread.peer_batches
    monkeypatch.setattr(parallel, "peer_batches", lambda *a, **k: real(*a, chunk_bytes=chunk, **k))
    assert _report(inputs, 2) == want
    dealt = marks.read_text()
    assert len(dealt) == -(-Path(inputs[0]).stat().st_size // chunk)  # every chunk was dealt that way
    assert "1" in dealt  # and it dealt the plain ones at once (the faults log has a few lines off the fast reading)


@needs_compiled
def test_the_installed_dealer_is_the_compiled_one_unless_told_otherwise(monkeypatch):
    assert linescan.COMPILED == (linescan._compiled()[0] is not None)
    monkeypatch.delenv("RMKIT_PURE_PYTHON", raising=False)
    assert linescan._compiled()[0] is compiled
    monkeypatch.setenv("RMKIT_PURE_PYTHON", "1")
    assert linescan._compiled() == (None, None, None)  # every compiled piece, the line hash too


def braced_by_hand(text: bytes) -> int:
    """What braced_lines promises, line by line."""
    if not text.endswith(b"\n"):
        return 0
    lines = text[:-1].split(b"\n")
    return len(lines) if all(x[:1] == b"{" and x[-1:] == b"}" for x in lines) else 0


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_piece, max_size=8).map(b"".join), min_size=0, max_size=8), st.booleans())
def test_braced_lines_counts_the_lines_when_each_is_braced(raw, end_with_newline):
    """Both ways (compiled, Python) count the lines of a text whose every line starts with "{" and
    ends with "}", and give 0 for any other text (one line not so, no final newline, empty)."""
    text = b"\n".join(b"{" + x + b"}" if i % 3 else x for i, x in enumerate(raw)) + (b"\n" if end_with_newline else b"")
    want = braced_by_hand(text)
    if compiled is not None:
        assert linescan.braced_lines(text) == want
    pure = linescan._BRACED
    try:
        linescan._BRACED = None
        assert linescan.braced_lines(text) == want
    finally:
        linescan._BRACED = pure


@pytest.mark.parametrize("text, want", [(b"{}\n{}\n", 2), (b"{} {}\n", 1), (b"{}\n\n", 0), (b"{\n}\n", 0), (b"{}", 0), (b"", 0),
                                        (b"}\n", 0), (b"{\n", 0), (b"{}\r\n", 0), (b"\n", 0)])
def test_braced_lines_on_edges(text, want):
    assert linescan.braced_lines(text) == want == braced_by_hand(text)
