"""The TLA+ model of Corda P2P (tla/corda): its profile table comes from the spec, TLC checks its CI
configurations to the figures of tla/manifest.json (the expected findings included, reported by
`rmkit tlc` as findings), and each property is shown to depend on a mechanism: a copy of the model
with that mechanism removed is caught by TLC on a property other than the mechanism's own guard."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import REPO
from rmkit.cli import main
from rmkit.conformance.corda.tla_tables import render
from rmkit.tlc import run_tlc
from tla_support import mutated_copy
from rmkit.tlc.manifest import load_manifest, result_name

MODEL_DIR = REPO / "tla" / "corda"
# What users are promised (tla/README.md); each is broken by a mutation below that removes a mechanism.
PROPERTIES = ("ExactlyOnce", "NoLoss", "AckAfterCommit", "FifoPerSession", "EventuallyProcessed")
# Stated over steps or behaviours (a cfg's PROPERTIES), the others over states (INVARIANTS).
TEMPORAL = ("AckAfterCommit", "EventuallyProcessed")
# Promised by every profile; FifoPerSession only with an in-order bridge or without rollbacks.
EVERYWHERE = ("ExactlyOnce", "NoLoss", "AckAfterCommit")
# The adversary's bounds: a configuration with each at least as high explores every behaviour of one
# with lower bounds (same profile and N).
ADVERSARY = ("MaxSenderCrash", "MaxRcvCrash", "MaxBrokerRestart", "MaxRollback", "MaxLoss", "MaxDup")


def test_profiles_module_is_generated_from_the_spec():
    assert (MODEL_DIR / "CordaProfiles.tla").read_text() == render(), "tla/corda/CordaProfiles.tla is stale: run `make tla-tables`"


def _config(name):
    model = load_manifest().model("corda")
    return model, model.config(name)


@pytest.mark.parametrize("name", ["fifo", "receiver", "os-2021", "os-2021-others", "live", "fastpath-reorder", "fastpath-reorder-others", "sessions"] + [
    pytest.param(n, marks=pytest.mark.slow)
    for n in ("spec", "fastpath", "sender")])
def test_configuration_checks_to_the_manifest_figures(name):
    model, cfg = _config(name)
    result = run_tlc(model.dir, cfg.module, cfg.cfg, workers=cfg.workers, deadlock_check=cfg.deadlock)
    assert result.complete and result.error is None
    if cfg.finding:
        assert cfg.expected_finding(result), result.counterexamples
    else:
        assert result.verdict == "pass", result.counterexamples
    assert (result.distinct_states, result.total_states) == (cfg.distinct_states, cfg.total_states)


def _cfg_facts(cfg):
    """(profile, N, adversary bounds, invariants) read from a configuration's .cfg text."""
    text = (MODEL_DIR / cfg.cfg).read_text()
    consts = dict(re.findall(r"(?m)^\s+(\w+) = (\S+)$", text))
    invariants = set(re.search(r"(?m)^INVARIANTS (.*)$", text).group(1).split())
    invariants |= {n for line in re.findall(r"(?m)^PROPERTIES (.*)$", text) for n in line.split()}
    return consts["Profile"], consts["N"], {k: int(consts[k]) for k in ADVERSARY}, invariants


def test_every_finding_has_a_passing_configuration_for_the_other_promises():
    """TLC stops at the first violation, so a finding configuration checks the other properties only
    up to the counterexample's depth. Each finding therefore has a passing configuration of the same
    profile and N whose adversary is at least as strong, checking every other promise to the end."""
    model = load_manifest().model("corda")
    for finding in (c for c in model.configs if c.finding):
        profile, n, bounds, _ = _cfg_facts(finding)
        wanted = set(EVERYWHERE) - {finding.finding["invariant"]}
        companions = [c.name for c in model.configs if not c.finding for p, k, b, inv in [_cfg_facts(c)]
                      if (p, k) == (profile, n) and all(b[x] >= bounds[x] for x in ADVERSARY) and inv >= wanted]
        assert companions, f"{finding.name}: no passing configuration checks {sorted(wanted)} under its adversary"


