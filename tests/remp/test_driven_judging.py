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
from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.events import SendToValidator, Tick
from rmkit.reference_impl.remp.fullnode import FullNode, rotation
from rmkit.reference_impl.remp.validator import Validator

REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
M1 = msg_id("m1")


def reference(role):
    return InProcessImplementation(REFERENCE, role)


def _Impl(obj):
    """An adapter object behind the in-process implementation interface (coverage's, for one object)."""
    from rmkit.conformance.remp.driven.coverage import _Impl as Wrapped

    return Wrapped(lambda role: obj, None)


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


def test_a_full_node_that_sends_a_finalized_message_on_fails_for_client_004():
    vals = default_params("fullnode", "spec")["validators"]
    events = [{"type": "SessionSwitch", "seqno": 0, "start_time": 0, "validators": vals},
              {"type": "Submit", "msg_id": M1, "time": 1000, "uid": None, "error": None, "has_body": True},
              {"type": "MasterchainCommit", "block": _block(1), "msg_ids": [M1], "mc_block": _block(1, True), "time": 1500},
              {"type": "Tick", "time": 5000}]
    sc = _scenario("fullnode", "spec", events)
    assert run_scenario(sc, reference("fullnode")).verdict == PASS
    res = run_scenario(sc, _Impl(_SendsFinalAdapter("fullnode")))
    assert res.verdict == FAIL and res.failure.step == 4
    assert _rules(res) == {"REMP-CLIENT-004"}, res.failure.summary


def test_resends_are_owed_only_in_the_profile_whose_facts_have_them():
    """REMP-CLIENT-001 rests on the running node's resend pacing (remp-as-built): the documents'
    profile owes no resend, so a full node resending slowly passes there and fails in ever-node."""
    from rmkit.conformance.remp.driven.catalogue import catalogue

    impl = lambda: InProcessImplementation("rmkit.conformance.remp.examples.slow_resend:factory", "fullnode")  # noqa: E731
    assert all(run_scenario(sc, impl()).verdict == PASS for sc in catalogue("spec", ["fullnode"]))
    assert any(run_scenario(sc, impl()).verdict == FAIL for sc in catalogue("ever-node", ["fullnode"]))


def test_the_reference_full_node_does_not_send_a_final_message_when_told_to():
    """The reference follows an implementation's legal resend choice; a send of a final message is
    none, so the reference does not copy it."""
    from rmkit.reference_impl.remp.adapter import make_machine
    from rmkit.protocols.remp.events import SessionSwitch, Submit

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


# ---- each mutant and faulty example fails for its own rule, and only a collation fault for COLL-001 --
def _catalogue_rules(profile, role, impl_for) -> dict:
    """scenario id -> the rules its failure names, for the catalogue scenarios of ``role`` that fail."""
    from rmkit.conformance.remp.driven.catalogue import catalogue

    out = {}
    for sc in catalogue(profile, [role]):
        res = run_scenario(sc, impl_for())
        if res.verdict == FAIL:
            out[sc.id] = _rules(res)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_every_mutant_fails_the_catalogue_for_its_own_rule_and_no_other_collation_rule(profile):
    from rmkit.conformance.remp.driven.coverage import _Impl
    from rmkit.conformance.remp.driven.mutants import _base, every_mutant

    for key, role, cls in every_mutant(profile):
        rule = _base(key)
        failed = _catalogue_rules(profile, role, lambda: _Impl(cls, role))
        named = set().union(*failed.values()) if failed else set()
        assert rule in named, f"{profile} {key}: no catalogue failure names it: {failed}"
        assert rule == "REMP-COLL-001" or "REMP-COLL-001" not in named, f"{profile} {key}: {failed}"


@pytest.mark.parametrize("name,rule", [("collates_rejected", "REMP-COLL-002"), ("ignores_rejected_digests", "REMP-COLL-002"),
                                       ("stamps_zero", "REMP-TIME-001")])
def test_a_faulty_validator_fails_for_its_rule_alone(name, rule):
    role = "validator"
    failed = _catalogue_rules("spec", role, lambda: InProcessImplementation(f"rmkit.conformance.remp.examples.{name}:factory", role))
    assert failed and set().union(*failed.values()) == {rule}, failed


