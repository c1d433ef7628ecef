"""`rmkit audit` gives `rmkit check`'s verdict on the inputs where the two once parted: records
grouped by a key their checker does not read (a key given twice, a number Spark's reader refuses),
bytes that are not UTF-8, Parquet rows with null fields, file names with glob characters, a
directory holding the twin directory, and an operator's report for protocols that give no
operator figures. Every Spark test shares the session of conftest.py."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from key_edge_lines import EDGE_LINES  # (REMP's one-pass audit tests read them too)

REPO = Path(__file__).resolve().parents[2]
RMB_SPEC = REPO / "fixtures" / "rmb" / "logs" / "spec"
REMP_CLEAN = REPO / "fixtures" / "remp" / "logs" / "sim-spec-clean.jsonl"
CORDA_RULES = REPO / "fixtures" / "corda" / "rules" / "spec"
RMB_ORDER = ["twin-1", "twin-2", "twin-3", "recorder-1", "recorder-2", "recorder-3"]


# -- helpers ------------------------------------------------------------------------------------
def run(capsys, args: list[str]) -> tuple[int, dict]:
    """One command in this process (the audit on the shared session): exit code and JSON report."""
    from rmkit.cli import main

    capsys.readouterr()
    code = main(args)
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def verdict_of(rep: dict) -> tuple:
    problems = [(Path(p["file"]).name, p["line"], p["error"]) for p in rep.get("input_problems", [])]
    found = sorted({(v["rule"], v["message_id"]) for v in rep.get("violations", [])}, key=str)
    return rep.get("verdict"), rep.get("counts"), rep.get("receipts"), rep.get("messages"), rep.get("unreadable"), problems, found


def assert_same(capsys, options: list[str], paths: list[str], partitions: int = 8) -> tuple[int, dict]:
    """`rmkit check` and `rmkit audit` on the same inputs: same exit code and findings."""
    code_c, rep_c = run(capsys, ["check", "--format", "json", *options, *paths])
    code_a, rep_a = run(capsys, ["audit", "--format", "json", "--partitions", str(partitions), *options, *paths])
    assert (code_a, verdict_of(rep_a)) == (code_c, verdict_of(rep_c))
    return code_c, rep_c


def rmb_copy(tmp: Path, change=None) -> list[str]:
    """The spec profile's RMB daemon and recorder logs, copied (``change(name, lines)`` may alter
    a file's lines, as bytes); the paths in log order."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(RMB_SPEC / "directory.json", tmp / "directory.json")
    paths = []
    for name in RMB_ORDER:
        lines = (RMB_SPEC / f"{name}.jsonl").read_bytes().split(b"\n")
        if change is not None:
            change(name, lines)
        (tmp / f"{name}.jsonl").write_bytes(b"\n".join(lines))
        paths.append(str(tmp / f"{name}.jsonl"))
    return paths


def altered(path: Path, out: Path, line: int, edit) -> str:
    """A copy of ``path`` with its 1-based ``line`` replaced by ``edit(line bytes)``."""
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = edit(lines[line - 1])
    out.write_bytes(b"\n".join(lines))
    return str(out)


# -- the record key is the checker's --------------------------------------------------------------
_uid = st.one_of(st.none(), st.text(max_size=6), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), st.booleans())  # (orjson writes 64-bit integers)
_message = st.one_of(st.none(), st.text(max_size=3), st.fixed_dictionaries({}, optional={"uid": _uid}))


@given(first=_uid, last=_uid, message=_message, pad=st.integers(1, 1200))
def test_the_generic_key_is_the_rmb_checkers_own_grouping(first, last, message, pad):
    """What the audit partitions RMB records by is what the RMB checker groups them by
    (logrecords.record_key over the line as orjson reads it): with the key given twice (the last
    one counts), a number longer than a thousand digits, a uid that is no string."""
    from rmkit.conformance.rmb.checker import RmbShards
    from rmkit.protocols.rmb.records import record_key

    body = orjson.dumps({"message": message, "exp": 3.0}).decode()[1:-1].replace("3.0", "3." + "0" * pad)
    line = ('{"uid":' + orjson.dumps(first).decode() + "," + body + ',"uid":' + orjson.dumps(last).decode() + "}").encode()
    assert RmbShards.key.of_line(line) == record_key(orjson.loads(line))


