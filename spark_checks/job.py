"""The audit job: a protocol's own log checker, sharded by record key on Spark. Runnable on its
own under spark-submit::

    spark-submit --master spark://host:7077 --py-files rmkit.whl spark_checks/job.py \
        --protocol remp --profile spec --out /data/audit-out /data/receipts/

(the options of ``rmkit audit``; see spark_checks/README.md).

The job names no protocol and holds no rule: the protocol hands over a
:class:`rmkit.protocol.ShardedChecker` (where a record's key is, how to check one share, how to
merge the shares). Steps:

1. every record gets its key and position from the raw line, in one pass where the log allows
   it (:func:`_one_pass`): placed by the key Spark reads where it is plainly written
   (:func:`inputs.spark_placed_key`) and numbered provisionally from its file split
   (:func:`inputs.provisional_lines`); otherwise (:func:`_two_passes`) a first pass counts the
   lines of every file split and a line Spark cannot key plainly is keyed by the checkers' own
   reading (:meth:`rmkit.protocol.RecordKey.of_line`, a Python function on Spark: Spark's JSON
   reader differs, and a record keyed otherwise than its checker keys it would be judged apart
   from its group);
2. one shuffle by key, a sort by position within each partition;
3. the checker runs on each partition's records in log order (Python, one share per partition,
   or per partition and file when every file is a log of its own); in the one pass the shares
   also confirm each record's placement and count each split's lines (a record misplaced, or a
   numbering that did not hold, sends the audit to the two passes);
4. the shares' partial results are collected and merged on the driver, as ``rmkit check --jobs``
   merges its processes' (the merge reconciles what is global: the final clock, the sources'
   roles, counts and examples); after the one pass the report's lines are renumbered to the
   real ones.
"""

from __future__ import annotations

import gzip
import itertools
import os
import pickle
import shutil
import sys
import time
import zlib
from dataclasses import dataclass, field

from rmkit.errors import InputError, RmkitError, UsageError
from rmkit.logread import UTF8_BOM
from rmkit.protocol import REF_LINE_BITS
from rmkit.guard import check_exit_code, decided
from rmkit.verdict import Report, renumber

SAMPLE_BYTES = 64 << 10  # of each local log's start, looked at before the one pass is tried
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
          skip: list[str] | tuple = (), split_bytes: int | None = None, log_clock: bool = True) -> AuditResult:
    """Check ``paths`` as one log with ``checker`` (a :class:`rmkit.protocol.ShardedChecker`), or,
    with ``per_file``, each file as a log of its own in the same Spark job (``checker`` may then
    be a list: one per path, each with the same key, e.g. one protocol's checker with other
    settings per file). ``skip``: files a directory or glob may hold that are no logs.
    ``split_bytes``: the size of a file split in the one-pass audit (default: Spark's own rule).
    ``log_clock``: give every share the log's clock (:func:`_log_clock`) where the checker takes it;
    False only to measure what it costs (the shares' clocks then lag the log's)."""
    started = time.perf_counter()
    files = _inputs().expand_paths(paths, skip)
    try:
        if partitions is None:
            partitions = shuffle_partitions(spark, files)
        per = checker if isinstance(checker, list) else None
        if per is not None and (not per_file or len(per) != len(files.shown) or len({c.key for c in per}) != 1):
            raise ValueError("a checker per file: expected per_file, one checker per path and one key for all")
        key = per[0].key if per is not None else checker.key
        shown = list(files.shown)
        why = _one_pass_refused(files, key)
        run, dropped = None, 0.0
        if why is None:
            t_one = time.perf_counter()
            run = _one_pass(spark, checker, files, key, partitions, per_file, split_bytes, log_clock)
            if isinstance(run, str):  # the one pass's time is spent all the same: named, not hidden in the merge
                why, dropped = run, time.perf_counter() - t_one
        if why is not None:
            run = _two_passes(spark, checker, files, key, partitions, per_file, log_clock)
        shares, numbering, timings = run
        if dropped:
            timings["one_pass_dropped_s"] = dropped
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
        else:
            got = [share for _, share in shares] or [checker.check_share(shown, [])]
            reports[0] = checker.merge(shown, got)
        if numbering is not None:
            renumber(list(reports.values()), _line_of(numbering, shown))
        report = _combined(reports, shown) if per_file else reports[0]
        elapsed = time.perf_counter() - started
        for rep in [report, *reports.values()]:
            if "elapsed_s" in rep.metrics:
                rep.metrics["elapsed_s"] = round(elapsed, 3)
                rep.metrics["receipts_per_s"] = round(rep.records / elapsed) if elapsed > 0 else None
            rep.metrics["partitions"] = partitions
            rep.metrics["audit_passes"] = 1 if why is None else 2
            if why is not None:
                rep.metrics["audit_two_passes_because"] = why
        timings["merge_s"] = elapsed - sum(timings.values())
        timings["total_s"] = elapsed
        return AuditResult(report, shown, reports, timings)
    finally:
        if files.tmpdir:
            shutil.rmtree(files.tmpdir, ignore_errors=True)


