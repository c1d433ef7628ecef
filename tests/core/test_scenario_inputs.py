"""`rmkit replay --protocol rmb|corda` on damaged scenario files: every value of a wrong type, out
of range or nested too deep is the file's error (exit 2 naming the file and the field) before the
implementation is started, never an internal error and never a verdict on the implementation."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmkit.cli import main
from rmkit.jsondoc import MAX_NESTING, document_problem

RMB = {"format": "rmkit-rmb-scenario/1", "protocol": "rmb", "profile": "spec",
       "acts": [{"act": "send", "dst": ["p2"], "exp": 30, "try": 2}]}
CORDA = {"protocol": "corda", "role": "receiver", "profile": "spec", "steps": [["arrive", 0, False], ["deliver"]]}


def _send(**fields):
    return {**RMB, "acts": [{**RMB["acts"][0], **fields}]}


def _steps(*steps):
    return {**CORDA, "steps": list(steps)}


def replay(capsys, tmp_path, protocol: str, text: str):
    path = tmp_path / "scenario.json"
    path.write_text(text)
    started = tmp_path / "started"
    code = main(["replay", "--protocol", protocol, str(path), "--impl-cmd", f"sh -c 'touch {started}; exec cat >/dev/null'"])
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    assert not started.exists(), "the implementation was started for a file that cannot be replayed"
    return code, err, str(path)


@pytest.mark.parametrize("doc, field", [
    ({**RMB, "acts": [{"act": ["send"]}]}, "acts[0].act"),
    ({**RMB, "acts": [{"act": {"send": 1}}]}, "acts[0].act"),
    (_send(dst=[["p2"]]), "acts[0].dst[0]"),
    (_send(dst={"p2": 1}), "acts[0].dst"),
    (_send(dst="p2"), "acts[0].dst"),
    (_send(exp=10 ** 30), "acts[0].exp"),  # was replayed, then blamed on the daemon (RMB-FWD-001)
    (_send(exp=86401), "acts[0].exp"),
    (_send(exp=-1), "acts[0].exp"),
    (_send(exp=1.5), "acts[0].exp"),
    (_send(**{"try": 10 ** 6}), "acts[0].try"),
    (_send(age=10 ** 9), "acts[0].age"),
    (_send(answers={"p2": "accept"}), "acts[0].answers.p2"),
    (_send(answers={"p2": [["accept"]]}), "acts[0].answers.p2[0]"),
    (_send(replies={"p2": {"good": 1}}), "acts[0].replies.p2"),
    ({**RMB, "acts": [{"act": "remote", "variant": ["good"]}]}, "acts[0].variant"),
    ({**RMB, "acts": [{"act": "remote", "variant": "good", "reply_answers": "accept"}]}, "acts[0].reply_answers"),
    ({**RMB, "profile": ["spec"]}, "profile"),
    ({**RMB, "acts": {"0": RMB["acts"][0]}}, "acts"),
    ({**RMB, "acts": [RMB["acts"][0]] * 101}, "acts"),
    ({k: v for k, v in RMB.items() if k != "acts"}, "acts"),
    ({**RMB, "actz": []}, "actz"),
])
def test_rmb_scenario_values_of_a_wrong_type_or_range_name_file_and_field(capsys, tmp_path, doc, field):
    code, err, path = replay(capsys, tmp_path, "rmb", json.dumps(doc, indent=1))
    assert code == 2 and f"{path}:" in err and f"field {field}: " in err, err


@pytest.mark.parametrize("doc, field", [
    (_steps([["arrive"], 0, False]), "steps[0][0]"),
    (_steps([{"arrive": 0}]), "steps[0][0]"),
    (_steps({"arrive": 0}), "steps[0]"),
    (_steps(["arrive", 10 ** 30, False]), "steps[0][1]"),
    (_steps(["arrive", -1, False]), "steps[0][1]"),
    (_steps(["arrive", 0, False, 1]), "steps[0]"),
    (_steps(["arrive", 0, "no"]), "steps[0][2]"),
    ({**CORDA, "role": ["receiver"]}, "role"),
    ({**CORDA, "profile": {"spec": 1}}, "profile"),
    ({**CORDA, "steps": "deliver"}, "steps"),
    ({**CORDA, "stepz": []}, "stepz"),
])
def test_corda_scenario_values_of_a_wrong_type_or_range_name_file_and_field(capsys, tmp_path, doc, field):
    code, err, path = replay(capsys, tmp_path, "corda", json.dumps(doc))
    assert code == 2 and f"FILE {path}: {field}: " in err, err


@pytest.mark.parametrize("protocol", ["rmb", "corda"])
@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,       # past orjson's limit: not JSON
    json.dumps(RMB)[:-1] + ', "x": ' + "[" * 500 + "]" * 500 + "}",  # within it, past the format's
    "\ufeff" + "{",
    "",
    "\x00\xff",
])
def test_deep_nesting_and_broken_json_are_the_files_error(capsys, tmp_path, protocol, text):
    code, err, path = replay(capsys, tmp_path, protocol, text)
    assert code == 2 and path in err, err


def test_a_bom_is_read_past_as_check_reads_it():
    from rmkit.jsondoc import read_json_document

    import tempfile, os

    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as f:
        f.write(b"\xef\xbb\xbf" + json.dumps(CORDA).encode())
    try:
        assert read_json_document(f.name)[0] == CORDA
    finally:
        os.unlink(f.name)


def test_nesting_is_found_without_recursion():
    deep = []
    for _ in range(50_000):
        deep = [deep]
    where, what, _ = document_problem({"acts": deep}, "rmb-scenario")
    assert where.startswith("acts[0]") and f"deeper than {MAX_NESTING}" in what


# the schema must take every scenario the kit itself writes
@pytest.mark.parametrize("profile", ["spec", "rmb-rs-v1", "rmb-go"])
def test_every_catalogue_scenario_of_rmb_passes_its_schema(profile):
    from rmkit.conformance.rmb.driven.scenario import FORMAT, catalogue

    for sc in catalogue(profile, profile == "rmb-go"):
        doc = {"format": FORMAT, "protocol": "rmb", "id": sc.id, "profile": sc.profile, "title": sc.title, "acts": sc.acts,
               "failure": {"rule": "X"}}
        assert document_problem(doc, "rmb-scenario") is None, sc.title


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_generated_scenarios_pass_their_schemas(data):
    from rmkit.conformance.corda.driven import bridge
    from rmkit.conformance.corda.driven.suite import scenarios
    from rmkit.conformance.rmb.driven.scenario import FORMAT, scenario_strategy

    acts = data.draw(scenario_strategy(data.draw(st.booleans()), max_acts=5))
    assert document_problem({"format": FORMAT, "profile": "spec", "acts": acts}, "rmb-scenario") is None, acts
    steps = data.draw(scenarios(30))   # a topology first, several times in 60
    assert document_problem({"protocol": "corda", "role": "receiver", "profile": "spec", "steps": [list(s) for s in steps]},
                            "corda-scenario") is None, steps
    drawn = [list(s) if isinstance(s, (tuple, list)) else [s] for s in bridge.ACTIONS]
    assert document_problem({"role": "bridge", "profile": "spec", "steps": drawn}, "corda-scenario") is None