@given(ids=st.lists(st.one_of(st.text(max_size=4), st.integers(-(2**63), 2**63 - 1), st.none()), min_size=1, max_size=3))
def test_the_generic_key_groups_as_the_corda_share(ids):
    """Corda's --jobs share (parallel.share_of): the id as orjson reads it, the last one given."""
    from rmkit.conformance.corda.checker import CordaLogChecker
    from rmkit.conformance.corda.parallel import share_of
    from rmkit.processes import key_share

    line = ("{" + ",".join('"id":' + orjson.dumps(i).decode() for i in ids) + ',"event":"sent"}').encode()
    record_key = CordaLogChecker().key
    key = record_key.of_line(line)
    assert share_of(line, 7, record_key) == key_share(key, 7)
    if isinstance(ids[-1], str):
        assert key == ids[-1]


def test_the_checkers_group_and_deal_out_by_one_key():
    """One key per protocol: the RMB checker's grouping, its --jobs shares and the audit's
    partitions all read the record key; Corda's --jobs shares and the audit too."""
    from rmkit.conformance.rmb.checker import RmbShards
    from rmkit.protocols.rmb.records import RECORD_KEY, record_key

    assert RmbShards.key is RECORD_KEY and record_key == RECORD_KEY.of_object
    import inspect

    from rmkit.conformance.corda import parallel

    assert "checker.key" in inspect.getsource(parallel._dealer)  # (both ways of --jobs deal by it)


def test_a_line_that_is_no_json_object_has_no_key():
    from rmkit.protocol import RecordKey

    key = RecordKey((("k",), ("value", "k")), fold_case=True)
    assert [key.of_line(x) for x in (b"", b"not json", b"[1]", b'{"k":null}', b'"x"', b"\xff")] == [None] * 6
    assert key.of_line(b'\xef\xbb\xbf{"k":"AB"}') == "ab"  # a byte order mark, as the reader drops it on line 1
    held_as_text = b'{"value":"{\\"k\\":\\"X\\"}"}'  # a Kafka record's value held as text
    assert key.of_line(held_as_text) is None
    assert RecordKey(key.paths, fold_case=False, text_values=True).of_line(held_as_text) == "X"


# -- defect: a key given twice, a huge number --------------------------------------------------------
def test_rmb_uid_given_twice_groups_as_check(spark, tmp_path, capsys):
    def twice(name, lines):
        if name == "twin-1":
            lines[2] = b'{"uid":"zz",' + lines[2][1:]

    paths = rmb_copy(tmp_path, twice)
    code, _ = assert_same(capsys, ["--protocol", "rmb", "--directory", str(tmp_path / "directory.json")], paths)
    assert code == 0


def test_rmb_number_of_1100_digits_groups_as_check(spark, tmp_path, capsys):
    def long_exp(name, lines):
        if name == "twin-1":
            lines[16] = lines[16].replace(b'"exp":3', b'"exp":3.' + b"0" * 1100, 1)
            assert b"0" * 1100 in lines[16]

    paths = rmb_copy(tmp_path, long_exp)
    code, _ = assert_same(capsys, ["--protocol", "rmb"], paths)
    assert code == 0


def test_corda_id_given_twice_groups_as_check(spark, tmp_path, capsys):
    src = CORDA_RULES / "clean-redelivered.jsonl"
    log = altered(src, tmp_path / "twice.jsonl", 2, lambda line: b'{"id":"zz",' + line[1:])
    code, _ = assert_same(capsys, ["--protocol", "corda"], [log])
    assert code == 0


# -- defect: bytes that are not UTF-8 --------------------------------------------------------------
def test_rmb_line_not_utf8_is_unreadable_as_in_check(spark, tmp_path, capsys):
    def bad_byte(name, lines):
        if name == "twin-1":
            lines[1] = lines[1].replace(b'"who":"twin-1"', b'"who":"twin-\xff"', 1)
            assert b"\xff" in lines[1]

    paths = rmb_copy(tmp_path, bad_byte)
    code, rep = assert_same(capsys, ["--protocol", "rmb"], paths)
    assert code == 2 and [(Path(p["file"]).name, p["line"]) for p in rep["input_problems"]] == [("twin-1.jsonl", 2)]


