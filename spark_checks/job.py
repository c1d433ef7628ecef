"""The audit job: a protocol's own log checker, sharded by record key on Spark. Runnable on its
own under spark-submit::

    spark-submit --master spark://host:7077 --py-files rmkit.whl spark_checks/job.py \
        --protocol remp --profile spec --out /data/audit-out /data/receipts/

(the options of ``rmkit audit``; see spark_checks/README.md).

The job names no protocol and holds no rule: the protocol hands over a
:class:`rmkit.protocol.ShardedChecker` (where a record's key is, how to check one share, how to
merge the shares). Steps:

1. a cheap first pass counts the lines of every file split (line numbers follow from it);
2. every record gets its position (file, line) and its key, read from the raw line as the
   checkers read it: by Spark where the line holds the key once, plainly written
   (:func:`inputs.plain_key`), by the checkers' own reading otherwise
   (:meth:`rmkit.protocol.RecordKey.of_line`, a Python function on Spark: Spark's JSON reader
   differs, and a record keyed otherwise than its checker keys it would be judged apart from its
   group);
3. one shuffle by key, a sort by position within each partition;
4. the checker runs on each partition's records in log order (Python, one share per partition,
   or per partition and file when every file is a log of its own);
5. the shares' partial results are collected and merged on the driver, as ``rmkit check --jobs``
   merges its processes' (the merge reconciles what is global: the final clock, the sources'
   roles, counts and examples).
"""

from __future__ import annotations

import itertools
import os
import pickle
import shutil
import sys
import time
from dataclasses import dataclass, field

from rmkit.errors import InputError, RmkitError, UsageError
from rmkit.logread import UTF8_BOM
from rmkit.protocol import REF_LINE_BITS
from rmkit.verdict import Report

BATCH = 4096  # records handed to the checker at a time
BYTES_PER_PARTITION = 64 << 20  # of input text per partition of the per-key step
GZIP_RATIO = 6  # about how much a gzip receipt log expands


class AuditFailed(RmkitError):
    """Spark could not run the job for a reason other than an unreadable input (exit code 2)."""


@dataclass
class AuditResult:
    report: Report  # the whole run (the only log, or every log when they were checked one by one)
    files: list[str]
    reports: dict[int, Report] = field(default_factory=dict)  # per input index, with per_file
    timings: dict[str, float] = field(default_factory=dict)


def audit(spark, checker, paths: list[str], partitions: int | None = None, per_file: bool = False,
          skip: list[str] | tuple = ()) -> AuditResult:
    """Check ``paths`` as one log with ``checker`` (a :class:`rmkit.protocol.ShardedChecker`), or,
    with ``per_file``, each file as a log of its own in the same Spark job (``checker`` may then
    be a list: one per path, each with the same key, e.g. one protocol's checker with other
    settings per file). ``skip``: files a directory or glob may hold that are no logs."""
    from pyspark.sql import functions as F

    from rmkit.spark_checks import inputs

    started = time.perf_counter()
    files = inputs.expand_paths(paths, skip)
    try:
        if partitions is None:
            partitions = shuffle_partitions(spark, files)
        sc = spark.sparkContext
        per = checker if isinstance(checker, list) else None
        if per is not None and (not per_file or len(per) != len(files.shown) or len({c.key for c in per}) != 1):
            raise ValueError("a checker per file: expected per_file, one checker per path and one key for all")
        key = per[0].key if per is not None else checker.key
        lines = inputs.read_lines(spark, files)
        plain = inputs.plain_key(key, F.col("line"))
        parsed = F.lit(1) if plain is None else F.when(plain[0], 0).otherwise(1)
        sc.setJobGroup("rmkit-audit", "count the lines of each file split, and those Spark cannot key")
        counts = _spark_action(files, lambda: lines.groupBy("fidx", "blk").agg(
            F.count(F.lit(1)).alias("n"), F.min("rid").alias("r0"), F.sum(parsed).alias("parsed")).collect())
        offsets = inputs.line_offsets(counts)
        t_count = time.perf_counter() - started
        records = _keyed(lines, key, plain, offsets, dirty={(c.fidx, c.blk) for c in counts if c["parsed"]})
        by = [F.col("key"), F.col("fidx")] if per_file else [F.col("key")]
        records = records.repartition(partitions, *by).sortWithinPartitions("fidx", "lineno").select("fidx", "lineno", "line")
        shown = list(files.shown)
        sc.setJobGroup("rmkit-audit", "the checker on each share of record keys, in log order")
        shares = _spark_action(files, lambda: [(row.fidx, pickle.loads(row.share)) for row in records.mapInArrow(
            _arrow_runner(_share_runner(checker, shown, per_file)), "fidx int, share binary").collect()])
        t_check = time.perf_counter() - started - t_count
        reports: dict[int, Report] = {}
        if per_file:
            by_file: dict[int, list] = {}
            for fidx, share in shares:
                by_file.setdefault(fidx, []).append(share)
            for fidx in range(len(shown)):
                own = per[fidx] if per is not None else checker
                got = by_file.get(fidx) or [own.check_share(shown, [])]
                reports[fidx] = own.merge(shown, got)
                reports[fidx].inputs = [shown[fidx]]
            report = _combined(reports, shown)
        else:
            got = [share for _, share in shares] or [checker.check_share(shown, [])]
            report = reports[0] = checker.merge(shown, got)
        elapsed = time.perf_counter() - started
        for rep in [report, *reports.values()]:
            if "elapsed_s" in rep.metrics:
                rep.metrics["elapsed_s"] = round(elapsed, 3)
                rep.metrics["receipts_per_s"] = round(rep.receipts / elapsed) if elapsed > 0 else None
            rep.metrics["partitions"] = partitions
        timings = {"count_lines_s": t_count, "check_s": t_check, "merge_s": elapsed - t_count - t_check, "total_s": elapsed}
        return AuditResult(report, shown, reports, timings)
    finally:
        if files.tmpdir:
            shutil.rmtree(files.tmpdir, ignore_errors=True)


