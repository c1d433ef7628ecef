"""`rmkit audit` (the protocol's checker sharded on Spark) against `rmkit check` (the same checker
streaming in one process): for the same log, the same set of (rule, message id) violations, the
same counts, receipts, messages and unreadable lines. One local Spark session serves every test
(the session-scoped `spark` fixture of conftest.py); the fixture logs are checked in a few batched jobs (each file a log of
its own) to keep the session's work small."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rmkit.conformance.remp.bulk_sim import BulkConfig, expected_findings, generate  # noqa: E402
from rmkit.conformance.remp.checker import RempLogChecker  # noqa: E402
from rmkit.conformance.remp.sharded import RempShards  # noqa: E402
from rmkit.protocols.remp.keys import load_validator_set  # noqa: E402
from rmkit.protocol import RecordKey  # noqa: E402
from rmkit.verdict import Report, Violation  # noqa: E402
from late_receipts import late_log  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "fixtures" / "remp"


def pairs(report) -> set:
    return {(v.rule, v.subject) for v in report.violations}


def checker(profile, lifetime=None, validators=None, jobs=1):
    vs = load_validator_set(str(validators)) if validators else None
    return RempLogChecker(profile, lifetime_s=lifetime, jobs=jobs, max_examples=0, validator_set=vs)


def check(path, profile, lifetime=None, validators=None):
    paths = [str(p) for p in path] if isinstance(path, list) else [str(path)]
    return checker(profile, lifetime, validators).run(paths)


def audit(spark, paths, profile, lifetime=None, validators=None, **kw):
    from rmkit.spark_checks.job import audit as run

    shards = RempShards(checker(profile, lifetime, validators)._kwargs)
    return run(spark, shards, [str(p) for p in paths], **kw)


def assert_agree(spark, logs: list[tuple]) -> int:
    """Audit each (path, profile, lifetime, validators) as its own log, all in one Spark job."""
    from rmkit.spark_checks.job import audit as run

    checkers = [RempShards(checker(profile, lifetime, validators)._kwargs) for _, profile, lifetime, validators in logs]
    res = run(spark, checkers, [str(p) for p, *_ in logs], per_file=True)
    compared = 0
    for i, (path, profile, lifetime, validators) in enumerate(logs):
        want, got = check(path, profile, lifetime, validators), res.reports[i]
        assert pairs(got) == pairs(want), f"{path} ({profile}): missing {pairs(want) - pairs(got)}, extra {pairs(got) - pairs(want)}"
        assert (got.counts, got.records, got.subjects, got.unreadable, got.verdict, got.not_checked) == \
               (want.counts, want.records, want.subjects, want.unreadable, want.verdict, want.not_checked), path
        compared += 1
    return compared


def fixture_logs():
    man = json.loads((FIX / "rules" / "manifest.json").read_text())
    logs = [(FIX / "rules" / f["file"], f["profile"], None, FIX / "rules" / f["validators"] if f.get("validators") else None)
            for f in man["fixtures"]]
    lm = json.loads((FIX / "logs" / "manifest.json").read_text())
    logs += [(FIX / "logs" / f["file"], f["profile"], f.get("lifetime"), None) for f in lm["logs"]]
    logs += [(FIX / "seed" / "examples.jsonl", p, None, None) for p in ("spec", "ever-node")]
    return logs


def test_every_fixture_gives_the_same_violations_as_rmkit_check(spark):
    """Every rule fixture (those needing keys with their --validators file: the signature rules
    run in the audit too), every simulator fixture and the seed's examples."""
    logs = fixture_logs()
    assert any(v for *_, v in logs)
    assert assert_agree(spark, logs) == len(logs) >= 70


def findings(report: Report) -> set:
    """Every finding of a report, in the manifest's terms: (rule, message id), and for unreadable
    lines (REMP-INPUT-001, file name, line)."""
    got = {(v.rule, v.subject) for v in report.violations if v.rule != "REMP-INPUT-001"}
    return got | {("REMP-INPUT-001", os.path.basename(p.file), p.line) for p in report.input_problems}