def test_every_checked_property_is_a_promise():
    """No configuration checks a property that is not a promise with a mutation behind it (a
    property that restates a guard or a profile table would pass whatever the mechanisms do)."""
    model = load_manifest().model("corda")
    for cfg in model.configs:
        assert _cfg_facts(cfg)[3] - {"TypeOK"} <= set(PROPERTIES), cfg.cfg


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
    # the first message's transfer was lost and sent again (Resend) or rolled back, behind the second
    assert any(s["values"]["last"].get("a") in ("Resend", "BridgeRollback") for s in trace)


def test_an_expected_finding_that_does_not_appear_fails(tmp_path, capsys, monkeypatch):
    """A finding config whose model no longer violates the invariant is a failure (exit 1)."""
    root = tmp_path / "tla"
    shutil.copytree(REPO / "tla", root)
    cfg = root / "corda" / "MCCorda_fifo.cfg"
    cfg.write_text(cfg.read_text().replace("MaxLoss = 1", "MaxLoss = 0"))
    monkeypatch.setenv("RMKIT_TLA_DIR", str(root))
    assert main(["tlc", "corda", "--progress", "none"]) == 1
    assert "expected the finding FifoPerSession" in capsys.readouterr().err


def _cfg(profile, n, names, **bounds):
    """A cfg checking ``names``: the temporal ones as PROPERTIES (under FairSpec where one is a
    liveness property), the others as INVARIANTS."""
    consts = dict(sc="MaxSenderCrash", rc="MaxRcvCrash", br="MaxBrokerRestart", rb="MaxRollback", loss="MaxLoss", dup="MaxDup")
    lines = ["CONSTANTS", f'    Profile = "{profile}"', f"    N = {n}", "    Sessions = 1"]
    lines += [f"    {v} = {bounds.get(k, 0)}" for k, v in consts.items()]
    spec = "FairSpec" if "EventuallyProcessed" in names else "Spec"
    lines += [f"SPECIFICATION {spec}", "VIEW view", "INVARIANTS " + " ".join(x for x in names if x not in TEMPORAL)]
    props = [x for x in names if x in TEMPORAL]
    return "\n".join(lines + (["PROPERTIES " + " ".join(props)] if props else [])) + "\n"


