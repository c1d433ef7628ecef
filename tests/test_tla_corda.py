"""The TLA+ model of Corda P2P (tla/corda): its profile table comes from the spec, TLC checks its CI
configurations to the figures of tla/manifest.json (the expected findings included, reported by
`rmkit tlc` as findings), and each property is shown to depend on a mechanism: a copy of the model
with that mechanism removed is caught by TLC on a property other than the mechanism's own guard."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import REPO
from rmkit.cli import main
from rmkit.conformance.corda.tla_tables import render
from rmkit.tlc import run_tlc
from rmkit.tlc.manifest import load_manifest

MODEL_DIR = REPO / "tla" / "corda"
ALL = ["TypeOK", "ExactlyOnce", "NoLoss", "AckAfterCommit", "InFlightNeverAcked", "ReplayReusesIds", "FifoPerSession"]


def test_profiles_module_is_generated_from_the_spec():
    assert (MODEL_DIR / "CordaProfiles.tla").read_text() == render(), "tla/corda/CordaProfiles.tla is stale: run `make tla-tables`"


def _config(name):
    model = load_manifest().model("corda")
    return model, model.config(name)


@pytest.mark.parametrize("name", ["fifo", "receiver", "os-2021"] + [
    pytest.param(n, marks=pytest.mark.slow) for n in ("spec", "fastpath", "sender", "fastpath-reorder")])
def test_configuration_checks_to_the_manifest_figures(name):
    model, cfg = _config(name)
    result = run_tlc(model.dir, cfg.module, cfg.cfg, workers=cfg.workers, deadlock_check=cfg.deadlock)
    assert result.complete and result.error is None
    if cfg.finding:
        assert cfg.expected_finding(result), result.counterexamples
    else:
        assert result.verdict == "pass", result.counterexamples
    assert (result.distinct_states, result.total_states) == (cfg.distinct_states, cfg.total_states)


def test_rmkit_tlc_corda_reports_the_fifo_counterexample_as_a_finding(tmp_path, capsys):
    """The default configuration: the corda-os FIFO counterexample, shown with its trace, exit 0."""
    code = main(["tlc", "corda", "--progress", "none", "--format", "json", "--out", str(tmp_path)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["model_config"] == "fifo" and doc["name"] == "FifoPerSession"
    assert doc["finding"]["rule"] == "CORDA-ORDER-001" and doc["finding"]["reproduced"]
    trace = json.loads((tmp_path / "corda-fifo.trace.json").read_text())["counterexamples"][0]["trace"]
    effects = trace[-1]["values"]["effects"]
    assert effects == [2, 1]
    assert any(s["values"]["last"].get("a") == "BridgeRollback" for s in trace)


def test_an_expected_finding_that_does_not_appear_fails(tmp_path, capsys, monkeypatch):
    """A finding config whose model no longer violates the invariant is a failure (exit 1)."""
    root = tmp_path / "tla"
    shutil.copytree(REPO / "tla", root)
    cfg = root / "corda" / "MCCorda_fifo.cfg"
    cfg.write_text(cfg.read_text().replace("MaxLoss = 1", "MaxLoss = 0"))
    monkeypatch.setenv("RMKIT_TLA_DIR", str(root))
    assert main(["tlc", "corda", "--progress", "none"]) == 1
    assert "expected the finding FifoPerSession" in capsys.readouterr().err


def _cfg(profile, n, invariants, **bounds):
    names = dict(sc="MaxSenderCrash", rc="MaxRcvCrash", br="MaxBrokerRestart", rb="MaxRollback", loss="MaxLoss", dup="MaxDup")
    lines = ["CONSTANTS", f'    Profile = "{profile}"', f"    N = {n}"]
    lines += [f"    {v} = {bounds.get(k, 0)}" for k, v in names.items()]
    return "\n".join(lines + ["SPECIFICATION Spec", "VIEW view", "INVARIANTS " + " ".join(invariants)]) + "\n"


# ---- mutations: each removes one mechanism; TLC must catch it on the property it protects ----------
# (name: replacements in CordaP2P.tla, the configuration, the invariants checked, the one TLC must report)
MUTATIONS = {
    # the receiver acknowledges a NEW copy as soon as it is delivered, before its commit
    "ack_before_commit": (
        [("          /\\ toack' = IF Consequence(ans) = \"ack_and_drop\"",
          "          /\\ toack' = IF Consequence(ans) \\in {\"ack_and_drop\", \"process\"}")],
        _cfg("corda-os", 1, ["TypeOK", "ExactlyOnce", "NoLoss"], rc=1), "NoLoss"),
    # the processed ids live in memory only: a crash forgets them
    "dedup_only_in_memory": (
        [("    /\\ proc' = <<>> /\\ toack' = <<>>\n    /\\ inq' = Undeliver(inq) /\\ iconn' = iconn + 1\n"
          "    /\\ last' = [a |-> \"ReceiverCrash\"]\n    /\\ UNCHANGED <<Sender, Outbound, Link, itag, db, effects, sent, early>>",
          "    /\\ proc' = <<>> /\\ toack' = <<>> /\\ db' = {}\n    /\\ inq' = Undeliver(inq) /\\ iconn' = iconn + 1\n"
          "    /\\ last' = [a |-> \"ReceiverCrash\"]\n    /\\ UNCHANGED <<Sender, Outbound, Link, itag, effects, sent, early>>")],
        _cfg("corda-os", 1, ["TypeOK", "ExactlyOnce", "NoLoss"], rc=1), "ExactlyOnce"),
    # the fast path answers NEW without a database read when no mark exists for the sender key
    "fast_path_without_db_read": (
        [("FastNew(m) == FastPath /\\ m.uuid # 0 /\\ HasMark(Key(m)) /\\ m.sq > Mark(Key(m))",
          "FastNew(m) == FastPath /\\ m.uuid # 0 /\\ (HasMark(Key(m)) => m.sq > Mark(Key(m)))")],
        _cfg("corda-ent-fastpath", 1, ["TypeOK", "ExactlyOnce", "NoLoss"], sc=1, rb=1, loss=1), "ExactlyOnce"),
    # a replayed flow sends under a fresh (random) id instead of its N- id
    "random_id_on_replay": (
        [("    /\\ LET m == [k |-> ckpt, did |-> ckpt,", "    /\\ LET m == [k |-> ckpt, did |-> IF recov THEN ckpt + 10 * epoch ELSE ckpt,")],
        _cfg("corda-os", 1, ["TypeOK", "ExactlyOnce", "NoLoss"], sc=1), "ExactlyOnce"),
    # corda-os acknowledging IN_FLIGHT copies (the pre-2022 behaviour in the corda-os profile)
    "ack_in_flight": (
        [('      [] ans = "IN_FLIGHT" -> InFlightConsequenceIn(Profile)', '      [] ans = "IN_FLIGHT" -> "ack_and_drop"')],
        _cfg("corda-os", 1, ["TypeOK", "ExactlyOnce", "NoLoss"], rc=1, br=1), "NoLoss"),
}


@pytest.fixture(scope="module")
def unmutated_results(tmp_path_factory):
    """Every mutation's configuration passes on the unmutated model (so the mutation is what TLC catches)."""
    out = {}
    for name, (_, cfg, _, ) in ((n, (m[0], m[1], m[2])) for n, m in MUTATIONS.items()):
        folder = tmp_path_factory.mktemp(f"ok-{name}")
        for f in MODEL_DIR.glob("*.tla"):
            shutil.copy(f, folder / f.name)
        (folder / "M.cfg").write_text(cfg)
        out[name] = run_tlc(folder, "MCCorda", "M.cfg", workers=1, deadlock_check=False)
    return out


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_caught_by_tlc(name, tmp_path, unmutated_results):
    replacements, cfg, expected = MUTATIONS[name]
    assert unmutated_results[name].verdict == "pass", unmutated_results[name].counterexamples
    for f in MODEL_DIR.glob("*.tla"):
        shutil.copy(f, tmp_path / f.name)
    spec = tmp_path / "CordaP2P.tla"
    text = spec.read_text()
    for old, new in replacements:
        assert old in text, f"{name}: the text to mutate is gone from CordaP2P.tla: {old!r}"
        text = text.replace(old, new)
    spec.write_text(text)
    (tmp_path / "M.cfg").write_text(cfg)
    result = run_tlc(tmp_path, "MCCorda", "M.cfg", workers=1, deadlock_check=False)
    assert result.verdict == "violation", result.error
    assert result.name == expected, (result.name, [s.values.get("last") for s in result.counterexamples[0].states])
