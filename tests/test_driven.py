"""Driven conformance (`rmkit conform`, `rmkit replay`, the pytest plugin): the adapter protocol
matches the reference machines, the reference passes everything, and every faulty example is
found, shrunk, saved and replayed."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import textwrap

import orjson
import pytest

from rmkit.cli import main
from rmkit.conformance.examples import EXAMPLES, LEGAL, profiles_of
from rmkit.conformance.remp.driven import codec
from rmkit.conformance.remp.driven.adapters import ImplementationFailure, InProcessImplementation, ProcessImplementation
from rmkit.conformance.remp.driven.catalogue import catalogue, conformance_spec, requirements, unmet_expectations
from rmkit.conformance.remp.driven.generate import run_generated
from rmkit.conformance.remp.driven.names import default_params
from rmkit.conformance.remp.driven.report import ConformReport, render_html, render_junit
from rmkit.conformance.remp.driven.runner import FAIL, PASS, run_scenario
from rmkit.conformance.remp.driven.scenario import read_scenario, write_scenario
from rmkit.conformance.remp.driven.suite import rules_in_scope
from rmkit.specload import load_protocol_spec
from rmkit.reference_impl.remp import events as ev

PROFILES = ("spec", "ever-node")
REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
PY = sys.executable


def reference(role):
    return InProcessImplementation(REFERENCE, role)


# ---- the adapter protocol is the machines' vocabulary ---------------------------------------------
def test_adapter_vocabulary_matches_the_reference_machines():
    spec = codec.adapter_spec()
    for part in ("events", "outputs"):
        for name, decl in spec[part].items():
            cls = codec.class_of(name)
            if cls is ev.Receipt and part == "outputs":
                assert list(decl["fields"]) == ["receipt"]
                continue
            assert [f.name for f in dataclasses.fields(cls)] == list(decl["fields"]), name
    assert [f.name for f in dataclasses.fields(ev.Receipt)] == list(spec["types"]["Receipt"])
    for role, r in spec["roles"].items():
        assert set(r["events"]) <= set(spec["events"]) and set(r["outputs"]) <= set(spec["outputs"]), role


def test_codec_errors_name_the_type_and_field():
    with pytest.raises(codec.WireError, match=r"CollationRound.max_messages: missing"):
        codec.from_json({"type": "CollationRound", "time": 1}, part="events")
    with pytest.raises(codec.WireError, match=r"Tick.time: expected an integer, found 'x'"):
        codec.from_json({"type": "Tick", "time": "x"}, part="events")
    with pytest.raises(codec.WireError, match=r"msg_id: expected an id of 64 lowercase hex digits"):
        codec.from_json({"type": "MessageFromFullNode", "msg_id": "ABC", "time": 1, "uid": None, "has_body": True}, part="events")


# ---- the catalogue ----------------------------------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES)
def test_catalogue_passes_on_the_reference_and_meets_its_expectations(profile):
    for sc in catalogue(profile):
        res = run_scenario(sc, reference(sc.role))
        assert res.verdict == PASS, sc.id
        assert unmet_expectations(sc, res.expected) == []


def test_every_rule_in_scope_and_every_requirement_has_a_catalogue_scenario():
    named = {rid for sc in conformance_spec()["scenarios"] for rid in sc["checks"]}
    for profile in PROFILES:
        missing = set(rules_in_scope(profile, ("validator", "fullnode", "consumer"))) - named
        assert not missing, f"{profile}: no catalogue scenario checks {sorted(missing)}"
    assert set(requirements()) <= named


def test_catalogue_steps_are_valid_events():
    for sc in catalogue("spec"):
        for e in sc.events:
            codec.from_json(e, part="events")


# ---- faulty implementations are found, legal ones pass --------------------------------------------
FAULTY_CASES = [(n, p) for n in sorted(EXAMPLES) for p in profiles_of(n)]
LEGAL_CASES = [(n, p) for n in sorted(LEGAL) for p in profiles_of(n)]


def _example(name, role):
    return InProcessImplementation(f"rmkit.conformance.examples.{name}:factory", role)


QUICK_FAULTY = {("no_replay_protection", "spec"), ("forgets_at_switch", "spec"), ("ignores_next_set", "ever-node")}


@pytest.mark.parametrize("name,profile", [c if c in QUICK_FAULTY else pytest.param(*c, marks=pytest.mark.slow)
                                          for c in FAULTY_CASES])
def test_generated_scenarios_find_each_faulty_example_and_shrink_it(name, profile):
    role, _ = EXAMPLES[name]
    g = run_generated(role, profile, default_params(role, profile), _example(name, role), max_examples=300, derandomize=True)
    assert g.failing is not None, f"{name}: not found in {g.examples} generated scenarios"
    assert len(g.failing.events) <= 12, f"{name}: shrunk to {len(g.failing.events)} steps"
    res = run_scenario(g.failing, _example(name, role))
    assert res.verdict == FAIL  # the shrunk scenario reproduces on its own
    assert run_scenario(g.failing, reference(role)).verdict == PASS


@pytest.mark.parametrize("name,profile", FAULTY_CASES)
def test_the_catalogue_alone_finds_each_faulty_example(name, profile):
    role, _ = EXAMPLES[name]
    failed = [sc.id for sc in catalogue(profile, [role]) if run_scenario(sc, _example(name, role)).verdict == FAIL]
    assert failed, name


@pytest.mark.parametrize("name,profile", LEGAL_CASES)
def test_each_legal_example_passes_the_catalogue(name, profile):
    role = LEGAL[name][0]
    used: dict = {}
    for sc in catalogue(profile, [role]):
        res = run_scenario(sc, _example(name, role))
        assert res.verdict == PASS, f"{name} ({profile}) fails {sc.id}: {res.failure.summary}"
        for k, v in res.freedoms_used.items():
            used[k] = used.get(k, 0) + v
    assert used, f"{name}: the judge never had to accept a choice of it (it is the reference)"


@pytest.mark.slow
@pytest.mark.parametrize("name,profile", LEGAL_CASES)
def test_each_legal_example_passes_generated_scenarios(name, profile):
    role = LEGAL[name][0]
    g = run_generated(role, profile, default_params(role, profile), _example(name, role), max_examples=100, derandomize=True)
    assert g.failing is None and not g.kit_error, f"{name} ({profile}): {g.message or g.kit_error}"


def test_a_legal_example_passes_generated_scenarios_quickly():
    g = run_generated("validator", "ever-node", default_params("validator", "ever-node"),
                      _example("optimised_validator", "validator"), max_examples=25, derandomize=True)
    assert g.failing is None and not g.kit_error, g.message or g.kit_error


def test_every_freedom_is_used_by_a_legal_example():
    used = set()
    for name, (role, profiles, _) in LEGAL.items():
        for profile in profiles:
            for sc in catalogue(profile, [role]):
                used |= set(run_scenario(sc, _example(name, role)).freedoms_used)
    spec = {f["name"] for f in load_protocol_spec("remp")["freedoms"]["freedoms"]}
    assert spec <= used, f"no legal example exercises {sorted(spec - used)}"


def test_a_breach_says_what_was_found_and_what_was_allowed():
    sc = next(s for s in catalogue("spec", ["fullnode"]) if s.id == "CAT-FN-001")
    res = run_scenario(sc, _example("low_fanout", "fullnode"))
    assert re.search(r"sent [0-9a-f]{8} to 2 of the 7 validators of the current set \(v\d, v\d\)", res.failure.summary)
    assert "at least 3 required" in res.failure.summary and "REMP-FANOUT-002" in {r for r, _ in res.failure.rules}
    sc = next(s for s in catalogue("spec", ["fullnode"]) if s.id == "CAT-FN-005")
    res = run_scenario(sc, _example("ignores_next_set", "fullnode"))
    assert "0 of the 4 validators of the announced next set" in res.failure.summary
    assert [r for r, _ in res.failure.rules][0] == "REMP-CLIENT-003"


def test_a_mismatch_shows_the_fields_that_differ():
    from rmkit.conformance.remp.driven.compare import compare

    a = {"type": "SendToValidator", "validator": "v2", "msg_id": "ab" * 32, "uid": None, "time": 1}
    d = compare([a], [dict(a, validator="v5")])
    assert "validator: expected 'v2', found 'v5'" in d.summary()


def test_expiry_and_lifetime_each_have_a_mutant_that_breaks_only_its_rule():
    from rmkit.conformance.remp.driven.coverage import _Impl, attributed
    from rmkit.conformance.remp.driven.mutants import mutant_for

    sc = next(s for s in catalogue("spec", ["validator"]) if s.id == "CAT-VAL-009")
    life, expiry = mutant_for("REMP-LIFE-001", "spec")[1], mutant_for("REMP-EXPIRY-001", "spec")[1]
    assert life is not expiry
    on_life, on_expiry = run_scenario(sc, _Impl(life, "validator")), run_scenario(sc, _Impl(expiry, "validator"))
    assert attributed(on_life, "REMP-LIFE-001") and not attributed(on_life, "REMP-EXPIRY-001")
    assert attributed(on_expiry, "REMP-EXPIRY-001") and not attributed(on_expiry, "REMP-LIFE-001")
    assert "copies on" in on_life.failure.summary


def test_a_failure_for_another_rule_does_not_cover():
    from rmkit.conformance.remp.driven.coverage import _Impl, attributed
    from rmkit.conformance.remp.driven.mutants import mutant_for

    sc = next(s for s in catalogue("spec", ["validator"]) if s.id == "CAT-VAL-008")  # a hand-over scenario
    res = run_scenario(sc, _Impl(mutant_for("REMP-COLL-001", "spec")[1], "validator"))
    assert res.verdict == FAIL and attributed(res, "REMP-COLL-001") and not attributed(res, "REMP-FWD-001")


def test_a_rule_broken_is_named_with_its_receipts():
    sc = next(s for s in catalogue("spec", ["validator"]) if s.id == "CAT-VAL-006")
    res = run_scenario(sc, InProcessImplementation("rmkit.conformance.examples.non_sticky_final:factory", "validator"))
    assert res.failure.step == 7 and [r for r, _ in res.failure.rules] == ["REMP-SRC-001"]
    assert {s for _, s, _ in res.failure.evidence} == {4, 7}


# ---- the process adapter: every misbehaviour is the implementation's failure ------------------------
def _fake(tmp_path, body: str) -> str:
    script = tmp_path / "impl.py"
    script.write_text(textwrap.dedent("""
        import sys, json, time
        for line in sys.stdin:
            msg = json.loads(line)
            t = msg["type"]
            if t == "hello":
                print(json.dumps({"type": "ready"}), flush=True); continue
            if t == "bye":
                print(json.dumps({"type": "bye"}), flush=True); continue
    """) + textwrap.indent(textwrap.dedent(body), "    "))
    return f"{PY} {script}"


@pytest.mark.parametrize("body,kind,detail", [
    ("sys.stderr.write('boom: stack trace here\\n'); sys.exit(3)\n", "crash", "exit code 3"),
    ("time.sleep(5)\n", "timeout", "no answer within 0.5 s"),
    ("print('not json', flush=True)\n", "malformed", "not JSON"),
    ("print(json.dumps({'type': 'outputs', 'seq': msg['seq'] + 1, 'outputs': []}), flush=True)\n", "wrong-answer", "request"),
    ("print(json.dumps({'type': 'error', 'seq': msg['seq'], 'message': 'cannot'}), flush=True)\n", "error", "cannot"),
    ("print(json.dumps({'type': 'outputs', 'seq': msg['seq'], 'outputs': [{'type': 'Outcome'}]}), flush=True)\n", "malformed", "Outcome"),
])
def test_process_failures_are_reported_with_step_and_bytes(tmp_path, body, kind, detail):
    impl = ProcessImplementation(_fake(tmp_path, body), "validator", timeout=0.5)
    sc = catalogue("spec", ["validator"])[0]
    res = run_scenario(sc, impl)
    impl.close()
    assert res.verdict == FAIL and res.failure.kind == kind and res.failure.step == 1
    assert detail in res.failure.summary
    if kind == "crash":
        assert "boom: stack trace here" in res.failure.stderr


def test_an_implementation_that_cannot_start_is_a_usage_error(capsys):
    code = main(["conform", "--role", "consumer", "--impl-cmd", "/nonexistent/impl ROLE", "--max-examples", "0"])
    assert code == 2 and "cannot start" in capsys.readouterr().err


# ---- the CLI: conform, replay, regressions, reports ------------------------------------------------
def test_reference_adapter_process_passes_the_whole_suite(tmp_path, capsys):
    cmd = f"{PY} -m rmkit.reference_impl.remp.adapter ROLE"
    html = tmp_path / "r.html"
    code = main(["conform", "--impl-cmd", cmd, "--max-examples", "10", "--derandomize", "--timeout", "60", "--regressions", str(tmp_path / "regs"),
                 "--format", "json", "--out", str(tmp_path / "r.json"), "--html", str(html)])
    assert code == 0
    rep = orjson.loads((tmp_path / "r.json").read_bytes())
    assert rep["verdict"] == "pass"
    assert {r["status"] for r in rep["rules"]} == {"pass", "not covered"}
    for r in rep["rules"]:  # a rule not covered says why; a covered one passed on a clean scenario
        assert (r["status"] == "pass") == bool(r["clean"]) and (r["status"] == "pass" or r["why"]), r
    assert "REMP conformance" in html.read_text()


def test_failure_is_saved_and_replayed_first_then_by_rmkit_replay(tmp_path, capsys):
    regs = tmp_path / "regs"
    impl = "rmkit.conformance.examples.no_replay_protection:factory"
    code = main(["conform", "--role", "validator", "--impl", impl, "--max-examples", "100", "--derandomize",
                 "--regressions", str(regs), "--format", "junit", "--out", str(tmp_path / "j.xml")])
    assert code == 1
    saved = sorted(regs.glob("*.jsonl"))
    assert len(saved) == 1
    sc = read_scenario(saved[0])
    assert sc.role == "validator" and sc.events
    assert "<failure" in (tmp_path / "j.xml").read_text()
    capsys.readouterr()
    assert main(["replay", str(saved[0]), "--impl", impl]) == 1
    out = capsys.readouterr().out
    assert "missing BlockRefused" in out and "ShardBlockAccepted" in out
    assert main(["replay", str(saved[0]), "--impl", REFERENCE]) == 0
    # a later run replays it first
    main(["conform", "--role", "validator", "--impl", impl, "--catalogue-only", "--regressions", str(regs)])
    assert "regression: 0/1 scenarios passed" in capsys.readouterr().out


def test_replay_of_an_unreadable_file_names_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "scenario", "role": "validator", "profile": "spec", "params": {}}\nnot json\n')
    assert main(["replay", str(bad), "--impl", REFERENCE]) == 2
    assert "bad.jsonl:2: not JSON" in capsys.readouterr().err


def test_scenario_file_round_trip(tmp_path):
    sc = catalogue("spec", ["fullnode"])[0]
    p = write_scenario(tmp_path / "s.jsonl", sc)
    back = read_scenario(p)
    assert back.events == sc.events and back.params == sc.params and back.checks == sc.checks


def test_a_run_that_checked_nothing_fails():
    rep = ConformReport(implementation="x", profile="spec", roles=["validator"])
    assert rep.verdict == FAIL
    assert "<testsuites>" in render_junit(rep) and "FAIL" in render_html(rep)


def test_pytest_plugin_runs_the_suite_with_rule_ids_in_test_names(tmp_path):
    (tmp_path / "test_nothing.py").write_text("def test_own():\n    pass\n")
    r = subprocess.run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "--rmkit-role", "validator",
                        "--rmkit-impl", "rmkit.conformance.examples.no_replay_protection:factory",
                        "--rmkit-max-examples", "60", "--rmkit-regressions", str(tmp_path / "regs")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout[-2000:]
    assert "FAILED ::rmkit[CAT-VAL-004:REMP-VALID-001" in r.stdout
    assert "PASSED ::rmkit[CAT-VAL-001" in r.stdout and "test_own" in r.stdout
