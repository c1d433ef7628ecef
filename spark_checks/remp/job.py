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

from rmkit.conformance.remp.checker import final_clock
from rmkit.conformance.remp.model import model_for
from rmkit.metrics import LatencyHistogram
from rmkit.rules import OFF
from rmkit.verdict import Evidence, InputProblem, Report, Violation

VIOLATION_COLS = ("rule", "mid", "explanation", "evidence")


@dataclass
class AuditResult:
    report: Report  # the whole run (the only log, or every log when they were checked one by one)
    files: list[str]
    reports: dict[int, Report] = field(default_factory=dict)  # per log (the input index with per_file)
    violations: Any = None  # DataFrame: every violation (rule, mode, severity, message_id, explanation, evidence with file and line)
    quarantine: Any = None  # DataFrame: every unreadable record (file, line, error, field)
    lives: Any = None  # DataFrame: one row per message life (outcome, latencies, ...)
    receipts: Any = None  # DataFrame: the parsed receipts (kept for the operator's report)
    timings: dict[str, float] = field(default_factory=dict)


def audit(spark, paths: list[str], profile: str = "spec", lifetime_s: float | None = None, horizon_s: float | None = None,
          max_examples: int = 1000, partitions: int | None = None, per_file: bool = False) -> AuditResult:
    """Check ``paths`` as one log (or, with ``per_file``, each file as a log of its own, all in
    the same Spark jobs) and return the reports (the shape of ``rmkit check``'s) and the tables."""
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
    if partitions is None:
        partitions = shuffle_partitions(spark, files)
    sc = spark.sparkContext
    sc.setJobGroup("rmkit-audit", "read and parse")
    parsed = inputs.parse(inputs.read_lines(spark, files))
    keep = ["fidx", "blk", "rid", "status", "q_error", "q_field", "h", "kind", "message_id", "source_id", "no_sig", "sig_shown",
            "timestamp", "ts_ok", "t", "bad", "block", "kbit", "single_role", "sent_to", "total_validators"]
    lg = F.col("fidx") if per_file else F.lit(0)
    # one parse, kept: every later step (global aggregates, the per-message job) reads it
    kept = rules.prepare(parsed).select(lg.alias("lg"), *keep).persist(StorageLevel.MEMORY_AND_DISK)
    base = rules.identities(kept)
    logs = list(range(len(files.read))) if per_file else [0]
    try:
        t0 = time.perf_counter()
        by, offsets = _status_counts(base)
        timings["parse_s"] = time.perf_counter() - t0
        rc = base.where(F.col("status") == "receipt")
        tops, hwms = _clock_ends(rc)
        hwm_end = {g: final_clock([hwms.get(g)], [tops[g][0] if g in tops else None], lim.clock_jump_ms) for g in logs}
        roles = rules.first_roles(rc)
        role_rows = roles.collect()
        roles_small = spark.createDataFrame(role_rows, roles.schema) if role_rows else roles
        timings["global_s"] = time.perf_counter() - t0 - timings["parse_s"]
        sc.setJobGroup("rmkit-audit", "per-message rules (one shuffle by message id)")
        t1 = time.perf_counter()
        lives = rules.per_life(rc, roles_small, partitions, hwm_end).persist(StorageLevel.MEMORY_AND_DISK)
        kinds = list(model.kinds)
        life_stats = _life_figures(lives, kinds)
        timings["per_message_s"] = time.perf_counter() - t1
        lat = _histograms(lives, list(model.latency))
        viols = lives.select("lg", "mid", F.explode("viols").alias("v")).select("lg", F.col("v.rule").alias("rule"), "mid", "v.explanation", "v.evidence")
        viols = viols.unionByName(rules.unnamed_violations(rc).select("lg", "rule", "mid", "explanation", "evidence"))
        viols = _with_lines(viols, offsets, files.shown, model, rules.modes).persist(StorageLevel.MEMORY_AND_DISK)
        quarantine = _quarantine(base, offsets, files.shown)
        rule_counts: dict[int, dict] = {}
        for r in viols.groupBy("lg", "rule").count().collect():
            rule_counts.setdefault(r.lg, {})[r.rule] = r["count"]
        unreadable: dict[int, int] = {}
        for r in quarantine.groupBy("lg").count().collect():
            unreadable[r.lg] = r["count"]
        problems = quarantine.orderBy("fidx", "line")
        if max_examples:
            problems = problems.limit(max_examples * len(logs))
        problems = problems.collect()
        shown = _examples(viols, max_examples)
        elapsed = time.perf_counter() - started
        reports = {}
        for g in logs:
            shown_files = [files.shown[g]] if per_file else list(files.shown)
            rep = Report(protocol="remp", profile=profile, inputs=shown_files, rules=dict(rules.modes),
                         shown_per_rule=max_examples, input_rule="REMP-INPUT-001")
            why = "the audit does not verify signatures (Ed25519 per receipt); run `rmkit check --validators FILE` for them"
            rep.not_checked = {r.id: why for r in model.rules if "validator_keys" in r.requires and rules.modes[r.id] != OFF}
            rec = by.get((g, "receipt"))
            rep.receipts = rec.n if rec else 0
            ls = life_stats.get(g, LifeFigures())
            rep.messages = ls.lives
            for rule, n in sorted(rule_counts.get(g, {}).items()):
                rep.count(rule, rules.modes[rule], n)
            rep.unreadable = unreadable.get(g, 0)
            if rep.unreadable and rules.modes["REMP-INPUT-001"] != OFF:
                rep.count("REMP-INPUT-001", rules.modes["REMP-INPUT-001"], rep.unreadable)
            rep.input_problems = [InputProblem(q.file, q.line, q.error, q.field) for q in problems if q.lg == g][: max_examples or None]
            vs = [v for lgv, v in shown if lgv == g]
            top = tops.get(g)
            end = hwm_end.get(g)
            if top is not None and end is not None and top[0] - end > lim.clock_jump_ms and rules.on("REMP-TIME-001"):
                t, trow = top
                rep.count("REMP-TIME-001", rules.modes["REMP-TIME-001"])
                line = trow.p.rid + offsets.get((trow.p.fidx, trow.p.blk), 1)
                vs.append(Violation("REMP-TIME-001", model.rules["REMP-TIME-001"].severity, rules.modes["REMP-TIME-001"],
                                    trow.message_id, f"timestamp {t} is {(t - end) / 1000:,.0f} s ahead of every other source's; "
                                    "the log's clock did not follow it", [Evidence(line, trow.kind, trow.src, files.shown[trow.p.fidx])]))
            order = {f: i for i, f in enumerate(files.shown)}
            vs.sort(key=lambda v: (min(((order.get(e.file, 0), e.line) for e in v.evidence), default=(0, 0)), v.rule))
            rep.violations = vs
            min_t = rec.min_t if rec else None
            rep.metrics = {
                "lifetime_s": lim.lifetime_s,
                "horizon_s": lim.horizon_s,
                "expiry_bound_s": lim.expiry_ms / 1000,
                "receipts_per_kind": dict(sorted(((k, n) for k, n in ls.per_kind.items() if n), key=lambda kv: -kv[1])),
                "outcomes": dict(sorted(ls.outcomes.items(), key=lambda kv: -kv[1])),
                "not_judged_for_liveness": ls.not_judged,
                "redelivered_receipts": ls.redelivered,
                "late_receipts": ls.late,
                "peak_open_messages": None,
                "kafka_tombstones": by[(g, "tombstone")].n if (g, "tombstone") in by else 0,
                "receipts_without_time": rec.no_t if rec else 0,
                "log_time_span_s": round((end - min_t) / 1000, 3) if end is not None and min_t is not None else None,
                "sources": _role_counts([r for r in role_rows if r.lg == g]),
                "latency_ms": {name: {"from": spec["from"], "to": spec["to"]} | lat.get((g, name), LatencyHistogram()).summary(tuple(spec["promise"]))
                               for name, spec in model.latency.items()},
                "elapsed_s": round(elapsed, 3),
                "receipts_per_s": round(rep.receipts / elapsed) if elapsed > 0 else None,
            }
            rep.decide()
            reports[g] = rep
        timings["total_s"] = elapsed
        return AuditResult(reports[0] if not per_file else _combined(reports, files.shown, profile), files.shown, reports,
                           viols, quarantine, lives, rc, timings)
    finally:
        if files.tmpdir:
            shutil.rmtree(files.tmpdir, ignore_errors=True)


