"""The TLA+ model of REMP (tla/remp): its tables come from the spec, TLC checks its configurations
to the figures of tla/manifest.json, and each safety property is shown not to be vacuous by a
broken copy of one action that TLC must catch."""

from __future__ import annotations

import shutil

import pytest

from rmkit.conformance.remp.tla_tables import render
from rmkit.tlc import run_tlc
from rmkit.tlc.manifest import load_manifest

from conftest import REPO

MODEL_DIR = REPO / "tla" / "remp"


def test_tables_module_is_generated_from_the_spec():
    committed = (MODEL_DIR / "REMPTables.tla").read_text()
    assert committed == render(), "tla/remp/REMPTables.tla is stale: run `make tla-tables`"


def test_tables_carry_the_spec_thresholds():
    text = render()
    assert "FanoutMin(N) == (N * 1) \\div 3 + 1" in text
    assert "StopCollationRejected(N) == (N * 2 + 2) \\div 3" in text
    assert "ObsoleteAfterSessions == 2" in text


def _config(name):
    model = load_manifest().model("remp")
    return model, model.config(name)


@pytest.mark.parametrize("name", ["small", "handover", "live"])
def test_configuration_checks_to_the_manifest_figures(name):
    model, cfg = _config(name)
    result = run_tlc(model.dir, cfg.module, cfg.cfg, workers=cfg.workers, deadlock_check=cfg.deadlock)
    assert result.verdict == "pass", result.error or result.counterexamples
    assert result.complete
    assert result.distinct_states == cfg.distinct_states
    assert result.total_states == cfg.total_states


@pytest.mark.slow
def test_deep_configuration_checks_to_the_manifest_figures():
    model, cfg = _config("deep")
    result = run_tlc(model.dir, cfg.module, cfg.cfg, workers=cfg.workers, deadlock_check=cfg.deadlock)
    assert result.verdict == "pass", result.error or result.counterexamples
    assert result.distinct_states == cfg.distinct_states


def test_no_states_folder_left_in_the_model_folder():
    assert not (MODEL_DIR / "states").exists()
    assert sorted(p.name for p in MODEL_DIR.iterdir() if p.suffix not in (".tla", ".cfg", ".md")) == []


# ---- mutations: each breaks one step of the protocol; TLC must report the property it protects ----
MUTATIONS = {
    # validation no longer refuses a block holding an accepted message, nor a superseded candidate
    "NoReplay": [("    /\\ blocks[b].h = Height        \\* and before another block of its round is accepted\n    /\\ ~Refused(b)\n", "")],
    # the collator no longer looks at a message's lifetime, and expiry keeps queued messages
    "NoInclusionAfterExpiry": [("    /\\ LiveIn(sub[m], session)\n    /\\ e.queued", "    /\\ e.queued"),
                               ("    ELSE IF ~e.rec \\/ e.gone \\/ LiveIn(sub[m], new) THEN e", "    ELSE IF TRUE THEN e")],
    # the masterchain commits a candidate the shardchain never accepted
    "FinalizedNeedsAcceptedBlock": [('McCommit(b) ==\n    /\\ blocks[b].st = "accepted"',
                                     'McCommit(b) ==\n    /\\ blocks[b].st \\in {"accepted", "candidate"}')],
    # the collator puts a message it rejected into the block anyway
    "OutcomeConsistent": [('        A == {m \\in taken : res[m] = "acc"}', '        A == {m \\in taken : res[m] \\in {"acc", "rej"}}')],
    # receipts no longer follow the spec's transition table
    "FinalSticky": [("Emit(e, kind) == IF e.pos \\in VFrom[kind] THEN [e EXCEPT !.pos = VTo[kind]] ELSE e",
                     "Emit(e, kind) == [e EXCEPT !.pos = VTo[kind]]")],
    # pending messages are no longer handed over at a session switch
    "ForwardedAtSwitch": [('    ELSE {[k |-> "new", m |-> m] : m \\in {m \\in Msgs : Pending(vs[v][m]) /\\ LiveIn(sub[m], new)}}\n         \\cup',
                           '    ELSE')],
}

PROPERTIES = {"FinalSticky", "ForwardedAtSwitch"}
# the configuration in which each mutation is checked (a hand-over needs a set that changes)
MUTATION_CFG = {"ForwardedAtSwitch": "MCREMP_handover.cfg"}


def _mutant_folder(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    for f in MODEL_DIR.glob("*.tla"):
        shutil.copy(f, folder / f.name)
    spec = (folder / "REMP.tla").read_text()
    for old, new in MUTATIONS[name]:
        assert spec.count(old) == 1, f"mutation of {name} no longer applies: {old!r}"
        spec = spec.replace(old, new)
    (folder / "REMP.tla").write_text(spec)
    cfg = (MODEL_DIR / MUTATION_CFG.get(name, "MCREMP.cfg")).read_text()
    lines = [ln for ln in cfg.splitlines() if not ln.startswith(("INVARIANTS", "PROPERTIES"))]
    lines.append(("PROPERTIES " if name in PROPERTIES else "INVARIANTS ") + name)
    (folder / "MCREMP.cfg").write_text("\n".join(lines) + "\n")
    return folder


def test_every_safety_property_has_a_mutation():
    cfg = (MODEL_DIR / "MCREMP.cfg").read_text()
    checked = {w for ln in cfg.splitlines() if ln.startswith(("INVARIANTS", "PROPERTIES")) for w in ln.split()[1:]}
    assert checked - {"TypeOK"} == set(MUTATIONS)


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_caught(tmp_path, name):
    folder = _mutant_folder(tmp_path, name)
    result = run_tlc(folder, "MCREMP", "MCREMP.cfg", workers=2, deadlock_check=False, timeout=120)
    assert result.verdict == "violation", (result.verdict, result.error)
    assert result.kind == ("property" if name in PROPERTIES else "invariant")
    assert result.name == name
    assert len(result.trace) >= 2


def test_unmutated_model_passes_each_mutation_config(tmp_path):
    """The mutation configs themselves are sound: the real model passes one of them quickly."""
    folder = _mutant_folder(tmp_path, "FinalSticky")
    shutil.copy(MODEL_DIR / "REMP.tla", folder / "REMP.tla")
    result = run_tlc(folder, "MCREMP", "MCREMP.cfg", workers=2, deadlock_check=False, timeout=120)
    assert result.verdict == "pass"
