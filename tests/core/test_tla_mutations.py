"""Every property a model claims can fail and speaks of reachable states: for each property listed
in tla/manifest.json, its mutation (a mechanism of the protocol removed in a copy of the model) is
reported by TLC as a violation of that property, and its witness (an invariant TLC must violate)
shows the states the property is about are reached. The runner itself is checked on a toy model
whose mutations are known to be caught or not."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap

import pytest

from rmkit.cli import main
from rmkit.errors import SpecError
from rmkit.tlc.cfgfile import read_cfg_names
from rmkit.tlc.manifest import load_manifest
from rmkit.tlc.mutations import MUTATION, WITNESS, apply_edits, checks_of, run_check, with_checks
from rmkit.tlc.render import render_result

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java")


def _all_checks():
    out = []
    for model in load_manifest().models:
        for c in checks_of(model, include_slow=True):
            marks = [pytest.mark.slow] if c.slow else []
            out.append(pytest.param(c, id=f"{model.name}-{c.check}-{c.prop.name}-{c.part.config}", marks=marks))
    return out


@pytest.mark.parametrize("check", _all_checks())
def test_mutation_caught_and_witness_reached(check, capsys):
    outcome = run_check(check)
    if outcome.result is not None and check.check == MUTATION:
        with capsys.disabled():
            sys.stdout.write(f"\n--- {check.label}: {check.prop.mutation.what} ---\n")
            sys.stdout.write(render_result(outcome.result, title=check.label, max_traces=1))
    assert outcome.ok, f"{check.label}: {outcome.summary}"


def test_every_model_property_has_a_mutation_and_a_witness():
    """Each name a passing configuration checks (but TypeOK) is a listed property, and each listed
    property is checked by some configuration: none is claimed without a mutation, none listed idle."""
    for model in load_manifest().models:
        if not model.properties:
            continue
        checked = set()
        for cfg in model.configs:
            if not cfg.finding:
                names = read_cfg_names((model.dir / cfg.cfg).read_text())
                checked |= set(names.invariants) | set(names.properties)
        listed = {p.name for p in model.properties}
        assert checked - {"TypeOK"} == listed, model.name


# ---- the runner on a toy model --------------------------------------------------------------------
TOY = """---- MODULE Toy ----
EXTENDS Naturals
VARIABLES x, guard
Init == x = 0 /\\ guard = TRUE
Inc == guard /\\ x < 3 /\\ x' = x + 1 /\\ UNCHANGED guard
Limit == x < 3 => TRUE
Next == Inc \\/ UNCHANGED <<x, guard>>
Spec == Init /\\ [][Next]_<<x, guard>>
TypeOK == x \\in 0..5 /\\ guard \\in BOOLEAN
Bounded == x <= 3
NotAtTop == x < 3
NeverFive == x # 5
====
"""
TOY_CFG = "SPECIFICATION Spec\nINVARIANTS TypeOK Bounded\n"


def _toy(tmp_path, properties):
    root = tmp_path / "tla"
    (root / "toy").mkdir(parents=True, exist_ok=True)
    (root / "toy" / "Toy.tla").write_text(TOY)
    (root / "toy" / "Toy.cfg").write_text(TOY_CFG)
    doc = {"models": [{"name": "toy", "path": "toy", "spec": "Toy.tla", "configs": [
        {"name": "c", "module": "Toy", "cfg": "Toy.cfg", "workers": 1, "runtime": "00:00:05", "result": "success",
         "distinctStates": None, "totalStates": None, "depth": None, "deadlock": False, "slow": False}],
        "properties": properties}]}
    (root / "manifest.json").write_text(json.dumps(doc))
    return root


def _prop(edits, witness="NotAtTop", expect="violation"):
    return {"name": "Bounded", "kind": "invariant", "promises": "x stays at most 3", "adversary": "none",
            "mutation": {"what": "the bound removed", "config": "c", "edits": edits, "expect": expect},
            "witness": {"config": "c", "invariant": witness}}


def _checks(root):
    model = load_manifest(root).model("toy")
    return {c.check: c for c in checks_of(model)}


def test_a_mutation_that_breaks_the_property_is_caught(tmp_path):
    root = _toy(tmp_path, [_prop([{"file": "Toy.tla", "old": "x < 3 /\\ x'", "new": "x < 5 /\\ x'"}])])
    checks = _checks(root)
    assert run_check(checks[MUTATION]).ok
    assert run_check(checks[WITNESS]).ok


def test_a_mutation_that_changes_nothing_the_property_needs_is_not_caught(tmp_path):
    """The runner must fail a mutation TLC does not report: here the edit removes nothing that keeps
    x bounded, and a witness whose states are never reached."""
    root = _toy(tmp_path, [_prop([{"file": "Toy.tla", "old": "Limit == x < 3 => TRUE", "new": "Limit == TRUE"}],
                                 witness="NeverFive")])
    checks = _checks(root)
    mut, wit = run_check(checks[MUTATION]), run_check(checks[WITNESS])
    assert not mut.ok and mut.error is None and "not caught" in mut.summary
    assert not wit.ok and "not reached" in wit.summary


def test_a_mutation_expected_to_deadlock_is_checked_with_deadlock_checking_on(tmp_path):
    """The configuration runs with deadlock checking off; a mutation that expects a deadlock turns
    it on, and only a deadlock counts."""
    root = _toy(tmp_path, [_prop([{"file": "Toy.tla", "old": "Next == Inc \\/ UNCHANGED <<x, guard>>",
                                   "new": "Next == Inc"}], expect="deadlock")])
    out = run_check(_checks(root)[MUTATION])
    assert out.ok and "deadlock" in out.summary, out.summary
    root = _toy(tmp_path, [_prop([{"file": "Toy.tla", "old": "x < 3 /\\ x'", "new": "x < 5 /\\ x'"}], expect="deadlock")])
    assert not run_check(_checks(root)[MUTATION]).ok


def test_an_edit_whose_text_is_not_found_once_is_an_error(tmp_path):
    root = _toy(tmp_path, [_prop([{"file": "Toy.tla", "old": "x", "new": "y"}])])
    out = run_check(_checks(root)[MUTATION])
    assert not out.ok and "found it" in out.error
    with pytest.raises(SpecError, match="found no Nope.tla"):
        apply_edits(root / "toy", tmp_path, [type("E", (), {"file": "Nope.tla", "old": "a", "new": "b"})()])


def test_the_manifest_rejects_a_mutation_of_an_unknown_config(tmp_path):
    p = _prop([{"file": "Toy.tla", "old": "x < 3 /\\ x'", "new": "x < 5 /\\ x'"}])
    p["mutation"]["config"] = "nope"
    with pytest.raises(SpecError, match="mutation.config"):
        load_manifest(_toy(tmp_path, [p]))
    p["mutation"]["config"], p["mutation"]["expect"] = "c", "maybe"
    with pytest.raises(SpecError, match="mutation.expect"):
        load_manifest(_toy(tmp_path, [p]))


def test_with_checks_replaces_every_check_section():
    text = textwrap.dedent("""\
        CONSTANTS a = 1
        INVARIANTS A
            B
        PROPERTY P
        SYMMETRY S
        """)
    assert with_checks(text, ["W"]) == "CONSTANTS a = 1\nSYMMETRY S\nINVARIANTS W\n"
    assert with_checks(text, ["TypeOK"], ["L"]).endswith("INVARIANTS TypeOK\nPROPERTIES L\n")


def test_cli_runs_the_mutations_and_fails_one_not_caught(tmp_path, monkeypatch, capsys):
    root = _toy(tmp_path, [_prop([{"file": "Toy.tla", "old": "Limit == x < 3 => TRUE", "new": "Limit == TRUE"}])])
    monkeypatch.setenv("RMKIT_TLA_DIR", str(root))
    assert main(["tlc", "--mutations", "toy", "--progress", "none"]) == 1
    out = capsys.readouterr().out
    assert "FAILED toy: mutation of Bounded" in out and "ok     toy: witness of Bounded" in out
    assert main(["tlc", "--mutations", "toy", "--property", "Nope", "--progress", "none"]) == 2
    capsys.readouterr()
    assert main(["tlc", "--list"]) == 0
    assert "(1 entries; rmkit tlc --mutations toy): Bounded" in capsys.readouterr().out
