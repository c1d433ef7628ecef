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
    # rules that held are counted, not listed (the first violation is not behind 34 rows of zeros)
    assert "PASS" in out and "REMP-REPLAY-002" not in out and "rules not listed: no violation" in out
    code, out, _ = run(capsys, "check", "--all-rules", CLEAN)
    assert code == 0 and "REMP-REPLAY-002" in out and "rules not listed" not in out  # every rule, on demand


def test_text_report_says_how_many_more_violations_than_shown(tmp_path, capsys):
    """The text report shows five violations a rule; it said nothing of the others."""
    planted = (FIXTURES / "rules" / "spec" / "REMP-FANOUT-001.jsonl").read_text()
    mid = json.loads(planted.splitlines()[0])["message_id"]
    # the fixture's one message (sent to more validators than there are) eight times, under eight ids
    log = tmp_path / "many.jsonl"
    log.write_text("".join(planted.replace(mid, f"{i:02x}" + mid[2:]) for i in range(8)))
    code, out, _ = run(capsys, "check", "--format", "json", str(log))
    assert json.loads(out)["counts"]["REMP-FANOUT-001"] == 8
    code, out, _ = run(capsys, "check", str(log))
    assert out.count("REMP-FANOUT-001 [") == 5 and "... 3 more REMP-FANOUT-001 violation(s)" in out, out


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
    from rmkit.protocols.remp.model import model_for

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


def test_simulate_refuses_options_it_would_ignore(capsys, tmp_path):
    # stdout holds one log: the multi-file options would be dropped without a word
    for extra in (["--violations", "0.5"], ["--files", "2"], ["--jobs", "2"], ["--gzip"]):
        code, out, err = run(capsys, "simulate", "--messages", "30", *extra, "-o", "-")
        assert code == 2 and extra[0] in err and "multi-file" in err and out == ""
    # a key set decides each session's validators: --validators would be ignored
    assert run(capsys, "keys", "gen", "--validators", "4", "--sessions", "6", "--seed", "v", "--out", str(tmp_path / "k"))[0] == 0
    code, _, err = run(capsys, "simulate", "--keys", str(tmp_path / "k"), "--validators", "5", "-o", str(tmp_path / "x.jsonl"))
    assert code == 2 and "--validators" in err and not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_simulate_lifetimes_are_those_its_logs_pass_at(capsys, tmp_path, profile):
    from rmkit.reference_impl.remp.simulator import shortest_lifetime_s

    shortest = shortest_lifetime_s(profile)
    code, _, err = run(capsys, "simulate", "--profile", profile, "--lifetime", str(shortest - 1), "-o", str(tmp_path / "a.jsonl"))
    assert code == 2 and f"{shortest}..3600" in err
    # at the shortest lifetime a clean simulation still passes the spec's earliest Timeout (REMP-EXPIRY-002)
    for seed in ("1", "2", "3"):
        log = tmp_path / f"s{seed}.jsonl"
        assert run(capsys, "simulate", "--profile", profile, "--seed", seed, "--messages", "400",
                   "--lifetime", str(shortest), "-o", str(log))[0] == 0
        code, out, _ = run(capsys, "check", "--profile", profile, "--lifetime", str(shortest), "--format", "json", str(log))
        assert code == 0, [v["rule"] for v in json.loads(out)["violations"]][:5]


@pytest.mark.parametrize("form", ["file", "directory"])
def test_simulate_with_an_unfit_key_set_is_an_input_error_and_leaves_no_partial_log(capsys, tmp_path, form):
    assert run(capsys, "keys", "gen", "--validators", "3", "--full-nodes", "0", "--seed", "k", "--out", str(tmp_path / "nofn"))[0] == 0
    assert run(capsys, "keys", "gen", "--validators", "3", "--sessions", "1", "--seed", "k", "--out", str(tmp_path / "one"))[0] == 0
    for keys, messages, said in (("nofn", "20", "no full node key"), ("one", "3000", "generate more")):
        out = tmp_path / (f"{keys}.jsonl" if form == "file" else f"{keys}-dir/")
        code, _, err = run(capsys, "simulate", "--keys", str(tmp_path / keys), "--messages", messages, "-o", str(out))
        assert code == 2 and err.startswith("rmkit: error: --keys") and said in err and "internal error" not in err
        if form == "file":
            assert sorted(p.name for p in tmp_path.iterdir()) == ["nofn", "one"]  # no log, no partial file
        else:
            assert not out.exists() or not list(out.iterdir())


def test_a_file_written_whole_keeps_the_old_one_until_done_and_streams_to_devices(tmp_path):
    from rmkit.reference_impl.remp.dump import write_jsonl

    log = tmp_path / "l.jsonl"
    log.write_text("old\n")

    def failing():
        yield {"a": 1}
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError):
        write_jsonl(str(log), failing())
    assert log.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["l.jsonl"]
    assert write_jsonl(str(log), [{"a": 1}]) == 1 and log.read_text() == '{"a":1}\n'
    assert write_jsonl("/dev/null", [{"a": 1}]) == 1


def test_output_under_a_file_says_it_is_a_file(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    code, _, err = run(capsys, "simulate", "-o", str(tmp_path / "f" / "x.jsonl"))
    assert code == 2 and "is a file, not a folder" in err


def test_spec_docs_check_of_a_file_that_is_not_utf8_is_out_of_date(capsys, tmp_path):
    odd = tmp_path / "bin.md"
    odd.write_bytes(b"\xff\xfe")
    code, _, err = run(capsys, "spec", "docs", "--check", str(odd))
    assert code == 1 and "out of date" in err


def test_diagram_suffix_is_checked_before_graphviz(capsys, tmp_path):
    for name in ("d.txt", "d"):
        code, _, err = run(capsys, "spec", "diagram", "-o", str(tmp_path / name))
        assert code == 2 and "expected a file ending in .dot" in err and "Graphviz `dot` program" not in err


@pytest.mark.parametrize("rule,judged", [("CORDA-ID-002", "no check yet"),
                                         ("CORDA-BRIDGE-001", "rmkit conform --protocol corda --role bridge judges it"),
                                         ("CORDA-QUEUE-001", "no check yet")])
def test_explain_says_why_a_corda_rule_has_no_log_example(capsys, rule, judged):
    """Where a rule is judged comes from the spec (rules.yaml's driven / judged_elsewhere)."""
    code, out, _ = run(capsys, "explain", rule)
    assert code == 0 and "not checked from logs" in out and judged in out, out
