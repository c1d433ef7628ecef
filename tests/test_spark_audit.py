"""`rmkit audit` (the Spark job) against `rmkit check` (the streaming checker): for the same log,
the same set of (rule, message id) violations, the same counts, receipts, messages and
unreadable lines. One local Spark session serves every test of this file; the fixture logs are
checked in a few batched jobs (each file a log of its own) to keep the session's work small."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rmkit.conformance.remp.bulk_sim import BulkConfig, expected_findings, generate  # noqa: E402
from rmkit.conformance.remp.checker import RempLogChecker  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "fixtures" / "remp"


@pytest.fixture(scope="session")
def spark():
    """The one Spark session of this file: local[2], loopback, UI off, 2 shuffle partitions."""
    from rmkit.spark_checks.session import get_session

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    s = get_session("local[2]", shuffle_partitions=2, progress=False)
    yield s
    s.stop()


def pairs(report) -> set:
    return {(v.rule, v.message_id) for v in report.violations}


def check(path, profile, lifetime=None):
    return RempLogChecker(profile, lifetime_s=lifetime, jobs=1, max_examples=0).run([str(path)])


def assert_agree(spark, logs: list[tuple[str, str, float | None]]):
    """Audit each (path, profile, lifetime) as its own log, batched per (profile, lifetime)."""
    from rmkit.spark_checks.remp.job import audit

    groups = defaultdict(list)
    for path, profile, lifetime in logs:
        groups[(profile, lifetime)].append(str(path))
    compared = 0
    for (profile, lifetime), paths in groups.items():
        res = audit(spark, paths, profile, lifetime_s=lifetime, max_examples=0, per_file=True)
        for i, path in enumerate(paths):
            want, got = check(path, profile, lifetime), res.reports[i]
            assert pairs(got) == pairs(want), f"{path} ({profile}): missing {pairs(want) - pairs(got)}, extra {pairs(got) - pairs(want)}"
            assert (got.counts, got.receipts, got.messages, got.unreadable, got.verdict) == \
                   (want.counts, want.receipts, want.messages, want.unreadable, want.verdict), path
            compared += 1
    return compared


def fixture_logs():
    man = json.loads((FIX / "rules" / "manifest.json").read_text())
    logs = [(FIX / "rules" / f["file"], f["profile"], None) for f in man["fixtures"]]
    lm = json.loads((FIX / "logs" / "manifest.json").read_text())
    logs += [(FIX / "logs" / f["file"], f["profile"], f.get("lifetime")) for f in lm["logs"]]
    logs += [(FIX / "seed" / "examples.jsonl", p, None) for p in ("spec", "ever-node")]
    return logs


def test_every_fixture_gives_the_same_violations_as_rmkit_check(spark):
    logs = fixture_logs()
    assert assert_agree(spark, logs) == len(logs) >= 70


def audit_findings(res) -> set:
    """Every finding of an audit, in the manifest's terms: (rule, message id) from the full
    violation table (not the report's examples), (REMP-INPUT-001, file name, line) from the
    quarantine."""
    got = {(r.rule, r.message_id) for r in res.violations.select("rule", "message_id").collect()}
    got |= {("REMP-INPUT-001", os.path.basename(r.file), r.line) for r in res.quarantine.select("file", "line").collect()}
    return got


def check_findings(manifest: dict, out: Path) -> set:
    paths = [str(out / f["file"]) for f in manifest["files"]]
    rep = RempLogChecker(manifest["profile"], lifetime_s=manifest["check"]["lifetime_s"], max_examples=0, jobs=1).run(paths)
    got = {(v.rule, v.message_id) for v in rep.violations}
    return got | {("REMP-INPUT-001", os.path.basename(p.file), p.line) for p in rep.input_problems}


def audit_simulated(spark, tmp: Path, **kw) -> tuple[dict, set, set]:
    """A multi-file simulator log with planted violations: (manifest, audit's findings, check's)."""
    from rmkit.spark_checks.remp.job import audit

    cfg = BulkConfig(**{"messages": 600, "files": 2, "violations": 0.04, "lifetime_s": 30} | kw)
    manifest = generate(cfg, str(tmp), jobs=1)
    assert manifest["violations"], "nothing was planted"
    res = audit(spark, [str(tmp / f["file"]) for f in manifest["files"]], cfg.profile, lifetime_s=cfg.lifetime_s)
    return manifest, audit_findings(res), check_findings(manifest, tmp)


@pytest.mark.parametrize("profile,kafka", [("spec", False), ("ever-node", True)])
def test_every_planted_rule_is_found_and_nothing_else(spark, tmp_path, profile, kafka):
    """Every rule the profile checks planted at least once (manifest: rules.planted), as one
    two-file log: the audit finds exactly the manifest's findings, as rmkit check does."""
    manifest, got, checked = audit_simulated(spark, tmp_path, seed=1, profile=profile, kafka=kafka, files=3,
                                             messages=3000, violations=0.05)
    aimed = {v["rule"] for v in manifest["violations"] if v["aimed"]}
    assert aimed == set(manifest["rules"]["planted"]), set(manifest["rules"]["planted"]) - aimed
    want = expected_findings(manifest)
    assert got == want, f"missing {sorted(want - got)[:10]}, extra {sorted(got - want)[:10]}"
    assert checked == want


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


def test_unreadable_records_are_quarantined_with_file_and_line_and_fail(spark, tmp_path):
    from rmkit.spark_checks.remp.job import audit

    good = (FIX / "rules" / "spec" / "clean-happy.jsonl").read_text().splitlines()
    lines = good[:2] + ['{"kind": "PutIntoQueue", "message_id": "6cb9', "", "[1, 2]"] + good[2:]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res = audit(spark, [str(path)], "spec")
    q = sorted((r.line, r.error) for r in res.quarantine.collect())
    assert [line for line, _ in q] == [3, 5] and "not JSON" in q[0][1] and "expected a JSON object" in q[1][1]
    assert res.report.unreadable == 2 and res.report.verdict == "fail"
    assert res.report.unreadable == check(path, "spec").unreadable


def test_values_of_the_wrong_json_type_are_schema_problems_as_in_rmkit_check(spark, tmp_path):
    """Spark hands the text of any JSON value to a string field; the audit must still see a
    number, boolean, object or array where the spec wants a string (and a string where it wants an
    integer) as rmkit check does."""
    from rmkit.spark_checks.remp.job import audit

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
    res = audit(spark, [str(path)], "spec", lifetime_s=60, max_examples=0)
    assert pairs(res.report) == pairs(want)
    assert res.report.counts == want.counts and want.counts["REMP-SCHEMA-001"] >= 6


def test_late_receipts_are_checked_for_replay_only_as_in_rmkit_check(spark, tmp_path):
    """Receipts for a message that rmkit check has already judged and closed (its clock past the
    horizon + 60 s): a replay into another block is still found, nothing else is reported on them."""
    from rmkit.spark_checks.remp.job import audit

    src = FIX / "logs" / "sim-spec-clean.jsonl"
    lines = src.read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    fins = [r for r in recs if r["kind"] == "Finalized"][:2]
    end_t = recs[-1]["timestamp"]
    late = []
    for n, fin in enumerate(fins):
        acc = next(r for r in recs if r["kind"] == "IncludedIntoAcceptedBlock" and r["message_id"] == fin["message_id"])
        other = {"block_id": f"{n + 1:02x}" * 32, "block_seqno": acc["block_seqno"] + 99, "timestamp": end_t}
        late.append(acc | other)                      # REMP-REPLAY-001, late
        late.append(fin | other if n else acc | other)  # REMP-REPLAY-002 late; a redelivered late receipt
        late.append(fin | {"kind": "Bogus", "timestamp": end_t})  # an unknown kind, late: not looked at
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join(lines + [json.dumps(r, separators=(",", ":")) for r in late]) + "\n")
    want = check(path, "spec", 60)
    assert want.metrics["late_receipts"] == len(late)
    res = audit(spark, [str(path)], "spec", lifetime_s=60, max_examples=0)
    assert pairs(res.report) == pairs(want) and {"REMP-REPLAY-001", "REMP-REPLAY-002"} <= set(want.counts)
    assert res.report.metrics["late_receipts"] == len(late)


