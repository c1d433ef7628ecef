"""The share of each line in a REMP ``--jobs`` run, a batch at a time (conformance/remp/shares.py).

partition_share is the one rule; the batch path must give its answer on every batch, taking its
fast reading only where that reading is proven to be the rule's. The parallel run (one reader
dealing the shares their lines) must give the single process's findings on the layouts the rule
knows (plain, upper case, Kafka values as strings or objects, blank lines, lines without an id, a
truncated gzip), report its progress, and surface a failure on either side without hanging."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmkit.conformance.remp import shares
from rmkit.conformance.remp.checker import LINE_BITS, LINE_MASK, RempLogChecker
from rmkit.conformance.remp.shares import fast_shares, line_shares, own_lines, partition_share, split_lines
from rmkit.errors import InputError

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "remp"
FAULTS = FIX / "logs" / "sim-spec-faults.jsonl"


def by_rule(refs, lines, n):
    """partition_share line by line, with its documented fallback (the line number)."""
    return [(ref & LINE_MASK) % n if s is None else s for ref, s in zip(refs, (partition_share(x, n) for x in lines))]


def receipt(mid: str, tail: bytes = b"") -> bytes:
    return (b'{"kind":"Finalized","message_id":"%s","timestamp":1700000000000,"source_id":"%s"%s}'
            % (mid.encode(), b"ab" * 32, tail))


HEX = "0123456789abcdefABCDEF"
PLAIN = [receipt("5e" * 31 + "0" + c) for c in HEX]


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_a_plain_batch_takes_the_fast_reading_and_it_is_the_rules(n):
    refs = range(1, len(PLAIN) + 1)
    fast = fast_shares(PLAIN, n)
    assert fast is not None and list(fast) == by_rule(refs, PLAIN, n)
    # every last character reaches its share, upper case folded as the rule folds it
    assert {s for s in fast} == set(range(n))


def naive(lines, n):
    """The fast reading without its proof: the first id key's value, whatever else the line holds."""
    return [(re.search(rb'"message_id":"[^"]*([^"])"', x).group(1)[0] | 0x20) % n for x in lines]


def test_a_line_holding_a_second_id_key_is_read_by_the_rule_not_by_the_fast_reading():
    """The rule takes the last key; a reading that trusted the first would move this receipt to
    another share than its message's other receipts. The batch's proof (one key per line) fails,
    and the rule decides every line of it."""
    nested = receipt("aa" * 31 + "a1", b',"meta":{"message_id":"%s"}' % (b"bb" * 31 + b"b2"))
    lines = PLAIN[:5] + [nested] + PLAIN[5:]
    refs = range(1, len(lines) + 1)
    assert naive(lines, 2) != by_rule(refs, lines, 2)  # the case has teeth
    assert fast_shares(lines, 2) is None
    assert list(line_shares(refs, lines, 2)) == by_rule(refs, lines, 2)


@pytest.mark.parametrize("odd", [
    b"",  # a blank line
    b'{"kind":"Finalized","message_id" : "abc"}',  # spacing the fast reading does not take
    b'{"kind":"Finalized","message_id":""}',  # an empty id: the line number decides
    b'{"kind":"Finalized","message_id":17,"x":"y"}',  # not a string
    b'{"topic":"t","value":"{\\"kind\\":\\"Finalized\\",\\"message_id\\":\\"abc\\"}"}',  # a Kafka value as a string
    b'{"kind":"Finalized","note":"message_id","message_id":"abd"}',  # a value that reads like the key
    b'not json "message_id":"abe" "message_id":"abf"',
    b'{"kind":"Finalized","message_id":"abg',  # an id that never closes: the next line's quotes are not its end
    b'{"kind":"Finalized","message_id"message_id":"abh"}',  # two keys sharing a quote
])
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("at", [0, 3, None])  # first, among plain lines, last
def test_a_batch_the_fast_reading_cannot_prove_is_read_line_by_line(odd, n, at):
    lines = PLAIN[:3] + PLAIN[3:]
    lines.insert(len(lines) if at is None else at, odd)
    refs = range(7 << LINE_BITS | 40, (7 << LINE_BITS | 40) + len(lines))
    got = line_shares(refs, lines, n)
    assert list(got) == by_rule(refs, lines, n)
    keys = len(re.findall(rb'(?="message_id")', odd))  # overlapping ones counted apart
    if keys == 1 and re.search(rb'"message_id":"[^"]+"', odd):
        assert fast_shares(lines, n) is not None  # the one-key lines stay on the fast reading
    else:
        assert fast_shares(lines, n) is None



