"""`rmkit audit` judges a log on the log's clock, as `rmkit check` (one process) and `--jobs 2` do,
for REMP and RMB, on logs with late lines: a line written after the log's clock passed its
message's (request's) close point is late in all three. A Spark share that took its own records'
times only would lag the log's clock wherever the records between come from other shares, and
join such a line to its subject.

The logs are planted so that the late line's subject shares no Spark partition (nor ``--jobs``
share) with the records that move the clock past it; the expected verdicts follow from the
planting (the subject judged without the late line, the line counted late), and the three
commands must give the same findings. The audit runs with 8 partitions: shares of a few subjects
each, whose own clocks lag the log's most."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from rmkit.conformance.remp.checker import RempLogChecker  # noqa: E402
from rmkit.conformance.remp.sharded import RempShards  # noqa: E402
from rmkit.conformance.remp.shares import partition_share  # noqa: E402
from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rmb"))
import test_rmb_jobs_parity as rmb_planting  # noqa: E402 - the --jobs parity test's planted logs

PARTITIONS = 8


def spark_partitions(spark, keys: list[str]) -> dict[str, int]:
    """The audit's partition of each record key (its shuffle: Spark's hash of the key, modulo
    the partitions)."""
    from pyspark.sql import functions as F

    rows = spark.createDataFrame([(k,) for k in keys], "key string").select(
        "key", F.expr(f"pmod(hash(key), {PARTITIONS})").alias("p")).collect()
    return {r.key: r.p for r in rows}


def audited(spark, shards, path: Path):
    from rmkit.spark_checks.job import audit

    return audit(spark, shards, [str(path)], partitions=PARTITIONS).report


# -- RMB ------------------------------------------------------------------------------------------
def rmb_findings(report) -> tuple:
    found = sorted((v.rule, v.explanation, tuple(sorted(e.line for e in v.evidence))) for v in report.violations)
    return found, dict(report.counts), report.metrics["late_records"], report.records, report.subjects


def rmb_check(path: Path, jobs: int):
    return RmbLogChecker(RmbShards("spec", rmb_planting.DIRECTORY, max_examples=0), jobs=jobs).run([str(path)])


def test_rmb_a_line_written_after_its_requests_horizon_is_late_in_the_audit_too(spark, tmp_path):
    log = tmp_path / "planted.jsonl"
    candidates = [f"{p}-0000-4000-8000-{i:012d}" for p in ("0a0a0a0a", "0b0b0b0b") for i in range(400)]
    where = spark_partitions(spark, candidates)
    planted = rmb_planting._planted_log(log, apart=lambda uid, other: where[uid] != where[other])
    one = rmb_check(log, 1)
    # the planting's verdict: the request judged before its copied POST comes, which is late (judged
    # alone, it breaks no rule)
    assert one.unreadable == 0 and one.metrics["late_records"] == 1
    assert not any(planted["line"] in lines for _, _, lines in rmb_findings(one)[0])
    assert rmb_findings(rmb_check(log, 2)) == rmb_findings(one)
    assert rmb_findings(audited(spark, RmbShards("spec", rmb_planting.DIRECTORY, max_examples=0), log)) == rmb_findings(one)


@pytest.mark.parametrize("seed", range(4))
def test_rmb_the_audit_reports_what_check_reports_on_logs_with_planted_late_lines(spark, tmp_path, seed):
    log = tmp_path / "faulty.jsonl"
    rmb_planting._faulty_log(log, seed)  # lines dropped, written seconds back, written again up to 80 s later
    one = rmb_check(log, 1)
    assert one.unreadable == 0 and one.violations and one.metrics["late_records"] > 0
    assert rmb_findings(rmb_check(log, 2)) == rmb_findings(one)
    assert rmb_findings(audited(spark, RmbShards("spec", rmb_planting.DIRECTORY, max_examples=0), log)) == rmb_findings(one)


# -- REMP -----------------------------------------------------------------------------------------
T0, FULLNODE, SIG = 1_700_000_000_000, "e3" * 32, "25" * 64
VALIDATORS = [f"{i:02x}" * 32 for i in range(1, 5)]
KW = dict(lifetime_s=60, horizon_s=30)  # a message closes 90 s after its first receipt


def remp_planted(spark, path: Path, kafka: bool) -> str:
    """Message M sent to the validators at 0 s; four other messages queued by two validators at
    88.5-90.25 s (the log's clock passes M's close point, 90 s); M's final receipt (rejected by
    the full node) written after them at 90.3 s: late. M shares no audit partition and no
    ``--jobs 2`` share with the others. With ``kafka``, the receipts are a Kafka dump's records
    over two topic partitions, M's in partition 0 with two of the others: both partitions have
    delivered past M's close point when its rejection comes, so the slowest partition holds the
    clock back no further than that. Returns M's id."""
    ids = [f"{k:063x}{d}" for k in range(1, 200) for d in "0123456789abcdef"]
    where = spark_partitions(spark, ids)
    m = ids[0]
    others = [i for i in ids if where[i] != where[m] and partition_share(b'"message_id":"%s"' % i.encode(), 2)
              != partition_share(b'"message_id":"%s"' % m.encode(), 2)][:4]

    def receipt(kind, mid, dt, src, **extra):
        return {"kind": kind, "message_id": mid, "timestamp": T0 + dt, "source_id": src, "signature": SIG, **extra}

    recs = [receipt("SentToValidators", m, 0, FULLNODE, sent_to=7, total_validators=7)]
    kafka_partition = {m: 0}
    for mid, dt, pair, kp in zip(others, (88_500, 89_600, 90_200, 90_250), (VALIDATORS[:2], VALIDATORS[2:]) * 2, (1, 0, 0, 1)):
        recs += [receipt("PutIntoQueue", mid, dt, v) for v in pair]
        kafka_partition[mid] = kp
    recs.append(receipt("RejectedByFullnode", m, 90_300, FULLNODE, error="Can't deserialize message"))
    if kafka:
        offsets = [0, 0]
        out = []
        for r in recs:
            kp = kafka_partition[r["message_id"]]
            out.append({"topic": "remp-receipts", "partition": kp, "offset": offsets[kp], "timestamp": r["timestamp"],
                        "key": r["message_id"], "value": r})
            offsets[kp] += 1
        recs = out
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs))
    return m


def remp_findings(report) -> tuple:
    pairs = sorted((v.rule, v.subject, tuple(e.line for e in v.evidence)) for v in report.violations)
    return pairs, dict(report.counts), report.metrics["late_receipts"], report.records, report.subjects, report.verdict


@pytest.mark.parametrize("kafka", [False, True], ids=["receipts", "kafka-dump"])
def test_remp_a_receipt_after_its_messages_close_point_is_late_in_the_audit_too(spark, tmp_path, kafka):
    log = tmp_path / "late.jsonl"
    m = remp_planted(spark, log, kafka)
    one = RempLogChecker("spec", jobs=1, max_examples=0, **KW).run([str(log)])
    # the planting's verdict: M closed without a final outcome (lost), its rejection late
    assert one.metrics["late_receipts"] == 1 and {(v.rule, v.subject) for v in one.violations} == {("REMP-LIVE-001", m)}
    assert remp_findings(RempLogChecker("spec", jobs=2, max_examples=0, **KW).run([str(log)])) == remp_findings(one)
    shards = RempShards(RempLogChecker("spec", max_examples=0, **KW)._kwargs)
    assert remp_findings(audited(spark, shards, log)) == remp_findings(one)
