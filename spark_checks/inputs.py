"""Reading logs into one DataFrame of raw records with their positions (no schema: the
protocol's own checker parses each record, so every format it reads is read the same way).

Accepted: JSON Lines (a protocol's records, Kafka dump records, ``kcat -C -J`` envelopes), any of
them gzip-compressed (also without the ``.gz`` suffix), and Parquet files (each row handed over as
the JSON object it stands for). Files, directories and globs; the log order is the order the paths
are given in, a directory's or glob's files sorted by name (as ``rmkit check`` reads them when
given in that order).

Every row keeps its position: the file's index, the start of the file split Spark read it from and
the row's id within the split (``monotonically_increasing_id`` is consecutive inside one split);
a first cheap pass counts the rows of each split, from which every row's 1-based line number
follows (:func:`line_offsets`).
"""

from __future__ import annotations

import bisect
import glob
import gzip
import itertools
import os
import re
import tempfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from rmkit.errors import InputError
from rmkit.protocol import RecordKey

GZIP_MAGIC = b"\x1f\x8b"
# in a directory: the manifest `rmkit simulate -o DIR` writes beside its logs is not a log
SIDE_FILES = ("manifest.json",)
LOG_SUFFIXES = (".jsonl", ".json", ".ndjson", ".log", ".txt", ".gz", ".parquet")


@dataclass
class LogFiles:
    """The inputs in log order: what Spark reads (``read``) and what reports show (``shown``)."""

    read: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    parquet: list[bool] = field(default_factory=list)
    tmpdir: str | None = None


def is_remote(p: str) -> bool:
    """A path on a cluster file system (Spark lists and reads it; not measured or opened here)."""
    return "://" in p and not p.startswith("file://")


def expand_paths(paths: list[str], skip: list[str] | tuple = ()) -> LogFiles:
    """Files in log order. A path that exists is taken as it is named (a file, or a directory
    whose files are read), before any reading of it as a glob, so that a name holding ``[``, ``?``
    or ``*`` is read as ``rmkit check`` reads it. In a directory or a glob's matches, the files in
    ``skip`` (those named by the command's options, e.g. a twin directory or a validator set) and
    the simulator's manifest are no logs; a file named on its own is always read.

    A local gzip file without the .gz suffix is linked under a name with it, since Spark picks
    the codec by suffix (``rmkit check`` goes by the magic bytes); a file given twice is linked
    under a second name, so that each input has its own path."""
    out = LogFiles()
    side = {os.path.realpath(p) for p in skip}
    for p in paths:
        if is_remote(p):  # a cluster file system: Spark lists it
            out.read.append(p)
            out.shown.append(p)
            out.parquet.append(p.endswith(".parquet"))
            continue
        local = p[len("file://"):] if p.startswith("file://") else p
        if os.path.isdir(local):
            found = sorted(os.path.join(d, f) for d, _, fs in os.walk(local) for f in fs
                           if not f.startswith((".", "_")) and f.endswith(LOG_SUFFIXES) and f not in SIDE_FILES)
            found = [f for f in found if os.path.realpath(f) not in side]
        elif os.path.exists(local):
            found = [local]
        elif any(c in local for c in "*?["):
            found = sorted(f for f in glob.glob(local, recursive=True)
                           if os.path.isfile(f) and os.path.realpath(f) not in side and os.path.basename(f) not in SIDE_FILES)
        else:
            raise InputError(f"input {p!r}: no such file or directory")
        if not found:
            raise InputError(f"input {p!r}: expected receipt logs ({', '.join(LOG_SUFFIXES)}), found no file")
        for f in found:
            read = os.path.abspath(f)
            if not f.endswith(".gz") and not f.endswith(".parquet"):
                with open(f, "rb") as fh:
                    if fh.read(2) == GZIP_MAGIC:
                        out.tmpdir = out.tmpdir or tempfile.mkdtemp(prefix="rmkit-audit-")
                        link = os.path.join(out.tmpdir, f"{len(out.read)}-{os.path.basename(f)}.gz")
                        os.symlink(read, link)
                        read = link
            if read in out.read:  # the same file twice in one log: read twice, under a second name
                out.tmpdir = out.tmpdir or tempfile.mkdtemp(prefix="rmkit-audit-")
                link = os.path.join(out.tmpdir, f"{len(out.read)}-{os.path.basename(read)}")
                os.symlink(read, link)
                read = link
            out.read.append(read)
            out.shown.append(f)
            out.parquet.append(f.endswith(".parquet"))
    return out


