"""The coverage table of `rmkit conform`: every rule in the scope of a role is measured by a mutant of
that role (a reference that breaks exactly that rule) which a catalogue or generated scenario of the
role catches, or is listed in the spec as not drivable there, with the reason; the HTML report shows
the table with nothing left unexplained, for each profile and each role run alone or all together."""

from __future__ import annotations

import re

import pytest

from rmkit.conformance.remp.driven.adapters import InProcessImplementation
from rmkit.conformance.remp.driven.catalogue import catalogue, conformance_spec
from rmkit.conformance.remp.driven.coverage import _Impl, attributed, coverage, generated_scenarios
from rmkit.conformance.remp.driven.mutants import MUTANTS, _base, mutants_for, not_drivable, why_not_covered
from rmkit.conformance.remp.driven.report import NOT_COVERED, render_html
from rmkit.conformance.remp.driven.runner import FAIL, PASS, run_scenario
from rmkit.conformance.remp.driven.suite import ROLES, rules_in_scope, run_suite

PROFILES = ("spec", "ever-node")
REFERENCE = "rmkit.reference_impl.remp.adapter:factory"


def reference(role):
    return InProcessImplementation(REFERENCE, role)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_rule_in_scope_of_each_role_is_caught_by_its_mutant_or_listed_as_not_drivable(profile):
    cov = coverage(profile)
    scenarios = {s.id: s for s in catalogue(profile) + generated_scenarios(profile)}
    assert any(sid.startswith("generated-") for ids in cov.values() for sid in ids), "no generated scenario covers a rule"
    for role in ROLES:
        for rid in rules_in_scope(profile, (role,)):
            cls = mutants_for(rid, profile).get(role)
            why = not_drivable(rid, profile, role)
            assert (cls is None) != (why is None), f"{profile} {role} {rid}: needs either a mutant of the role or a reason, not {cls}, {why}"
            if cls is None:
                continue
            own = [sid for sid in cov.get(rid, []) if scenarios[sid].role == role]
            assert own, f"{profile} {role} {rid}: no scenario of the role catches its mutant"
            sc = scenarios[own[-1]]
            assert run_scenario(sc, reference(role)).verdict == PASS
            assert attributed(run_scenario(sc, _Impl(cls, role)), rid)  # caught, and the failure names the rule


def test_every_not_drivable_entry_is_in_scope_where_it_is_listed():
    """A reason for a rule its role cannot even break (out of scope, or off in the profile) would hide
    a stale entry; so would one for a rule the role has a mutant for."""
    for e in conformance_spec()["not_drivable"]:
        for profile in e.get("profiles", PROFILES):
            for role in e["roles"]:
                assert e["rule"] in rules_in_scope(profile, (role,)), f"{e['rule']} is not in the {role} scope of {profile}"
                assert role not in mutants_for(e["rule"], profile), f"{e['rule']}: a {role} mutant exists in {profile}"


# the mutants of the receipt rules that the full node's own log can break, the one of REMP-SRC-001 in
# ever-node, and the validator's of REMP-ROLE-001 and REMP-SEQ-001: each breaks its rule alone on the
# catalogue scenario that catches it
EXACT = [("REMP-ROLE-001", "validator", "spec", "CAT-VAL-006"), ("REMP-ROLE-001", "validator", "ever-node", "CAT-VAL-012"),
         ("REMP-SEQ-001", "validator", "spec", "CAT-VAL-003"),
         ("REMP-SRC-001", "validator", "ever-node", "CAT-VAL-016"), ("REMP-SRC-001", "fullnode", "spec", "CAT-FN-006"),
         ("REMP-SRC-001", "fullnode", "ever-node", "CAT-FN-009"), ("REMP-SRC-002", "fullnode", "spec", "CAT-FN-002"),
         ("REMP-SEQ-001", "fullnode", "spec", "CAT-FN-004"), ("REMP-SCHEMA-001", "fullnode", "ever-node", "CAT-FN-002"),
         ("REMP-KIND-001", "fullnode", "spec", "CAT-FN-002"), ("REMP-KIND-002", "fullnode", "ever-node", "CAT-FN-002"),
         ("REMP-ROLE-001", "fullnode", "spec", "CAT-FN-002"), ("REMP-ROLE-001", "fullnode", "ever-node", "CAT-FN-002"),
         ("REMP-FIN-002", "fullnode", "spec", "CAT-FN-007"), ("REMP-OUTCOME-002", "fullnode", "ever-node", "CAT-FN-008")]


