"""RMB per-rule verdicts rest on evidence, as REMP's do: every rule the driven suite judges has a
mutant of the reference daemon that breaks it, and catalogue scenarios that fail that mutant by
that rule (measured in coverage.json); a rule no such scenario covers must say why in the spec
(spec/rmb/daemon.yaml not_driven). A rule passes in a report only where such a scenario ran clean."""

from __future__ import annotations

import pytest

from rmkit.conformance.rmb.driven import coverage
from rmkit.conformance.rmb.driven.judge import ActResult, Check, Rules
from rmkit.conformance.rmb.driven.scenario import NOT_DRIVEN, Scenario, catalogue
from rmkit.conformance.rmb.driven.suite import ConformReport, ScenarioRun, core_report
from rmkit.render.conform import render_text
from rmkit.conformance.rmb.examples.mutants import RULE_MUTANTS
from rmkit.conformance.rmb.examples.variants import VARIANTS
from rmkit.protocols.rmb.model import rmb_spec


def in_scope() -> set[str]:
    spec = rmb_spec()
    return {r.id for r in spec.rules if any(spec.mode(r.id, p) != "off" for p in spec.profiles)}


def test_every_rule_in_scope_is_covered_by_a_mutant_catching_scenario_or_says_why():
    cov = coverage.load()
    neither = sorted(r for r in in_scope() if not (cov.get(r) or {}).get("caught_by") and r not in NOT_DRIVEN)
    assert neither == [], f"rules neither covered by a scenario that catches their mutant nor given a reason: {neither}"


def test_every_mutant_is_a_variant_measured_in_a_profile_that_judges_its_rule():
    spec = rmb_spec()
    for rule, (name, profile) in RULE_MUTANTS.items():
        assert name in VARIANTS, rule
        assert spec.mode(rule, profile) == "strict", (rule, profile)
    assert set(coverage.load()) == set(RULE_MUTANTS)


def test_the_catching_scenarios_are_catalogue_titles():
    titles = {sc.title for p in rmb_spec().profiles for sc in catalogue(p, False)}
    for rule, entry in coverage.load().items():
        assert set(entry["caught_by"]) <= titles, rule


def _run(title: str, checks: list[Check]) -> ScenarioRun:
    res = ActResult({"act": "send"})
    res.checks = checks
    return ScenarioRun(Scenario("catalogue-01", "spec", [], title, "catalogue"), [res])


def test_a_rule_passes_only_where_a_scenario_that_catches_its_mutant_ran_clean():
    rule = "RMB-RETRY-003"
    catching = coverage.load()[rule]["caught_by"][0]
    other = next(sc.title for sc in catalogue("spec", False) if sc.title not in coverage.load()[rule]["caught_by"])
    rules = Rules("spec")
    only_other = ConformReport("impl", "spec", runs=[_run(other, [Check(rule, True, "held")])])
    assert coverage.rule_verdicts(only_other, rules)[rule] == ("not exercised", "no scenario that catches its mutant ran in this run")
    clean = ConformReport("impl", "spec", runs=[_run(catching, [Check(rule, True, "held")])])
    assert coverage.rule_verdicts(clean, rules)[rule] == ("pass", 1)
    assert "pass, covered by 1" in render_text(core_report(clean))
    broken = ConformReport("impl", "spec", runs=[_run(catching, [Check(rule, False, "retried a 400")])])
    assert coverage.rule_verdicts(broken, rules)[rule] == ("fail", 1)
    assert coverage.rule_verdicts(clean, rules)["RMB-REMOTE-009"] == ("not exercised", NOT_DRIVEN["RMB-REMOTE-009"])


@pytest.mark.slow
def test_the_measured_coverage_is_current():
    """Measured again (every mutant against the catalogue): the committed coverage.json still holds."""
    from rmb_support import redis_server_or_skip

    from rmkit.conformance.rmb.driven.measure import measure

    redis_server_or_skip()
    now = measure(jobs=3, say=lambda line: None)
    for rule, entry in coverage.load().items():
        assert set(entry["caught_by"]) <= set(now[rule]["caught_by"]) | set(), rule
        assert now[rule]["caught_by"], rule