def audit_simulated(spark, tmp: Path, validators=None, **kw) -> tuple[dict, set, set]:
    """A multi-file simulator log with planted violations: (manifest, audit's findings, check's)."""
    cfg = BulkConfig(**{"messages": 600, "files": 2, "violations": 0.04, "lifetime_s": 30} | kw)
    manifest = generate(cfg, str(tmp), jobs=1)
    assert manifest["violations"], "nothing was planted"
    paths = [tmp / f["file"] for f in manifest["files"]]
    res = audit(spark, paths, cfg.profile, cfg.lifetime_s, validators)
    return manifest, findings(res.report), findings(check(paths, cfg.profile, cfg.lifetime_s, validators))


@pytest.mark.parametrize("profile,kafka", [("spec", False), ("ever-node", True)])
def test_every_planted_rule_is_found_and_nothing_else(spark, tmp_path, profile, kafka):
    """Every rule the profile checks planted at least once (manifest: rules.planted), as one
    three-file log: the audit finds exactly the manifest's findings, as rmkit check does."""
    manifest, got, checked = audit_simulated(spark, tmp_path, seed=1, profile=profile, kafka=kafka, files=3,
                                             messages=3000, violations=0.05)
    aimed = {v["rule"] for v in manifest["violations"] if v["aimed"]}
    assert aimed == set(manifest["rules"]["planted"]), set(manifest["rules"]["planted"]) - aimed
    want = expected_findings(manifest)
    assert got == want, f"missing {sorted(want - got)[:10]}, extra {sorted(got - want)[:10]}"
    assert checked == want


def test_signature_rules_run_in_the_audit_with_validators(spark, tmp_path):
    """A signed simulator log with every plantable rule broken, the signature rules included,
    audited with --validators: the audit verifies every signature as rmkit check does."""
    from rmkit.protocols.remp.signing import generate_key_set

    keys = tmp_path / "keys"
    generate_key_set(keys, 7, 10, "1")
    manifest, got, checked = audit_simulated(spark, tmp_path / "log", validators=keys / "validators.yaml", seed=3,
                                             keys=str(keys), messages=1200, violations=0.05)
    assert {"REMP-SIG-002", "REMP-SIG-003"} <= {v["rule"] for v in manifest["violations"]}
    assert got == checked == expected_findings(manifest)


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(1, 10**6), variant=st.sampled_from([("spec", False), ("spec", True), ("ever-node", False),
                                                            ("ever-node", True)]))
def test_random_simulator_logs_agree(spark, tmp_path_factory, seed, variant):
    """Random simulator logs with planted violations: audit, rmkit check and the manifest agree."""
    profile, kafka = variant
    manifest, got, checked = audit_simulated(spark, tmp_path_factory.mktemp("sim"), seed=seed, profile=profile, kafka=kafka)
    want = expected_findings(manifest)
    assert got == checked == want, (f"audit vs manifest: missing {sorted(want - got)[:10]}, extra {sorted(got - want)[:10]}; "
                                    f"check vs manifest: missing {sorted(want - checked)[:10]}, extra {sorted(checked - want)[:10]}")


def test_unreadable_records_are_quarantined_with_file_and_line_and_exit_2(spark, tmp_path, capsys):
    from rmkit.cli import main

    good = (FIX / "rules" / "spec" / "clean-happy.jsonl").read_text().splitlines()
    lines = good[:2] + ['{"kind": "PutIntoQueue", "message_id": "6cb9', "", "[1, 2]"] + good[2:]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res = audit(spark, [path], "spec")
    q = sorted((p.line, p.error) for p in res.report.input_problems)
    assert [line for line, _ in q] == [3, 5] and "not JSON" in q[0][1] and "expected a JSON object" in q[1][1]
    assert res.report.unreadable == 2 and res.report.verdict == "fail"
    assert res.report.input_problems == check(path, "spec").input_problems
    out = tmp_path / "out"
    assert main(["audit", "--out", str(out), str(path)]) == main(["check", str(path)]) == 2
    q = [json.loads(x) for x in (out / "quarantine.jsonl").read_text().splitlines()]
    assert [(r["file"], r["line"]) for r in q] == [(str(path), 3), (str(path), 5)]
    capsys.readouterr()


