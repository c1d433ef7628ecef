"""`rmkit audit` in one pass: records placed by the key Spark reads plainly and numbered
provisionally from where Spark read them (the split's start, the row's index in it); the shares
confirm the placement and count each split's lines, and the merged report is renumbered to the
real lines. Checked against `rmkit check` line for line, on files cut into many splits, and with
the two ways out (a misplaced record found by the shares, a log refused from its first lines)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.conformance.remp.sharded import RempShards
from rmkit.protocol import REF_LINE_BITS

REPO = Path(__file__).resolve().parents[2]
FAULTS = REPO / "fixtures" / "remp" / "logs" / "sim-spec-faults.jsonl"
UTF8_BOM = b"\xef\xbb\xbf"


def kwargs() -> dict:
    return RempLogChecker("spec", lifetime_s=60, max_examples=0)._kwargs


def where(report) -> tuple[list, list]:
    """Every finding with the lines it names, and every unreadable line."""
    found = sorted((v.rule, v.subject, tuple(sorted((e.file, e.line, e.kind or "") for e in v.evidence)))
                   for v in report.violations)
    return found, sorted((p.file, p.line, p.error) for p in report.input_problems)


def logs(tmp: Path) -> list[str]:
    """The faults fixture three ways: as it is, starting with a byte order mark, gzip-compressed."""
    data = FAULTS.read_bytes()
    bom = tmp / "bom.jsonl"
    bom.write_bytes(UTF8_BOM + data)
    gz = tmp / "faults.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    return [str(FAULTS), str(bom), str(gz)]


# -- the numbering, without Spark ------------------------------------------------------------------
@given(layout=st.lists(st.lists(st.integers(1, 3), min_size=1, max_size=4), min_size=1, max_size=3), data=st.data())
def test_provisional_lines_map_back_to_the_real_ones(layout, data):
    """Files cut into splits of random sizes, each split a partition of its own, as the one pass
    reads them: the counts the shares add up give every row its real line number."""
    from rmkit.spark_checks.inputs import ROW_BITS, SplitCounts

    counts = [SplitCounts() for _ in range(2)]  # two shares, each seeing some rows of every split
    expected = {}
    part = 0
    for fidx, splits in enumerate(layout):
        line, blk = 0, 0
        for size in splits:
            split_bytes = size * 10
            rows = data.draw(st.integers(0, split_bytes), label="rows")  # at most one line per byte
            for i in range(rows):
                line += 1
                rid = part << ROW_BITS | i
                provisional = 2 * blk + i + 1
                expected[(fidx, provisional)] = line
                counts[i % 2]._add((fidx, blk), rid, rid, 1)
            blk += split_bytes
            part += 1
    counts[0].update(counts[1])
    numbering = counts[0].numbering(REF_LINE_BITS)
    assert not isinstance(numbering, str), numbering
    assert {k: numbering.line(*k) for k in expected} == expected


def test_a_numbering_that_did_not_hold_is_refused():
    from rmkit.spark_checks.inputs import ROW_BITS, SplitCounts

    shared = SplitCounts()  # two splits in one Spark partition: the row ids run on across them
    shared._add((0, 0), 0, 4, 5)
    shared._add((0, 100), 5, 9, 5)
    assert "shares Spark partition" in shared.numbering(REF_LINE_BITS)
    gap = SplitCounts()  # a split whose rows are not all there
    gap._add((0, 0), 1 << ROW_BITS, 1 << ROW_BITS | 9, 7)
    assert "were seen 7 times" in gap.numbering(REF_LINE_BITS)
    wide = SplitCounts()
    wide._add((0, 1 << 39), 0, 9, 10)
    assert "bits" in wide.numbering(REF_LINE_BITS)


def test_a_log_whose_first_lines_only_a_json_reading_keys_is_audited_in_two_passes(tmp_path):
    """kcat envelopes hold the receipt as text (its quotes escaped): the one pass would place them
    by no key, and the sample of the first lines says so before the pass is run."""
    import json

    from rmkit.spark_checks import inputs
    from rmkit.spark_checks.job import _one_pass_refused

    lines = FAULTS.read_text().splitlines()[:20]
    env = tmp_path / "kcat.jsonl"
    env.write_text("".join(json.dumps({"topic": "t", "payload": x}) + "\n" for x in lines))
    why = _one_pass_refused(inputs.expand_paths([str(env)]), RempShards.key)
    assert why and "kcat.jsonl" in why and "JSON reading" in why
    assert _one_pass_refused(inputs.expand_paths([str(FAULTS)]), RempShards.key) is None


# -- on Spark --------------------------------------------------------------------------------------
def test_the_placement_the_shares_judge_is_sparks(spark):
    """For every edge line: Spark's placement (the first plainly written value) and the share's
    judgement of it agree with the checkers' key: misplaced exactly when of_line reads a key other
    than the one Spark placed the line by."""
    from pyspark.sql import functions as F

    from rmkit.spark_checks.inputs import Placement, spark_placed_key
    from key_edge_lines import EDGE_LINES

    key = RempShards.key
    df = spark.createDataFrame([(x,) for x in EDGE_LINES], "line binary")
    got = [(bytes(r.line), r.key) for r in df.select("line", spark_placed_key(key, F.col("line")).alias("key")).collect()]
    for line, spark_key in got:
        nv = spark_key == ""
        p = Placement(key)
        p.look([0], [line], [0] if nv else [])
        found = key.of_line(line)
        assert p.misplaced == (found is not None and found != spark_key), (line, spark_key, found)
        assert p.placed_by(line, nv) == spark_key
    assert sum(Placement(key).sample([x]) for x in EDGE_LINES) >= 4  # spaced, twice, escaped, kafka text, ...


# 1,500 bytes: about three lines a split, over two thousand Spark tasks an audit with the log's
# clock pass (minutes of task start-ups); 8,000 bytes: about two hundred splits a file. Both in the
# slow run. 40,000 bytes (the default run) still makes forty splits of each of the two plain files
# and cuts a line at every split's edge.
@pytest.mark.parametrize("split_bytes", [pytest.param(1500, marks=pytest.mark.slow),
                                         pytest.param(8_000, marks=pytest.mark.slow), 40_000])
def test_many_splits_are_numbered_as_rmkit_check_numbers_lines(spark, tmp_path, split_bytes):
    """Three logs (one starting with a byte order mark, one gzip: one split) cut into splits of
    ``split_bytes``: every finding names the lines rmkit check names, in one pass."""
    from rmkit.spark_checks.job import audit

    paths = logs(tmp_path)
    want = RempLogChecker(**kwargs()).run(paths)
    res = audit(spark, RempShards(kwargs()), paths, partitions=5, split_bytes=split_bytes)
    assert res.report.metrics["audit_passes"] == 1, res.report.metrics.get("audit_two_passes_because")
    assert where(res.report) == where(want) and where(want)[0] and where(want)[1]
    assert (res.report.records, res.report.counts) == (want.records, want.counts)
    per = audit(spark, [RempShards(kwargs()) for _ in paths], paths, partitions=3, per_file=True, split_bytes=split_bytes)
    for i, path in enumerate(paths):
        alone = RempLogChecker(**kwargs()).run([path])
        assert where(per.reports[i]) == where(alone), path


def test_a_misplaced_record_past_the_sample_sends_the_audit_to_two_passes(spark, tmp_path):
    """A receipt whose id only a JSON reading finds (written with a space), far into the log:
    the shares find it misplaced, the audit runs its two passes and judges as rmkit check."""
    from rmkit.spark_checks.job import SAMPLE_BYTES, audit

    lines = FAULTS.read_bytes().split(b"\n")
    body = b"\n".join(lines)
    copies = SAMPLE_BYTES // len(body) + 2
    late = [x for x in lines if b'"message_id":"' in x][-1]
    log = tmp_path / "late-spaced.jsonl"
    log.write_bytes(b"\n".join([body] * copies) + b"\n" + late.replace(b'"message_id":"', b'"message_id": "', 1) + b"\n")
    want = RempLogChecker(**kwargs()).run([str(log)])
    res = audit(spark, RempShards(kwargs()), [str(log)], partitions=4, split_bytes=50_000)
    assert res.report.metrics["audit_passes"] == 2
    assert "1 record(s)" in res.report.metrics["audit_two_passes_because"]
    assert where(res.report) == where(want)
