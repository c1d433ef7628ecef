"""Reading receipt logs into one DataFrame with an explicit schema (never inferred by scanning).

Accepted: JSONL receipts; Kafka dump records (``topic, partition, offset, timestamp, key, value``,
the value an object or a string holding one); ``kcat -C -J`` envelopes (``topic, partition,
offset, tstype, ts, broker, key, payload``); any of these gzip-compressed; Parquet files whose
columns are receipt fields or a Kafka record's. Files, directories and globs; the log order is the
order the paths are given in, a directory's or glob's files sorted by name (as ``rmkit check``
reads them when given in that order).

Every row keeps its position: the file's index, the start of the file split Spark read it from and
the row's id within the split (``monotonically_increasing_id`` is consecutive inside one split),
so that rows sort in log order and the line number is recovered afterwards from per-split counts
(:func:`line_offsets`). Lines that are not receipts are kept as ``problem`` rows (the quarantine),
never dropped.
"""

from __future__ import annotations

import glob
import gzip
import os
import tempfile
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from rmkit.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
# in a directory: the manifest `rmkit simulate -o DIR` writes beside its logs is not a log
SIDE_FILES = ("manifest.json",)
LOG_SUFFIXES = (".jsonl", ".json", ".ndjson", ".log", ".txt", ".gz", ".parquet")

# Receipt fields and their Spark types. Integers are read as LongType: a value of another JSON
# type does not convert, and the row's corrupt-record column says so (see _int_field).
INT_FIELDS = ("timestamp", "sent_to", "total_validators", "block_seqno", "wc", "mc_block_seqno")
STR_FIELDS = ("kind", "message_id", "source_id", "signature", "error", "block_id", "block_file_hash",
              "shard", "mc_block_id", "mc_block_file_hash")
CORRUPT = "_corrupt"
# a string field's key followed by a number, true/false, an object or an array (not an escaped
# quote inside another string's text)
NOT_A_STRING = r'(?<!\\)"(' + "|".join(STR_FIELDS) + r')"\s*:\s*[-0-9tf\[{]'


def receipt_schema() -> StructType:
    return StructType([StructField(n, StringType()) for n in STR_FIELDS]
                      + [StructField(n, LongType()) for n in INT_FIELDS]
                      + [StructField(CORRUPT, StringType())])


def envelope_schema() -> StructType:
    """A line's top level: a receipt's fields, and a Kafka record's / kcat envelope's (value and
    payload as strings: Spark hands an object's JSON text to a string field)."""
    return StructType(receipt_schema().fields[:-1]
                      + [StructField("value", StringType()), StructField("payload", StringType()),
                         StructField("ts", LongType()), StructField(CORRUPT, StringType())])


@dataclass
class LogFiles:
    """The inputs in log order: what Spark reads (``read``) and what reports show (``shown``)."""

    read: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    parquet: list[bool] = field(default_factory=list)
    tmpdir: str | None = None


def _is_remote(p: str) -> bool:
    return "://" in p and not p.startswith("file://")


def expand_paths(paths: list[str]) -> LogFiles:
    """Files in log order. A local gzip file without the .gz suffix is linked under a name with
    it, since Spark picks the codec by suffix (``rmkit check`` goes by the magic bytes)."""
    out = LogFiles()
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
        elif any(c in local for c in "*?["):
            found = sorted(f for f in glob.glob(local, recursive=True) if os.path.isfile(f))
        else:
            if not os.path.exists(local):
                raise InputError(f"input {p!r}: no such file or directory")
            found = [local]
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
            out.read.append(read)
            out.shown.append(f)
            out.parquet.append(f.endswith(".parquet"))
    return out


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
    key = F.when(path.startswith("file:"), F.regexp_replace(path, r"^file:/*", "/")).otherwise(path)
    return F.element_at(F.create_map(*pairs), key).cast("int")