@pytest.mark.parametrize("key", ["REMP-COLL-003", "REMP-REPLAY-003", "REMP-IGN-001", "REMP-EXPIRY-001"])
def test_a_collation_mutant_is_not_blamed_on_collation_order(key):
    from rmkit.conformance.remp.driven.coverage import _Impl
    from rmkit.conformance.remp.driven.mutants import MUTANTS

    cls = MUTANTS[key][1]
    failed = _catalogue_rules("spec", "validator", lambda: _Impl(cls, "validator"))
    named = set().union(*failed.values())
    assert key in named and "REMP-COLL-001" not in named, failed


@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_a_full_node_stamping_its_receipts_zero_fails_for_time_001(profile):
    role = "fullnode"
    failed = _catalogue_rules(profile, role, lambda: InProcessImplementation(
        "rmkit.conformance.remp.examples.fullnode_stamps_zero:factory", role))
    assert failed and set().union(*failed.values()) == {"REMP-TIME-001"}, failed


def test_a_validator_stamping_zero_is_legal_in_ever_node():
    from rmkit.conformance.remp.driven.catalogue import catalogue

    for sc in catalogue("ever-node", ["validator"]):
        assert run_scenario(sc, InProcessImplementation("rmkit.conformance.remp.examples.stamps_zero:factory", "validator")).verdict == PASS


class _Rewrite(VariantAdapter):
    """The reference with one rewrite of the faulty role's outputs (``rewrite``)."""

    rewrite = None

    def outputs(self, outs):
        return type(self).rewrite(outs)


def _rewriting(role, fn):
    return type("R", (_Rewrite,), {"faulty_role": role, "rewrite": staticmethod(fn)})(role)


def _catalogue_case(profile, role, sid):
    from rmkit.conformance.remp.driven.catalogue import catalogue

    return next(s for s in catalogue(profile, [role]) if s.id == sid)


def test_a_record_of_another_origin_session_fails_the_queue_rule():
    """The record that puts the message into the catchain says it came in another session (from
    which the others count its lifetime, 001): the message is not placed as it came."""
    def rewrite(outs):
        return [dict(o, record=dict(o["record"], origin_session=7)) if o["type"] == "CatchainBroadcast" else o for o in outs]

    res = run_scenario(_catalogue_case("spec", "validator", "CAT-VAL-001"), _Impl(_rewriting("validator", rewrite)))
    assert res.verdict == FAIL and _rules(res) == {"REMP-QUEUE-001"}, res.failure.summary


def test_a_receipt_sent_twice_is_informational():
    """No sentence forbids sending a receipt again (the log reads a repeated receipt as one): the
    difference is shown, never failed."""
    def rewrite(outs):  # PutIntoQueue sent twice: no receipt is missing
        return outs + [o for o in outs if o["type"] == "Receipt" and o["receipt"]["kind"] == "PutIntoQueue"]

    res = run_scenario(_catalogue_case("spec", "validator", "CAT-VAL-003"), _Impl(_rewriting("validator", rewrite)))
    assert res.verdict == PASS, res.failure.summary
    assert res.differences and "PutIntoQueue" in res.differences[0].summary


def test_a_total_the_documents_do_not_define_passes():
    """total_validators has no definition in the documents beyond its name (the full node may count
    the current set, both sets or anything between, REMP-FREE-001): a total of 9 of 4 + 4 fails
    nothing (REMP-FANOUT-001 holds sent_to <= total_validators in the log)."""
    def rewrite(outs):
        return [dict(o, receipt=dict(o["receipt"], total_validators=9))
                if o["type"] == "Publish" and o["receipt"]["kind"] == "SentToValidators" else o for o in outs]

    res = run_scenario(_catalogue_case("spec", "fullnode", "CAT-FN-005"), _Impl(_rewriting("fullnode", rewrite)))
    assert res.verdict == PASS, res.failure.summary