def _keyed(lines, key, plain, offsets, dirty: set):
    """Each line's (fidx, lineno, key, line). A plain line (:func:`inputs.plain_key`) is keyed by
    Spark; only the others go through the checkers' own reading in Python. ``dirty``: the file
    splits (fidx, split start) the first pass found other lines in. The lines of every other split
    are all plain, so they are keyed without a second look at whether they are, and a clean log's
    lines never leave the JVM before the shuffle."""
    from pyspark.sql import functions as F

    from rmkit.spark_checks import inputs

    lineno = inputs.line_numbers(offsets).alias("lineno")
    if plain is None:
        return lines.select("fidx", lineno, inputs.record_key(key)(F.col("line")).alias("key"), "line")
    is_plain, value = plain
    in_dirty = inputs.in_splits(dirty)
    clean = lines.filter(~in_dirty).select("fidx", lineno, value.alias("key"), "line")
    if not dirty:
        return clean
    mixed = lines.filter(in_dirty)
    fast = mixed.filter(is_plain).select("fidx", lineno, value.alias("key"), "line")
    slow = mixed.filter(~is_plain).select("fidx", lineno, inputs.record_key(key)(F.col("line")).alias("key"), "line")
    return clean.unionByName(fast).unionByName(slow)


def _arrow_runner(run):
    """``run`` (rows -> (fidx, share) pairs) over a partition as Arrow hands it over: column
    batches in, one row per share out, its partial result pickled. Arrow moves the records
    between the JVM and Python in columns, at a fraction of the cost of pickling each row."""
    import pyarrow as pa

    schema = pa.schema([("fidx", pa.int32()), ("share", pa.binary())])

    def rows(batches):
        for b in batches:
            yield from zip(b.column("fidx").to_pylist(), b.column("lineno").to_pylist(), b.column("line").to_pylist())

    def over_arrow(batches):
        for fidx, share in run(rows(batches)):
            yield pa.RecordBatch.from_pylist([{"fidx": fidx, "share": pickle.dumps(share, pickle.HIGHEST_PROTOCOL)}], schema=schema)

    return over_arrow


def _share_runner(checker, shown: list[str], per_file: bool):
    """The function each partition runs: its rows, sorted by position, handed to the checker in
    batches of (refs, lines); one partial result per partition (per file with ``per_file``)."""
    bits = REF_LINE_BITS

    def batches(rows, first: list):
        refs: list[int] = []
        lines: list = []
        for r in rows:
            fidx, lineno, line = r
            if per_file and fidx != first[0]:
                first[0] = fidx
                first[1] = r
                break
            if lineno == 1 and line.startswith(UTF8_BOM):  # a byte order mark, as rmkit check drops it
                line = line[3:]
            refs.append(fidx << bits | lineno)
            lines.append(line)
            if len(lines) == BATCH:
                yield refs, lines
                refs, lines = [], []
        else:
            first[1] = None
        if lines:
            yield refs, lines

    def run(rows):
        rows = iter(rows)
        head = next(rows, None)
        while head is not None:
            state = [head[0], None]
            own = checker[head[0]] if isinstance(checker, list) else checker
            share = own.check_share(shown, batches(itertools.chain([head], rows), state))
            yield (head[0] if per_file else 0), share
            head = state[1]

    return run


