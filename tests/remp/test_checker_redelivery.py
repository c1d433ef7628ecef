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
