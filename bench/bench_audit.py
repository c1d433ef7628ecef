"""Benchmark of `rmkit audit` (local[2]) on simulated receipts.

    python bench/bench_audit.py [--receipts N] [--violations RATE] [--dir DIR] [--skip-check]

Generates N receipts (default 10,000,000, about N / 21 messages with 7 validators) with the
project's bulk simulator (``rmkit simulate``'s engine, planted faults at RATE per message), or
reuses DIR when its manifest matches. Then, in one local[2] session warmed by a small job first:

* the time of a bare ``spark.read.schema(<the audit's explicit schema>).json(files).count()``
  (the target's baseline), and, for context, of the same read made to convert every field;
* the audit's time, their ratio (target <= 3), receipts per second, peak memory (this process
  plus its children: the driver's Python and the JVM), the audit's parts and which dominates;
* whether the audit's full violation set (the ``violations`` table, not the capped report)
  equals the manifest's expected findings (REMP-INPUT-001 by file and line);
* unless ``--skip-check``: `rmkit check` on the same files, and whether its set is the audit's.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time

from rmkit.conformance.remp.bulk_sim import BulkConfig, expected_findings, generate, receipts_per_message

VALIDATORS = 7
SEED = 1
WHY = {
    "parse_s": "JSON parsing with the explicit schema, line classification and per-row field checks, written "
               "into the kept (persisted) table; a bare read parses fewer columns and keeps nothing",
    "global_s": "the small global aggregates (log clock, first roles) over the kept table",
    "per_message_s": "the one shuffle by message id and its sort: every receipt row is written, sorted and read "
                     "back once, then the window and aggregation operators run over the sorted rows",
    "report_s": "the report's aggregates and the violation table over the kept per-life table",
}


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


class PeakRss:
    """Peak resident memory of this process and all its descendants (the JVM is one), sampled."""

    def __init__(self):
        self.peak = 0
        self._stop = False
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _tree(self):
        pids, frontier = {os.getpid()}, [os.getpid()]
        while frontier:
            p = frontier.pop()
            try:
                for c in open(f"/proc/{p}/task/{p}/children").read().split():
                    pids.add(int(c))
                    frontier.append(int(c))
            except OSError:
                pass
        return pids

    def _run(self):
        while not self._stop:
            total = 0
            for p in self._tree():
                try:
                    for line in open(f"/proc/{p}/status"):
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1]) * 1024
                except OSError:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(0.5)

    def stop(self):
        self._stop = True
        return self.peak


def audit_findings(res) -> set:
    """The audit's full finding set, in the manifest's terms: (rule, message id), and for
    unreadable lines (REMP-INPUT-001, file name, line)."""
    found = {(r.rule, r.message_id) for r in res.violations.select("rule", "message_id").distinct().collect()}
    found |= {("REMP-INPUT-001", os.path.basename(r.file), r.line) for r in res.quarantine.select("file", "line").collect()}
    return found


def compare(name: str, want: set, got: set) -> None:
    missing, extra = want - got, got - want
    print(f"agreement with {name}: {not missing and not extra} ({len(want):,} expected, {len(got):,} found, "
          f"{len(missing)} missing, {len(extra)} extra)")
    for label, diff in (("missing", missing), ("extra", extra)):
        for item in sorted(diff, key=str)[:5]:
            print(f"  {label}: {item}")


def time_audit(files: list[str]):
    from rmkit.spark_checks.remp.inputs import envelope_schema
    from rmkit.spark_checks.remp.job import audit
    from rmkit.spark_checks.session import get_session

    mem = PeakRss()
    spark = get_session("local[2]", progress=False)
    # warm-up: start the executors, JIT the JSON reader, on one file only
    spark.read.schema(envelope_schema()).json(files[0]).limit(1000).count()
    t = time.perf_counter()
    n = spark.read.schema(envelope_schema()).json(files).count()
    bare = time.perf_counter() - t
    # context, not the target's baseline: the same read made to parse every field (a count alone
    # lets Spark skip converting the fields)
    from pyspark.sql import functions as F

    t = time.perf_counter()
    df = spark.read.schema(envelope_schema()).json(files)
    df.select(F.xxhash64(*df.columns).alias("x")).agg(F.max("x")).collect()
    full = time.perf_counter() - t
    t = time.perf_counter()
    res = audit(spark, files, "spec")
    took = time.perf_counter() - t
    peak = mem.stop()
    return spark, res, n, bare, full, took, peak


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--receipts", type=int, default=10_000_000, help="about how many receipts (default 10,000,000)")
    ap.add_argument("--violations", type=float, default=0.0001, help="planted faults per message (default 0.0001)")
    ap.add_argument("--dir", help="where the simulated log is kept (default: a temporary folder)")
    ap.add_argument("--skip-check", action="store_true", help="do not run rmkit check on the same files")
    args = ap.parse_args()
    d = args.dir or tempfile.mkdtemp(prefix="bench-audit-")
    files, manifest = data(d, args.receipts, args.violations)
    print(f"data: {len(files)} files, {sum(os.path.getsize(f) for f in files) / 1e9:.2f} GB, "
          f"{manifest['messages']:,} messages in {d}")
    spark, res, n, bare, full, took, peak = time_audit(files)
    rep = res.report
    print(f"bare read + count: {bare:.1f} s ({n:,} records)")
    print(f"read parsing every field (context): {full:.1f} s")
    print(f"audit: {took:.1f} s  ratio {took / bare:.2f} (to the full-parse read: {took / full:.2f})  "
          f"{rep.receipts / took:,.0f} receipts/s  verdict {rep.verdict}")
    print(f"counts: {rep.counts}")
    print(f"peak memory (driver + JVM RSS): {peak / 2**30:.2f} GiB")
    parts = {k: v for k, v in res.timings.items() if k != "total_s"}
    parts["report_s"] = res.timings["total_s"] - sum(parts.values())
    print("parts: " + ", ".join(f"{k} {v:.1f} s" for k, v in parts.items()))
    worst = max(parts, key=parts.get)
    print(f"dominant: {worst}: {WHY.get(worst, '')}")
    got = audit_findings(res)
    compare("the manifest", expected_findings(manifest), got)
    spark.stop()
    if not args.skip_check:
        from rmkit.conformance.remp.checker import RempLogChecker

        t = time.perf_counter()
        r = RempLogChecker("spec", jobs=None, max_examples=0).run(files)
        ct = time.perf_counter() - t
        print(f"rmkit check (streaming, one process per core): {ct:.1f} s, {r.receipts / ct:,.0f} receipts/s")
        want = {(v.rule, v.message_id) for v in r.violations if v.rule != "REMP-INPUT-001"}
        want |= {("REMP-INPUT-001", os.path.basename(p.file), p.line) for p in r.input_problems}
        compare("rmkit check", want, got)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
