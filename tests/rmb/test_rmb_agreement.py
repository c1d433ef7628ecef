"""Agreement of tla/rmb and the reference daemons, both ways: behaviours TLC draws from the model
replay step by step into the reference daemons (real redis-server, real HTTP between them, a
virtual clock) with equal states in every profile; random walks of the reference daemons are
behaviours of the model (TLC follows each); a reference with a mechanism removed is caught
disagreeing in both directions."""

import pytest

from rmb_support import redis_server_or_skip
from rmkit.conformance.rmb.agreement import Scenario, replay_behaviour, simulate
from rmkit.reference_impl.rmb.daemon import RmbDaemon
from rmkit.reference_impl.rmb.redisproc import RedisServer

# per profile: one request to one destination, try 2, exp 1 s; HTTP loses one request or answer and
# fails one, a reply is lost once and duplicated once, the sender crashes once, two seconds pass
# while work is pending
SCENARIOS = {
    "spec": Scenario("spec"),
    "rmb-rs-v1": Scenario("rmb-rs-v1"),
    "rmb-go": Scenario("rmb-go"),
}
STEPS = {"Dispatch", "Take", "Post", "React", "Crash", "Tick"}   # drawn in every profile's behaviours
PROFILE_STEPS = {"rmb-go": {"RetryTake"}, "rmb-rs-v1": {"GiveUpExpired"}, "spec": set()}


@pytest.fixture(scope="module")
def redis_port():
    redis_server_or_skip()
    with RedisServer() as server:
        yield server.port


@pytest.fixture(scope="module")
def behaviours():
    return {}


def _traces(behaviours, profile, n=12):
    if profile not in behaviours:
        behaviours[profile] = simulate(SCENARIOS[profile], traces=n, depth=30, seed=11)
    return behaviours[profile]


@pytest.mark.parametrize("profile", ["rmb-go"] + [pytest.param(p, marks=pytest.mark.slow) for p in ("spec", "rmb-rs-v1")])
def test_model_behaviours_replay_into_the_reference(profile, behaviours, redis_port):
    traces = _traces(behaviours, profile)
    assert len(traces) >= 10
    seen = set()
    for trace in traces:
        seen |= {s.values["last"]["a"] for s in trace if s.values.get("last")}
        d = replay_behaviour(SCENARIOS[profile], trace, redis_port)
        assert d is None, d.render()
    assert seen >= STEPS | PROFILE_STEPS[profile], f"steps never drawn: {(STEPS | PROFILE_STEPS[profile]) - seen}"


def test_a_reference_that_retries_once_too_often_disagrees(behaviours, redis_port, monkeypatch):
    attempts = RmbDaemon._attempts
    monkeypatch.setattr(RmbDaemon, "_attempts", lambda self, msg: attempts(self, msg) + 1)
    found = [replay_behaviour(SCENARIOS["rmb-go"], t, redis_port) for t in _traces(behaviours, "rmb-go")]
    assert any(d is not None for d in found)


def test_a_reference_that_does_not_report_a_failed_request_disagrees(behaviours, redis_port, monkeypatch):
    async def silent(self, msg, dst, reason):
        return None
    monkeypatch.setattr(RmbDaemon, "_request_failed", silent)
    found = [replay_behaviour(SCENARIOS["rmb-go"], t, redis_port) for t in _traces(behaviours, "rmb-go")]
    assert any(d is not None and "out" in d.render() for d in found)


# ---- reference -> model: random walks of the reference daemons, validated by TLC ----------------
from rmkit.conformance.rmb.trace_validation import reference_walk, validate  # noqa: E402


@pytest.fixture(scope="module")
def walks(redis_port):
    return {}


def _walks(walks, profile, redis_port, n=8):
    if profile not in walks:
        walks[profile] = [reference_walk(SCENARIOS[profile], redis_port, seed=s) for s in range(n)]
    return walks[profile]


@pytest.mark.parametrize("profile", ["spec"] + [pytest.param(p, marks=pytest.mark.slow) for p in ("rmb-rs-v1", "rmb-go")])
def test_reference_walks_are_behaviours_of_the_model(profile, walks, redis_port):
    got = _walks(walks, profile, redis_port)
    assert sum(len(w) - 1 for w in got) >= 40
    assert validate(SCENARIOS[profile], got) == []


@pytest.mark.slow
def test_a_walk_with_a_state_the_model_cannot_reach_is_not_followed(walks, redis_port):
    """One recorded state changed (a POST more than the reference made): the model does not take that walk."""
    got = [list(w) for w in _walks(walks, "spec", redis_port)]
    j = next(j for j, w in enumerate(got) if any(v["posts"][2] for v in w))
    k = next(k for k, v in enumerate(got[j]) if v["posts"][2])
    got[j][k] = {**got[j][k], "posts": {2: got[j][k]["posts"][2] + 1}}
    assert validate(SCENARIOS["spec"], got) == [j + 1]


def test_walks_of_a_reference_that_does_not_report_a_failed_request_are_not_followed(redis_port, monkeypatch):
    async def silent(self, msg, dst, reason):
        return None
    monkeypatch.setattr(RmbDaemon, "_request_failed", silent)
    got = [reference_walk(SCENARIOS["rmb-rs-v1"], redis_port, seed=s) for s in range(8)]
    assert validate(SCENARIOS["rmb-rs-v1"], got) != []
