"""Model -> reference agreement for Corda P2P: behaviours TLC draws from tla/corda replay step by step
into the reference machines with equal states in every profile, and a reference with a mechanism
removed is caught disagreeing."""

import pytest

from rmkit.conformance.corda.agreement import Scenario, agree, replay_behaviour, simulate
from rmkit.reference_impl.corda.receiver import ReceivingNode

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]
ACTIONS = {"Suspend", "Produce", "SenderCrash", "Forward", "Resend", "LinkLose", "LinkDup", "AckLose", "RemoteAccept",
           "BridgeAck", "BridgeRollback", "Deliver", "Commit", "Ack", "ReceiverCrash", "BrokerRestart"}


@pytest.fixture(scope="module")
def behaviours():
    return {}


def _traces(behaviours, profile):
    if profile not in behaviours:
        behaviours[profile] = simulate(Scenario(profile), traces=25, depth=35, seed=11)
    return behaviours[profile]


@pytest.mark.parametrize("profile", ["spec", "corda-os"] + [pytest.param(p, marks=pytest.mark.slow)
                                                            for p in ("corda-os-2021", "corda-ent-fastpath")])
def test_model_behaviours_replay_into_the_reference(profile, behaviours):
    traces = _traces(behaviours, profile)
    assert len(traces) >= 20
    seen = set()
    for trace in traces:
        seen |= {s.values["last"]["a"] for s in trace if s.values.get("last")}
        d = replay_behaviour(Scenario(profile), trace)
        assert d is None, d.render()
    assert seen >= ACTIONS - {"Init"}, f"steps never drawn: {ACTIONS - seen}"


def test_a_reference_without_its_database_read_disagrees(behaviours, monkeypatch):
    monkeypatch.setattr(ReceivingNode, "in_database", lambda self, dedup_id: False)
    found = [replay_behaviour(Scenario("corda-os"), t) for t in _traces(behaviours, "corda-os")]
    assert any(d is not None for d in found)


# ---- reference -> model: random walks of the reference machines, validated by TLC ----------------
from rmkit.conformance.corda.trace_validation import reference_walk, validate  # noqa: E402


@pytest.fixture(scope="module")
def walks():
    return {}


def _walks(walks, profile, n=8):
    if profile not in walks:
        walks[profile] = [reference_walk(Scenario(profile), seed=s) for s in range(n)]
    return walks[profile]


@pytest.mark.parametrize("profile", ["corda-os"] + [pytest.param(p, marks=pytest.mark.slow)
                                                    for p in ("spec", "corda-os-2021", "corda-ent-fastpath")])
def test_reference_walks_are_behaviours_of_the_model(profile, walks):
    got = _walks(walks, profile)
    assert sum(len(w) - 1 for w in got) >= 150
    assert validate(Scenario(profile), got) == []


def test_a_walk_with_a_state_the_model_cannot_reach_is_not_followed(walks):
    """One recorded state changed (an effect committed twice): the model does not take that walk."""
    got = [list(w) for w in _walks(walks, "corda-os")]
    j = next(j for j, w in enumerate(got) if any(v["effects"] for v in w))
    k = next(k for k, v in enumerate(got[j]) if v["effects"])
    got[j][k] = {**got[j][k], "effects": got[j][k]["effects"] + got[j][k]["effects"][:1]}
    assert validate(Scenario("corda-os"), got) == [j + 1]


def test_walks_of_a_reference_without_its_database_read_are_not_followed(monkeypatch):
    monkeypatch.setattr(ReceivingNode, "in_database", lambda self, dedup_id: False)
    got = [reference_walk(Scenario("corda-os"), seed=s, max_steps=40) for s in range(12)]
    assert validate(Scenario("corda-os"), got) != []