def test_more_shares_than_a_byte_holds_follow_the_rule():
    """300 shares (beyond a byte, so no fast reading): each line still goes to the rule's share."""
    lines = PLAIN + [b"", b'{"kind":"Finalized"}']
    refs = range(270, 270 + len(lines))  # the lines without an id go by their line numbers' shares, above 255
    want = by_rule(refs, lines, 300)
    assert max(want) > 255
    parts = split_lines(refs, lines, 300)
    assert [r for k, (own_refs, _) in enumerate(parts) for r in own_refs if want[r - 270] != k] == []
    assert sorted(r for own_refs, _ in parts for r in own_refs) == list(refs)

_piece = st.sampled_from([
    b'"message_id"', b'\\"message_id\\"', b':', b' ', b'\t', b'"', b'\\"', b',', b'{', b'}', b'"note":',
    b'"message_id":"', b'\\"message_id\\":\\"', b'ab', b'C', b'7', b'f', b'"x"', b'message_id',
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_piece, max_size=12).map(b"".join), min_size=1, max_size=12),
       st.lists(st.sampled_from(list(HEX)), min_size=1, max_size=12), st.integers(2, 9))
def test_the_batch_path_is_the_rule_on_any_lines(raw, lasts, n):
    """Lines of key fragments, quotes, escapes and spacing, with some plain receipts among them."""
    lines = [x for pair in zip(raw, (receipt("0" * 63 + c) for c in lasts)) for x in pair] + raw[len(lasts):]
    refs = range(3, 3 + len(lines))
    want = by_rule(refs, lines, n)
    assert list(line_shares(refs, lines, n)) == want
    fast = fast_shares(lines, n)
    assert fast is None or list(fast) == want
    parts = split_lines(refs, lines, n)
    for k, (own_refs, own) in enumerate(parts):
        assert own_lines(refs, lines, k, n) == (own_refs, own)
        assert own_refs == [r for r, s in zip(refs, want) if s == k]
        assert own == [x for x, s in zip(lines, want) if s == k]


# ---- the parallel run ----------------------------------------------------------------------------
def _source() -> list[bytes]:
    return [x for x in FAULTS.read_bytes().split(b"\n") if x]


def _is_object(line: bytes) -> bool:
    try:
        return type(json.loads(line)) is dict
    except ValueError:
        return False


@pytest.fixture(scope="module")
def mixed_log(tmp_path_factory) -> Path:
    """The planted-faults log in every layout the share rule knows, one after another per line:
    Kafka values as strings and as objects, upper-case ids, blank lines, value decoys, no id."""
    out = []
    for i, line in enumerate(_source()):
        if not _is_object(line):
            out.append(line)
            continue
        rec = json.loads(line)
        ts = rec.get("timestamp", 0)
        form = i % 6
        if form == 1:
            line = json.dumps({"topic": "r", "partition": 0, "offset": i, "timestamp": ts, "value": line.decode()}).encode()
        elif form == 2:
            line = json.dumps({"topic": "r", "offset": i, "value": rec}, separators=(",", ":")).encode()
        elif form == 3:
            line = re.sub(rb'"message_id":"([0-9a-f]+)"', lambda m: b'"message_id":"' + m.group(1).upper() + b'"', line)
        elif form == 4:
            line = line[:-1] + b',"note":"message_id","x":"message_id"}'
        elif form == 5 and i % 4 == 1:
            line = re.sub(rb'"message_id":"[0-9a-f]+",?', b"", line)
        out.append(line)
        if i % 9 == 0:
            out.append(b"")
    path = tmp_path_factory.mktemp("shares") / "mixed.jsonl"
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def findings(report):
    return (report.counts, report.strict_counts, report.records, report.subjects, report.unreadable, report.verdict,
            [(v.rule, v.subject, [(e.file, e.line) for e in v.evidence]) for v in report.violations],
            [(p.file, p.line) for p in report.input_problems], report.metrics["outcomes"], report.metrics["latency_ms"],
            report.metrics["per_source"], report.metrics["redelivered_receipts"], report.metrics["late_receipts"])


