"""The exit-code contract of every command: 0 pass, 1 violations, 2 the tool could not do its job.
Each test is one path that once ended in a traceback (and exit 1) or in a pass it did not earn."""

import gzip
import sys

import pytest

from conftest import FIXTURES
from rmkit.cli import build_parser, main
from rmkit.guard import CONTRACT

CLEAN = str(FIXTURES / "rules" / "spec" / "clean-happy.jsonl")


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's usage errors and --help
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def no_traceback(err: str) -> bool:
    return "Traceback" not in err


# -- the contract itself ----------------------------------------------------------------------
def _all_parsers(parser, path=()):
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _all_parsers(sub, path + (name,))


def test_every_help_states_the_contract():
    for path, parser in _all_parsers(build_parser()):
        text = parser.format_help()
        assert "exit codes" in text, path
        if not path:
            assert CONTRACT in text


def test_internal_error_is_one_line_and_exit_2(capsys, monkeypatch):
    from rmkit.conformance.remp import checker

    def boom(*a, **k):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(checker.RempLogChecker, "run", boom)
    code, _, err = run(capsys, "check", CLEAN)
    assert code == 2 and no_traceback(err)
    assert "internal error (ZeroDivisionError: planted); please report it with the command line" in err
    code, _, err = run(capsys, "--debug", "check", CLEAN)
    assert code == 2 and "Traceback" in err and "ZeroDivisionError" in err


def test_missing_optional_dependency_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    code, _, err = run(capsys, "audit", CLEAN)
    assert code == 2 and no_traceback(err)
    assert "pyspark" in err and "pip install 'rmkit[spark]'" in err


@pytest.mark.parametrize("argv", [
    ["check", "--lifetime", "nan", CLEAN], ["check", "--horizon", "inf", CLEAN], ["check", "--lifetime=-inf", CLEAN],
    ["tlc", "--timeout", "inf"], ["tlc", "--timeout", "nan"],
    ["conform", "--impl-cmd", "x", "--timeout", "nan"], ["conform", "--impl-cmd", "x", "--time-budget", "inf"],
    ["replay", CLEAN, "--impl-cmd", "x", "--timeout", "inf"],
    ["simulate", "-o", "-", "--lifetime", "nan"], ["simulate", "-o", "-", "--violations", "inf"],
    ["audit", CLEAN, "--lifetime", "nan"],
])
def test_non_finite_numbers_are_usage_errors(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and no_traceback(err) and "finite" in err


# -- outputs are checked before the work ------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["check", "--out", "{missing}/r.json", CLEAN],
    ["check", "--format", "junit", "--out", "{tmp}", CLEAN],
    ["conform", "--impl-cmd", "true", "--out", "{missing}/r.txt"],
    ["conform", "--impl-cmd", "true", "--html", "{missing}/r.html"],
    ["spec", "docs", "-o", "{missing}/docs.md"],
    ["spec", "diagram", "-o", "{missing}/d.dot"],
    ["simulate", "--messages", "3", "-o", "{missing}/sim.jsonl"],
    ["tlc", "--trace-out", "{missing}/t.json"],
    ["tlc", "--out", "{file}"],
    ["audit", "--out", "{file}", CLEAN],
    ["keys", "gen", "--validators", "3", "--out", "{file}"],
    ["receipt", "encode", CLEAN, "-o", "{missing}/x.hex"],
])
def test_unwritable_outputs_exit_2_before_work(capsys, tmp_path, argv):
    f = tmp_path / "a-file"
    f.write_text("x")
    argv = [a.format(missing=tmp_path / "missing", tmp=tmp_path, file=f) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and no_traceback(err), err
    assert "cannot" in err or "expected a" in err
    assert not (tmp_path / "missing").exists()


# -- check ------------------------------------------------------------------------------------
def test_gzip_on_stdin_is_recognised_by_its_magic_bytes(capsys, monkeypatch):
    import io

    data = gzip.compress(open(CLEAN, "rb").read())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run(capsys, "check", "-")
    assert code == 0 and "PASS" in out, out + err


def test_truncated_gzip_reports_what_it_read(capsys, tmp_path):
    data = gzip.compress(open(CLEAN, "rb").read() * 20)
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(data[: len(data) * 2 // 3])
    code, out, err = run(capsys, "check", "--format", "json", str(p))
    assert code == 2 and no_traceback(err)
    import json

    doc = json.loads(out)
    assert doc["receipts"] > 0 and doc["verdict"] == "fail"
    assert any("truncated" in p["error"] or "end-of-stream" in p["error"] for p in doc["input_problems"])