def option_files(args) -> list[str]:
    """The existing files the command's options name (``--directory``, ``--validators``, any
    protocol's): side files of a log folder, never logs of a directory or glob."""
    out = []
    for name, value in vars(args).items():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, str) and name != "paths" and os.path.isfile(v):
                out.append(v)
    return out


# what Hadoop reads as a glob in a path; a local file is named to Spark with these escaped, so that
# Spark reads the file the audit found, not what its name matches as a pattern
_HADOOP_GLOB = re.compile(r"([\\{}\[\]*?])")


def spark_path(path: str) -> str:
    """A local file's path as Spark must be given it to read that file alone."""
    return path if is_remote(path) else _HADOOP_GLOB.sub(r"\\\1", path)


def _norm(uri: str) -> str:
    """A path as Spark reports it (``file:/x``, ``file:///x``) reduced to the plain path."""
    if uri.startswith("file:"):
        uri = uri[5:]
        while uri.startswith("//"):
            uri = uri[1:]
    return uri


def _file_index(files: list[str]) -> Column:
    """The input index of a row, from Spark's file path of it."""
    pairs = []
    for i, f in enumerate(files):
        pairs += [F.lit(_norm(f) if not is_remote(f) else f), F.lit(i)]
    path = F.col("_metadata.file_path")
    plain = F.when(path.startswith("file:"), F.regexp_replace(path, r"^file:/*", "/")).otherwise(path)
    # Spark names a file by its URI, quoted as java.net.URI quotes a path (a space is %20, a % is
    # %25); URL-decoding undoes that, once a literal + is kept from being read as a space
    key = F.url_decode(F.regexp_replace(plain, r"\+", "%2B"))
    return F.element_at(F.create_map(*pairs), key).cast("int")


def read_lines(spark: SparkSession, files: LogFiles) -> DataFrame:
    """One row per line (or Parquet row, as JSON text): fidx, blk, rid, line. ``line`` is the
    line's bytes as they are in the file (Spark's text reader keeps them; only a decoding to text
    would replace bytes that are not UTF-8, which the checker must see as ``rmkit check`` does).
    Lines end at ``\\n`` only, as ``rmkit check`` splits them."""
    frames = []
    text = [spark_path(f) for f, pq in zip(files.read, files.parquet) if not pq]
    if text:
        frames.append(spark.read.option("lineSep", "\n").text(text).select(
            _file_index(files.read).alias("fidx"), F.col("_metadata.file_block_start").alias("blk"),
            F.monotonically_increasing_id().alias("rid"), F.col("value").cast("binary").alias("line")))
    pq = [spark_path(f) for f, p in zip(files.read, files.parquet) if p]
    if pq:
        df = spark.read.parquet(*pq)
        frames.append(df.select(_file_index(files.read).alias("fidx"), F.col("_metadata.file_block_start").alias("blk"),
                                F.monotonically_increasing_id().alias("rid"), row_as_json(df.columns).cast("binary").alias("line")))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def row_as_json(columns: list[str]) -> Column:
    """A Parquet row as the JSON object it stands for. A top-level column is a field of every
    record, so a null in it is the field holding null (a log's records name their empty fields:
    RMB's ``"endpoint": null``, a Kafka record's ``"key": null``); inside a nested value a null is a
    field that value does not have, as a table made from JSON records holds the union of its
    values' fields (a message without ``err`` gets an ``err`` column)."""
    fields = []
    for c in columns:  # each field as to_json writes it in an object of its own, braces taken off
        present = F.to_json(F.struct(F.col(c)), {"ignoreNullFields": "true"})
        null = F.to_json(F.struct(F.lit(None).cast("string").alias(c)), {"ignoreNullFields": "false"})
        fields.append(F.regexp_replace(F.when(F.col(c).isNull(), null).otherwise(present), r"^\{|\}$", ""))
    return F.concat(F.lit("{"), F.concat_ws(",", *fields), F.lit("}"))


def record_key(key: RecordKey):
    """The record key of a raw line (bytes) as a column function: a Python function on Spark
    calling the checkers' own reading (:meth:`RecordKey.of_line`), so that the records a checker
    judges together are in one share whatever Spark's JSON reader would make of them. Spark
    then partitions by the key as it partitions any string (the same placement for a key as
    Spark gave it when it read the key itself)."""
    return F.udf(key.of_line, "string", useArrow=False)


# a key value a plain line may hold for its key to be read without parsing: printable ASCII other
# than a quote or a backslash (no escape to decode, and Java's lower case is Python's there)
_PLAIN_VALUE = r"[ !#-\[\]-~]+"