def test_corrupt_and_truncated_gzip_exit_2_naming_the_file(spark, tmp_path, capsys):
    """As rmkit check: an input that cannot be decompressed is exit 2 with a message naming the
    file, not a Spark stack trace."""
    from rmkit.cli import main

    raw = gzip.compress((FIX / "logs" / "sim-spec-clean.jsonl").read_bytes())
    (tmp_path / "truncated.jsonl.gz").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "corrupt.gz").write_bytes(raw[:100] + bytes(200) + raw[300:])
    for name in ("truncated.jsonl.gz", "corrupt.gz"):
        path = str(tmp_path / name)
        capsys.readouterr()
        assert main(["check", path]) == 2
        assert main(["audit", "--lifetime", "60", path]) == 2
        err = capsys.readouterr().err
        assert name in err and "Traceback" not in err and "Py4J" not in err, err


def test_kafka_records_with_bad_timestamps_are_judged_as_rmkit_check_judges_them(spark, tmp_path):
    """Kafka timestamps that are a string, null, negative or a float: the audit reads records with
    the checker's own reading code, so it reports exactly what rmkit check reports on them."""
    src = (FIX / "logs" / "sim-ever-node-faults.jsonl").read_text().splitlines()
    bad = ["1700000000000", None, -5, 1.5e12]
    lines = []
    for i, line in enumerate(src):
        try:
            rec = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        if i % 50 == 7 and rec.get("value") is not None:
            rec["timestamp"] = bad[(i // 50) % len(bad)]
        lines.append(json.dumps(rec))
    path = tmp_path / "kafka-ts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    want = check(path, "ever-node", 60)
    got = audit(spark, [path], "ever-node", 60).report
    assert pairs(got) == pairs(want) and got.counts == want.counts and got.input_problems == want.input_problems


def test_values_of_the_wrong_json_type_are_schema_problems_as_in_rmkit_check(spark, tmp_path):
    """A number, boolean, object or array where the spec wants a string (and a string where it
    wants an integer): the same checker reads them, so the same schema problems."""
    src = FIX / "logs" / "sim-spec-faults.jsonl"
    lines = src.read_text().splitlines()
    changes = {"IncludedIntoBlock": ("block_id", 12345), "Finalized": ("shard", True), "RejectedByCollator": ("error", 5),
               "PutIntoQueue": ("source_id", 7), "Timeout": ("signature", {"r": 1}), "IgnoredByMasterchain": ("block_seqno", "12"),
               "SentToValidators": ("message_id", [1]), "Duplicate": ("kind", 3)}
    done = set()
    for i, line in enumerate(lines):
        try:
            r = json.loads(line)
        except ValueError:
            continue  # the fixture's own unreadable line
        if isinstance(r, dict) and r.get("kind") in changes and r["kind"] not in done:
            name, value = changes[r["kind"]]
            r[name] = value
            lines[i] = json.dumps(r, separators=(",", ":"))
            done.add(r["kind"] if name != "kind" else "Duplicate")
    assert done == set(changes)
    path = tmp_path / "types.jsonl"
    path.write_text("\n".join(lines) + "\n")
    want = check(path, "spec", 60)
    res = audit(spark, [path], "spec", 60)
    assert pairs(res.report) == pairs(want)
    assert res.report.counts == want.counts and want.counts["REMP-SCHEMA-001"] >= 6


def test_late_receipts_are_checked_for_replay_only_as_in_rmkit_check(spark, tmp_path):
    """Receipts for a message that rmkit check has already judged and closed (its clock past the
    horizon + 60 s): a replay into another block is still found, nothing else is reported on them."""
    path, late = late_log(tmp_path / "late.jsonl")
    want = check(path, "spec", 60)
    assert want.metrics["late_receipts"] == late
    res = audit(spark, [path], "spec", 60)
    assert pairs(res.report) == pairs(want) and {"REMP-REPLAY-001", "REMP-REPLAY-002"} <= set(want.counts)
    assert res.report.metrics["late_receipts"] == late


def test_file_names_that_a_uri_quotes_are_read(spark, tmp_path):
    """Spark names a file by its URI (a space as %20, a % as %25): a log whose name holds a space,
    a percent sign, a plus or a non-ASCII letter is still known as its input, and audited."""
    src = FIX / "logs" / "sim-spec-faults.jsonl"
    named = tmp_path / "a b" / "log 100%+x%20é.jsonl"
    named.parent.mkdir()
    named.write_bytes(src.read_bytes())
    want = check(src, "spec", 60)
    res = audit(spark, [named, src], "spec", 60, per_file=True)
    assert [res.reports[i].inputs for i in (0, 1)] == [[str(named)], [str(src)]]
    for got in res.reports.values():
        assert pairs(got) == pairs(want) and got.counts == want.counts and got.records == want.records


def test_kafka_dump_gzip_kcat_envelopes_and_parquet_are_read(spark, tmp_path):
    src = FIX / "logs" / "sim-ever-node-faults.jsonl"
    raw = src.read_bytes()
    want = check(src, "ever-node", 60)
    (tmp_path / "dump").write_bytes(gzip.compress(raw))  # gzip without the suffix, as rmkit check reads it
    res = audit(spark, [tmp_path / "dump"], "ever-node", 60)
    assert pairs(res.report) == pairs(want) and res.report.counts == want.counts
    kcat = tmp_path / "kcat.jsonl"
    with open(kcat, "w") as f:
        for line in raw.decode().splitlines():
            rec = json.loads(line)
            f.write(json.dumps({"topic": rec["topic"], "partition": rec["partition"], "offset": rec["offset"], "tstype": "create",
                                "ts": rec["timestamp"], "broker": 1, "key": rec["key"], "payload": json.dumps(rec["value"])}) + "\n")
    assert pairs(audit(spark, [kcat], "ever-node", 60).report) == pairs(check(kcat, "ever-node", 60)) == pairs(want)
    # Parquet: one row per receipt, columns of the receipt (the rows of a line that is not JSON are not in it)
    receipts = [json.loads(x) for x in (FIX / "logs" / "sim-spec-clean.jsonl").read_text().splitlines()]
    spark.createDataFrame([json.dumps(r) for r in receipts], "string").write.text(str(tmp_path / "as-text"))
    spark.read.json(str(tmp_path / "as-text")).coalesce(1).write.parquet(str(tmp_path / "pq"))
    pq = sorted((tmp_path / "pq").glob("*.parquet"))
    got = audit(spark, pq, "spec", 60).report
    clean = check(FIX / "logs" / "sim-spec-clean.jsonl", "spec", 60)
    assert (got.records, got.subjects, got.counts) == (clean.records, clean.subjects, clean.counts)


def test_cli_writes_summary_tables_and_operator_report(spark, tmp_path, capsys):
    from rmkit.cli import main

    out = tmp_path / "out"
    log = FIX / "logs" / "sim-spec-faults.jsonl"
    code = main(["audit", "--master", "local[2]", "--lifetime", "60", "--format", "json", "--max-examples", "1",
                 "--out", str(out), str(log)])
    summary = json.loads((out / "summary.json").read_text())
    want = check(log, "spec", 60)
    assert code == 2 == main(["check", "--lifetime", "60", str(log)])  # the fixture has an unreadable line
    assert summary["verdict"] == "fail" and summary["counts"] == want.counts
    assert list(summary)[:8] == ["verdict", "protocol", "profile", "receipts", "messages", "violations", "counts", "metrics"]
    every = [json.loads(x) for x in (out / "violations.jsonl").read_text().splitlines()]
    assert len(every) == sum(want.counts.values()) - want.unreadable
    assert {(v["rule"], v["message_id"]) for v in every} == pairs(want) - {("REMP-INPUT-001", None)}
    for name in ("operator.json", "operator.md", "latency.png", "latency.svg", "quarantine.jsonl", "violations", "quarantine"):
        assert (out / name).exists(), name
    assert spark.read.parquet(str(out / "violations")).count() == len(every)
    op = json.loads((out / "operator.json").read_text())
    assert op["slas"]["queue_ack_ms"]["promise_ms"] == [100, 200] and op["lost_messages"]["count"] == 1
    fin = op["latency_ms"]["finalized_ms"]
    assert sum(n for _, _, n in fin["log10_bins"]) == fin["count"] > 0
    validators = {s: f for s, f in op["per_source"].items() if f["role"] == "validator"}
    assert validators and all(0 <= f["rejected_share"] <= 1 and f["latency_ms"]["count"] for f in validators.values())
    assert op["per_source"] == want.metrics["per_source"]
    capsys.readouterr()


def test_no_input_is_a_usage_error(spark, tmp_path):
    from rmkit.cli import main

    assert main(["audit", str(tmp_path / "missing.jsonl")]) == 2


def test_the_job_names_no_protocol_each_key_is_one_share_in_log_order(spark, tmp_path):
    """What a new protocol gets from the job: every record of a key (found at any of its paths,
    case folded, also inside a Kafka value held as text) in one share, in log order, with its
    file and line; records without a key in exactly one share."""
    from rmkit.protocol import REF_LINE_BITS
    from rmkit.spark_checks.job import audit as run

    class KeyOrder:  # defined here, so that it travels to Spark's workers by value
        """A stand-in protocol checker: it records which records each share got, in which order."""

        key = RecordKey((("k",), ("value", "k")), fold_case=True, text_values=True)

        def check_share(self, inputs, batches):
            return [(ref, line.decode()) for refs, lines in batches for ref, line in zip(refs, lines)]

        def merge(self, inputs, shares):
            rep = Report(protocol="toy", profile="p", inputs=inputs, records=sum(map(len, shares)))
            rep.violations = [Violation("share", "info", "strict", None, json.dumps(s), []) for s in shares]
            return rep

    files = []
    for n in range(2):
        path = tmp_path / f"part-{n}.jsonl"
        recs = [json.dumps({"k": f"K{i % 7}"} if i % 3 else {"value": json.dumps({"k": f"k{i % 7}"})}) for i in range(200)]
        path.write_text("\n".join(recs + ["not json", ""]) + "\n")
        files.append(str(path))
    res = run(spark, KeyOrder(), files, partitions=3)
    shares = [[tuple(x) for x in json.loads(v.explanation)] for v in res.report.violations]
    assert len(shares) <= 3 and res.report.records == 2 * 202
    seen = set()
    for share in shares:
        refs = [ref for ref, _ in share]
        assert refs == sorted(refs)
        seen.update(refs)
    assert seen == {n << REF_LINE_BITS | line for n in range(2) for line in range(1, 203)}
    share_of = {}
    for i, share in enumerate(shares):
        for ref, line in share:
            try:
                rec = json.loads(line)
                key = (rec.get("k") or json.loads(rec["value"])["k"]).lower()
            except (ValueError, KeyError):
                key = None
            assert share_of.setdefault(key, i) == i, key
    assert len(share_of) == 8


def test_the_job_script_entry_runs_in_the_session_spark_submit_gives(spark, tmp_path, capsys):
    """job.py's entry (what spark-submit runs) on the running session, as under spark-submit."""
    from rmkit.spark_checks.job import main

    fixture = FIX / "rules" / "spec" / "REMP-REPLAY-001.jsonl"
    assert main(["--format", "json", "--out", str(tmp_path / "o"), str(fixture)]) == 1
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["counts"] == {"REMP-REPLAY-001": 1}
    capsys.readouterr()


@pytest.mark.slow
def test_spark_submit_runs_the_job_script(tmp_path):
    """The documented cluster path, run locally: pyspark's own spark-submit with the entry script
    (a second JVM, so slow)."""
    home = Path(pyspark.__file__).parent
    job = REPO / "spark_checks" / "job.py"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_HOME=str(home))
    fixture = FIX / "rules" / "spec" / "REMP-REPLAY-001.jsonl"
    proc = subprocess.run([str(home / "bin" / "spark-submit"), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                           "--conf", "spark.sql.shuffle.partitions=2",
                           str(job), "--format", "json", "--out", str(tmp_path / "o"), str(fixture)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["counts"] == {"REMP-REPLAY-001": 1}


@pytest.mark.slow
def test_a_large_simulated_log_agrees(spark, tmp_path):
    """About 400,000 receipts in four files, violations planted in 0.2 % of messages, as one log."""
    manifest, got, checked = audit_simulated(spark, tmp_path, seed=5, messages=20_000, files=4, violations=0.002,
                                             lifetime_s=60)
    assert got == checked == expected_findings(manifest)
