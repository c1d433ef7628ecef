"""JUnit reports show unreadable lines as a failure, for every protocol: a CI system that reads
only the XML must not see a run that exits 2 as all green."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from rmkit.cli import main
from rmkit.render.junit import render_junit
from rmkit.verdict import InputProblem, Report

ROOT = Path(__file__).resolve().parents[2]
CORDA_LOG = ROOT / "fixtures" / "corda" / "rules" / "spec" / "CORDA-ACK-001.jsonl"
RMB_LOG = ROOT / "fixtures" / "rmb" / "logs" / "spec" / "twin-1.jsonl"
REMP_LOG = ROOT / "fixtures" / "remp" / "rules" / "spec" / "REMP-REPLAY-002.jsonl"


def _with_bad_line(src: Path, dst: Path, bad: str, at: int = 2) -> int:
    """Copy ``src`` to ``dst`` with ``bad`` put in as line ``at``; return that line number."""
    lines = src.read_text(encoding="utf-8").splitlines()
    lines.insert(at - 1, bad)
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return at


def _junit(capsys, protocol: str, log: Path) -> tuple[int, ET.Element]:
    code = main(["check", "--protocol", protocol, "--format", "junit", str(log)])
    return code, ET.fromstring(capsys.readouterr().out)


def _failing_texts(suite: ET.Element) -> list[str]:
    return [(f.get("message") or "") + "\n" + (f.text or "") for f in suite.iter("failure")]


@pytest.mark.parametrize("protocol, src, bad", [
    ("corda", CORDA_LOG, json.dumps({"t": 1767225600021, "node": "alice", "event": "bogus", "id": "N-fa-2-0"})),
    ("rmb", RMB_LOG, "{not json"),
    ("remp", REMP_LOG, "{not json"),
])
def test_an_unreadable_line_is_a_failure_naming_file_and_line(tmp_path, capsys, protocol, src, bad):
    log = tmp_path / f"{protocol}.jsonl"
    line = _with_bad_line(src, log, bad)
    code, suite = _junit(capsys, protocol, log)
    assert code == 2
    assert int(suite.get("failures")) >= 1
    texts = "\n".join(_failing_texts(suite))
    assert f"{log}:{line}" in texts


def test_the_input_case_names_the_field_as_text_and_json_do(tmp_path, capsys):
    log = tmp_path / "corda.jsonl"
    line = _with_bad_line(CORDA_LOG, log, json.dumps({"t": 1767225600021, "node": "alice", "event": "bogus", "id": "N-1"}))
    _, suite = _junit(capsys, "corda", log)
    case = next(c for c in suite.iter("testcase") if c.get("name") == "input")
    assert f"{log}:{line} field event:" in case.find("failure").text


def test_a_report_with_unreadable_lines_but_no_input_rule_fails_in_junit():
    report = Report(protocol="x", profile="spec", inputs=["a.jsonl"], records=5, unreadable=3,
                    input_problems=[InputProblem("a.jsonl", 7, "not JSON", None)], rules={"X-A-001": "strict"})
    report.decide()
    suite = ET.fromstring(render_junit(report))
    assert suite.get("failures") == "1"
    text = suite.find("testcase[@name='input']/failure")
    assert "3 line(s) could not be read" in text.get("message")
    assert "a.jsonl:7: not JSON" in text.text
    assert "2 more" in text.text


def test_remp_lists_unreadable_lines_once(tmp_path, capsys):
    """REMP counts unreadable lines against its own rule (REMP-INPUT-001), which fails: no second case."""
    log = tmp_path / "remp.jsonl"
    _with_bad_line(REMP_LOG, log, "{not json")
    _, suite = _junit(capsys, "remp", log)
    assert [c for c in suite.iter("testcase") if c.get("name") == "input"] == []
    assert suite.find("testcase[@name='REMP-INPUT-001']/failure") is not None


def test_a_clean_log_has_no_input_case(capsys):
    code, suite = _junit(capsys, "rmb", RMB_LOG)
    assert code == 0
    assert [c for c in suite.iter("testcase") if c.get("name") == "input"] == []
