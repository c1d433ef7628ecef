"""`rmkit conform --format json` is one shape for every protocol: each protocol's real output (a
pass, a failure, a run with no verdict) is held to spec/schema/conform-report.schema.json, and the
text report is laid out by the one writer (the same header, summary line and exit code)."""

from __future__ import annotations

import json
import sys

import pytest

from rmkit.cli import main
from rmkit.specload import schema_problem

SCHEMA = "conform-report"


def _conform(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["conform", *argv, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    problem = schema_problem(doc, SCHEMA)
    assert problem is None, problem
    assert doc["exit"] == code  # the report says the exit code the command returned
    return code, doc


def _text(capsys, *argv: str) -> tuple[int, str]:
    code = main(["conform", *argv])
    return code, capsys.readouterr().out


def _common(doc: dict, protocol: str, verdict: str) -> None:
    assert doc["format"] == "rmkit-conform-report/1" and doc["protocol"] == protocol and doc["verdict"] == verdict
    assert doc["totals"]["scenarios"] == len(doc["scenarios"]) == doc["totals"]["passed"] + doc["totals"]["failed"]
    assert sum(doc["totals"]["rules"].values()) == len(doc["rules"]) == doc["coverage"]["rules"]
    assert set(doc["settings"]) == {"seed", "max_examples", "derandomize", "time_budget", "catalogue_only", "timeout"}
    assert {r["group"] for r in doc["rules"]} <= {g["name"] for g in doc["groups"]}


# ---- REMP -----------------------------------------------------------------------------------------
REMP_REFERENCE = "rmkit.reference_impl.remp.adapter:factory"


def test_remp_pass_fail_and_no_verdict_are_one_shape(capsys, tmp_path):
    regs = ["--regressions", str(tmp_path / "regs")]
    code, doc = _conform(capsys, "--role", "validator", "--impl", REMP_REFERENCE, "--catalogue-only", *regs)
    assert code == 0
    _common(doc, "remp", "pass")
    assert doc["settings"]["catalogue_only"] is True and doc["extras"]["not_tried"] == []
    assert all(s["reproduce"].startswith("rmkit ") and "checks" in s["extras"] for s in doc["scenarios"])

    code, doc = _conform(capsys, "--role", "validator", "--impl", "rmkit.conformance.remp.examples.no_replay_protection:factory",
                         "--max-examples", "100", "--derandomize", *regs)
    assert code == 1
    _common(doc, "remp", "fail")
    failed = [s for s in doc["scenarios"] if s["failure"]]
    assert failed and all(s["rules"] and s["reproduce"] for s in failed)
    assert any(r["status"] == "fail" and r["evidence"] for r in doc["rules"])
    assert doc["saved"] and doc["totals"]["failed"] == len(failed)

    script = tmp_path / "broken.py"
    script.write_text("import sys\nsys.stdin.readline()\nraise RuntimeError('broken')\n")
    code, doc = _conform(capsys, "--impl-cmd", f"{sys.executable} {script} ROLE", "--max-examples", "1", *regs)
    assert code == 2
    _common(doc, "remp", "no verdict")
    assert set(doc["not_driven"]) == {"validator"} and doc["extras"]["not_tried"] == ["fullnode", "consumer"]


# ---- Corda ----------------------------------------------------------------------------------------
CORDA_REFERENCE = "rmkit.conformance.corda.driven.adapters:reference_factory"


def test_corda_pass_and_fail_are_one_shape(capsys, tmp_path):
    regs = ["--regressions", str(tmp_path / "regs")]
    code, doc = _conform(capsys, "--protocol", "corda", "--impl", CORDA_REFERENCE, "--catalogue-only", *regs)
    assert code == 0
    _common(doc, "corda", "pass")
    assert [g["name"] for g in doc["groups"]] == ["receiver", "bridge"] and all(g["verdict"] == "pass" for g in doc["groups"])
    assert all("not_judged" in g["extras"] for g in doc["groups"])

    code, doc = _conform(capsys, "--protocol", "corda", "--role", "receiver", "--catalogue-only",
                         "--impl", "rmkit.conformance.corda.driven.examples:AckBeforeCommit", *regs)
    assert code == 1
    _common(doc, "corda", "fail")
    [failed] = [s for s in doc["scenarios"] if s["failure"]]
    assert failed["rules"][0] == "CORDA-ACK-001" and failed["extras"]["exchange"] and failed["reproduce"]


# ---- RMB ------------------------------------------------------------------------------------------
SERVE = "--twin {twin} --directory {directory} --seed {seed} --redis {redis} --listen {listen} --profile {profile}"


def test_rmb_pass_and_fail_are_one_shape(capsys, tmp_path, monkeypatch):
    from rmb_support import redis_server_or_skip

    from rmkit.conformance.rmb.driven import suite
    from rmkit.conformance.rmb.driven.scenario import catalogue

    redis_server_or_skip()
    # the first catalogue scenarios and the one that catches a daemon retrying a 4xx: the whole
    # catalogue takes tens of seconds, and the shape is the same for any number of scenarios
    monkeypatch.setattr(suite, "catalogue", lambda profile, slow: [
        sc for i, sc in enumerate(catalogue(profile, slow)) if i < 3 or "4xx" in sc.title])
    regs = ["--regressions", str(tmp_path / "regs"), "--catalogue-only", "--jobs", "1"]
    code, doc = _conform(capsys, "--protocol", "rmb", "--impl-cmd", "{python} -m rmkit.reference_impl.rmb.cli serve " + SERVE,
                         *regs)
    assert code == 0
    _common(doc, "rmb", "pass")
    assert doc["extras"]["jobs"] == 1 and all("checks" in r["extras"] for r in doc["rules"])

    code, doc = _conform(capsys, "--protocol", "rmb", "--impl-cmd",
                         "{python} -m rmkit.conformance.rmb.examples retries-on-4xx serve " + SERVE, *regs)
    assert code == 1
    _common(doc, "rmb", "fail")
    failed = [s for s in doc["scenarios"] if s["failure"]]
    assert failed and "RMB-RETRY-003" in failed[0]["rules"] and failed[0]["extras"]["failures"]


# ---- one text layout ------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["--role", "validator", "--impl", REMP_REFERENCE],
                                  ["--protocol", "corda", "--role", "bridge", "--impl", CORDA_REFERENCE]])
def test_the_text_report_has_one_layout(capsys, tmp_path, argv):
    code, out = _text(capsys, *argv, "--catalogue-only", "--regressions", str(tmp_path / "regs"))
    lines = out.splitlines()
    protocol = "corda" if "corda" in argv else "remp"
    assert code == 0 and lines[0] == f"rmkit conform --protocol {protocol}: PASS"
    assert lines[1].startswith("  implementation: ") and lines[2].startswith("  profile spec | roles ")
    assert any(line.startswith("catalogue: ") and line.endswith(" scenarios passed") for line in lines)
    assert any(line.startswith("per rule: fail; finding") for line in lines)
    assert lines[-1].startswith("verdict: PASS (") and lines[-1].endswith("; exit 0)")


# ---- the documented example -----------------------------------------------------------------------
def test_the_documented_json_example_holds_to_the_schema():
    """docs/reports.md shows the JSON report shortened: it stays a report the schema accepts."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "reports.md").read_text(encoding="utf-8")
    [block] = re.findall(r"Shortened, from a Corda run:\n\n```json\n(.*?)\n```", text, re.S)
    doc = json.loads(block)
    assert schema_problem(doc, SCHEMA) is None, schema_problem(doc, SCHEMA)
    assert doc["exit"] == 0 and doc["verdict"] == "pass"
