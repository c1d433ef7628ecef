"""Benchmark of `rmkit audit` (local[2]) on simulated receipts, against its Spark floor and rmkit check.

    python bench/bench_audit.py [--receipts N | --ten-million] [--violations RATE] [--dir DIR] [--skip-check]

Generates N receipts (default 1,000,000; --ten-million: 10,000,000; about N / 21 messages with 7
validators) with the project's bulk simulator (``rmkit simulate``'s engine, planted faults at RATE
per message), or reuses DIR when its manifest matches. Then, in one run (one local[2] session,
warmed by a small job first), each timed on the same files:

* bare read: ``spark.read.text(files).count()``;
* the Spark floor of a per-message audit: the same read, each line's message id found by Spark's
  JSON reader, repartitioned by it into the audit's partitions, counted per partition (the keys
  alone are moved, since the count needs nothing else); and the same floor with the records moved
  with their keys (the count reads the lines), which no per-message audit can do without;
* the audit (target: <= 3 x the floor), receipts per second, peak memory (this process plus its
  children: the driver's Python, the JVM, Spark's Python workers), its parts;
* the same audit without the log's clock (each share on its own records' times): what the clock
  pass and the shares' stepping through the log's clock events cost (each audit run twice, in
  turn, the faster wall time and the lesser CPU time kept);
* ``rmkit check --jobs 2`` (unless ``--skip-check``);
* whether the audit's findings equal the manifest's and rmkit check's;
* the machine's load average before and after (the cores may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from treemem import TreeMemory, tree_pids  # noqa: E402 - the benchmarks' one memory sampler
from rmkit.conformance.remp.bulk_sim import BulkConfig, expected_findings, generate, receipts_per_message

VALIDATORS = 7
SEED = 1


def data(d: str, receipts: int, violations: float) -> tuple[list[str], dict]:
    """The simulated log in ``d`` (generated unless a manifest with the same settings is there)."""
    cfg = BulkConfig(seed=SEED, messages=max(1, round(receipts / receipts_per_message(VALIDATORS))),
                     validators=VALIDATORS, profile="spec", violations=violations)
    path = os.path.join(d, "manifest.json")
    manifest = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
        same = (manifest.get("seed"), manifest.get("messages"), manifest.get("validators"), manifest.get("profile"),
                manifest.get("violations_rate")) == (cfg.seed, cfg.messages, cfg.validators, cfg.profile, cfg.violations)
        if not same or not all(os.path.exists(os.path.join(d, f["file"])) for f in manifest["files"]):
            manifest = None
    if manifest is None:
        t = time.perf_counter()
        manifest = generate(cfg, d, jobs=2)
        print(f"generated {cfg.messages:,} messages in {time.perf_counter() - t:.0f} s")
    files = [os.path.join(d, f["file"]) for f in manifest["files"]]
    return files, manifest


def tree_cpu() -> float:
    """CPU seconds (user + system, with those of waited-for children) of this process and its
    descendants (the JVM, Spark's Python workers), from /proc (0 without it): on shared cores a
    steadier measure of a step's cost than its wall time."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0
    for pid in tree_pids(os.getpid()):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        except (OSError, IndexError, ValueError):
            continue
    return total / ticks


def findings(report) -> set:
    """A report's findings in the manifest's terms: (rule, message id), and for unreadable lines
    (REMP-INPUT-001, file name, line)."""
    found = {(v.rule, v.subject) for v in report.violations if v.rule != "REMP-INPUT-001"}
    return found | {("REMP-INPUT-001", os.path.basename(p.file), p.line) for p in report.input_problems}


def compare(name: str, want: set, got: set) -> None:
    missing, extra = want - got, got - want
    print(f"agreement with {name}: {not missing and not extra} ({len(want):,} expected, {len(got):,} found, "
          f"{len(missing)} missing, {len(extra)} extra)")
    for label, diff in (("missing", missing), ("extra", extra)):
        for item in sorted(diff, key=str)[:5]:
            print(f"  {label}: {item}")


def time_audit(files: list[str]):
    from pyspark.sql import functions as F

    from rmkit.conformance.remp.checker import RempLogChecker
    from rmkit.conformance.remp.sharded import RempShards
    from rmkit.spark_checks import inputs
    from rmkit.spark_checks.job import audit, shuffle_partitions
    from rmkit.spark_checks.session import get_session

    mem = TreeMemory(os.getpid(), every=0.5)  # this process and its descendants (the JVM is one)
    spark = get_session("local[2]", progress=False)
    shards = RempShards(RempLogChecker("spec", max_examples=0)._kwargs)
    # warm-up: start the executors and a Python worker, JIT the readers, on one small file
    warm = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "remp", "logs", "sim-spec-clean.jsonl")
    audit(spark, shards, [warm], partitions=2)
    figures = {}
    t = time.perf_counter()
    figures["records"] = spark.read.text(files).count()
    figures["bare"] = time.perf_counter() - t
    print(f"(bare read measured: {figures['bare']:.1f} s)", flush=True)  # each figure as it comes: a long run may be cut short
    partitions = shuffle_partitions(spark, inputs.expand_paths(files))
    t = time.perf_counter()
    lines = spark.read.option("lineSep", "\n").text(files)
    key = inputs.key_column(shards.key, F.col("value"))
    lines.select(key.alias("key")).repartition(partitions, "key").groupBy(F.spark_partition_id()).count().collect()
    figures["floor"] = time.perf_counter() - t
    print(f"(Spark floor measured: {figures['floor']:.1f} s)", flush=True)
    # the same with the records moved: what a per-message audit cannot do without (the floor above
    # moves the keys only, since its count needs nothing else; here the count reads the lines moved)
    t = time.perf_counter()
    lines.select(key.alias("key"), "value").repartition(partitions, "key").groupBy(F.spark_partition_id()).agg(
        F.sum(F.length("value"))).collect()
    figures["floor_records"] = time.perf_counter() - t
    print(f"(Spark floor with the records moved: {figures['floor_records']:.1f} s)", flush=True)
    # the audit, and what the log's clock costs: the same audit with shares that take their own
    # records' times only; each twice, in turn, the faster kept (the JVM's first run at this size
    # also compiles its hot paths, which the second does not pay)
    for _ in range(2):
        for name, clocked in (("own_clock", False), ("audit", True)):
            t, cpu = time.perf_counter(), tree_cpu()
            got = audit(spark, shards, files, log_clock=clocked)
            wall, cpu = time.perf_counter() - t, tree_cpu() - cpu
            print(f"({'audit' if clocked else 'audit without the log clock'} measured: {wall:.1f} s, CPU {cpu:.1f} s)",
                  flush=True)
            if name not in figures or wall < figures[name]:
                figures[name] = wall
            figures[name + "_cpu"] = min(cpu, figures.get(name + "_cpu", cpu))
            if clocked:
                res = got
    figures["partitions"] = partitions
    mem.stop()
    figures["peak"] = mem.peak_rss
    spark.stop()
    return res, figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--receipts", type=int, default=1_000_000, help="about how many receipts (default 1,000,000)")
    ap.add_argument("--ten-million", action="store_true", help="10,000,000 receipts")
    ap.add_argument("--violations", type=float, default=0.0001, help="planted faults per message (default 0.0001)")
    ap.add_argument("--dir", help="where the simulated log is kept (default: a temporary folder)")
    ap.add_argument("--skip-check", action="store_true", help="do not run rmkit check on the same files")
    args = ap.parse_args()
    receipts = 10_000_000 if args.ten_million else args.receipts
    d = args.dir or tempfile.mkdtemp(prefix="bench-audit-")
    files, manifest = data(d, receipts, args.violations)
    print(f"data: {len(files)} files, {sum(os.path.getsize(f) for f in files) / 1e9:.2f} GB, "
          f"{manifest['messages']:,} messages in {d}")
    load0 = os.getloadavg()
    res, f = time_audit(files)
    rep = res.report
    print(f"bare read (text, count): {f['bare']:.1f} s ({f['records']:,} records)")
    print(f"Spark floor (read + message id + repartition into {f['partitions']} by it + count): {f['floor']:.1f} s")
    print(f"Spark floor with the records moved (the same, the lines shuffled with their keys): {f['floor_records']:.1f} s")
    print(f"audit: {f['audit']:.1f} s  audit/floor {f['audit'] / f['floor']:.2f} (target <= 3)  audit/floor with the records moved "
          f"{f['audit'] / f['floor_records']:.2f}  audit/bare read "
          f"{f['audit'] / f['bare']:.2f}  {rep.records / f['audit']:,.0f} receipts/s  verdict {rep.verdict}")
    print(f"audit without the log's clock (each share on its own records' times, as before): {f['own_clock']:.1f} s; "
          f"the log's clock costs {f['audit'] - f['own_clock']:.1f} s ({f['audit'] / f['own_clock']:.2f} times); "
          f"CPU {f['audit_cpu']:.1f} s against {f['own_clock_cpu']:.1f} s ({f['audit_cpu'] / max(f['own_clock_cpu'], 1e-9):.2f} times)")
    print("audit parts: " + ", ".join(f"{k} {v:.1f} s" for k, v in res.timings.items())
          + f"; passes {rep.metrics.get('audit_passes')}"
          + (f" ({rep.metrics['audit_two_passes_because']})" if rep.metrics.get("audit_two_passes_because") else ""))
    print(f"peak memory (driver + JVM + Python workers RSS): {f['peak'] / 2**30:.2f} GiB")
    print(f"counts: {rep.counts}")
    got = findings(rep)
    compare("the manifest", expected_findings(manifest), got)
    if not args.skip_check:
        from rmkit.conformance.remp.checker import RempLogChecker

        t = time.perf_counter()
        r = RempLogChecker("spec", jobs=2, max_examples=0).run(files)
        ct = time.perf_counter() - t
        print(f"rmkit check --jobs 2: {ct:.1f} s, {r.records / ct:,.0f} receipts/s; audit/check {f['audit'] / ct:.2f}")
        compare("rmkit check", findings(r), got)
    print(f"load average (1 min) before {load0[0]:.1f}, after {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