def _plain_pattern(name: str) -> str:
    """The plainly written key: ``"name":"value"`` (Spark's and Python's regular expressions read
    this pattern alike: ASCII only, the first match from the left)."""
    return f'"{name}":"({_PLAIN_VALUE})"'


def plain_name(key: RecordKey) -> str | None:
    """The name a plainly written key is found by, or None when the key's paths end in different
    names (or in one that is not letters, digits and underscores)."""
    name = key.field
    return name if name is not None and name.replace("_", "").isalnum() else None


def plain_key(key: RecordKey, line: Column) -> tuple[Column, Column] | None:
    """(is plain, its key) for a raw line, both computed by Spark alone, or None when the key's
    paths end in different names. A line is plain when it holds the quoted key name exactly once,
    written ``"name":"value"`` with a value of :data:`_PLAIN_VALUE`; its key is then that value
    (case-folded as the key says), which is what :meth:`RecordKey.of_line` reads from it whenever
    the line is a JSON object with the key at one of its paths. In any other JSON object the name
    is no key at a path, and of_line finds none: such a record is judged by itself wherever it goes
    (it names no message), so placing it by the value keeps every group whole. The audit keys the
    plain lines so and calls of_line (Python) for the others only."""
    name = plain_name(key)
    if name is None:
        return None
    text = line.cast("string")  # bytes that are not UTF-8 become U+FFFD: the ASCII this reads stays
    quoted = f'"{name}"'
    # held once: one match of the quoted name, matches counted without overlap (two that overlap make
    # no JSON object, in which of_line finds no key: placed by the value, such a line is still judged
    # alone). regexp_count over split: no array of pieces per line (a fifth of the audit's first pass)
    once = F.regexp_count(text, F.lit(quoted)) == 1
    value = F.regexp_extract(text, _plain_pattern(name), 1)
    plain = F.coalesce(once & (value != ""), F.lit(False))
    return plain, (F.lower(value) if key.fold_case else value)


def spark_placed_key(key: RecordKey, line: Column) -> Column | None:
    """The key a record is placed by in the audit's one pass, by Spark alone, or None when the
    key's paths end in different names: the first plainly written value (:func:`plain_key`'s,
    case-folded as the key says), "" when the line has none. Whether that is the checkers' key is
    settled in the shares (:class:`Placement`), where the other half of the plain test (the name
    held once) is a byte count instead of a second regular expression on the JVM."""
    name = plain_name(key)
    if name is None:
        return None
    value = F.regexp_extract(line.cast("string"), _plain_pattern(name), 1)
    return F.lower(value) if key.fold_case else value


class Placement:
    """Whether the records of a share were placed by the checkers' key, judged in the share: a
    record Spark placed by :func:`spark_placed_key` is in its group unless the line holds the key's
    name other than once (or has no plain value) and :meth:`RecordKey.of_line` reads a key that is
    not the one it was placed by. A line of no key is judged by itself wherever it is. Lines that
    hold the name once, plainly written, need no reading (see :func:`plain_key`)."""

    def __init__(self, key: RecordKey):
        self.key = key
        self.quoted = f'"{key.field}"'.encode()
        self.pattern = re.compile(_plain_pattern(key.field).encode())
        self.misplaced = 0
        self.example: tuple[int, bytes] | None = None  # (ref, line) of the first misplaced record

    def placed_by(self, line: bytes, no_value: bool) -> str:
        """The key Spark placed ``line`` by (its first plainly written value)."""
        if no_value:
            return ""
        found = self.pattern.search(line)
        value = found.group(1).decode("ascii") if found else ""
        return value.lower() if self.key.fold_case else value

    def sample(self, lines: list[bytes]) -> int:
        """How many of ``lines`` (read by Python, not placed by Spark) would be misplaced."""
        before = self.misplaced
        self.look([0] * len(lines), lines, [i for i, line in enumerate(lines) if self.pattern.search(line) is None])
        return self.misplaced - before

    def look(self, refs: list[int], lines: list[bytes], no_value: list[int]) -> None:
        """Count the misplaced records among one batch (``no_value``: the indices Spark found no
        plain value in)."""
        counts = list(map(bytes.count, lines, itertools.repeat(self.quoted, len(lines))))
        lacking = set(no_value)
        unsure = lacking if counts.count(1) == len(counts) else lacking | {i for i, n in enumerate(counts) if n != 1}
        for i in sorted(unsure):
            found = self.key.of_line(lines[i])
            if found is not None and found != self.placed_by(lines[i], i in lacking):
                self.misplaced += 1
                if self.example is None:
                    self.example = (refs[i], lines[i][:200])