def test_a_count_below_the_validators_sent_to_fails_count_001():
    def rewrite(outs):
        return [dict(o, receipt=dict(o["receipt"], sent_to=o["receipt"]["sent_to"] - 1)) if o["type"] == "Publish"
                and o["receipt"]["kind"] == "SentToValidators" else o for o in outs]

    res = run_scenario(_catalogue_case("spec", "fullnode", "CAT-FN-005"), _Impl(_rewriting("fullnode", rewrite)))
    assert res.verdict == FAIL and _rules(res) == {"REMP-COUNT-001"}, res.failure and res.failure.summary


def test_a_count_above_the_total_is_fanout_001():
    def rewrite(outs):
        return [dict(o, receipt=dict(o["receipt"], total_validators=1)) if o["type"] == "Publish"
                and o["receipt"]["kind"] == "SentToValidators" else o for o in outs]

    res = run_scenario(_catalogue_case("spec", "fullnode", "CAT-FN-005"), _Impl(_rewriting("fullnode", rewrite)))
    assert res.verdict == FAIL and "REMP-FANOUT-001" in _rules(res)  # sent_to 4 > total_validators 1


# ---- never a failure without a requirement ------------------------------------------------------------
def test_a_receipt_naming_another_block_fails_incl_001():
    from rmkit.conformance.remp.driven.runner import explain_failure

    def rewrite(outs):  # the receipt names a block the validator did not collate into
        return [dict(o, receipt=dict(o["receipt"], block=dict(o["receipt"]["block"], seqno=99)))
                if o["type"] == "Receipt" and o["receipt"]["kind"] == "IncludedIntoBlock" else o for o in outs]

    res = run_scenario(_catalogue_case("spec", "validator", "CAT-VAL-003"), _Impl(_rewriting("validator", rewrite)))
    assert res.verdict == FAIL and _rules(res) == {"REMP-INCL-001"}
    assert "breaks REMP-INCL-001" in explain_failure(res)


def test_a_difference_no_requirement_names_passes_and_is_reported_as_informational():
    """A receipt sent twice breaks no requirement: the report lists it as informational."""
    from rmkit.conformance.remp.driven.report import ConformReport, core_report
    from rmkit.render.conform import report_dict, render_text

    def rewrite(outs):
        return outs + [o for o in outs if o["type"] == "Receipt" and o["receipt"]["kind"] == "PutIntoQueue"]

    res = run_scenario(_catalogue_case("spec", "validator", "CAT-VAL-003"), _Impl(_rewriting("validator", rewrite)))
    assert res.verdict == PASS and res.differences, res.failure and res.failure.summary
    rep = core_report(ConformReport("x", "spec", ["validator"], [res]))
    assert "informational: 1 difference(s)" in render_text(rep) and report_dict(rep)["scenarios"][0]["informational"]


def test_a_validator_that_sends_no_reject_record_passes_and_a_false_record_fails_vote_001():
    res = run_scenario(_catalogue_case("spec", "validator", "CAT-VAL-006"), InProcessImplementation(
        "rmkit.conformance.remp.examples.no_vote_records:factory", "validator"))
    assert res.verdict == PASS and res.freedoms_used.get("vote_records"), res.failure and res.failure.summary
    from rmkit.conformance.remp.driven.mutants import MUTANTS

    res = run_scenario(_catalogue_case("spec", "validator", "CAT-VAL-003"), _Impl(MUTANTS["REMP-VOTE-001"][1]("validator")))
    assert res.verdict == FAIL and _rules(res) == {"REMP-VOTE-001"}, res.failure and res.failure.summary


# ---- a rule failure shows what the implementation sent ---------------------------------------------
def test_a_rule_failure_reports_the_outputs_of_its_step():
    impl = InProcessImplementation("rmkit.conformance.remp.examples.stamps_zero:factory", "validator")
    res = run_scenario(_catalogue_case("spec", "validator", "CAT-VAL-003"), impl)
    f = res.failure
    assert res.verdict == FAIL and f.kind == "rule" and "REMP-TIME-001" in _rules(res)
    assert f.actual and [o["type"] for o in f.actual] == [o["type"] for o in f.expected]
    assert all(o["receipt"]["time"] == 0 for o in f.actual if o["type"] == "Receipt")
    assert f.as_dict()["actual"] == f.actual


