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


def _mixed_lines(requests: int, per_request: int = 9) -> list[bytes]:
    """Per request: a line that names no request (a client's message before it has a uid), then
    ``per_request`` lines of its uid."""
    out = []
    for i in range(requests):
        uid = f"{i:08x}-0000-4000-8000-000000000000"
        out.append(b'{"uid":"","message":{"uid":""}}\n')
        out += [b'{"uid":"%s","message":{"uid":"%s"}}\n' % (uid.encode(), uid.encode())] * per_request
    return out


@pytest.mark.parametrize("n", [2, 3])
def test_the_share_table_keeps_the_loose_lines_in_share_0_and_evens_the_shares(n):
    """A tenth of the lines name no request, and all go to share 0 (they are judged together):
    the other buckets are dealt so that each share still gets about 1/n of the lines."""
    lines = _mixed_lines(4000)
    table = checker.share_table(checker._shares(lines, checker.BUCKETS, {}), n)
    assert table[0] == 0 and table[checker.UNSETTLED] == checker.UNSETTLED
    shares = checker._shares(lines, checker.BUCKETS, {}).translate(table)
    counts = [shares.count(k) for k in range(n)]
    assert sum(counts) == len(lines)
    assert max(counts) - min(counts) < 0.04 * len(lines), counts
    plain = [sum(1 for line in lines if reference(line, n) == k) for k in range(n)]
    assert max(plain) - min(plain) > max(counts) - min(counts)  # (key_share of n alone leaves share 0 the loose lines on top)
    refs = list(range(len(lines)))
    dealt = [checker._dealt(refs, lines, k, n, {}, table)[0] for k in range(n)]
    assert sorted(r for picked in dealt for r in picked) == refs
    for k, picked in enumerate(dealt):
        assert {lines[r] for r in picked}.isdisjoint({lines[r] for j, p in enumerate(dealt) if j != k for r in p})
    loose = {r for r in refs if lines[r].startswith(b'{"uid":""')}
    assert loose and loose <= set(dealt[0])


def test_the_sample_is_whole_lines_from_the_middle_of_a_long_file(tmp_path, monkeypatch):
    monkeypatch.setattr(checker, "SAMPLE_BYTES", 4096)
    lines = _mixed_lines(400)
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(lines))
    sample = checker._sample(str(path))
    assert sample and all(line in set(lines) for line in sample)
    longest = max(map(len, lines))
    assert 4096 // longest - 1 <= len(sample) <= 4096 // min(map(len, lines))
    assert len(lines) // 4 < lines.index(sample[0]) < len(lines) // 2  # (from the middle)
    short = tmp_path / "short.jsonl"
    short.write_bytes(b"".join(lines[:10]))
    assert checker._sample(str(short)) is None  # (a short log: dealt by key_share of n)
    assert checker._sample(str(tmp_path)) is None  # (no regular file)
    import gzip

    packed = tmp_path / "log.jsonl.gz"
    packed.write_bytes(gzip.compress(b"".join(lines)))
    assert checker._sample(str(packed)) is None


@pytest.mark.parametrize("n", [2, 3])
def test_shares_dealt_by_a_sampled_table_report_what_one_process_reports(n, tmp_path, monkeypatch):
    """A log long enough for a sample (SAMPLE_BYTES made small), with planted violations among
    requests whose client messages name no request: the shares' findings, merged, are one
    process's."""
    import importlib.util

    from rmkit.conformance.rmb.checker import RmbShards

    spec = importlib.util.spec_from_file_location("mk_rmb_dealing", ROOT / "fixtures" / "rmb" / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    monkeypatch.setattr(checker, "SAMPLE_BYTES", 8192)
    path = tmp_path / "log.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(120):
            log = mk.Log("spec")
            uid = f"{i:08x}-0000-4000-8000-00000000beef"
            if i % 7 == 3:  # a request answered with no reply posted back (RMB-REPLY-001 waits, then stands)
                req = log.request(uid, t=i * 0.5)
                log.sent(req, i * 0.5)
                signed = log.copy(req, 2, i * 0.5 + 0.03)
                log.accepted(signed, i * 0.5 + 0.035)
                log.post(signed, i * 0.5 + 0.04, log.b["accepted"]["status"])
                log.rec(i * 0.5 + 0.2, 2, "handler-reply", "in", queue=log.b["reply_queue"],
                        msg={**req, "src": 2, "dst": [1], "ret": log.b["reply_queue"]})
            else:
                log.exchange(uid, t=i * 0.5)
            f.write(log.text())
        log = mk.Log("spec")
        log.exchange("ffffffff-0000-4000-8000-00000000beef", t=400.0)  # (the clock moves past every horizon)
        f.write(log.text())
    assert checker._sample(str(path)) is not None
    shards = RmbShards("spec", str(ROOT / "fixtures" / "rmb" / "rules" / "directory.json"))
    one = shards.merge([str(path)], [checker._check_share(shards, [str(path)], 0, 1)])
    shared = shards.merge([str(path)], [checker._check_share(shards, [str(path)], k, n) for k in range(n)])
    key = lambda rep: sorted((v.rule, v.subject, v.explanation, tuple(e.line for e in v.evidence)) for v in rep.violations)
    assert key(one) and key(shared) == key(one)
    assert (shared.counts, shared.records, shared.subjects) == (one.counts, one.records, one.subjects)