# ---- mutations: each removes one mechanism; TLC must catch it on each property it protects --------
# (name: replacements in CordaP2P.tla, the configuration (profile, N, adversary), the properties TLC
# must report, each checked alone with TypeOK: TLC stops at the first violation, so checked together
# the shorter counterexample would hide the other)
MUTATIONS = {
    # the receiver acknowledges a NEW copy as soon as it is delivered, before its commit
    "ack_before_commit": (
        [("          /\\ toack' = IF Consequence(ans) = \"ack_and_drop\"",
          "          /\\ toack' = IF Consequence(ans) \\in {\"ack_and_drop\", \"process\"}")],
        ("corda-os", 1, dict(rc=1)), ("NoLoss", "AckAfterCommit")),
    # the processed ids live in memory only: a crash forgets them
    "dedup_only_in_memory": (
        [("    /\\ proc' = <<>> /\\ toack' = <<>>\n    /\\ inq' = Undeliver(inq) /\\ iconn' = iconn + 1\n"
          "    /\\ last' = [a |-> \"ReceiverCrash\"]\n    /\\ UNCHANGED <<Sender, Outbound, Link, itag, db, effects, sent>>",
          "    /\\ proc' = <<>> /\\ toack' = <<>> /\\ db' = {}\n    /\\ inq' = Undeliver(inq) /\\ iconn' = iconn + 1\n"
          "    /\\ last' = [a |-> \"ReceiverCrash\"]\n    /\\ UNCHANGED <<Sender, Outbound, Link, itag, effects, sent>>")],
        ("corda-os", 1, dict(rc=1)), ("ExactlyOnce",)),
    # the fast path answers NEW without a database read when no mark exists for the sender key
    "fast_path_without_db_read": (
        [("FastNew(m) == FastPath /\\ m.uuid # 0 /\\ HasMark(Key(m)) /\\ m.sq > Mark(Key(m))",
          "FastNew(m) == FastPath /\\ m.uuid # 0 /\\ (HasMark(Key(m)) => m.sq > Mark(Key(m)))")],
        ("corda-ent-fastpath", 1, dict(sc=1, rb=1, loss=1)), ("ExactlyOnce",)),
    # a replayed flow sends under a fresh (random) id instead of its N- id (CORDA-ID-002's mechanism)
    "random_id_on_replay": (
        [("    /\\ LET m == [k |-> ckpt, did |-> ckpt,", "    /\\ LET m == [k |-> ckpt, did |-> IF recov THEN ckpt + 10 * epoch ELSE ckpt,")],
        ("corda-os", 1, dict(sc=1)), ("ExactlyOnce",)),
    # the consumer acknowledges a NEW copy on delivery, inside the Deliver step (auto-acknowledge)
    "ack_on_delivery": (
        [("       IN /\\ inq' = [inq EXCEPT ![i].dlv = TRUE, ![i].conn = iconn]\n",
          "       IN /\\ inq' = IF Consequence(ans) = \"process\" THEN Remove(inq, i) ELSE [inq EXCEPT ![i].dlv = TRUE, ![i].conn = iconn]\n")],
        ("corda-os", 1, dict()), ("AckAfterCommit",)),
    # the bridge removes a message from the outbound queue when it forwards it (not on the remote ack)
    "bridge_acks_on_forward": (
        [("       IN /\\ out' = [out EXCEPT ![i].dlv = TRUE]\n", "       IN /\\ out' = Remove(out, i)\n")],
        ("corda-os", 1, dict(loss=1)), ("NoLoss",)),
    # the bridge never re-sends a transfer whose message or acknowledgement was lost
    "no_resend": (
        [("Resend ==\n    /\\ \\E i \\in DOMAIN out : Stale(i)\n", "Resend ==\n    /\\ FALSE\n")],
        ("corda-os", 1, dict(loss=1)), ("EventuallyProcessed",)),
    # corda-os acknowledging IN_FLIGHT copies (the pre-2022 behaviour in the corda-os profile)
    "ack_in_flight": (
        [('      [] ans = "IN_FLIGHT" -> InFlightConsequenceIn(Profile)', '      [] ans = "IN_FLIGHT" -> "ack_and_drop"')],
        ("corda-os", 1, dict(rc=1, br=1)), ("NoLoss",)),
    # the spec profile's bridge forwards the next message before the previous one's remote ack
    "bridge_pipelines": (
        [("InOrderBridge == InOrderBridgeIn(Profile)", "InOrderBridge == FALSE")],
        ("spec", 2, dict(rb=1, loss=1)), ("FifoPerSession",)),
}
CAUGHT = [(name, prop) for name, (_, _, props) in sorted(MUTATIONS.items()) for prop in props]


def test_every_property_has_a_mutation():
    assert {prop for _, prop in CAUGHT} == set(PROPERTIES)


def _copy_model(folder, replacements=(), name=""):
    mutated_copy(MODEL_DIR, folder, "CordaP2P.tla", replacements, name)


@pytest.fixture(scope="module")
def unmutated_results(tmp_path_factory):
    """Every mutation's configuration, checking all the properties it is used for, passes on the
    unmutated model (so the mutation is what TLC catches)."""
    out = {}
    for name, (_, (profile, n, bounds), props) in MUTATIONS.items():
        folder = tmp_path_factory.mktemp(f"ok-{name}")
        _copy_model(folder)
        (folder / "M.cfg").write_text(_cfg(profile, n, ["TypeOK", *props], **bounds))
        out[name] = run_tlc(folder, "MCCorda", "M.cfg", workers=1, deadlock_check=False)
    return out


@pytest.mark.parametrize("name, expected", CAUGHT, ids=[f"{n}-{p}" for n, p in CAUGHT])
def test_mutation_is_caught_by_tlc(name, expected, tmp_path, unmutated_results):
    replacements, (profile, n, bounds), _ = MUTATIONS[name]
    assert unmutated_results[name].verdict == "pass", unmutated_results[name].counterexamples
    assert unmutated_results[name].complete
    _copy_model(tmp_path, replacements, name)
    (tmp_path / "M.cfg").write_text(_cfg(profile, n, ["TypeOK", expected], **bounds))
    result = run_tlc(tmp_path, "MCCorda", "M.cfg", workers=1, deadlock_check=False)
    assert result.verdict == "violation", result.error
    if expected == "EventuallyProcessed":
        assert result_name(result) == "liveness failure"
        return
    assert result.name == expected, (result.name, [s.values.get("last") for s in result.counterexamples[0].states])