def _inputs():
    """spark_checks.inputs, imported where PySpark is (the job's module is imported without it)."""
    from rmkit.spark_checks import inputs

    return inputs


def _one_pass_refused(files, key) -> str | None:
    """Why the audit cannot key and number the records in the one pass (None: it can try): a
    Parquet input (its rows are numbered by the counting pass), a key whose paths end in different
    names (no plain value to place a record by), or a local log whose first lines hold their key
    so that only a JSON reading finds it (e.g. kcat envelopes: the shares would find them misplaced
    after the whole pass)."""
    inputs = _inputs()
    if any(files.parquet):
        return "a Parquet input: its rows are numbered by a counting pass"
    if inputs.plain_name(key) is None:
        return "the record key's paths end in different names: no plain value to place a record by"
    placement = inputs.Placement(key)
    for read, shown in zip(files.read, files.shown):
        if inputs.is_remote(read):
            continue
        try:
            with (gzip.open(read, "rb") if read.endswith(".gz") else open(read, "rb")) as f:
                head = f.read(SAMPLE_BYTES)
        except (OSError, EOFError, zlib.error):
            continue  # the job reports an input it cannot read, as rmkit check does
        lines = head.split(b"\n")
        if len(head) == SAMPLE_BYTES:
            lines.pop()  # cut off
        if placement.sample(lines):
            return f"the first lines of {shown} hold their key so that only a JSON reading finds it"
    return None


def _one_pass(spark, checker, files, key, partitions: int, per_file: bool, split_bytes: int | None,
              log_clock: bool = True):
    """Key, shuffle and check in one pass: each record is placed by its plainly written key
    (:func:`inputs.spark_placed_key`) and numbered provisionally (:func:`inputs.provisional_lines`);
    the shares confirm the placement and count each split's lines. Returns (shares, the real line
    numbers, timings), or why the pass does not hold (a record misplaced, a split numbering
    broken): the caller then runs the two passes."""
    from pyspark.sql import functions as F

    inputs = _inputs()
    started = time.perf_counter()
    lines = inputs.read_lines(spark, files)
    placed = inputs.spark_placed_key(key, F.col("line"))
    records = lines.select("fidx", "rid", inputs.provisional_lines().alias("lineno"), placed.alias("key"), "line")
    # the key travels with its record (an expression of the exchange alone would be computed again
    # for the flag): the share learns from it where Spark found no plain value
    numbered = lines.select("fidx", inputs.provisional_lines().alias("lineno"), "line")
    records = _in_log_order(records, partitions, per_file, extra=((F.col("key") == "").alias("no_value"), "rid"))
    with inputs.one_split_per_partition(spark, split_bytes or inputs.split_size(spark, files)):
        clock, t_clock = _log_clock(spark, checker, files, numbered, per_file) if log_clock else (None, 0.0)
        runner = _arrow_runner(checker, list(files.shown), per_file, key, looking=True, clock=clock)
        spark.sparkContext.setJobGroup("rmkit-audit", "the checker on each share of record keys, in log order (one pass)")
        rows = _spark_action(files, lambda: records.mapInArrow(runner, "fidx int, share binary").collect())
    if clock is not None:
        clock.destroy()
    shares, counts, misplaced, example = [], inputs.SplitCounts(), 0, None
    for row in rows:
        got = pickle.loads(row.share)
        if row.fidx == LOOKED:
            counts.update(got[0])
            misplaced += got[1]
            example = example or got[2]
        else:
            shares.append((row.fidx, got))
    if misplaced:
        ref, line = example
        return (f"{misplaced} record(s) hold their key so that only a JSON reading finds it (first: "
                f"{files.shown[ref >> REF_LINE_BITS]}, {line[:80]!r})")
    numbering = counts.numbering(REF_LINE_BITS)
    if isinstance(numbering, str):
        return numbering
    return shares, numbering, {"count_lines_s": 0.0, "clock_s": t_clock, "check_s": time.perf_counter() - started - t_clock}