# ---- rejected hand-over digests --------------------------------------------------------------------
def test_generated_validator_scenarios_draw_rejected_digests():
    from rmkit.conformance.remp.driven.generate import run_generated

    role, profile = "validator", "spec"
    impl = InProcessImplementation("rmkit.conformance.remp.examples.ignores_rejected_digests:factory", role)
    g = run_generated(role, profile, default_params(role, profile), impl, max_examples=300, derandomize=True)
    assert g.failing is not None, "a validator ignoring rejected digests passed the generated scenarios"
    assert "REMP-COLL-002" in _rules(run_scenario(g.failing, impl))


# ---- the choices the documents leave ---------------------------------------------------------------
@pytest.mark.parametrize("name,role,profile", [("final_only_consumer", "consumer", "spec"), ("oldest_only", "validator", "spec"),
                                               ("total_current_set", "fullnode", "spec")])
def test_a_legal_reading_passes_the_catalogue(name, role, profile):
    from rmkit.conformance.remp.driven.catalogue import catalogue

    for sc in catalogue(profile, [role]):
        res = run_scenario(sc, InProcessImplementation(f"rmkit.conformance.remp.examples.{name}:factory", role))
        assert res.verdict == PASS, f"{sc.id}: {res.failure.summary}"


def test_an_intermediate_conclusion_the_receipts_do_not_support_fails():
    def rewrite(outs):  # claims a block candidate holds the message before any receipt says so
        return [dict(o, name="optimistic") if o["type"] == "Outcome" and not o["final"] and not o["lost"] else o for o in outs]

    res = run_scenario(_catalogue_case("spec", "consumer", "CAT-CON-001"), _Impl(_rewriting("consumer", rewrite)))
    assert res.verdict == FAIL and _rules(res) == {"REMP-CLIENT-002"}


def test_oldest_first_without_holding_back_passes_but_newest_first_fails():
    sc = _catalogue_case("spec", "validator", "CAT-VAL-013")
    assert run_scenario(sc, InProcessImplementation("rmkit.conformance.remp.examples.oldest_only:factory", "validator")).verdict == PASS
    res = run_scenario(_catalogue_case("spec", "validator", "CAT-VAL-002"),
                       InProcessImplementation("rmkit.conformance.remp.examples.newest_first:factory", "validator"))
    assert res.verdict == FAIL and _rules(res) == {"REMP-COLL-001"}


class _DropsDigests(VariantAdapter):
    """A validator that drops the hand-over digests of the previous session."""

    faulty_role = "validator"

    class variant(Validator):
        def _on_digests(self, ev):
            return []  # the bug: the replay memory is not carried across the hand-over


def test_a_validator_ignoring_digests_is_named_for_its_fault_not_the_schema():
    """It queues again a message the previous session processed: REMP-REPLAY-003's fault (it is on
    its way to the collator again); its PutIntoQueue is well formed, so no REMP-SCHEMA-001."""
    vals = default_params("validator", "spec")["validators"]
    b1 = _block(1)
    events = [{"type": "SessionSwitch", "seqno": 0, "start_time": 0, "validators": vals},
              {"type": "SessionSwitch", "seqno": 1, "start_time": 60000, "validators": vals},
              {"type": "ForwardedDigests", "sender": vals[1], "session": 0, "time": 60100,
               "digests": [{"msg_id": M1, "status": "accepted", "block_root": b1["root_hash"], "origin_session": 0}]},
              {"type": "CatchainRecord", "sender": vals[1], "msg_id": M1, "session": 1, "kind": "new", "time": 60200,
               "uid": None, "origin_session": 1, "block": None, "error": None, "status": None}]
    sc = _scenario("validator", "spec", events)
    assert run_scenario(sc, reference("validator")).verdict == PASS
    res = run_scenario(sc, _Impl(_DropsDigests("validator")))
    assert res.verdict == FAIL and _rules(res) == {"REMP-REPLAY-003"}, res.failure.summary
