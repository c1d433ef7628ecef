"""How driven conformance judges a step and names the rule a failure breaks: a faulty mechanism
fails for its own rule ID (never for a rule it kept, never for none), a legal choice the documents
leave open passes, and a failure reports what the implementation really sent."""

from __future__ import annotations

import pytest

from rmkit.conformance.remp.driven.adapters import InProcessImplementation
from rmkit.conformance.remp.driven.names import default_params, msg_id
from rmkit.conformance.remp.driven.rulecheck import ReceiptLog, rules_broken
from rmkit.conformance.remp.driven.runner import FAIL, PASS, run_scenario
from rmkit.conformance.remp.driven.scenario import Scenario
from rmkit.conformance.examples._base import VariantAdapter
from rmkit.reference_impl.remp.events import SendToValidator, Tick
from rmkit.reference_impl.remp.fullnode import FullNode, rotation

REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
M1 = msg_id("m1")


def reference(role):
    return InProcessImplementation(REFERENCE, role)


class _Impl:
    """An adapter object behind the in-process implementation interface."""

    def __init__(self, obj):
        self.obj, self.name = obj, "test variant"

    def start(self, hello):
        self.obj.hello(dict(hello["params"], profile=hello["profile"]))

    def step(self, seq, event):
        return self.obj.step(event)

    def end(self):
        self.obj.bye()

    def stderr(self):
        return ""

    def close(self):
        pass


def _scenario(role, profile, events, sid="judging"):
    return Scenario(id=sid, role=role, profile=profile, params=default_params(role, profile), events=events,
                    origin="regression", title=sid)


def _rules(res) -> set:
    return {r for r, _ in res.failure.rules} if res.failure else set()


# ---- a full node sends on a message that is final -------------------------------------------------
class _SendsFinal(FullNode):
    """Sends each final message (rejected at pre-evaluation, or finalized) to one more validator at
    every Tick."""

    def _on_tick(self, ev):
        out = super()._on_tick(ev)
        for mid, m in self.msgs.items():
            left = [v for vs in self.sets() for v in rotation(mid, vs) if v not in m.targets]
            if m.final and left:
                m.targets[left[0]] = None
                out.append(SendToValidator(left[0], mid, m.uid, ev.time))
        return out


class _SendsFinalAdapter(VariantAdapter):
    faulty_role = "fullnode"
    variant = _SendsFinal


@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_a_full_node_that_sends_a_message_it_rejected_fails_for_fn_001(profile):
    vals = default_params("fullnode", profile)["validators"]
    events = [{"type": "SessionSwitch", "seqno": 0, "start_time": 0, "validators": vals},
              {"type": "Submit", "msg_id": M1, "time": 1000, "uid": None, "error": "Message rejected by pre-evaluation",
               "has_body": True},
              {"type": "Tick", "time": 5000}]
    sc = _scenario("fullnode", profile, events)
    assert run_scenario(sc, reference("fullnode")).verdict == PASS
    res = run_scenario(sc, _Impl(_SendsFinalAdapter("fullnode")))
    assert res.verdict == FAIL and res.failure.step == 3
    assert _rules(res) == {"REMP-FN-001"}, res.failure.summary


def test_a_full_node_that_sends_a_finalized_message_on_fails_for_client_001():
    vals = default_params("fullnode", "spec")["validators"]
    events = [{"type": "SessionSwitch", "seqno": 0, "start_time": 0, "validators": vals},
              {"type": "Submit", "msg_id": M1, "time": 1000, "uid": None, "error": None, "has_body": True},
              {"type": "MasterchainCommit", "block": _block(1), "msg_ids": [M1], "mc_block": _block(1, True), "time": 1500},
              {"type": "Tick", "time": 5000}]
    sc = _scenario("fullnode", "spec", events)
    assert run_scenario(sc, reference("fullnode")).verdict == PASS
    res = run_scenario(sc, _Impl(_SendsFinalAdapter("fullnode")))
    assert res.verdict == FAIL and res.failure.step == 4
    assert _rules(res) == {"REMP-CLIENT-001"}, res.failure.summary


def test_the_reference_full_node_does_not_send_a_final_message_when_told_to():
    """The reference follows an implementation's legal resend choice; a send of a final message is
    none, so the reference does not copy it."""
    from rmkit.reference_impl.remp.adapter import make_machine
    from rmkit.reference_impl.remp.events import SessionSwitch, Submit

    fn = make_machine("fullnode", dict(default_params("fullnode", "spec"), profile="spec"))
    fn.step(SessionSwitch(0, 0, ("v1", "v2", "v3", "v4")))
    fn.step(Submit(M1, 1000, None, "bad", True))
    fn.choose = {M1: ["v2"]}
    assert fn.step(Tick(5000)) == []


def _block(n, master=False):
    from rmkit.conformance.remp.driven.names import block

    return block(n, master=master)


# ---- the schema rule and the judge's own attribution ------------------------------------------------
def _receipt(kind="PutIntoQueue", **extra):
    r = {"kind": kind, "msg_id": "ab" * 32, "source_id": "v1", "time": 1000, "block": None, "mc_block": None,
         "error": None, "sent_to": None, "total_validators": None}
    r.update(extra)
    return {"type": "Receipt", "receipt": r}


def test_a_well_formed_receipt_breaks_no_schema_rule_whatever_the_reference_sent():
    impl, ref = ReceiptLog("validator", "spec", 60000), ReceiptLog("validator", "spec", 60000)
    impl.add(1, [_receipt()])
    assert rules_broken(impl, ref) == []


def test_a_receipt_missing_a_field_breaks_the_schema_rule():
    impl, ref = ReceiptLog("validator", "spec", 60000), ReceiptLog("validator", "spec", 60000)
    impl.add(1, [_receipt("RejectedByCollator")])  # no error
    assert "REMP-SCHEMA-001" in {r for r, _ in rules_broken(impl, ref)}