def key_column(key: RecordKey, line: Column) -> Column:
    """A record's key as Spark's JSON reader finds it: only the benchmark's floor (the least Spark
    work a per-key audit does) uses it; the audit keys records with :func:`record_key`, since this
    reader differs from the checkers' (the first of a key given twice, no number over 1,000
    characters)."""
    found = []
    for path in key.paths:
        value = line
        for step in path:
            value = F.get_json_object(value, "$." + _json_path_step(step))
        found.append(value)
    out = F.coalesce(*found) if len(found) > 1 else found[0]
    return F.lower(out) if key.fold_case else out


def _json_path_step(step: str) -> str:
    if not step.replace("_", "").isalnum():
        raise ValueError(f"record key path step {step!r}: expected letters, digits and underscores")
    return step


# monotonically_increasing_id: a row's index within its Spark partition in the low bits, the
# partition's index above them
ROW_BITS = 33
ROW_MASK = (1 << ROW_BITS) - 1


def provisional_lines() -> Column:
    """A row's provisional line number in the one-pass audit, from where Spark read it: twice its
    split's start plus its index within the split, plus 1. It orders a file's rows as its lines
    are ordered, since a split of ``n`` bytes holds at most ``n + 1`` lines (one starting at each
    of its bytes, and the split's end), so no row numbered from one split reaches the next split's
    first; in a file read as one split (any gzip file, a small one) it is the line number itself.
    The row's index within its split is the id's low bits when every split is a partition of its
    own (:func:`one_split_per_partition`), which the shares' :class:`SplitCounts` confirm."""
    return F.col("blk") * 2 + F.col("rid").bitwiseAND(F.lit(ROW_MASK)) + 1


