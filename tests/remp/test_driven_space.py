"""Driven conformance explores the protocol's whole space: every validator set size from 1 to 16,
faults that show at some sizes only, and a client's final outcome as the documents give it."""

from __future__ import annotations

import pytest

from rmkit.conformance.remp.driven.adapters import InProcessImplementation
from rmkit.conformance.remp.driven.generate import SET_SIZES, run_generated
from rmkit.conformance.remp.driven.judge import fanout_floor
from rmkit.conformance.remp.driven.names import default_params, msg_id, validators
from rmkit.conformance.remp.driven.runner import FAIL, PASS, run_scenario
from rmkit.conformance.remp.driven.scenario import Scenario
from rmkit.protocols.remp.model import model_for
from rmkit.reference_impl.remp.consumer import ReceiptConsumer


def test_the_generators_draw_every_set_size_from_1_to_16_with_every_residue_mod_3():
    assert sorted(SET_SIZES) == list(range(1, 17))
    g = run_generated("fullnode", "spec", default_params("fullnode", "spec"),
                      InProcessImplementation("rmkit.reference_impl.remp.adapter:ReferenceAdapter", "fullnode"),
                      max_examples=120, derandomize=True)
    assert g.failing is None and not g.kit_error, g.message or g.kit_error
    assert g.exercised["validator set size"] == set(range(1, 17))


def _submit(n: int) -> Scenario:
    return Scenario(id=f"fanout-{n}", role="fullnode", profile="spec", params=dict(default_params("fullnode", "spec"), validators=validators(n)),
                    events=[{"type": "SessionSwitch", "seqno": 0, "start_time": 0, "validators": validators(n)},
                            {"type": "Submit", "msg_id": msg_id("m1"), "time": 1000, "has_body": True}])


def _fixed_fanout(k):
    """A full node sending each new message to exactly ``k(n)`` validators of a set of n."""
    from rmkit.conformance.remp.examples._base import VariantAdapter
    from rmkit.conformance.remp.driven.coverage import _Impl

    class FixedFanout(VariantAdapter):
        faulty_role = "fullnode"

        def params(self, p):
            return dict(p, fanout=k(len(p["validators"])))

    return _Impl(FixedFanout, "fullnode")


@pytest.mark.parametrize("n", range(1, 17))
def test_every_set_size_goes_through_the_fanout_rule(n):
    """floor(N/3)+1 of a set of N passes, one fewer fails (where one fewer is still a send), and
    every validator passes: at every size, whatever N mod 3."""
    floor = fanout_floor("spec", n)
    assert floor == min(n, n // 3 + 1) == model_for("spec").threshold("fanout_min", n) or n < 3
    sc = _submit(n)
    assert run_scenario(sc, _fixed_fanout(lambda _n: floor)).verdict == PASS
    assert run_scenario(sc, _fixed_fanout(lambda _n: _n)).verdict == PASS
    if floor > 1:
        res = run_scenario(sc, _fixed_fanout(lambda _n: floor - 1))
        assert res.verdict == FAIL and "REMP-FANOUT-002" in {r for r, _ in res.failure.rules}


@pytest.mark.parametrize("name,role", [("fanout_third_rounded_up", "fullnode"), ("more_than_two_thirds", "validator")])
def test_a_fault_that_shows_only_at_some_set_sizes_is_found_by_the_derandomized_run(name, role):
    impl = InProcessImplementation(f"rmkit.conformance.remp.examples.{name}:factory", role)
    g = run_generated(role, "spec", default_params(role, "spec"), impl, max_examples=300, derandomize=True)
    assert g.failing is not None, f"{name}: not found in {g.examples} scenarios"
    n = len(g.failing.params["validators"])
    assert n % 3 == 0, f"{name}: shrunk to a set of {n}, where the fault cannot show"
    assert len(g.failing.events) <= 12
    assert run_scenario(g.failing, impl).verdict == FAIL


def _rejects(c: ReceiptConsumer, who, t0=1000):
    for i, v in enumerate(who):
        c.step({"kind": "PutIntoQueue", "message_id": "m", "timestamp": t0 + i, "source_id": v, "signature": ""})
    out = None
    for i, v in enumerate(who):
        out = c.step({"kind": "RejectedByCollator", "message_id": "m", "timestamp": t0 + 100 + i, "source_id": v, "signature": ""})
    return out


def test_the_reference_client_waits_for_all_validators_of_the_set_before_a_final_reject():
    """000/001: "All validators must reject the message before it is finally rejected": two of four
    validators rejecting is not final where the client knows the set; all four is."""
    c = ReceiptConsumer("spec", set_size=4)
    assert not _rejects(c, ["v1", "v2"]).final
    assert _rejects(c, ["v3", "v4"], 2000).final
    pairs = ReceiptConsumer("spec")  # the set unknown (a log): the validators heard from count
    assert _rejects(pairs, ["v1", "v2"]).final


def test_a_final_outcome_never_changes():
    c = ReceiptConsumer("spec", set_size=2)
    final = _rejects(c, ["v1", "v2"])
    assert final.final and final.name == "rejected_by_all"
    later = c.step({"kind": "IgnoredByCollator", "message_id": "m", "timestamp": 5000, "source_id": "v1", "signature": ""})
    assert later == final
