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

import glob
import gzip
import os
import re
import tempfile
import zlib
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


def _is_remote(p: str) -> bool:
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
        if _is_remote(p):  # a cluster file system: Spark lists it
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
    return path if _is_remote(path) else _HADOOP_GLOB.sub(r"\\\1", path)


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
        pairs += [F.lit(_norm(f) if not _is_remote(f) else f), F.lit(i)]
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


def plain_key(key: RecordKey, line: Column) -> tuple[Column, Column] | None:
    """(is plain, its key) for a raw line, both computed by Spark alone, or None when the key's
    paths end in different names. A line is plain when it holds the quoted key name exactly once,
    written ``"name":"value"`` with a value of :data:`_PLAIN_VALUE`; its key is then that value
    (case-folded as the key says), which is what :meth:`RecordKey.of_line` reads from it whenever
    the line is a JSON object with the key at one of its paths. In any other JSON object the name
    is no key at a path, and of_line finds none: such a record is judged by itself wherever it goes
    (it names no message), so placing it by the value keeps every group whole. The audit keys the
    plain lines so and calls of_line (Python) for the others only."""
    name = key.field
    if name is None or not name.replace("_", "").isalnum():
        return None
    text = line.cast("string")  # bytes that are not UTF-8 become U+FFFD: the ASCII this reads stays
    quoted = f'"{name}"'
    # held once: one match of the quoted name, matches counted without overlap (two that overlap make
    # no JSON object, in which of_line finds no key: placed by the value, such a line is still judged
    # alone). regexp_count over split: no array of pieces per line (a fifth of the audit's first pass)
    once = F.regexp_count(text, F.lit(quoted)) == 1
    value = F.regexp_extract(text, f'"{name}":"({_PLAIN_VALUE})"', 1)
    plain = F.coalesce(once & (value != ""), F.lit(False))
    return plain, (F.lower(value) if key.fold_case else value)


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
