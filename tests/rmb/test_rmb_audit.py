"""`rmkit audit --protocol rmb` (the RMB log checker's shares on Spark) against `rmkit check`
(the same checker in one process): for every per-rule fixture and clean log of every profile, the
same (rule, uid) findings, counts, records, groups and verdict. One Spark session serves the test
run (session-scoped, reused as test_spark_audit's); the fixtures are audited in ONE Spark job (a
file per profile, each a log of its own with its profile's checker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "fixtures" / "rmb" / "rules"
LOGS = REPO / "fixtures" / "rmb" / "logs"
MANIFEST = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))


def logs(tmp: Path) -> list[tuple[Path, str, str]]:
    """(log, profile, directory): per profile every fixture in one log (one file per profile keeps
    the Spark job small; the daemons' logs are audited by the next test)."""
    out = []
    for profile in sorted({e["profile"] for e in MANIFEST["fixtures"]}):
        fixtures = tmp / f"fixtures-{profile}.jsonl"
        fixtures.write_text("".join((ROOT / e["file"]).read_text(encoding="utf-8") for e in MANIFEST["fixtures"]
                                    if e["profile"] == profile), encoding="utf-8")
        out.append((fixtures, profile, str(ROOT / MANIFEST["directory"])))
    return out


def findings(report) -> set:
    return {(v.rule, v.subject) for v in report.violations}


def assert_agree(spark, entries) -> int:
    """Audit each (log, profile, directory) as a log of its own, all in one Spark job, and compare."""
    from rmkit.spark_checks.job import audit

    checkers = [RmbShards(profile, directory, max_examples=0) for _, profile, directory in entries]
    res = audit(spark, checkers, [str(p) for p, _, _ in entries], per_file=True)
    found = 0
    for i, (path, profile, directory) in enumerate(entries):
        want = RmbLogChecker(RmbShards(profile, directory, max_examples=0)).run([str(path)])
        got = res.reports[i]
        assert findings(got) == findings(want), f"{path} ({profile}): missing {findings(want) - findings(got)}, extra {findings(got) - findings(want)}"
        assert (got.counts, got.records, got.subjects, got.unreadable, got.verdict, got.not_checked, got.not_judged) == \
               (want.counts, want.records, want.subjects, want.unreadable, want.verdict, want.not_checked, want.not_judged), path
        found += len(want.violations)
    return found


def test_audit_finds_what_check_finds_on_the_spec_fixtures(spark, tmp_path):
    entries = [e for e in logs(tmp_path) if e[1] == "spec"]
    assert assert_agree(spark, entries) >= len([e for e in MANIFEST["fixtures"] if e["expect"] and e["profile"] == "spec"])


@pytest.mark.slow
def test_audit_finds_what_check_finds_on_the_fixtures_of_every_profile(spark, tmp_path):
    assert assert_agree(spark, logs(tmp_path)) >= len([e for e in MANIFEST["fixtures"] if e["expect"]])


def test_rmkit_audit_protocol_rmb_on_a_multi_file_log(spark, capsys):
    """The command itself over one profile's daemon and recorder logs (six files, one log), as
    `rmkit check` reports them."""
    from rmkit.cli import main

    clean = sorted(str(p) for p in (LOGS / "rmb-rs-v1").glob("*.jsonl"))
    code = main(["audit", "--protocol", "rmb", "--profile", "rmb-rs-v1", "--directory", str(LOGS / "rmb-rs-v1" / "directory.json"),
                 "--format", "json", *clean])
    rep = json.loads(capsys.readouterr().out)
    want = RmbLogChecker(RmbShards("rmb-rs-v1", str(LOGS / "rmb-rs-v1" / "directory.json"))).run(clean)
    assert code == 0 and rep["verdict"] == "pass" and rep["receipts"] == want.records and rep["messages"] == want.subjects
    assert rep["not_judged"] == want.not_judged and rep["not_checked"] == want.not_checked