def read_lines(spark: SparkSession, files: LogFiles) -> DataFrame:
    """One row per line (or Parquet row, as JSON text): fidx, blk, rid, line."""
    frames = []
    text = [f for f, pq in zip(files.read, files.parquet) if not pq]
    if text:
        frames.append(spark.read.text(text).select(
            _file_index(files.read).alias("fidx"), F.col("_metadata.file_block_start").alias("blk"),
            F.monotonically_increasing_id().alias("rid"), F.col("value").alias("line")))
    pq = [f for f, p in zip(files.read, files.parquet) if p]
    if pq:
        # a Parquet row is turned into the JSON line it stands for, then read like one
        df = spark.read.parquet(*pq)
        frames.append(df.select(_file_index(files.read).alias("fidx"), F.col("_metadata.file_block_start").alias("blk"),
                                F.monotonically_increasing_id().alias("rid"),
                                F.to_json(F.struct(*[F.col(c) for c in df.columns])).alias("line")))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def parse(lines: DataFrame) -> DataFrame:
    """Classify and parse every line. Columns added:

    ``status``: blank (skipped, as ``rmkit check`` skips them), problem (quarantine: ``q_error``,
    ``q_field``), tombstone (a Kafka record with a null value: a deletion marker, counted), receipt.
    For receipts: the fields of :data:`STR_FIELDS` and :data:`INT_FIELDS` (an integer field of the
    wrong type is null, with ``<name>_bad`` true), ``kts`` (the Kafka record's time, or null), and
    ``h``, a hash of the receipt's text (redelivered receipts have the same text).
    """
    env = F.from_json(F.col("line"), envelope_schema(), {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
    df = lines.withColumn("e", env)
    first = F.substring(F.ltrim(F.col("line")), 1, 1)
    df = df.withColumn("objlike", first == F.lit("{"))
    df = df.withColumn("blank", ~F.col("objlike") & F.col("line").rlike(r"^\s*$"))
    not_json = F.col("e." + CORRUPT).isNotNull() & F.expr("try_parse_json(line) IS NULL")
    kafka = (F.col("e.kind").isNull() & (F.col("e.value").isNotNull() | F.col("e.payload").isNotNull()
                                         | F.col("line").rlike(r'"(value|payload)"\s*:\s*null')))
    inner_text = F.coalesce(F.col("e.value"), F.col("e.payload"))
    inner = F.from_json(inner_text, receipt_schema(), {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
    df = df.withColumn("is_kafka", F.col("objlike") & ~not_json & kafka)
    top = F.struct(*[F.col("e." + f.name).alias(f.name) for f in receipt_schema().fields])
    df = df.withColumn("r", F.when(F.col("is_kafka") & inner_text.isNotNull(), inner).otherwise(top))
    inner_not_json = F.col("is_kafka") & inner_text.isNotNull() & F.col("r." + CORRUPT).isNotNull() \
        & F.expr("try_parse_json(coalesce(e.value, e.payload)) IS NULL")
    inner_not_obj = F.col("is_kafka") & inner_text.isNotNull() & ~F.substring(F.ltrim(inner_text), 1, 1).eqNullSafe(F.lit("{"))
    status = (F.when(F.col("blank"), "blank")
              .when(~F.col("objlike") | not_json, "problem")
              .when(F.col("is_kafka") & inner_text.isNull(), "tombstone")
              .when(inner_not_json | inner_not_obj, "problem")
              .otherwise("receipt"))
    df = df.withColumn("status", status)
    first_any = F.substring(F.ltrim(F.col("line")), 1, 1)
    found = (F.when(first_any == "[", "list").when(first_any == '"', "str")
             .when(first_any.isin("t", "f"), "bool").when(first_any == "n", "NoneType").otherwise("int"))
    error = (F.when(F.col("status") != "problem", F.lit(None))
             .when(~F.col("objlike") & F.expr("try_parse_json(line) IS NOT NULL"),
                   F.concat(F.lit("expected a JSON object, found "), found))
             .when(~F.col("objlike") | not_json, F.lit("not JSON: the line does not parse as JSON"))
             .when(inner_not_json, F.lit("Kafka record value is a string but not JSON"))
             .otherwise(F.lit("Kafka record value: expected a JSON object or a string holding one")))
    df = df.withColumn("q_error", error).withColumn(
        "q_field", F.when(F.col("status") == "problem", F.when(F.col("is_kafka"), F.lit("value"))))
    # the receipt's own text: the line, or the Kafka value's text (redelivery is judged on it)
    text = F.when(F.col("is_kafka"), inner_text).otherwise(F.col("line"))
    doc_text = text
    cols = [F.col("fidx"), F.col("blk"), F.col("rid"), F.col("status"), F.col("q_error"), F.col("q_field"),
            F.xxhash64(text).alias("h")]
    # Spark hands the text of any JSON value to a string field (5 becomes "5"); rmkit check reads
    # such a value as a schema problem. The fields holding something other than a string or null
    # are found in the receipt's text; their value is dropped and ``<name>_bad`` set.
    not_str = F.regexp_extract_all(F.col("__t"), F.lit(NOT_A_STRING), 1)
    for n in STR_FIELDS:
        bad = F.array_contains(not_str, n)
        cols += [F.when(~bad, F.col("r." + n)).alias(n), bad.alias(n + "_bad")]
    corrupt = F.col("r." + CORRUPT).isNotNull()
    for n in INT_FIELDS:
        present_wrong = corrupt & F.col("r." + n).isNull() & F.expr(
            f"try_variant_get(try_parse_json(__t), '$.{n}') IS NOT NULL AND NOT is_variant_null(try_variant_get(try_parse_json(__t), '$.{n}'))")
        cols += [F.col("r." + n).alias(n), present_wrong.alias(n + "_bad")]
    kts = F.when(F.col("is_kafka"), F.coalesce(F.col("e.timestamp"), F.col("e.ts")))
    cols.append(F.when(kts > 0, kts).alias("kts"))
    return df.withColumn("__t", doc_text).select(*cols)


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
    except (OSError, EOFError):
        return False
