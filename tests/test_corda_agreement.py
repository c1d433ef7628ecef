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
