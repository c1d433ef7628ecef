"""The TLA+ model of REMP (tla/remp): its tables come from the spec, TLC checks its configurations
to the figures of tla/manifest.json, and each property is shown to rest on a mechanism of the
protocol: with that mechanism switched off (a constant of the model, never a property's own guard)
TLC must find a counterexample, which is printed as a readable trace."""

from __future__ import annotations

import re
import sys

import pytest

from rmkit.conformance.remp.tla_tables import render
from rmkit.tlc import run_tlc
from tla_support import mutated_copy
from rmkit.tlc.manifest import load_manifest
from rmkit.tlc.mutations import MUTATION, checks_of, run_check
from rmkit.tlc.render import render_result

from conftest import REPO

MODEL_DIR = REPO / "tla" / "remp"
MECHANISMS = ("ValidateAgainstCache", "CacheOnReceive", "Digests", "Rebroadcast", "SignedRecords",
              "LifetimeFromMessage", "BodiesSigned")


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


def _check_exhaustively(name):
    """Model-check configuration ``name`` to the end; it must pass, and match the manifest's
    figures where the manifest has them."""
    model, cfg = _config(name)
    result = run_tlc(model.dir, cfg.module, cfg.cfg, workers=cfg.workers, deadlock_check=cfg.deadlock)
    assert result.verdict == "pass", result.error or result.counterexamples
    assert result.complete
    if cfg.distinct_states is not None:
        assert (result.distinct_states, result.total_states) == (cfg.distinct_states, cfg.total_states)
    return cfg


@pytest.mark.parametrize("name", ["small", "one", "handover", "livehandover", "crash", "switch"])
def test_configuration_checks_to_the_manifest_figures(name):
    cfg = _check_exhaustively(name)
    assert cfg.distinct_states is not None, f"{name}: no expected figures in tla/manifest.json"


def test_seven_validators_two_byzantine_simulated():
    """N = 7, f = 2, two messages (session 2 is not reached: tla/README.md): the manifest's number of random behaviours
    of TLC's simulation mode from its seed (CI); the exhaustive N = 7 search (`seven`: one message, one session) runs under
    `make test-slow`."""
    _simulate("seven-sim")


def _simulate(name):
    """Random behaviours of configuration ``name`` with TLC's simulation mode, the manifest's number
    of them at its depth from its seed (the same behaviours every run, however busy the machine):
    none may break a property, and the run must not claim completeness."""
    model, cfg = _config(name)
    plan = cfg.simulate
    result = run_tlc(model.dir, cfg.module, cfg.cfg, workers=1, deadlock_check=False, simulate_depth=plan["depth"],
                     seed=plan["seed"], simulate_traces=plan["traces"])
    assert result.verdict == "pass", result.error or result.counterexamples
    assert not result.complete


def test_byzantine_validator_across_switches_simulated():
    """N = 4, f = 1, sessions 0..2 with both switches completed (see the witness test below): the
    only configuration where a faulty proposer meets a switch. Too large to check exhaustively in
    CI (tla/README.md), so the manifest's number of random behaviours."""
    _simulate("byzswitch")


@pytest.mark.parametrize("cfg_name", ["MCREMP_byzswitch.cfg", "MCREMP_switch.cfg"])
def test_byzantine_configurations_complete_both_switches(tmp_path, cfg_name):
    """The bounds of `byzswitch` and `switch` do not cut the switches: TLC finds a state where the
    masterchain is in the last session and every honest validator moved to it (the witness
    BeforeLastSession, MCREMP.tla, is violated), breadth-first under the configuration's own
    constraints."""
    folder = _model_folder(tmp_path, cfg_name, {}, "INVARIANTS BeforeLastSession")
    result = run_tlc(folder, _module_of(cfg_name), "MCREMP.cfg", workers=1, deadlock_check=False,
                     timeout=300)
    assert result.verdict == "violation", (result.verdict, result.error)
    assert result.name == "BeforeLastSession"
    rotations = [s.values["last"] for s in result.trace if isinstance(s.values.get("last"), dict)
                 and s.values["last"].get("a") == "Rotate"]
    assert len(rotations) == 6, rotations   # three honest validators, two switches


@pytest.mark.slow
def test_liveness_with_a_byzantine_validator():
    """N = 4, f = 1 under LiveSpec: every sent message is resolved, every honest member gets it."""
    _check_exhaustively("live")


@pytest.mark.slow
def test_two_messages_with_a_byzantine_validator():
    _check_exhaustively("two")


@pytest.mark.slow
def test_seven_validators_two_byzantine_exhaustive():
    _check_exhaustively("seven")


def test_every_configuration_switches_every_mechanism_on():
    for cfg in MODEL_DIR.glob("MCREMP*.cfg"):
        text = cfg.read_text()
        for flag in MECHANISMS:
            assert re.search(rf"^\s*{flag} = TRUE$", text, re.M), f"{cfg.name}: {flag} is not TRUE"


def test_no_action_writes_into_every_validator_at_once():
    """Local knowledge: no step of the model assigns the whole of a per-validator variable from a
    comprehension over the validators (each writes one validator's row, with EXCEPT ![w])."""
    spec = (MODEL_DIR / "REMP.tla").read_text()
    for var in ("st", "rej", "arr", "tip", "ses", "handed", "sigs"):
        assert not re.search(rf"\b{var}' = \[w \\in Honest", spec), var


