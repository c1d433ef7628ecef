"""Redelivered receipts (byte-identical copies) are counted once each and checked once: copies
planted into a simulated log must be counted exactly, and nothing else may change."""

from conftest import FIXTURES
from rmkit.conformance.remp.checker import RempLogChecker

LOG = FIXTURES / "logs" / "sim-spec-clean.jsonl"


def _findings(report):
    return sorted((v.rule, v.subject, tuple((e.line, e.kind) for e in v.evidence)) for v in report.violations)


def test_planted_copies_are_counted_once_each_and_change_nothing_else(tmp_path):
    lines = LOG.read_bytes().splitlines()
    base = RempLogChecker(lifetime_s=60).run([str(LOG)])
    # every 7th receipt is delivered twice, the copy right behind it (its message still open)
    planted, out = 0, []
    for i, line in enumerate(lines):
        out.append(line)
        if i % 7 == 3 and line.strip():
            out.append(line)
            planted += 1
    path = tmp_path / "copies.jsonl"
    path.write_bytes(b"\n".join(out) + b"\n")
    got = RempLogChecker(lifetime_s=60).run([str(path)])
    assert planted > 300
    assert got.metrics["redelivered_receipts"] == base.metrics["redelivered_receipts"] + planted
    assert got.records == base.records + planted  # read, then recognised as copies
    assert got.counts == base.counts and got.verdict == base.verdict
    assert got.metrics["receipts_per_kind"] == base.metrics["receipts_per_kind"]
    assert got.metrics["outcomes"] == base.metrics["outcomes"]


def test_many_distinct_receipts_of_one_message_are_not_copies():
    """Hundreds of distinct receipts of one message: none is a copy, until each comes again."""
    checker = RempLogChecker()
    lines = [f'{{"kind":"PutIntoQueue","message_id":"{"ab" * 32}","source_id":"{i:064x}","timestamp":{1_700_000_000_000 + i}}}'.encode()
             for i in range(768)]
    checker.begin(["mem"])
    checker.feed([(range(1, len(lines) + 1), lines)])
    assert checker.redelivered == 0
    checker.feed([(range(len(lines) + 1, 2 * len(lines) + 1), lines)])  # now every one again
    assert checker.redelivered == len(lines)


def test_planted_copies_are_found_alike_by_the_compiled_line_hash_and_by_pythons(tmp_path, monkeypatch):
    """A redelivered line is known by its line's hash: the compiled one (rmkit._linescan.line_hashes)
    where it was built, Python's ``hash`` where it was not; both find the same copies, and one
    line changed by a byte is no copy to either."""
    from rmkit.conformance.remp import checker as engine

    lines = LOG.read_bytes().splitlines()
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % 5 == 2 and line.strip():
            out.append(line)  # a copy
            out.append(line.replace(b'"timestamp":', b'"timestamp": ', 1))  # the same receipt, not the same line
    path = tmp_path / "copies.jsonl"
    path.write_bytes(b"\n".join(out) + b"\n")
    reports = [RempLogChecker(lifetime_s=60, typed=typed).run([str(path)]) for typed in (True, False)]
    monkeypatch.setattr(engine, "line_hashes", lambda batch: list(map(hash, batch)))
    reports += [RempLogChecker(lifetime_s=60, typed=typed).run([str(path)]) for typed in (True, False)]
    first = reports[0]
    assert first.metrics["redelivered_receipts"] >= len(out) // 15
    for got in reports[1:]:
        assert got.metrics["redelivered_receipts"] == first.metrics["redelivered_receipts"]
        assert (_findings(got), got.counts, got.records) == (_findings(first), first.counts, first.records)


def test_the_compiled_line_hash_tells_lines_apart_and_knows_equal_ones():
    try:
        from rmkit._linescan import line_hashes
    except ImportError:  # (built by pip install where a C compiler is found)
        return
    lines = [bytes(range(n % 256)) * (1 + n // 256) for n in range(300)]
    lines += [b"x" * n for n in range(40)] + [line[:-1] + b"!" for line in lines if line]
    hashes = line_hashes(lines)
    assert len(set(hashes)) == len(set(lines))  # every distinct line its own hash (the tail bytes too)
    assert line_hashes([bytes(line) for line in lines]) == hashes  # equal lines alike, whatever the object
    assert all(-(1 << 63) <= h < (1 << 63) for h in hashes)  # (kept in a message's array of 64-bit numbers)
    assert line_hashes(["text", 7]) == [hash("text"), hash(7)]  # a line not of bytes: Python's hash