def test_remp_and_corda_lines_not_utf8_are_unreadable_as_in_check(spark, tmp_path, capsys):
    remp = altered(REMP_CLEAN, tmp_path / "remp.jsonl", 10, lambda line: b'{"\xffx":1,' + line[1:])
    code, rep = assert_same(capsys, ["--lifetime", "60"], [remp])
    assert code == 2 and ("remp.jsonl", 10) in [(Path(p["file"]).name, p["line"]) for p in rep["input_problems"]]
    corda = altered(CORDA_RULES / "clean-redelivered.jsonl", tmp_path / "corda.jsonl", 3,
                    lambda line: line.replace(b'"node":"', b'"node":"\xfe', 1))
    code, rep = assert_same(capsys, ["--protocol", "corda"], [corda])
    assert code == 2 and ("corda.jsonl", 3) in [(Path(p["file"]).name, p["line"]) for p in rep["input_problems"]]


# -- defect: Parquet rows with null fields ------------------------------------------------------------
def as_parquet(spark, jsonl: Path, out: Path) -> str:
    """The JSON Lines file as one Parquet file, as Spark writes a table read from it."""
    spark.read.json(str(jsonl)).coalesce(1).write.parquet(str(out))
    return str(next(out.glob("part-*.parquet")))


def test_rmb_parquet_keeps_null_fields(spark, tmp_path, capsys):
    pq = as_parquet(spark, RMB_SPEC / "twin-1.jsonl", tmp_path / "pq")
    _, rep_c = run(capsys, ["check", "--format", "json", "--protocol", "rmb", str(RMB_SPEC / "twin-1.jsonl")])
    code, rep_a = run(capsys, ["audit", "--format", "json", "--protocol", "rmb", pq])
    assert rep_a["unreadable"] == 0 and code == 0
    assert (rep_a["counts"], rep_a["receipts"], rep_a["messages"]) == (rep_c["counts"], rep_c["receipts"], rep_c["messages"])


def test_corda_parquet_keeps_null_fields(spark, tmp_path, capsys):
    """Corda records of one shape (every sent record has a seq column), some with "seq": null.
    (A table cannot tell a field a record lacks from a field holding null: a Corda table whose
    columns some records lack gives those records null fields, which the checker refuses.)"""
    sent = [x for x in (CORDA_RULES / "clean-redelivered.jsonl").read_text().splitlines() if '"event":"sent"' in x]
    assert any('"seq":null' in x for x in sent)
    src = tmp_path / "sent.jsonl"
    src.write_text("\n".join(sent) + "\n")
    pq = as_parquet(spark, src, tmp_path / "pq")
    code_c, rep_c = run(capsys, ["check", "--format", "json", "--protocol", "corda", str(src)])
    code_a, rep_a = run(capsys, ["audit", "--format", "json", "--protocol", "corda", pq])
    assert (code_a, rep_a["unreadable"], rep_a["counts"], rep_a["receipts"], rep_a["messages"]) == \
           (code_c, rep_c["unreadable"], rep_c["counts"], rep_c["receipts"], rep_c["messages"])


def test_remp_kafka_key_null_in_parquet_is_judged_as_in_check(spark, tmp_path, capsys):
    """A Kafka dump whose records have "key": null (REMP-INPUT-002 in the ever-node profile)."""
    receipts = [json.loads(x) for x in REMP_CLEAN.read_text().splitlines()[:300] if x.strip()]
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(json.dumps({"topic": "t", "partition": 0, "offset": i, "timestamp": 1_700_000_000_000 + i,
                                        "key": None, "value": r}) + "\n" for i, r in enumerate(receipts)))
    pq = as_parquet(spark, dump, tmp_path / "pq")
    code_c, rep_c = run(capsys, ["check", "--format", "json", "--profile", "ever-node", "--lifetime", "60", str(dump)])
    code_a, rep_a = run(capsys, ["audit", "--format", "json", "--profile", "ever-node", "--lifetime", "60", pq])
    assert rep_c["counts"].get("REMP-INPUT-002", 0) > 0 and code_c == 1
    assert (code_a, rep_a["counts"], rep_a["receipts"]) == (code_c, rep_c["counts"], rep_c["receipts"])


