"""The command line as a user meets it: help, version, formats, exit codes."""

import json
from xml.etree import ElementTree as ET

import pytest

from conftest import FIXTURES, REPO
from rmkit import __version__
from rmkit.cli import main

RULES = FIXTURES / "rules"
CLEAN = str(RULES / "spec" / "clean-happy.jsonl")
REPLAY = str(RULES / "spec" / "REMP-REPLAY-002.jsonl")
LIVE_EVER = str(RULES / "ever-node" / "REMP-LIVE-001.jsonl")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"rmkit {__version__}"


@pytest.mark.parametrize("argv", [[], ["check"], ["explain"], ["spec"], ["spec", "diagram"], ["spec", "docs"], ["simulate"]])
def test_every_command_explains_itself(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(argv + ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: rmkit" in out and len(out) > 200


def test_check_help_documents_exit_codes_and_protocol_options(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = capsys.readouterr().out
    for text in ("exit codes:", "--lifetime", "--horizon", "--validators", "--profile", "junit", "Kafka dump"):
        assert text in out


def test_no_command_prints_help_and_exits_2(capsys):
    code, out, _ = run(capsys)
    assert code == 2 and "usage: rmkit" in out


def test_clean_log_passes_with_exit_0(capsys):
    code, out, _ = run(capsys, "check", CLEAN)
    assert code == 0
    assert "PASS" in out and "REMP-REPLAY-002" in out  # the per-rule table lists every rule


def test_violations_exit_1_and_cite_rule_lines_and_advice(capsys):
    code, out, _ = run(capsys, "check", REPLAY)
    assert code == 1
    assert "FAIL" in out and "REMP-REPLAY-002" in out
    assert "REMP-REPLAY-002.jsonl:13" in out and "REMP-REPLAY-002.jsonl:14" in out
    assert "what to do:" in out


def test_non_strict_passes_unless_strict(capsys):
    code, out, _ = run(capsys, "check", "--profile", "ever-node", LIVE_EVER)
    assert code == 0 and "NON-STRICT" in out
    code, _, _ = run(capsys, "check", "--profile", "ever-node", "--strict", LIVE_EVER)
    assert code == 1


def test_json_report_shape(capsys, tmp_path):
    out_file = tmp_path / "r.json"
    code, _, err = run(capsys, "check", REPLAY, "--format", "json", "--out", str(out_file))
    assert code == 1 and "report written" in err
    doc = json.loads(out_file.read_text())
    assert list(doc)[:8] == ["verdict", "protocol", "profile", "receipts", "messages", "violations", "counts", "metrics"]
    assert doc["verdict"] == "fail" and doc["counts"] == {"REMP-REPLAY-002": 1}
    (v,) = doc["violations"]
    assert set(v) >= {"rule", "severity", "message_id", "explanation", "evidence"}
    assert [e["line"] for e in v["evidence"]] == [13, 14]
    assert {"line", "kind", "source_id"} <= set(v["evidence"][0])


def test_junit_has_one_case_per_rule(capsys):
    code, out, _ = run(capsys, "check", REPLAY, "--format", "junit")
    suite = ET.fromstring(out)
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    from rmkit.conformance.remp.model import model_for

    assert set(cases) == {r.id for r in model_for("spec").rules}
    assert cases["REMP-REPLAY-002"].find("failure") is not None
    assert cases["REMP-REPLAY-001"].find("failure") is None
    assert suite.get("failures") == "1"


def test_unreadable_and_missing_inputs_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\n" + open(CLEAN).read())
    code, out, _ = run(capsys, "check", str(bad))
    assert code == 2 and "bad.jsonl:1" in out
    code, _, err = run(capsys, "check", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "no such file" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, _ = run(capsys, "check", str(empty))
    assert code == 2 and "nothing was checked" in out


def test_usage_errors_exit_2(capsys):
    code, _, err = run(capsys, "check", "--profile", "nope", CLEAN)
    assert code == 2 and "expected one of: spec, ever-node" in err
    code, _, err = run(capsys, "check", "--protocol", "zmq", CLEAN)
    assert code == 2 and "unknown protocol" in err
    with pytest.raises(SystemExit) as e:  # argparse's own usage error
        main(["check", "--lifetime", "-5", CLEAN])
    assert e.value.code == 2 and "--lifetime" in capsys.readouterr().err


def test_lifetime_option_changes_the_expiry_bound(capsys):
    fixture = str(RULES / "spec" / "REMP-EXPIRY-001.jsonl")
    assert run(capsys, "check", fixture)[0] == 1
    assert run(capsys, "check", "--lifetime", "300", fixture)[0] == 0


def test_explain_and_list(capsys):
    code, out, _ = run(capsys, "explain", "REMP-EXPIRY-001")
    assert code == 0 and "mc_catchain_lifetime" in out and "example" in out and "-> REMP-EXPIRY-001" in out
    code, out, _ = run(capsys, "explain", "list")
    assert code == 0 and out.count("REMP-") >= 20
    code, _, err = run(capsys, "explain", "REMP-NOPE-001")
    assert code == 2 and "unknown rule" in err


def test_spec_commands(capsys, tmp_path):
    assert run(capsys, "spec", "validate")[0] == 0
    code, out, _ = run(capsys, "spec", "diagram", "--profile", "ever-node")
    assert code == 0 and out.startswith("digraph")
    dot = tmp_path / "d.dot"
    assert run(capsys, "spec", "diagram", "-o", str(dot))[0] == 0 and dot.read_text().startswith("digraph")
    assert run(capsys, "spec", "docs", "--check", str(REPO / "spec" / "remp" / "README.md"))[0] == 0
    stale = tmp_path / "stale.md"
    stale.write_text("old")
    assert run(capsys, "spec", "docs", "--check", str(stale))[0] == 1
    code, out, _ = run(capsys, "protocols")
    assert code == 0 and any(line.startswith("remp:") for line in out.splitlines())


def test_simulate_writes_a_log_that_passes(capsys, tmp_path):
    out = tmp_path / "sim.jsonl.gz"
    code, _, err = run(capsys, "simulate", "--messages", "40", "--seed", "5", "-o", str(out))
    assert code == 0 and "receipts" in err
    assert run(capsys, "check", str(out))[0] == 0
    dump = tmp_path / "dump.jsonl"
    code, _, _ = run(capsys, "simulate", "--profile", "ever-node", "--kafka", "--receipts", "300", "-o", str(dump))
    assert code == 0 and len(dump.read_text().splitlines()) == 300
    assert '"topic"' in dump.read_text().splitlines()[0]


def test_diagram_formats_other_than_dot_need_graphviz(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` here
    code, _, err = run(capsys, "spec", "diagram", "-o", str(tmp_path / "d.svg"))
    assert code == 2 and "apt-get install graphviz" in err