def _status_counts(base) -> tuple[dict, dict]:
    """One pass over the kept rows: per (log, status) the count, rows without time and the time
    range; and each file split's line offset (see :func:`inputs.line_offsets`)."""
    from pyspark.sql import functions as F

    from rmkit.spark_checks.remp import inputs

    rows = base.groupBy("lg", "fidx", "blk", "status").agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.col("t").isNull().cast("int")).alias("no_t"),
        F.max("t").alias("max_t"), F.min("t").alias("min_t"), F.min("rid").alias("r0")).collect()
    by: dict[tuple, StatusCount] = {}
    for r in rows:
        c = by.setdefault((r.lg, r.status), StatusCount())
        c.n += r.n
        c.no_t += r.no_t or 0
        c.max_t = _extreme(max, c.max_t, r.max_t)
        c.min_t = _extreme(min, c.min_t, r.min_t)
    return by, inputs.line_offsets(rows)


def _extreme(pick, a, b):
    return b if a is None else a if b is None else pick(a, b)


@dataclass
class StatusCount:
    n: int = 0
    no_t: int = 0
    max_t: int | None = None
    min_t: int | None = None


def _clock_ends(rc) -> tuple[dict, dict]:
    """Per log: the latest time with the first receipt that has it (``tops``: lg -> (t, row)),
    and the latest time of every other source (``hwms``: lg -> t), from the two sources (keys)
    whose latest time is highest: one pass."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    latest = F.min(F.struct((-F.col("t")).alias("nt"), F.struct("fidx", "blk", "rid").alias("p"), F.col("key"),
                            F.col("message_id"), F.col("kind"), F.col("src")))
    per_key = rc.where(F.col("t").isNotNull()).groupBy("lg", "key").agg(latest.alias("top"))
    rank = F.row_number().over(Window.partitionBy("lg").orderBy("top"))
    tops, hwms = {}, {}
    for r in per_key.withColumn("rank", rank).where(F.col("rank") <= 2).collect():
        if r.rank == 1:
            tops[r.lg] = (-r.top.nt, r.top)
        else:
            hwms[r.lg] = -r.top.nt
    return tops, hwms


def _combined(reports: dict[int, Report], files: list[str], profile: str) -> Report:
    """One report over several independently checked logs: counts add up, examples are joined."""
    first = next(iter(reports.values()), None)
    out = Report(protocol="remp", profile=profile, inputs=list(files), rules=dict(first.rules) if first else {},
                 shown_per_rule=first.shown_per_rule if first else 0, input_rule="REMP-INPUT-001",
                 not_checked=dict(first.not_checked) if first else {})
    for r in reports.values():
        out.receipts += r.receipts
        out.messages += r.messages
        out.unreadable += r.unreadable
        for rule, n in r.counts.items():
            out.count(rule, out.rules.get(rule), n)
        out.violations += r.violations
        out.input_problems += r.input_problems
    out.metrics = {"logs": len(reports)}
    out.decide()
    return out


def _role_counts(rows) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.known_role] = out.get(r.known_role, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


BYTES_PER_PARTITION = 64 << 20  # of input text per shuffle partition of the per-message step
GZIP_RATIO = 6  # about how much a gzip receipt log expands


def shuffle_partitions(spark, files) -> int:
    """Partitions of the per-message step: the session's setting, or more for a large input, so
    that one task's rows (sorted, and held in window buffers and aggregation maps) stay well
    inside an executor's memory. Local files are measured; remote ones leave the setting as is."""
    configured = int(spark.conf.get("spark.sql.shuffle.partitions"))
    size = 0
    for f in files.read:
        if "://" in f and not f.startswith("file:"):
            continue
        try:
            size += os.path.getsize(f) * (GZIP_RATIO if f.endswith(".gz") else 1)
        except OSError:
            pass
    return max(configured, -(-size // BYTES_PER_PARTITION))


@dataclass
class LifeFigures:
    """A log's figures over its message lives."""

    lives: int = 0
    not_judged: int = 0
    redelivered: int = 0
    late: int = 0  # receipts after their life was judged (only the replay rules apply)
    per_kind: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)


def _life_figures(lives, kinds: list[str]) -> dict[int, LifeFigures]:
    """Per log, in one pass over the lives: their number, the outcomes (final, not judged, lost),
    redelivered receipts and receipts per kind."""
    from pyspark.sql import functions as F

    outcome = (F.when(F.col("final"), F.col("outcome")).when(F.col("not_judged"), F.concat(F.lit("not_judged:"), F.col("outcome")))
               .otherwise(F.lit("lost")))
    rows = lives.groupBy("lg", outcome.alias("o")).agg(
        F.count(F.lit(1)).alias("lives"), F.sum(F.col("not_judged").cast("int")).alias("nj"), F.sum("dups").alias("dups"),
        F.sum("late").alias("late"), *[F.sum("n_" + k).alias("n_" + k) for k in kinds]).collect()
    out: dict[int, LifeFigures] = {}
    for r in rows:
        f = out.setdefault(r.lg, LifeFigures(per_kind=dict.fromkeys(kinds, 0)))
        f.lives += r.lives
        f.not_judged += r.nj or 0
        f.redelivered += r.dups or 0
        f.late += r.late or 0
        f.outcomes[r.o] = r.lives
        for k in kinds:
            f.per_kind[k] += r["n_" + k] or 0
    return out


def _histograms(lives, names: list[str]) -> dict[tuple[int, str], LatencyHistogram]:
    """Per (log, latency column), the checker's log-linear histogram, filled from bucket counts
    computed by Spark in one pass."""
    from pyspark.sql import functions as F

    if not names:
        return {}
    values = lives.select("lg", F.explode(F.array(*[F.struct(F.lit(n).alias("name"), F.col(n).alias("v")) for n in names])).alias("x"))
    values = values.where(F.col("x.v").isNotNull()).select("lg", "x.name", F.greatest(F.col("x.v"), F.lit(0)).alias("v"))
    # LatencyHistogram._bucket in SQL: exact below 1024, then 64 sub-buckets per power of two
    bucket = F.expr("CASE WHEN v < 1024 THEN v ELSE shiftleft(CAST(floor(log2(v)) + 1 - 7 + 1 AS BIGINT), 16) "
                    "| shiftright(v, CAST(floor(log2(v)) + 1 - 7 AS INT)) END")
    out: dict[tuple[int, str], LatencyHistogram] = {}
    for r in values.groupBy("lg", "name", bucket.alias("b")).agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"),
                                                                 F.min("v").alias("lo"), F.max("v").alias("hi")).collect():
        h = out.setdefault((r.lg, r.name), LatencyHistogram())
        h.buckets[int(r.b)] += r.n
        h.count += r.n
        h.total += int(r.s)
        h.min = r.lo if h.min is None else min(h.min, r.lo)
        h.max = r.hi if h.max is None else max(h.max, r.hi)
    return out


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