def test_kafka_dump_gzip_and_kcat_envelopes_are_read(spark, tmp_path):
    import gzip

    from rmkit.spark_checks.remp.job import audit

    src = FIX / "logs" / "sim-ever-node-faults.jsonl"
    raw = src.read_bytes()
    (tmp_path / "dump").write_bytes(gzip.compress(raw))  # gzip without the suffix, as rmkit check reads it
    res = audit(spark, [str(tmp_path / "dump")], "ever-node", lifetime_s=60)
    assert pairs(res.report) == pairs(check(src, "ever-node", 60))
    kcat = tmp_path / "kcat.jsonl"
    with open(kcat, "w") as f:
        for line in raw.decode().splitlines():
            rec = json.loads(line)
            f.write(json.dumps({"topic": rec["topic"], "partition": rec["partition"], "offset": rec["offset"], "tstype": "create",
                                "ts": rec["timestamp"], "broker": 1, "key": rec["key"], "payload": json.dumps(rec["value"])}) + "\n")
    res2 = audit(spark, [str(kcat)], "ever-node", lifetime_s=60)
    assert pairs(res2.report) == pairs(res.report)


def test_cli_writes_summary_tables_and_operator_report(spark, tmp_path, capsys):
    from rmkit.cli import main

    out = tmp_path / "out"
    code = main(["audit", "--master", "local[2]", "--lifetime", "60", "--format", "json", "--out", str(out),
                 str(FIX / "logs" / "sim-spec-faults.jsonl")])
    summary = json.loads((out / "summary.json").read_text())
    want = check(FIX / "logs" / "sim-spec-faults.jsonl", "spec", 60)
    # the log holds an unreadable line: exit 2, as rmkit check gives for it
    assert code == 2 and summary["verdict"] == "fail" and summary["counts"] == want.counts
    assert list(summary)[:8] == ["verdict", "protocol", "profile", "receipts", "messages", "violations", "counts", "metrics"]
    every = [json.loads(x) for x in (out / "violations.jsonl").read_text().splitlines()]
    assert len(every) == sum(want.counts.values()) - want.unreadable
    for name in ("operator.json", "operator.md", "latency.png", "latency.svg", "outcomes.png", "outcomes.svg", "quarantine.jsonl"):
        assert (out / name).exists(), name
    op = json.loads((out / "operator.json").read_text())
    assert op["slas"]["queue_ack_ms"]["promise_ms"] == [100, 200] and op["lost_messages"]["count"] == 1
    capsys.readouterr()


def test_no_input_is_a_usage_error(spark, tmp_path):
    from rmkit.cli import main

    assert main(["audit", str(tmp_path / "missing.jsonl")]) == 2


def test_spark_submit_runs_the_job_script(tmp_path):
    """The documented cluster path, run locally: pyspark's own spark-submit with the entry script."""
    home = Path(pyspark.__file__).parent
    job = REPO / "spark_checks" / "remp" / "job.py"
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