@pytest.mark.parametrize("rule,role,profile,sid", EXACT)
def test_a_mutant_breaks_only_its_rule(rule, role, profile, sid):
    sc = next(s for s in catalogue(profile, [role]) if s.id == sid)
    res = run_scenario(sc, _Impl(mutants_for(rule, profile)[role], role))
    assert res.verdict == FAIL and {r for r, _ in res.failure.rules} == {rule}, res.failure and res.failure.summary


def test_a_final_validator_receipt_is_final_in_ever_node_too():
    """After its own Finalized an ever-node validator says nothing more (its collator's late reject
    included); the profile's freedom after a reject does not reach a Finalized."""
    sc = next(s for s in catalogue("ever-node", ["validator"]) if s.id == "CAT-VAL-016")
    res = run_scenario(sc, InProcessImplementation("rmkit.conformance.remp.examples.non_sticky_final:factory", "validator"))
    assert res.failure.step == 7 and [r for r, _ in res.failure.rules] == ["REMP-SRC-001"]
    assert any("RejectedByCollator" in line for _, _, line in res.failure.evidence)


def test_every_key_of_the_mutants_names_a_rule_of_the_spec():
    from rmkit.protocols.remp.model import model_for

    known = {r.id for r in model_for("spec").rules} | {r["id"] for r in conformance_spec()["requirements"]}
    assert {_base(k) for k in MUTANTS} <= known


RUNS = [(p, roles) for p in PROFILES for roles in [(r,) for r in ROLES] + [ROLES]]


@pytest.mark.parametrize("profile,roles", RUNS, ids=[f"{p}-{'+'.join(r)}" for p, r in RUNS])
def test_the_report_of_the_reference_shows_every_rule_covered_or_not_drivable(profile, roles):
    rep = run_suite(profile, roles, reference, max_examples=0, regressions=None)
    assert rep.verdict == PASS
    rows = rep.table()
    assert rows and {r["id"] for r in rows} == set(rules_in_scope(profile, roles))
    for r in rows:
        assert r["status"] == PASS or (r["status"] == NOT_COVERED and r["why"].startswith("not drivable: ")), (r["id"], r["why"])
    page = render_html(rep)
    undrivable = sum(1 for r in rows if r["status"] == NOT_COVERED)
    m = re.search(r"Coverage: (\d+) of (\d+) rules in scope .*?;\s+(\d+) are listed as not drivable, with the reason;\s+(\d+) are neither",
                  page, re.S)
    assert m and [int(x) for x in m.groups()] == [len(rows) - undrivable, len(rows), undrivable, 0]
    assert page.count("<tr><td><code>REMP-") == len(rows)


def test_why_not_covered_names_each_role_of_a_run():
    assert why_not_covered("REMP-REPLAY-001", "spec", ["validator"]).startswith("not drivable: a validator's own receipts cannot show")
    both = why_not_covered("REMP-REPLAY-001", "spec", ["validator", "fullnode"])
    assert "validator: " in both and "fullnode: " in both
    assert why_not_covered("REMP-FANOUT-001", "ever-node", ["fullnode"]).startswith("not drivable: the ever-node full node")


def test_a_rule_neither_measured_nor_listed_shows_as_neither(monkeypatch):
    """The table's check can fail: without SRC-001's mutants the rule is neither covered nor listed."""
    from rmkit.conformance.remp.driven import mutants
    from rmkit.conformance.remp.driven.report import ConformReport

    monkeypatch.setattr(mutants, "MUTANTS", {k: v for k, v in MUTANTS.items() if _base(k) != "REMP-SRC-001"})
    assert why_not_covered("REMP-SRC-001", "ever-node", ["validator"]).startswith("no mutant in the ever-node profile")
    rep = ConformReport(implementation="x", profile="ever-node", roles=["validator"],
                        rules={"REMP-SRC-001": "Validator reported after its own final status"})
    assert re.search(r"0 are listed as not drivable, with the reason; 1 are neither", render_html(rep))