def _with_lines(viols, offsets, files, model, modes):
    """Evidence positions turned into (file, line); rule mode and severity added."""
    from pyspark.sql import functions as F

    fa = _files_array(files)
    evidence = F.transform("evidence", lambda e: F.struct(
        F.element_at(fa, e.fidx + 1).alias("file"), _line(offsets, e.fidx, e.blk, e.rid).alias("line"),
        e.kind.alias("kind"), e.source_id.alias("source_id"), e.fidx.alias("fidx")))
    sev = F.create_map(*[x for r in model.rules for x in (F.lit(r.id), F.lit(r.severity))])
    mode = F.create_map(*[x for r, md in modes.items() for x in (F.lit(r), F.lit(md))])
    return viols.select("lg", "rule", mode[F.col("rule")].alias("mode"), sev[F.col("rule")].alias("severity"),
                        F.col("mid").alias("message_id"), "explanation", evidence.alias("evidence"))


def _quarantine(base, offsets, files):
    from pyspark.sql import functions as F

    fa = _files_array(files)
    q = base.where(F.col("status") == "problem")
    return q.select("lg", "fidx", F.element_at(fa, F.col("fidx") + 1).alias("file"), _line(offsets, F.col("fidx"), F.col("blk"), F.col("rid")).alias("line"),
                    F.col("q_error").alias("error"), F.col("q_field").alias("field"))


def _examples(viols, max_examples: int) -> list[tuple[int, Violation]]:
    """Up to ``max_examples`` violations per rule (0: all), in log order, as report objects."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    v = viols.withColumn("_o", F.array_min(F.transform("evidence", lambda e: F.struct(e.fidx, e.line))))
    if max_examples:
        v = v.withColumn("_n", F.row_number().over(Window.partitionBy("lg", "rule").orderBy("_o"))).where(F.col("_n") <= max_examples)
    out = []
    for r in v.orderBy("_o", "rule").collect():
        out.append((r.lg, Violation(r.rule, r.severity, r.mode, r.message_id, r.explanation,
                             [Evidence(e.line, e.kind, e.source_id, e.file) for e in r.evidence])))
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