def _two_passes(spark, checker, files, key, partitions: int, per_file: bool, log_clock: bool = True):
    """A first pass counts the lines of every file split (line numbers follow) and finds the
    splits holding lines Spark cannot key; the second keys each line (by Spark where it is plain,
    by the checkers' reading otherwise), shuffles and checks. Returns (shares, None, timings)."""
    from pyspark.sql import functions as F

    inputs = _inputs()
    started = time.perf_counter()
    sc = spark.sparkContext
    lines = inputs.read_lines(spark, files)
    plain = inputs.plain_key(key, F.col("line"))
    parsed = F.lit(1) if plain is None else F.when(plain[0], 0).otherwise(1)
    sc.setJobGroup("rmkit-audit", "count the lines of each file split, and those Spark cannot key")
    counts = _spark_action(files, lambda: lines.groupBy("fidx", "blk").agg(
        F.count(F.lit(1)).alias("n"), F.min("rid").alias("r0"), F.sum(parsed).alias("parsed")).collect())
    offsets = inputs.line_offsets(counts)
    t_count = time.perf_counter() - started
    numbered = lines.select("fidx", inputs.line_numbers(offsets).alias("lineno"), "line")
    clock, t_clock = _log_clock(spark, checker, files, numbered, per_file) if log_clock else (None, 0.0)
    records = _keyed(lines, key, plain, offsets, dirty={(c.fidx, c.blk) for c in counts if c["parsed"]})
    records = _in_log_order(records, partitions, per_file)
    runner = _arrow_runner(checker, list(files.shown), per_file, key, looking=False, clock=clock)
    sc.setJobGroup("rmkit-audit", "the checker on each share of record keys, in log order")
    rows = _spark_action(files, lambda: records.mapInArrow(runner, "fidx int, share binary").collect())
    if clock is not None:
        clock.destroy()
    shares = [(row.fidx, pickle.loads(row.share)) for row in rows]
    return shares, None, {"count_lines_s": t_count, "clock_s": t_clock,
                          "check_s": time.perf_counter() - started - t_count - t_clock}


def _in_log_order(records, partitions: int, per_file: bool, extra: tuple = ()):
    """Records (fidx, lineno, key, line, ...) shuffled by key (and file, with ``per_file``) and
    sorted by position within each partition: what each share's checker reads, as (ref, line,
    ...) with ref = fidx << REF_LINE_BITS | lineno and a first line's byte order mark dropped, as
    rmkit check drops it (both by Spark, so that the shares take whole columns)."""
    from pyspark.sql import functions as F

    parts = [F.col("key"), F.col("fidx")] if per_file else [F.col("key")]
    return records.repartition(partitions, *parts).select(*_ref_and_line(), *extra).sortWithinPartitions("ref")


def _ref_and_line() -> tuple:
    """The columns (ref, line) of records (fidx, lineno, line): what the checkers read."""
    from pyspark.sql import functions as F

    ref = F.shiftleft(F.col("fidx").cast("long"), REF_LINE_BITS) + F.col("lineno")
    bom = (F.col("lineno") == 1) & (F.substring("line", 1, len(UTF8_BOM)) == F.lit(bytearray(UTF8_BOM)))
    line = F.when(bom, F.expr(f"substring(line, {len(UTF8_BOM) + 1})")).otherwise(F.col("line"))
    return ref.alias("ref"), line.alias("line")


def _clocked(checker) -> bool:
    """Whether the checker's shares take the log's clock (:func:`_log_clock`)."""
    return all(callable(getattr(c, "clock_block", None)) for c in (checker if isinstance(checker, list) else [checker]))


def _log_clock(spark, checker, files, numbered, per_file: bool):
    """The log's clock for every share, as one process has it: the clock events of every line
    (the checker's ``clock_block``: what its clock reads of a line, by its own reading), read from
    each file split in log order on the executors (one task per split, the lines read and
    numbered as the shares' are: ``numbered`` is (fidx, lineno, line) of every line), collected
    in log order and handed to every share as one broadcast, a few bytes a record: each share's
    clock then takes the other shares' records between its own, as a ``--jobs`` share's does.
    Returns (the broadcast: log (0, or with ``per_file`` each file's index) -> its packed blocks in
    log order, the seconds spent), or (None,
    0) where the checker's shares take no clock (Corda: no decision of its checker follows a
    clock)."""
    if not _clocked(checker):
        return None, 0.0
    started = time.perf_counter()
    runner = _clock_runner(checker)
    spark.sparkContext.setJobGroup("rmkit-audit", "the clock events of each file split, in log order")
    rows = _spark_action(files, lambda: numbered.select(*_ref_and_line()).mapInArrow(
        runner, "first long, block binary").collect())
    logs: dict[int, list] = {}
    for row in sorted(rows, key=lambda r: r.first):
        logs.setdefault(row.first >> REF_LINE_BITS if per_file else 0, []).append(row.block)
    return spark.sparkContext.broadcast(logs), time.perf_counter() - started