def test_every_layout_checked_in_shares_finds_what_one_process_finds(mixed_log):
    one = RempLogChecker("spec", lifetime_s=60, jobs=1).run([str(mixed_log)])
    assert one.verdict == "fail" and one.input_problems and one.records > 500
    for jobs in (2, 3):
        assert findings(RempLogChecker("spec", lifetime_s=60, jobs=jobs).run([str(mixed_log)])) == findings(one), jobs


def test_a_truncated_gzip_is_reported_once_after_the_lines_it_held(tmp_path):
    data = gzip.compress(FAULTS.read_bytes())
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    one = RempLogChecker("spec", lifetime_s=60, jobs=1).run([str(path)])
    two = RempLogChecker("spec", lifetime_s=60, jobs=2).run([str(path)])
    assert findings(two) == findings(one)
    assert sum("truncated" in p.error for p in two.input_problems) == 1


def test_progress_reaches_the_end_of_every_input(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(FAULTS.read_bytes())
    b.write_bytes(FAULTS.read_bytes()[: 5000].rsplit(b"\n", 1)[0] + b"\n")
    seen = []
    RempLogChecker("spec", lifetime_s=60, jobs=2, progress=lambda idx, done: seen.append((idx, done))).run([str(a), str(b)])
    assert seen[-1] == (1, b.stat().st_size) and (0, a.stat().st_size) in seen


def test_partitioned_checkers_split_the_lines_by_the_rule():
    """``begin(partition=(k, n))`` (a share that reads the whole file itself) keeps exactly its lines."""
    lines = FAULTS.read_bytes().split(b"\n")[:-1]
    refs = range(1, len(lines) + 1)
    want = by_rule(refs, lines, 3)
    for k in range(3):
        c = RempLogChecker("spec", lifetime_s=60, jobs=1)
        c.begin([str(FAULTS)], partition=(k, 3))
        c._run_file(0, str(FAULTS))
        mine = sum(1 for s, x in zip(want, lines) if s == k and _is_object(x))
        assert c.finish(c.hwm).records == mine


class Boom(Exception):
    exit_code = 2


def test_a_failing_share_is_raised_in_the_parent_without_a_hang(tmp_path, monkeypatch):
    """A share that fails before reading anything: the parent, still sending it lines (more
    than a pipe holds), raises the share's own error."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(FAULTS.read_bytes() * 40)  # several MB: the sends outgrow the pipe
    original = RempLogChecker.begin

    def begin(self, inputs, partition=None, shared=False):
        if shared:
            raise Boom("share failed")
        return original(self, inputs, partition, shared)

    monkeypatch.setattr(RempLogChecker, "begin", begin)
    with pytest.raises(Boom, match="share failed"):
        RempLogChecker("spec", lifetime_s=60, jobs=2).run([str(path)])


def test_an_input_that_cannot_be_opened_stops_the_shares(tmp_path):
    with pytest.raises(InputError, match="missing"):
        RempLogChecker("spec", lifetime_s=60, jobs=2).run([str(FAULTS), str(tmp_path / "missing.jsonl")])


def test_the_fast_reading_is_what_a_plain_log_takes():
    """The bench's layout (the simulator's) stays on the fast reading: a batch of its lines."""
    lines = [x for x in _source() if _is_object(x) and x.count(b'"message_id"') == 1][:200]
    assert fast_shares(lines, 2) is not None
    assert shares.fast_shares(lines, 7) is not None


def test_a_share_that_dies_without_a_word_fails_the_run_with_exit_2(tmp_path, monkeypatch, capsys):
    """A share killed outright (no report): the run is a tool failure, never a pass or a hang."""
    import os

    from rmkit.cli import main

    path = tmp_path / "big.jsonl"
    path.write_bytes(FAULTS.read_bytes() * 40)
    original = RempLogChecker.begin

    def begin(self, inputs, partition=None, shared=False):
        if shared:
            os._exit(3)
        return original(self, inputs, partition, shared)

    monkeypatch.setattr(RempLogChecker, "begin", begin)
    with pytest.raises(RuntimeError, match="stopped without a report"):
        RempLogChecker("spec", lifetime_s=60, jobs=2).run([str(path)])
    assert main(["check", "--jobs", "2", "--lifetime", "60", str(path)]) == 2
    assert "stopped without a report" in capsys.readouterr().err