def _combined(reports: dict[int, Report], files: list[str]) -> Report:
    """One report over several independently checked logs: counts add up, examples are joined."""
    first = reports[0]
    out = Report(protocol=first.protocol, profile=first.profile, inputs=list(files), rules=dict(first.rules),
                 shown_per_rule=first.shown_per_rule, input_rule=first.input_rule, not_checked=dict(first.not_checked))
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


def _spark_action(files, action):
    """Run a Spark action; a failure caused by an input that cannot be read becomes the same
    error ``rmkit check`` gives for it (exit code 2, naming the file), any other a short one."""
    try:
        return action()
    except Exception as exc:  # Py4J and PySpark errors have no common base worth naming
        from rmkit.spark_checks import inputs

        for read, shown in zip(files.read, files.shown):
            if read.endswith(".gz") and "://" not in read and not inputs.gz_readable(read):
                raise InputError(f"cannot read input {shown!r}: not a complete gzip file (corrupt or truncated)") from None
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise AuditFailed(f"the Spark job failed: {first[:500]}") from None


def shuffle_partitions(spark, files) -> int:
    """Partitions of the per-key step: the session's setting, or more for a large input, so that
    one task's rows (sorted, then checked) stay well inside an executor's memory. Local files are
    measured; remote ones leave the setting as is."""
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


def trim_examples(report: Report, max_examples: int) -> None:
    """Keep ``max_examples`` violations per rule and input problems (0: all), in report order."""
    if not max_examples:
        return
    kept: dict[str, int] = {}
    out = []
    for v in report.violations:
        if kept.get(v.rule, 0) < max_examples:
            kept[v.rule] = kept.get(v.rule, 0) + 1
            out.append(v)
    report.violations = out
    report.input_problems = report.input_problems[:max_examples]
    report.shown_per_rule = max_examples


def run_audit(proto, profile: str, args) -> int:
    """``rmkit audit``: exit codes as ``rmkit check``'s (see rmkit.cli.check_exit_code)."""
    from rmkit.cli import check_exit_code
    from rmkit.spark_checks import inputs
    from rmkit.spark_checks.session import SparkUnavailable, get_session

    max_examples = getattr(args, "max_examples", 1000)
    if max_examples is None or max_examples < 0:
        raise UsageError(f"--max-examples: expected a number >= 0, found {max_examples}")
    if getattr(args, "partitions", None) is not None and args.partitions < 1:
        raise UsageError(f"--partitions: expected a number >= 1, found {args.partitions}")
    out = getattr(args, "out", None)
    args.max_examples = 0 if out else max_examples  # the tables in --out hold every finding
    checker = proto.sharded_checker(profile, args)
    side = inputs.option_files(args)  # e.g. a twin directory or validator set beside the logs
    found = inputs.expand_paths(list(args.paths), side)  # no input: an error before Spark starts
    if out:
        from rmkit.spark_checks.report import charts_unavailable

        missing = charts_unavailable(proto)
        if missing:
            raise SparkUnavailable(missing)
    if found.tmpdir:
        shutil.rmtree(found.tmpdir, ignore_errors=True)
    master = None if getattr(args, "submitted", False) else (getattr(args, "master", None) or "local[*]")
    spark = get_session(master, shuffle_partitions=getattr(args, "partitions", None))
    res = audit(spark, checker, list(args.paths), partitions=getattr(args, "partitions", None), skip=side)
    rep = res.report
    if out:
        from rmkit.spark_checks.report import write_outputs

        write_outputs(spark, res, out, proto)
        trim_examples(rep, max_examples)
    from rmkit.render import RENDERERS

    text = RENDERERS[getattr(args, "format", "text")](rep, rules=proto.rules(), color=False, title="rmkit audit")
    from rmkit.guard import decided

    code = decided(check_exit_code(rep, getattr(args, "strict", False)))
    sys.stdout.write(text)
    if out:
        print(f"{rep.verdict}: tables and operator's report written to {out}", file=sys.stderr)
    if rep.receipts == 0 and not rep.unreadable:
        print("rmkit audit: no receipts were read from the inputs", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry: the arguments of ``rmkit audit`` (without the subcommand)."""
    from rmkit.cli import main as rmkit_main

    return rmkit_main(["audit", "--submitted", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