def test_no_states_folder_left_in_the_model_folder():
    assert not (MODEL_DIR / "states").exists()
    assert sorted(p.name for p in MODEL_DIR.iterdir() if p.suffix not in (".tla", ".cfg", ".md")) == []


# ---- mutations and witnesses of every property: tla/manifest.json, run by tests/core/test_tla_mutations.py ----


def _model_folder(tmp_path, cfg_name, changes, check, patch=None):
    """A copy of the model whose MCREMP.cfg is ``cfg_name`` with ``changes`` to its constants and
    ``check`` (an INVARIANTS or PROPERTIES line) instead of its own properties; ``patch`` replaces
    texts of REMP.tla (each must occur once)."""
    folder = tmp_path / "model"
    folder.mkdir()
    mutated_copy(MODEL_DIR, folder, "REMP.tla", (patch or {}).items())
    lines = []
    for ln in (MODEL_DIR / cfg_name).read_text().splitlines():
        if ln.startswith(("INVARIANTS", "PROPERTIES")):
            continue
        m = re.match(r"^\s*(\w+) = ", ln)
        if m and m.group(1) in changes:
            ln = f"    {m.group(1)} = {changes[m.group(1)]}"
        lines.append(ln)
        if ln.startswith("CONSTANTS"):
            # a definition of REMP.tla replaced for the mutation (e.g. CacheKey <- MCKeyById)
            lines += [f"    {name} {value}" for name, value in changes.items() if value.startswith("<-")]
    lines.append(check)
    (folder / "MCREMP.cfg").write_text("\n".join(lines) + "\n")
    return folder


def _module_of(cfg_name):
    return next(c.module for c in load_manifest().model("remp").configs if c.cfg == cfg_name)


@pytest.mark.slow
def test_small_carries_both_ids_to_an_outcome(tmp_path):
    """The bounds of `small` leave behaviours in which both ids reach an outcome: TLC finds a state
    where each is Finalized or has a final status at every honest validator (the witness
    NotAllCarried, MCREMP.tla, is violated)."""
    folder = _model_folder(tmp_path, "MCREMP.cfg", {}, "INVARIANTS NotAllCarried")
    result = run_tlc(folder, _module_of("MCREMP.cfg"), "MCREMP.cfg", workers=1, deadlock_check=False, timeout=300)
    assert result.verdict == "violation", (result.verdict, result.error)
    assert result.name == "NotAllCarried"
    sys.stdout.write(render_result(result, title="both ids carried to an outcome (small)", max_traces=1))


def _code(text: str) -> str:
    """TLA+ text without its comments (line comments and (* ... *) blocks)."""
    text = re.sub(r"\(\*.*?\*\)", "", text, flags=re.S)
    return re.sub(r"\\\*.*", "", text)


def test_the_missing_cache_is_reprocessing_not_a_written_outcome():
    """CacheOnReceive = FALSE removes a cache, it does not add steps: REMP.tla reads the constant in
    one definition per party (what the full node, what a validator, takes as a message it has not
    seen), and every step runs on that. No branch switched on by the mutation writes a final status
    away; a property broken by it is broken by the ordinary pipeline run again."""
    code = _code((MODEL_DIR / "REMP.tla").read_text())
    readers = re.findall(r"^(\w+)(?:\([^)]*\))? ==(?:(?!^\w).)*?\bCacheOnReceive\b", code, re.M | re.S)
    assert sorted(readers) == ["FnUnseen", "Unseen"], readers


def test_no_checked_property_restates_a_guard():
    """Properties that were only an action's guard are not claimed: the full node's Finalized being
    in the chain is Finalize's guard (kept for the agreement, where it is a theorem of REMPSteps),
    and an obsolete message not queued is Take's and Rotate's rule (the promise is
    NoInclusionAfterObsolete). Nor are those that restate a limit of the adversary: only submitted
    bodies in the chain (the client signs bodies) and a 2/3 stop resting on honest rejects (records
    carry their sender's signature) hold by construction once the limit is assumed."""
    for cfg in MODEL_DIR.glob("MCREMP*.cfg"):
        checked = {w for ln in cfg.read_text().splitlines() if ln.startswith(("INVARIANTS", "PROPERTIES"))
                   for w in ln.split()[1:]}
        assert not checked & {"FinalizedWasSubmittedAndAccepted", "FinalizedIsInChain", "ObsoleteNotForwarded",
                              "ChainHoldsOnlySubmitted", "RejectsStopCollation"}, cfg.name


def test_final_sticky_without_the_cache_breaks_through_the_pipeline():
    """Without the cache, the client's resubmission of a message with a final outcome is evaluated
    again as new (Submit): the full node tells SentToValidators after its final receipt. The step
    that breaks FinalSticky is the ordinary pipeline, not a step written to change a final status."""
    model = load_manifest().model("remp")
    check = next(c for c in checks_of(model, include_slow=True, names=["FinalSticky"])
                 if c.check == MUTATION and "CacheOnReceive = FALSE" in [e.new for e in c.prop.mutation.edits]
                 and len(c.prop.mutation.edits) == 1)
    result = run_check(check).result
    assert result.verdict == "violation", (result.verdict, result.error)
    steps = [s.values["last"]["a"] for s in result.trace]
    assert steps[-1] in {"Submit", "PreReject", "Receive", "Deliver"}, steps
    assert "Resubmit" not in steps, steps