# -- defect: file names with glob characters ----------------------------------------------------------
def test_an_existing_path_is_read_literally_before_any_globbing(tmp_path):
    from rmkit.spark_checks.inputs import expand_paths

    weird = tmp_path / "weird[1].jsonl"
    weird.write_text("{}\n")
    (tmp_path / "weird1.jsonl").write_text("{}\n")  # what the name matches as a glob
    assert expand_paths([str(weird)]).shown == [str(weird)]
    assert expand_paths([str(tmp_path / "weird?1?.jsonl")]).shown == [str(weird)]  # a glob still globs


def test_corda_log_named_with_glob_characters_is_audited(spark, tmp_path, capsys):
    log = tmp_path / "weird[1] {a,b}?.jsonl"
    shutil.copy(CORDA_RULES / "clean-redelivered.jsonl", log)
    (tmp_path / "weird1 a?.jsonl").write_text("not a log\n")  # Hadoop's glob of the name would read this one
    code, rep = assert_same(capsys, ["--protocol", "corda"], [str(log)])
    assert code == 0 and rep["receipts"] > 0


# -- defect: a directory holding the twin directory -------------------------------------------------
def test_a_directory_of_rmb_logs_leaves_out_the_twin_directory_file(spark, tmp_path, capsys):
    paths = rmb_copy(tmp_path / "logs")
    directory = str(tmp_path / "logs" / "directory.json")
    code_c, rep_c = run(capsys, ["check", "--format", "json", "--protocol", "rmb", "--directory", directory, *sorted(paths)])
    code_a, rep_a = run(capsys, ["audit", "--format", "json", "--protocol", "rmb", "--directory", directory,
                                 str(tmp_path / "logs") + "/"])
    assert code_a == code_c == 0 and rep_a["unreadable"] == 0
    assert (rep_a["counts"], rep_a["receipts"], rep_a["messages"]) == (rep_c["counts"], rep_c["receipts"], rep_c["messages"])


def test_files_named_by_options_are_no_logs_of_a_directory(tmp_path):
    from rmkit.spark_checks.inputs import expand_paths

    for name in ("a.jsonl", "keys.json", "manifest.json"):
        (tmp_path / name).write_text("{}\n")
    found = expand_paths([str(tmp_path)], skip=[str(tmp_path / "keys.json")]).shown
    assert [Path(p).name for p in found] == ["a.jsonl"]
    assert expand_paths([str(tmp_path / "keys.json")], skip=[str(tmp_path / "keys.json")]).shown  # named: read


