"""How an RMB ``--jobs`` share picks its lines (conformance/rmb/checker.py ``_dealt``): every line
goes to the share :func:`rmkit.processes.key_share` gives its :func:`line_key` (its request's uid),
whether the compiled scanner (``_uidscan``, where it was built) or the Python reading finds it. A
line that is not JSON may be dealt by its uid instead of to share 0 (whichever share reads it
reports it, and none judges it): the report is the same (tests/rmb/test_rmb_stream.py)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, strategies as st

from rmkit.conformance.rmb import checker
from rmkit.processes import key_share

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_LINES = [line for p in sorted((ROOT / "fixtures" / "rmb").rglob("*.jsonl"))
                 for line in p.read_bytes().splitlines()]

EDGE = [
    b'{"uid":"AbC-1","message":{"uid":"other"}}',
    b'{"message":{"uid":"Inner"},"uid":null}',
    b'{"message":{"uid":"Inner"}}',
    b'{"uid":"first","uid":"Second"}',  # a second uid: the JSON readers take the last
    b'{"uid":"caf\\u00e9"}', b'{"uid":"a\\"b"}', b'{"uid":"\xc3\x89t\xc3\xa9"}',  # escapes, beyond ASCII
    b'{"uid":""}', b'{"uid":1}', b'{"uid":["x"]}', b'{"uid":{"a":1}}', b'{}', b'[]', b'"uid"', b'',
    b'  { "who" : "twin-1" , "uid" : "MiXeD" , "note":"a}\\"{[" }  ',
    b'{"queue":"\\"uid\\":\\"fake\\"","uid":"real"}',
    b'{"message":{"dat":"}}}","uid":"inner"},"uid":"OUTER"}',
    b'{"a":[{"uid":"deep"}],"uid":"top"}',
    b'{"uid":"x"} trailing', b'{"uid":"x"', b'{"uid":"x",}', b'{"uid" "x"}',
]


def reference(line: bytes, n: int) -> int:
    return key_share(checker.line_key(line), n)


def valid_json(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


@pytest.mark.parametrize("n", [2, 3, 7])
def test_the_scanner_deals_every_json_line_as_its_key_says(n):
    if checker._uid_shares is None:
        pytest.skip("the compiled scanner was not built")
    lines = EDGE + FIXTURE_LINES
    got = checker._uid_shares(lines, n)
    assert len(got) == len(lines)
    for line, share in zip(lines, got):
        if share != checker.UNSETTLED and valid_json(line):
            assert share == reference(line, n), line
    settled = [line for line, share in zip(FIXTURE_LINES, got[len(EDGE):]) if share != checker.UNSETTLED]
    assert len(settled) > len(FIXTURE_LINES) // 2  # (the common line is settled in C)


@pytest.mark.parametrize("n", [2, 5])
def test_a_share_picks_the_same_lines_with_the_scanner_and_without(n, monkeypatch):
    lines = EDGE + FIXTURE_LINES
    refs = list(range(len(lines)))
    with_scanner = [checker._dealt(refs, lines, k, n, {})[:2] for k in range(n)]
    monkeypatch.setattr(checker, "_uid_shares", None)
    without = [checker._dealt(refs, lines, k, n, {})[:2] for k in range(n)]
    valid = {i for i, line in enumerate(lines) if valid_json(line)}
    for a, b in zip(with_scanner, without):
        assert [r for r in a[0] if r in valid] == [r for r in b[0] if r in valid]
    assert sorted(r for refs, _ in without for r in refs) == refs  # every line in one share
    assert sorted(r for refs, _ in with_scanner for r in refs) == refs
    for k, (picked, _) in enumerate(without):
        assert all(reference(lines[r], n) == k for r in picked)


uids = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
values = st.one_of(st.none(), st.integers(), st.text(max_size=8), st.lists(st.integers(), max_size=3))


@given(uid=st.one_of(st.none(), uids), inner=st.one_of(st.none(), uids), extra=st.dictionaries(st.text(max_size=5), values,
       max_size=4), spaced=st.booleans(), ascii_only=st.booleans(), n=st.integers(2, 9))
def test_any_record_shape_is_dealt_as_its_key_says(uid, inner, extra, spaced, ascii_only, n):
    if checker._uid_shares is None:
        return
    obj = {**extra, "message": {"uid": inner, **extra}, "uid": uid}
    text = json.dumps(obj, ensure_ascii=ascii_only, separators=(", ", " : ") if spaced else (",", ":")).encode()
    share = checker._uid_shares([text], n)[0]
    if share != checker.UNSETTLED:
        assert share == reference(text, n)
    elif uid is not None and b"\\" not in text and uid.isascii() and uid.isprintable():
        pytest.fail(f"a plain uid of a line without escapes left to Python: {text!r}")