def split_size(spark: SparkSession, files: LogFiles) -> int:
    """The size Spark gives a file split of these inputs by its own rule (the smaller of
    ``maxPartitionBytes`` and the larger of the open cost and the bytes per core); remote files,
    not measured here, count for nothing."""
    conf = spark.conf
    max_bytes = _bytes(conf.get("spark.sql.files.maxPartitionBytes", "128m"))
    open_cost = _bytes(conf.get("spark.sql.files.openCostInBytes", "4m"))
    total = 0
    for f in files.read:
        if not is_remote(f):
            try:
                total += os.path.getsize(f) + open_cost
            except OSError:
                pass
    cores = int(conf.get("spark.sql.files.minPartitionNum", None) or spark.sparkContext.defaultParallelism)
    return max(1, min(max_bytes, max(open_cost, total // max(1, cores))))


def _bytes(value: str) -> int:
    """A Spark byte size setting (``128m``, ``4194304``, ``1g``, ``64k``, ``128MB``) in bytes."""
    text = value.strip().lower().removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(text[-1:], 1)
    return int(text[:-1] if scale != 1 else text) * scale


@contextmanager
def one_split_per_partition(spark: SparkSession, size: int):
    """While planning a read, give every file split a Spark partition of its own (splits of
    ``size`` bytes; an open cost of a whole split, so that Spark packs no second split into a
    partition): a row's id then holds its index within its split. The settings are restored
    afterwards, the session's other jobs keep theirs."""
    names = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    before = {n: spark.conf.get(n, None) for n in names}
    try:
        for n in names:
            spark.conf.set(n, str(size))
        yield
    finally:
        for n, v in before.items():
            if v is None:
                spark.conf.unset(n)
            else:
                spark.conf.set(n, v)


@dataclass
class SplitCounts:
    """The rows each share saw of each file split: (file index, split start) -> [first id, last
    id, rows]. Added up over the shares, they give every split's line count, and so every line's
    number, without a pass of their own; they also show whether the one-pass numbering held."""

    splits: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    def add_batch(self, refs, rids, line_bits: int) -> None:
        """One Arrow batch's columns: each row's ref (file index << ``line_bits`` | provisional
        line) and id, from which its split's start follows (:func:`provisional_lines`)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        line = pc.bit_wise_and(refs, (1 << line_bits) - 1)
        blk = pc.shift_right(pc.subtract(pc.subtract(line, 1), pc.bit_wise_and(rids, ROW_MASK)), 1)
        table = pa.table({"f": pc.shift_right(refs, line_bits), "b": blk, "r": rids}).group_by(["f", "b"]).aggregate(
            [("r", "min"), ("r", "max"), ("r", "count")])
        for f, b, lo, hi, n in zip(*(table.column(c).to_pylist() for c in ("f", "b", "r_min", "r_max", "r_count"))):
            self._add((f, b), lo, hi, n)

    def _add(self, where, lo: int, hi: int, n: int) -> None:
        seen = self.splits.get(where)
        if seen is None:
            self.splits[where] = [lo, hi, n]
        else:
            seen[0], seen[1], seen[2] = min(seen[0], lo), max(seen[1], hi), seen[2] + n

    def update(self, other: "SplitCounts") -> None:
        for where, (lo, hi, n) in other.splits.items():
            self._add(where, lo, hi, n)

    def numbering(self, line_bits: int) -> "LineNumbers | str":
        """The real line numbers, or why the provisional ones cannot be mapped to them (a split
        sharing its partition, rows missing from a split, a number beyond ``line_bits``)."""
        owner: dict[int, tuple[int, int]] = {}
        for where, (lo, hi, n) in self.splits.items():
            part = lo >> ROW_BITS
            if hi >> ROW_BITS != part or owner.setdefault(part, where) != where:
                return f"file split {where} shares Spark partition {part} with another"
            if lo & ROW_MASK or hi - lo + 1 != n:
                return f"file split {where}: rows {lo & ROW_MASK}..{hi & ROW_MASK} were seen {n} times"
            if 2 * where[1] + n >= 1 << line_bits:
                return f"file split {where}: its line numbers need more than {line_bits} bits"
        return LineNumbers({where: n for where, (_, _, n) in self.splits.items()})


class LineNumbers:
    """Provisional line numbers (:func:`provisional_lines`) to real ones, per file: the splits'
    line counts in file order give the lines before each split."""

    def __init__(self, counts: dict[tuple[int, int], int]):
        # per file: each split's first provisional number, and the file's lines before the split
        self.files: dict[int, tuple[list[int], list[int]]] = {}
        so_far: dict[int, int] = {}
        for (fidx, blk), n in sorted(counts.items()):
            firsts, before = self.files.setdefault(fidx, ([], []))
            firsts.append(2 * blk + 1)
            before.append(so_far.get(fidx, 0))
            so_far[fidx] = before[-1] + n

    def line(self, fidx: int, provisional: int) -> int:
        firsts, before = self.files[fidx]
        i = bisect.bisect_right(firsts, provisional) - 1
        return before[i] + provisional - firsts[i] + 1


def line_numbers(offsets: dict[tuple[int, int], int]) -> Column:
    """A row's 1-based line number: its id within the split plus the split's offset."""
    pairs = []
    for (fidx, blk), off in offsets.items():
        pairs += [F.lit(f"{fidx}:{blk}"), F.lit(off)]
    table = F.create_map(*pairs) if pairs else F.create_map().cast("map<string,bigint>")
    where = F.concat_ws(":", F.col("fidx").cast("string"), F.col("blk").cast("string"))
    return F.col("rid") + F.coalesce(table[where], F.lit(1))


def in_splits(splits: set) -> Column:
    """Whether a row was read from one of ``splits`` ((file index, split start) pairs)."""
    if not splits:
        return F.lit(False)
    where = F.concat_ws(":", F.col("fidx").cast("string"), F.col("blk").cast("string"))
    return where.isin([f"{fidx}:{blk}" for fidx, blk in sorted(splits)])


def line_offsets(pieces) -> dict[tuple[int, int], int]:
    """(file index, split start) -> the number to add to a row's id to get its 1-based line
    number, from counts of the parsed rows: ``pieces`` are rows with ``fidx, blk, n`` (rows) and
    ``r0`` (the first id), several of one split adding up (e.g. one per status)."""
    splits: dict[tuple[int, int], list[int]] = {}
    for r in pieces:
        n_r0 = splits.setdefault((r.fidx, r.blk), [0, r.r0])
        n_r0[0] += r.n
        n_r0[1] = min(n_r0[1], r.r0)
    out: dict[tuple[int, int], int] = {}
    before: dict[int, int] = {}
    for (fidx, blk), (n, r0) in sorted(splits.items()):
        done = before.get(fidx, 0)
        out[(fidx, blk)] = done - r0 + 1
        before[fidx] = done + n
    return out


def gz_readable(path: str) -> bool:
    """Whether a local gzip file decompresses (Spark reports a broken one only as a failed task)."""
    try:
        with gzip.open(path, "rb") as f:
            while f.read(1 << 20):
                pass
        return True
    except (OSError, EOFError, zlib.error):
        return False
