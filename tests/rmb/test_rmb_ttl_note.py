"""A backlog-set's note states the TTL the daemon set (``ttl N s``, N whole seconds): a note in
another form is a line the checker cannot read (named by file, line and field, exit 2, the other
lines still checked), never read as if the TTL were exp, which would pass a wrong TTL unseen."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rmkit.cli import main

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "rmb" / "logs" / "spec"
BACKLOG_LINE = 2  # twin-1's line 2: a backlog-set of a request with exp 30


def _logs_with_note(tmp_path: Path, note) -> Path:
    """A copy of the spec profile's clean logs, twin-1's backlog-set note replaced by ``note``."""
    folder = tmp_path / "logs"
    shutil.copytree(LOGS, folder)
    twin = folder / "twin-1.jsonl"
    lines = twin.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[BACKLOG_LINE - 1])
    assert rec["event"] == "backlog-set" and rec["message"]["exp"] == 30
    rec["note"] = note
    lines[BACKLOG_LINE - 1] = json.dumps(rec)
    twin.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _check_json(capsys, folder: Path) -> tuple[int, dict]:
    code = main(["check", "--protocol", "rmb", "--format", "json", "--directory", str(folder / "directory.json"),
                 *sorted(str(p) for p in folder.glob("*.jsonl"))])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("note", ["ttl -5 s", "ttl 5.0 s", "ttl 30 s extra", "TTL 30 s", "ttl 30s", " ttl 30 s",
                                  "ttl  30 s", "kept 30 s", "", "ttl 30 s\n"])
def test_a_note_not_in_the_ttl_form_is_an_input_problem_naming_file_line_and_field(tmp_path, capsys, note):
    folder = _logs_with_note(tmp_path, note)
    code, report = _check_json(capsys, folder)
    assert code == 2
    problems = [(Path(p["file"]).name, p["line"], p["field"]) for p in report["input_problems"]]
    assert problems == [("twin-1.jsonl", BACKLOG_LINE, "note")]
    assert "ttl N s" in report["input_problems"][0]["error"]
    assert report["receipts"] > 0  # the run went on: every other line was read


def test_a_wrong_ttl_in_the_right_form_is_a_violation(tmp_path, capsys):
    code, report = _check_json(capsys, _logs_with_note(tmp_path, "ttl 5 s"))
    assert code == 1
    assert report["counts"].get("RMB-BACKLOG-001") == 1
    assert report["input_problems"] == []


@pytest.mark.parametrize("note", ["ttl 30 s", None])
def test_the_ttl_of_exp_or_no_note_passes(tmp_path, capsys, note):
    """No note: the log does not say the TTL, which is then taken as exp (the rule's expectation)."""
    code, report = _check_json(capsys, _logs_with_note(tmp_path, note))
    assert (code, report["verdict"], report["input_problems"]) == (0, "pass", [])