def _clock_runner(checker):
    """Each Spark partition's clock events (rows in a split's order): a block per run of
    consecutive lines (a partition may hold several splits, an Arrow batch the end of one and the
    start of the next), by the checker of the line's file."""
    import pyarrow as pa

    schema = pa.schema([("first", pa.int64()), ("block", pa.binary())])

    def run(batches):
        for b in batches:
            refs = b.column("ref").to_pylist()
            lines = b.column("line").to_pylist()
            firsts, blocks = [], []
            start = 0
            for i in range(1, len(refs) + 1):
                if i == len(refs) or refs[i] != refs[i - 1] + 1:
                    own = checker[refs[start] >> REF_LINE_BITS] if isinstance(checker, list) else checker
                    firsts.append(refs[start])
                    blocks.append(own.clock_block(refs[start:i], lines[start:i]))
                    start = i
            if firsts:
                yield pa.RecordBatch.from_arrays([pa.array(firsts, pa.int64()), pa.array(blocks, pa.binary())], schema=schema)

    return run


def _line_of(numbering, shown: list[str]):
    """``line_of(file, provisional line)`` for :func:`rmkit.verdict.renumber`: a file named twice
    in one log is one file read twice, numbered alike."""
    index: dict[str | None, int] = {}
    for i, name in enumerate(shown):
        index.setdefault(name, i)
    if len(shown) == 1:
        index.setdefault(None, 0)
    return lambda file, line: numbering.line(index[file], line) if file in index else line


def _keyed(lines, key, plain, offsets, dirty: set):
    """Each line's (fidx, lineno, key, line) in the two passes. A plain line (:func:`inputs.plain_key`)
    is keyed by Spark; only the others go through the checkers' own reading in Python. ``dirty``:
    the file splits (fidx, split start) the first pass found other lines in. The lines of every
    other split are all plain, so they are keyed without a second look at whether they are, and a
    clean split's lines never leave the JVM before the shuffle."""
    from pyspark.sql import functions as F

    inputs = _inputs()
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


LOOKED = -1  # the fidx of the row in which a one-pass partition reports what its shares saw


def _arrow_runner(checker, shown: list[str], per_file: bool, key, looking: bool, clock=None):
    """The function each partition runs over the column batches Arrow hands over (records sorted
    by position): the checker gets them as (refs, lines) batches, whole columns at a time; one
    row per share comes out (per file with ``per_file``), its partial result pickled. With
    ``looking`` (the one pass) a last row reports the splits' line counts and the records found
    misplaced (:class:`inputs.SplitCounts`, :class:`inputs.Placement`). ``clock``: the broadcast of
    :func:`_log_clock`, whose blocks each share's clock takes. Arrow moves the records between the
    JVM and Python in columns, at a fraction of the cost of pickling each row."""
    import pyarrow as pa

    schema = pa.schema([("fidx", pa.int32()), ("share", pa.binary())])

    def segments(batches, placement, counts):
        import pyarrow.compute as pc

        for b in batches:
            refs = b.column("ref").to_pylist()
            lines = b.column("line").to_pylist()
            if looking:
                counts.add_batch(b.column("ref"), b.column("rid"), REF_LINE_BITS)
                placement.look(refs, lines, pc.indices_nonzero(b.column("no_value")).to_pylist())
            if not per_file:
                yield 0, refs, lines
                continue
            fidx = pc.shift_right(b.column("ref"), REF_LINE_BITS).to_pylist()
            start = 0
            for i in range(1, len(fidx) + 1):
                if i == len(fidx) or fidx[i] != fidx[start]:
                    yield fidx[start], refs[start:i], lines[start:i]
                    start = i

    def out(fidx: int, value) -> "pa.RecordBatch":
        return pa.RecordBatch.from_pylist([{"fidx": fidx, "share": pickle.dumps(value, pickle.HIGHEST_PROTOCOL)}],
                                          schema=schema)

    def run(batches):
        inputs = _inputs()
        placement = inputs.Placement(key) if looking else None
        counts = inputs.SplitCounts() if looking else None
        for fidx, group in itertools.groupby(segments(batches, placement, counts), key=lambda seg: seg[0]):
            own = checker[fidx] if isinstance(checker, list) else checker
            mine = ((refs, lines) for _, refs, lines in group)
            if clock is None:
                yield out(fidx, own.check_share(shown, mine))
            else:
                yield out(fidx, own.check_share(shown, mine, clock.value.get(fidx, [])))
        if looking:
            yield out(LOOKED, (counts, placement.misplaced, placement.example))

    return run