# -- defect: the operator's report of a protocol without operator figures ---------------------------
def test_corda_operator_report_lists_the_rules_not_remp_figures(spark, tmp_path, capsys):
    from rmkit.cli import main

    out = tmp_path / "out"
    log = str(CORDA_RULES / "CORDA-DEDUP-002.jsonl")
    assert main(["audit", "--protocol", "corda", "--settled", "--out", str(out), log]) == 1
    capsys.readouterr()
    md = (out / "operator.md").read_text()
    op = json.loads((out / "operator.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["CORDA-DEDUP-002"] == 2
    assert "Lost messages" not in md and "latency" not in md.lower() and "Receipt log" not in md
    assert "gives no operator figures" in md and "| CORDA-DEDUP-002 |" in md
    assert op["operator_figures"] is False and op["counts"] == summary["counts"] and op["protocol"] == "corda"
    assert "lost_messages" not in op and "latency_ms" not in op
    assert not (out / "latency.png").exists()


def test_remp_operator_report_keeps_its_figures(spark, tmp_path, capsys):
    from rmkit.cli import main

    out = tmp_path / "out"
    assert main(["audit", "--lifetime", "60", "--out", str(out), str(REMP_CLEAN)]) == 0
    capsys.readouterr()
    op = json.loads((out / "operator.json").read_text())
    assert op["protocol"] == "remp" and op["operator_figures"] and op["slas"]["queue_ack_ms"]["promise_ms"] == [100, 200]
    assert "## Promises of the documents" in (out / "operator.md").read_text() and (out / "latency.svg").exists()


# -- defect: matplotlib missing ------------------------------------------------------------------------
def test_missing_matplotlib_is_found_before_the_job_runs(spark, tmp_path, capsys, monkeypatch):
    from rmkit.cli import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    out = tmp_path / "out"
    assert main(["audit", "--lifetime", "60", "--out", str(out), str(REMP_CLEAN)]) == 2
    assert "matplotlib" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("module", ["pyarrow", "pandas"])
def test_missing_arrow_transfer_is_a_missing_dependency_not_a_verdict(spark, tmp_path, capsys, monkeypatch, module):
    from rmkit.cli import main

    monkeypatch.setitem(sys.modules, module, None)
    assert main(["audit", "--lifetime", "60", str(REMP_CLEAN)]) == 2
    err = capsys.readouterr().err
    assert module in err and "rmkit[spark]" in err


def test_no_charts_no_matplotlib_needed(spark, tmp_path, capsys, monkeypatch):
    """A protocol without operator figures draws no chart, so it needs no matplotlib."""
    from rmkit.cli import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "out"
    assert main(["audit", "--protocol", "corda", "--out", str(out), str(CORDA_RULES / "clean-redelivered.jsonl")]) == 0
    capsys.readouterr()
    assert (out / "operator.md").exists()


# -- the plain key: Spark keys the lines that hold it plainly, the checkers' reading the others -------


def test_the_plain_key_is_the_checkers_key_wherever_the_checker_finds_one(spark):
    """On every line Spark keys by itself, the key is what RecordKey.of_line reads, or of_line
    reads none (the record names no message and is judged by itself, wherever it is placed)."""
    from pyspark.sql import functions as F

    from rmkit.conformance.remp.sharded import RempShards
    from rmkit.protocols.rmb.records import RECORD_KEY
    from rmkit.spark_checks.inputs import plain_key

    clean = [x for x in REMP_CLEAN.read_bytes().split(b"\n") if x][:50]
    rmb = [x for x in (RMB_SPEC / "twin-1.jsonl").read_bytes().split(b"\n") if x][:20]
    for key, lines in ((RempShards.key, EDGE_LINES + clean), (RECORD_KEY, rmb)):
        df = spark.createDataFrame([(x,) for x in lines], "line binary")
        plain, value = plain_key(key, F.col("line"))
        got = [(bytes(r.line), r.plain, r.key) for r in df.select("line", plain.alias("plain"), value.alias("key")).collect()]
        for line, is_plain, k in got:
            if is_plain:
                assert key.of_line(line) in (k, None), line
        took = {line for line, is_plain, _ in got if is_plain}
        if key is RempShards.key:  # (RMB's records name their uid twice: read by the checkers' reading)
            assert set(clean) <= took  # a clean REMP log never reaches Python before the shuffle
            assert [i for i, x in enumerate(EDGE_LINES) if x in took] == [0, 3, 4, 10, 11, 12, 13]


def test_a_log_keyed_partly_by_spark_and_partly_by_python_is_judged_as_check_judges_it(spark, tmp_path, capsys):
    """Receipts of one message written plainly and otherwise (spaced, a key given twice, upper
    case): Spark keys some, the checkers' reading the rest, and each message stays one group."""
    faults = REPO / "fixtures" / "remp" / "logs" / "sim-spec-faults.jsonl"
    lines = faults.read_bytes().split(b"\n")
    for i in range(1, len(lines), 3):
        lines[i] = lines[i].replace(b'"message_id":"', b'"message_id": "', 1)
    for i in range(2, len(lines), 7):
        lines[i] = lines[i].replace(b'"message_id":"', b'"message_id":"0","message_id":"', 1)
    for i in range(0, len(lines), 5):  # the id in upper case: the key folds it
        head, sep, rest = lines[i].partition(b'"message_id":"')
        mid, quote, tail = rest.partition(b'"')
        lines[i] = head + sep + mid.upper() + quote + tail if sep and quote else lines[i]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"\n".join(lines))
    code, rep = assert_same(capsys, ["--lifetime", "60", "--max-examples", "100000"], [str(mixed)])
    assert code in (1, 2) and rep["messages"] > 10 and rep["violations"]  # (the fixture holds unreadable lines too)
    _, rep_a = run(capsys, ["audit", "--format", "json", "--partitions", "8", "--lifetime", "60", "--max-examples", "100000", str(mixed)])
    evidence = lambda r: sorted((v["rule"], v["message_id"], tuple(sorted(e["line"] for e in v["evidence"]))) for v in r["violations"])  # noqa: E731
    assert evidence(rep_a) == evidence(rep)
