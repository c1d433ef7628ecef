"""A driven failure names only requirements: every rule a failing report of the REMP suite names
rests on a sentence of the documents whose force is *requirement* (spec/remp/traceability.yaml), or
on a reference fact of the profile the run claims; no report names a catch-all.

The walk covers every faulty example in every profile where it applies and every mutant of the
reference (each breaks one rule), through the catalogue: what any of them can make the kit say.
"""

from __future__ import annotations

import functools

import pytest

from rmkit.conformance.remp.examples import EXAMPLES, profiles_of
from rmkit.conformance.remp.driven.adapters import InProcessImplementation
from rmkit.conformance.remp.driven.catalogue import catalogue
from rmkit.conformance.remp.driven.coverage import _Impl
from rmkit.conformance.remp.driven.mutants import every_mutant
from rmkit.conformance.remp.driven.report import ConformReport, core_report
from rmkit.render.conform import render_text
from rmkit.conformance.remp.driven.runner import FAIL, run_scenario
from rmkit.specload import load_protocol_spec
from rmkit.traceability import source_forces

# the reference facts each profile claims (a fact of another profile binds nobody here)
FACTS_OF = {"spec": set(), "ever-node": {"remp-as-built"}}


@functools.lru_cache(maxsize=None)
def _grounds() -> dict:
    """rule or requirement id -> (forces of its source sentences, docs of its facts)."""
    spec = load_protocol_spec("remp")
    items = spec["rules"]["rules"] + spec["conformance"]["requirements"]
    forces = source_forces(items, spec["traceability"]["sentences"])
    docs = {i["id"]: {s["doc"] for s in ([i["source"]] if isinstance(i.get("source"), dict) else i.get("sources") or [])
                      if "fact" in s} for i in items}
    return {rid: (set(f), docs.get(rid, set())) for rid, f in forces.items()}


def grounded(rule: str, profile: str) -> bool:
    forces, facts = _grounds().get(rule, (set(), set()))
    return "requirement" in forces or bool(facts & FACTS_OF[profile])


def _failing_rules(profile: str, role: str, make) -> dict:
    out = {}
    results = []
    for sc in catalogue(profile, [role]):
        res = run_scenario(sc, make())
        results.append(res)
        if res.verdict == FAIL and res.failure is not None:
            out[sc.id] = {r for r, _ in res.failure.rules}
    text = render_text(core_report(ConformReport("x", profile, [role], results)))
    assert "EXACT" not in text and "catch-all" not in text
    return out


FAULTY = [(n, p) for n in sorted(EXAMPLES) for p in profiles_of(n)]


@pytest.mark.parametrize("name,profile", FAULTY)
def test_every_failure_of_a_faulty_example_names_requirements_only(name, profile):
    role = EXAMPLES[name][0]
    failed = _failing_rules(profile, role, lambda: InProcessImplementation(f"rmkit.conformance.remp.examples.{name}:factory", role))
    assert failed, f"{name} ({profile}) passed the catalogue"
    for sid, rules in failed.items():
        assert rules, f"{name} {sid}: a failure that names no rule"
        bad = sorted(r for r in rules if not grounded(r, profile))
        assert not bad, f"{name} ({profile}) {sid}: {bad} rest on no requirement of the documents or of the profile's facts"


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_every_failure_of_a_mutant_names_requirements_only(profile):
    for key, role, cls in every_mutant(profile):
        for sid, rules in _failing_rules(profile, role, lambda: _Impl(cls, role)).items():
            bad = sorted(r for r in rules if not grounded(r, profile))
            assert not bad, f"{key} ({profile}) {sid}: {bad}"


def test_a_requirement_resting_on_a_fact_binds_only_in_the_profile_that_claims_it():
    from rmkit.conformance.remp.driven.judge import binds
    from rmkit.conformance.remp.driven.suite import rules_in_scope

    assert not grounded("REMP-CLIENT-001", "spec") and grounded("REMP-CLIENT-001", "ever-node")
    assert not binds("REMP-CLIENT-001", "spec") and binds("REMP-CLIENT-001", "ever-node")
    assert "REMP-CLIENT-001" not in rules_in_scope("spec", ["fullnode"])
    for req in load_protocol_spec("remp")["conformance"]["requirements"]:
        for profile in req.get("profiles", ("spec", "ever-node")):
            assert grounded(req["id"], profile), f"{req['id']} binds in {profile} on no requirement"