def _combined(reports: dict[int, Report], files: list[str]) -> Report:
    """One report over several independently checked logs: counts add up, examples are joined."""
    first = reports[0]
    out = Report(protocol=first.protocol, profile=first.profile, inputs=list(files), rules=dict(first.rules),
                 shown_per_rule=first.shown_per_rule, input_rule=first.input_rule, not_checked=dict(first.not_checked))
    for r in reports.values():
        out.records += r.records
        out.subjects += r.subjects
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
        if _inputs().is_remote(f):
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


def spark_conf(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` (repeatable), as spark-submit takes them: Spark settings for the session."""
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--conf {pair!r}: expected KEY=VALUE (e.g. --conf spark.executor.memory=4g)")
        out[key.strip()] = value
    return out


def spark_log_path(out: str | None) -> str:
    """Where the JVM's output goes: spark.log beside the audit's tables, else a file of its own in
    the temporary folder (named in the output either way)."""
    if out:
        os.makedirs(out, exist_ok=True)
        return os.path.join(out, "spark.log")
    import tempfile

    fd, path = tempfile.mkstemp(prefix="rmkit-audit-spark-", suffix=".log")
    os.close(fd)
    return path


class StageProgress:
    """A line on stderr about the running Spark job, from the driver's status tracker: every 2 s on
    a terminal, every 30 s otherwise (a CI log gets a sign of life, not a flood). Spark's own
    progress bars go to its log file with the rest of its output."""

    def __init__(self, spark, every: float | None = None):
        self.spark = spark
        self.every = every if every is not None else (2.0 if sys.stderr.isatty() else 30.0)
        self.stop = None

    def __enter__(self):
        import threading

        self.stop = threading.Event()
        self.started = time.perf_counter()
        threading.Thread(target=self._run, daemon=True, name="rmkit-audit-progress").start()
        return self

    def _run(self):
        tracker = self.spark.sparkContext.statusTracker()
        while not self.stop.wait(self.every):
            try:
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            except Exception:  # noqa: BLE001 - the session is stopping: no more lines
                return
            done = sum(s.numCompletedTasks for s in stages if s)
            total = sum(s.numTasks for s in stages if s)
            what = f"{len(stages)} stage(s) running, {done}/{total} tasks done" if stages else "between stages"
            print(f"rmkit audit: {time.perf_counter() - self.started:.0f} s: {what}", file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        self.stop.set()
        return False


def run_audit(proto, profile: str, args) -> int:
    """``rmkit audit``: exit codes as ``rmkit check``'s (:func:`rmkit.guard.check_exit_code`)."""
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
    conf = spark_conf(getattr(args, "conf", None) or [])
    log_file = spark_log_path(out) if master is not None else None
    if log_file:
        print(f"rmkit audit: Spark's own log (its warnings and stages) goes to {log_file}", file=sys.stderr)
    spark = get_session(master, shuffle_partitions=getattr(args, "partitions", None), extra=conf, log_file=log_file)
    with StageProgress(spark):
        res = audit(spark, checker, list(args.paths), partitions=getattr(args, "partitions", None), skip=side)
    rep = res.report
    if out:
        from rmkit.spark_checks.report import write_outputs

        write_outputs(spark, res, out, proto)
        trim_examples(rep, max_examples)
    from rmkit.render import RENDERERS

    text = RENDERERS[getattr(args, "format", "text")](rep, rules=proto.rules(), color=False, title="rmkit audit",
                                                      nouns=proto.nouns)
    code = decided(check_exit_code(rep, getattr(args, "strict", False)))
    sys.stdout.write(text)
    if out:
        print(f"{rep.verdict}: tables, operator's report and report.html written to {out}", file=sys.stderr)
    if log_file:
        print(f"rmkit audit: Spark's own log: {log_file}", file=sys.stderr)
    if rep.records == 0 and not rep.unreadable:
        print(f"rmkit audit: no {proto.nouns.records} were read from the inputs", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry: the arguments of ``rmkit audit`` (without the subcommand)."""
    from rmkit.cli import main as rmkit_main

    return rmkit_main(["audit", "--submitted", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
