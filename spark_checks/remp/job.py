"""The audit job: read, check, report. Runnable on its own under spark-submit::

    spark-submit --master spark://host:7077 --py-files rmkit.zip spark_checks/remp/job.py \
        --profile spec --out /data/audit-out /data/receipts/

(the same options as ``rmkit audit``; see spark_checks/README.md).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from rmkit.conformance.remp.model import model_for
from rmkit.metrics import LatencyHistogram
from rmkit.rules import OFF
from rmkit.verdict import Evidence, InputProblem, Report, Violation

VIOLATION_COLS = ("rule", "mid", "explanation", "evidence")


@dataclass
class AuditResult:
    report: Report
    files: list[str]
    violations: Any = None  # DataFrame: every violation (rule, mode, severity, message_id, explanation, evidence with lines)
    quarantine: Any = None  # DataFrame: every unreadable record (file, line, error, field)
    lives: Any = None  # DataFrame: one row per message life (outcome, latencies, ...)
    per_source: Any = None  # DataFrame: receipts per source and kind class
    timings: dict[str, float] = field(default_factory=dict)


def audit(spark, paths: list[str], profile: str = "spec", lifetime_s: float | None = None, horizon_s: float | None = None,
          max_examples: int = 1000, partitions: int | None = None) -> AuditResult:
    """Check ``paths`` and return the report (the shape of ``rmkit check``'s) and the full tables."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from rmkit.spark_checks.remp import inputs
    from rmkit.spark_checks.remp.rules import Limits, RempRules

    started = time.perf_counter()
    timings: dict[str, float] = {}
    model = model_for(profile)
    lim = Limits.of(model, lifetime_s, horizon_s)
    rules = RempRules(model, lim)
    files = inputs.expand_paths(paths)
    sc = spark.sparkContext
    sc.setJobGroup("rmkit-audit", "read and parse")
    lines = inputs.read_lines(spark, files)
    parsed = inputs.parse(lines)
    keep = ["fidx", "blk", "rid", "status", "q_error", "q_field", "h", "kind", "message_id", "source_id", "signature",
            "timestamp", "ts_ok", "t", "kts", "bad", "mid", "src", "block", "kbit", "single_role", "key",
            "sent_to", "total_validators"]
    # one parse, kept: every later step (global aggregates, the per-message job) reads it
    base = rules.prepare(parsed).select(*keep).persist(StorageLevel.MEMORY_AND_DISK)
    rep = Report(protocol="remp", profile=profile, inputs=list(files.shown), rules=dict(rules.modes),
                 shown_per_rule=max_examples, input_rule="REMP-INPUT-001")
    why = "the audit does not verify signatures (Ed25519 per receipt); run `rmkit check --validators FILE` for them"
    rep.not_checked = {r.id: why for r in model.rules if "validator_keys" in r.requires and rules.modes[r.id] != OFF}
    try:
        t0 = time.perf_counter()
        counts = base.groupBy("status").agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("t").isNull().cast("int")).alias("no_t"),
                                            F.max("t").alias("max_t"), F.min("t").alias("min_t")).collect()
        timings["parse_s"] = time.perf_counter() - t0
        by = {r.status: r for r in counts}
        rec = by.get("receipt")
        receipts = rec.n if rec else 0
        offsets = inputs.line_offsets(base)
        rc = base.where(F.col("status") == "receipt")
        # the log's final clock, as rmkit check reaches it (latest time two sources reached)
        hwm = top = None
        if rec is not None and rec.max_t is not None:
            trow = rc.where(F.col("t") == rec.max_t).agg(F.min(F.struct(F.struct("fidx", "blk", "rid").alias("p"), F.col("key"),
                                                                       F.col("message_id"), F.col("kind"), F.col("src")))).first()[0]
            top = (rec.max_t, trow)
            hwm = rc.where(~F.col("key").eqNullSafe(F.lit(trow.key))).agg(F.max("t")).first()[0]
        end = hwm
        if top is not None and (end is None or 0 < top[0] - end <= lim.clock_jump_ms):
            end = top[0] if end is None else max(end, top[0])
        hwm_end = end
        roles = rules.first_roles(rc)
        role_rows = roles.collect()
        roles_small = spark.createDataFrame(role_rows, roles.schema) if role_rows else roles
        timings["global_s"] = time.perf_counter() - t0 - timings["parse_s"]
        sc.setJobGroup("rmkit-audit", "per-message rules (one shuffle by message id)")
        t1 = time.perf_counter()
        lives = rules.per_life(rc, roles_small, partitions, hwm_end).persist(StorageLevel.MEMORY_AND_DISK)
        kinds = list(model.kinds)
        life_stats = lives.agg(F.count(F.lit(1)).alias("lives"), F.sum(F.col("not_judged").cast("int")).alias("nj"),
                               F.sum("dups").alias("dups"), *[F.sum("n_" + k).alias("n_" + k) for k in kinds]).first()
        timings["per_message_s"] = time.perf_counter() - t1
        outcomes = lives.groupBy(F.when(F.col("final"), F.col("outcome")).when(F.col("not_judged"), F.concat(F.lit("not_judged:"), F.col("outcome")))
                                 .otherwise(F.lit("lost")).alias("o")).count().collect()
        lat = {}
        for name in model.latency:
            lat[name] = _histogram(lives.where(F.col(name).isNotNull()).select(F.greatest(F.col(name), F.lit(0)).alias("v")))
        viols = lives.select("mid", F.explode("viols").alias("v")).select(F.col("v.rule").alias("rule"), "mid", "v.explanation", "v.evidence")
        viols = viols.unionByName(rules.unnamed_violations(rc).select("rule", "mid", "explanation", "evidence"))
        viols = _with_lines(spark, viols, offsets, files.shown, model, rules.modes)
        clock_v = None
        if top is not None and hwm_end is not None and top[0] - hwm_end > lim.clock_jump_ms and rules.on("REMP-TIME-001"):
            clock_v = (top, hwm_end)
        quarantine = _quarantine(spark, base, offsets, files.shown)
        viols = viols.persist(StorageLevel.MEMORY_AND_DISK)
        rule_counts = {r.rule: r["count"] for r in viols.groupBy("rule").count().collect()}
        unreadable = quarantine.count()
        # --- the report, in rmkit check's shape ---
        rep.receipts = receipts
        rep.messages = life_stats.lives or 0
        for rule, n in sorted(rule_counts.items()):
            rep.count(rule, rules.modes[rule], n)
        rep.unreadable = unreadable
        if unreadable and rules.modes["REMP-INPUT-001"] != OFF:
            rep.count("REMP-INPUT-001", rules.modes["REMP-INPUT-001"], unreadable)
        for q in quarantine.orderBy("fidx", "line").limit(max_examples or 1_000_000).collect():
            rep.input_problems.append(InputProblem(q.file, q.line, q.error, q.field))
        shown = _examples(viols, max_examples)
        if clock_v is not None:
            (t, trow), h = clock_v
            rep.count("REMP-TIME-001", rules.modes["REMP-TIME-001"])
            line = trow.p.rid + offsets.get((trow.p.fidx, trow.p.blk), 1)
            shown.append(Violation("REMP-TIME-001", model.rules["REMP-TIME-001"].severity, rules.modes["REMP-TIME-001"],
                                   trow.message_id, f"timestamp {t} is {(t - h) / 1000:,.0f} s ahead of every other source's; the log's clock did not follow it",
                                   [Evidence(line, trow.kind, trow.src, files.shown[trow.p.fidx])]))
        shown.sort(key=lambda v: (min(((files.shown.index(e.file) if e.file in files.shown else 0, e.line) for e in v.evidence), default=(0, 0)), v.rule))
        rep.violations = shown
        elapsed = time.perf_counter() - started
        min_t = rec.min_t if rec else None
        rep.metrics = {
            "lifetime_s": lim.lifetime_s,
            "horizon_s": lim.horizon_s,
            "expiry_bound_s": lim.expiry_ms / 1000,
            "receipts_per_kind": dict(sorted(((k, life_stats["n_" + k]) for k in kinds if life_stats["n_" + k]), key=lambda kv: -kv[1])),
            "outcomes": dict(sorted(((r.o, r["count"]) for r in outcomes), key=lambda kv: -kv[1])),
            "not_judged_for_liveness": life_stats.nj or 0,
            "redelivered_receipts": life_stats.dups or 0,
            "late_receipts": 0,
            "peak_open_messages": None,
            "kafka_tombstones": by["tombstone"].n if "tombstone" in by else 0,
            "receipts_without_time": rec.no_t if rec else 0,
            "log_time_span_s": round((hwm_end - min_t) / 1000, 3) if hwm_end is not None and min_t is not None else None,
            "sources": _role_counts(role_rows),
            "latency_ms": {name: {"from": spec["from"], "to": spec["to"]} | lat[name].summary(tuple(spec["promise"]))
                           for name, spec in model.latency.items()},
            "elapsed_s": round(elapsed, 3),
            "receipts_per_s": round(receipts / elapsed) if elapsed > 0 else None,
        }
        rep.decide()
        timings["total_s"] = elapsed
        return AuditResult(rep, files.shown, viols, quarantine, lives, None, timings)
    finally:
        if files.tmpdir:
            shutil.rmtree(files.tmpdir, ignore_errors=True)


def _role_counts(rows) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.known_role] = out.get(r.known_role, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _histogram(values) -> LatencyHistogram:
    """The checker's log-linear histogram, filled from bucket counts computed by Spark."""
    from pyspark.sql import functions as F

    v = F.col("v")
    shift = (F.floor(F.log2(v)) + 1 - 7).cast("int")
    bucket = F.when(v < 1024, v).otherwise(F.shiftleft(shift + 1, 16).bitwiseOR(F.shiftright(v, shift)))
    h = LatencyHistogram()
    for r in values.groupBy(bucket.alias("b")).agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"), F.max("v").alias("hi")).collect():
        h.buckets[int(r.b)] += r.n
        h.count += r.n
        h.total += int(r.s)
        h.min = r.lo if h.min is None else min(h.min, r.lo)
        h.max = r.hi if h.max is None else max(h.max, r.hi)
    return h


def _offset_map(offsets: dict):
    from pyspark.sql import functions as F

    pairs = []
    for (fidx, blk), off in offsets.items():
        pairs += [F.lit(f"{fidx}:{blk}"), F.lit(off)]
    return F.create_map(*pairs) if pairs else F.create_map().cast("map<string,bigint>")


def _line(offsets, fidx, blk, rid):
    from pyspark.sql import functions as F

    return rid + F.coalesce(_offset_map(offsets)[F.concat_ws(":", fidx.cast("string"), blk.cast("string"))], F.lit(1))


def _files_array(files: list[str]):
    from pyspark.sql import functions as F

    return F.array(*[F.lit(f) for f in files]) if files else F.array().cast("array<string>")


def _with_lines(spark, viols, offsets, files, model, modes):
    """Evidence positions turned into (file, line); rule mode and severity added."""
    from pyspark.sql import functions as F

    fa = _files_array(files)
    evidence = F.transform("evidence", lambda e: F.struct(
        F.element_at(fa, e.fidx + 1).alias("file"), _line(offsets, e.fidx, e.blk, e.rid).alias("line"),
        e.kind.alias("kind"), e.source_id.alias("source_id"), e.fidx.alias("fidx")))
    sev = F.create_map(*[x for r in model.rules for x in (F.lit(r.id), F.lit(r.severity))])
    mode = F.create_map(*[x for r, md in modes.items() for x in (F.lit(r), F.lit(md))])
    return viols.select("rule", mode[F.col("rule")].alias("mode"), sev[F.col("rule")].alias("severity"),
                        F.col("mid").alias("message_id"), "explanation", evidence.alias("evidence"))


def _quarantine(spark, base, offsets, files):
    from pyspark.sql import functions as F

    fa = _files_array(files)
    q = base.where(F.col("status") == "problem")
    return q.select("fidx", F.element_at(fa, F.col("fidx") + 1).alias("file"), _line(offsets, F.col("fidx"), F.col("blk"), F.col("rid")).alias("line"),
                    F.col("q_error").alias("error"), F.col("q_field").alias("field"))


def _examples(viols, max_examples: int) -> list[Violation]:
    """Up to ``max_examples`` violations per rule (0: all), in log order, as report objects."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    first = F.col("evidence")[0]
    v = viols.withColumn("_o", F.array_min(F.transform("evidence", lambda e: F.struct(e.fidx, e.line))))
    if max_examples:
        v = v.withColumn("_n", F.row_number().over(Window.partitionBy("rule").orderBy("_o"))).where(F.col("_n") <= max_examples)
    del first
    out = []
    for r in v.orderBy("_o", "rule").collect():
        out.append(Violation(r.rule, r.severity, r.mode, r.message_id, r.explanation,
                             [Evidence(e.line, e.kind, e.source_id, e.file) for e in r.evidence]))
    return out


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry: the arguments of ``rmkit audit`` (without the subcommand)."""
    import argparse

    from rmkit.spark_checks.remp import cli

    ap = argparse.ArgumentParser(prog="job.py", description="rmkit audit as a spark-submit job")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--profile", default="spec")
    ap.add_argument("--master", default=None, help="ignored under spark-submit (give --master to spark-submit)")
    ap.add_argument("--out")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    ap.add_argument("--strict", action="store_true")
    cli.add_arguments(ap)
    args = ap.parse_args(argv)
    args.submitted = True
    return cli.run(args.profile, args)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.exit(main())
