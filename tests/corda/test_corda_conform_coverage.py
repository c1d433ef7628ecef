"""Corda per-rule verdicts rest on evidence, as REMP's and RMB's do: every rule a driven role judges
has a mutant of the reference that breaks it (conformance/corda/driven/mutants.py), and scenarios
that fail that mutant by that rule (measured in coverage.json, per role and profile); a rule no such
scenario covers in a profile says why in the spec (spec/corda/rules.yaml ``not_covered``). A rule
passes in a report only where such a scenario ran clean, and a failure is named by the first rule
the implementation's outputs broke."""

from __future__ import annotations

import re
import shlex
import sys
import xml.etree.ElementTree as ET

import pytest

from rmkit.cli import main
from rmkit.conformance.corda.driven import coverage, measure, mutants, report
from rmkit.conformance.corda.driven.judge import Violation
from rmkit.conformance.corda.driven.suite import Outcome, SearchResult, failed, typed
from rmkit.render.conform import render_text
from rmkit.protocols.corda.model import corda_spec, profiles

ROLES = ("receiver", "bridge")


def test_every_rule_in_scope_is_covered_by_a_mutant_catching_scenario_or_given_a_reason_in_the_spec():
    assert measure.uncovered(coverage.load()) == [], (
        "(rule, role, profile) neither covered by a scenario that catches the rule's mutant nor given a reason "
        "in spec/corda/rules.yaml not_covered; python -m rmkit.conformance.corda.driven.measure measures again")


def test_the_committed_coverage_is_what_measuring_again_gives():
    """Every scenario against the reference and each mutant, in process, seeded and bounded by counts."""
    assert measure.measure(say=lambda line: None) == coverage.load(), (
        "coverage.json is stale: python -m rmkit.conformance.corda.driven.measure")


def test_a_reason_in_the_spec_is_for_a_profile_where_the_rule_is_judged_and_nothing_covers_it():
    """A reason for a rule that is off, judged by no role, or covered after all would hide a stale entry."""
    cov = coverage.load()
    listed = [(r.id, p) for r in corda_spec("spec").rules for p in (r.not_covered or {})]
    assert listed, "no rule gives a reason: the check below checks nothing"
    for rule, profile in listed:
        assert profile in profiles(), (rule, profile)
        roles = [role for role in ROLES if rule in measure.in_scope(role, profile)]
        assert roles, f"{rule}: not judged in {profile}, yet not_covered gives a reason there"
        assert not any(coverage.caught_by(rule, role, profile, cov) for role in roles), (
            f"{rule} is covered in {profile}: drop its not_covered reason there")


def test_every_mutant_is_of_a_role_that_judges_its_rule_and_differs_from_the_reference():
    for (rule, role), m in mutants.MUTANTS.items():
        assert m.role == role and role in corda_spec("spec").rules[rule].driven, (rule, role)
        assert m.cls is not mutants.reference(role) and issubclass(m.cls, mutants.reference(role)), m.name
    assert set(coverage.load()["rules"]) == {rule for rule, _ in mutants.MUTANTS}


@pytest.mark.parametrize("rule,role", sorted(mutants.MUTANTS))
def test_each_mutant_breaks_its_rule_first_on_the_scenarios_that_catch_it_and_the_reference_passes_them(rule, role):
    cov = coverage.load()
    m = mutants.MUTANTS[(rule, role)]
    for profile in profiles():
        names = coverage.caught_by(rule, role, profile, cov)
        if not names:
            continue
        pool = {**measure._catalogue(profile), **cov["scenarios"]}
        mutant = measure._Player(m.cls, role, profile)
        ref = measure._Player(mutants.reference(role), role, profile)
        try:
            for name in names:
                steps = pool[name]["steps"]
                out = mutant.play(steps)   # its rule is the first broken (a loss may follow an early ack)
                assert measure.catches(out, rule, profile), (profile, name, [v.render() for v in out.violations])
                assert not failed(ref.play(steps)), (profile, name)
        finally:
            mutant.close()
            ref.close()


# ---- the verdicts -------------------------------------------------------------------------------
def _result(played=(), failure=None, profile="spec", role="receiver") -> SearchResult:
    return SearchResult(profile, 10, 0.1, failure, {}, role, delivered=5, named=[n for n, _ in played], played=list(played))


def _clean(steps=(("tick",),)) -> Outcome:
    return Outcome("spec", list(steps), [], [])


def _row(result, rule):
    return next(r for r in report.rule_rows(result) if r["id"] == rule)


def test_a_rule_passes_only_where_a_scenario_that_catches_its_mutant_ran_clean():
    rule = "CORDA-DEDUP-005"
    catching = coverage.caught_by(rule, "receiver", "spec")
    others = [n for n in coverage.caught_by("CORDA-ACK-001", "receiver", "spec") if n not in catching]
    assert catching and others
    only_other = _row(_result([(others[0], _clean())]), rule)
    assert (only_other["verdict"], only_other["why"]) == ("not exercised", "no scenario that catches its mutant ran clean in this run")
    clean = _row(_result([(catching[0], _clean())]), rule)
    assert (clean["verdict"], clean["covered_by"]) == ("pass", [catching[0]])
    assert re.search(r"\n  pass, covered by 1 +CORDA-DEDUP-005 ", render_text(typed([_result([(catching[0], _clean())])], [])))
    lost = Outcome("spec", [("crash",)], [Violation(rule, "strict", 1, "the restart lost it", "step 1")], [])
    broken = _row(_result([(catching[0], lost)], failure=lost), rule)
    assert broken["verdict"] == "fail" and broken["evidence"].startswith(f"{rule} (strict) at step 1")
    reason = corda_spec("corda-ent-fastpath").rules["CORDA-DEDUP-007"].not_covered["corda-ent-fastpath"]
    fast = _row(_result([(catching[0], _clean())], profile="corda-ent-fastpath"), "CORDA-DEDUP-007")
    assert (fast["verdict"], fast["why"]) == ("not exercised", reason)


def test_a_rule_neither_covered_nor_given_a_reason_is_named_so(monkeypatch):
    """The check can fail: with the scenarios that catch DEDUP-005's mutant taken away, the rule is
    neither covered nor given a reason, and the report says so instead of passing it."""
    cov = coverage.load()
    cov["rules"]["CORDA-DEDUP-005"]["receiver"]["caught_by"]["spec"] = []
    assert ("CORDA-DEDUP-005", "receiver", "spec") in measure.uncovered(cov)
    monkeypatch.setattr(coverage, "load", lambda: cov)
    row = _row(_result([(n, _clean()) for n in coverage.caught_by("CORDA-ACK-001", "receiver", "spec", cov)]),
               "CORDA-DEDUP-005")
    assert (row["verdict"], row["why"]) == ("not exercised", "no scenario catches its mutant")


def test_a_failure_is_named_by_the_first_rule_the_outputs_broke_not_the_first_the_judge_decided():
    """The durability check decides at the end of the drain what happened at step 3; a violation
    seen in the drain before that decision happened later."""
    later = Violation("CORDA-DEDUP-002", "strict", 5, "lost", "drain tick 2")
    earlier = Violation("CORDA-DEDUP-005", "strict", 5, "not durable", "step 3")
    finding = Violation("CORDA-ORDER-001", "non-strict", 1, "reordered", "step 1")
    out = Outcome("spec", [("tick",)] * 5, [finding, later, earlier], [])
    assert report.first_broken(out.violations) is earlier
    assert report.headline(_result(failure=out)) == "CORDA-DEDUP-005 at step 3"
    from rmkit.conformance.corda.driven.suite import problems

    assert [line.split()[0] for line in problems("spec", out) if line.startswith("CORDA-")] == [
        "CORDA-ORDER-001", "CORDA-DEDUP-005", "CORDA-DEDUP-002"]   # as they happened
    tick = Violation("CORDA-ACK-002", "strict", 5, "never acked", "drain tick 50")
    restart = Violation("CORDA-DEDUP-001", "strict", 5, "twice", "drain restart 1")
    log = ["drain tick 3: tick -> {}", "drain restart 1: crash", "drain tick 60: tick -> {}"]
    assert report.first_broken([tick, restart], log) is restart


# ---- the reports ----------------------------------------------------------------------------------
def test_junit_names_the_real_command_that_reproduces_a_failure(tmp_path, capsys):
    cmd = f"{shlex.quote(sys.executable)} -m rmkit.conformance.corda.driven.examples ack_before_commit ROLE"
    code = main(["conform", "--protocol", "corda", "--role", "receiver", "--derandomize", "--max-examples", "5",
                 "--impl-cmd", cmd, "--regressions", str(tmp_path), "--format", "junit"])
    out = capsys.readouterr().out
    assert code == 1, out
    saved = next(tmp_path.glob("corda-receiver-spec-*.json"))
    cases = {c.get("name"): c for c in ET.fromstring(out).iter("testcase")}
    text = cases["CORDA-ACK-001"].find("failure").text
    assert text.splitlines()[-1] == "reproduce: " + shlex.join(["rmkit", "replay", "--protocol", "corda", str(saved),
                                                                "--impl-cmd", cmd])
    assert cases["CORDA-ORDER-001"].find("skipped").get("message").startswith("not exercised: ")


def test_every_report_shows_the_per_rule_verdicts_from_evidence(tmp_path, capsys):
    import json

    ref = ["--impl", "rmkit.conformance.corda.driven.adapters:reference_factory", "--derandomize", "--max-examples", "5",
           "--regressions", str(tmp_path / "reg")]
    html = tmp_path / "report.html"
    assert main(["conform", "--protocol", "corda", *ref, "--format", "json", "--html", str(html)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["group"] for r in doc["rules"]} == {"receiver", "bridge"}
    for v in doc["rules"]:
        assert v["status"] in ("pass", "not exercised", "off"), v
        if v["status"] == "pass":
            assert len(v["covered_by"]) >= 1
            assert set(v["covered_by"]) <= set(coverage.caught_by(v["id"], v["group"], "spec"))
        else:
            assert v["why"], v["id"]
    page = html.read_text()
    assert re.search(r"<td>covered by [1-9]\d*: [^<]+</td>", page)
    assert "<td class='status' style='background:#2e7d32'>pass</td>" in page
    assert "no message over the maximum size reaches a bridge" in page   # CORDA-BRIDGE-003's reason, from the spec


def test_without_the_catalogue_the_measure_keeps_a_generated_scenario_for_every_mutant(monkeypatch):
    """The search behind a mutant no named scenario catches: derandomized, bounded by counts, and its
    scenario kept (with its steps) so that a run plays it."""
    import rmkit.protocols.corda.model as spec_module

    monkeypatch.setattr(measure, "_catalogue", lambda profile: {})
    monkeypatch.setattr(spec_module, "profiles", lambda: ["spec"])
    cov = measure.measure(say=lambda line: None)
    assert cov["scenarios"] and all(name.startswith("generated-") for name in cov["scenarios"])
    assert measure.uncovered(cov) == []
    rule, role = next(iter(mutants.MUTANTS))   # searched for first (nothing kept yet): the same scenario again
    m = mutants.MUTANTS[(rule, role)]
    players = [measure._Player(m.cls, role, "spec"), measure._Player(mutants.reference(role), role, "spec")]
    try:
        assert measure._search(rule, role, "spec", *players) in [sc["steps"] for sc in cov["scenarios"].values()]
    finally:
        for p in players:
            p.close()
    monkeypatch.setattr(coverage, "load", lambda: cov)
    played = dict(coverage.generated("receiver", "spec"))
    assert set(played) == {n for n, sc in cov["scenarios"].items() if sc["role"] == "receiver"}


def test_a_second_commit_is_a_known_departure_only_where_the_profile_names_it():
    """CORDA-DEDUP-001 stays strict in corda-ent-fastpath: its line says "known departure" only
    when the cause the profile's facts have (a CORDA-DEDUP-007 finding) was seen and no check of
    DEDUP-001 itself failed; a second commit of any other cause fails it."""
    name = coverage.caught_by("CORDA-DEDUP-001", "receiver", "corda-ent-fastpath")[0]
    trusted = Violation("CORDA-DEDUP-007", "non-strict", 8, "N-1 is committed, yet answered NEW: above its mark", "step 8")
    seen = _result([(name, _clean())], profile="corda-ent-fastpath")
    seen.findings["CORDA-DEDUP-007"] = Outcome("corda-ent-fastpath", [("tick",)], [trusted], [])
    row = _row(seen, "CORDA-DEDUP-001")
    assert row["verdict"] == "known departure" and "reported as CORDA-DEDUP-007" in row["evidence"]
    assert re.search(r"known departure +CORDA-DEDUP-001 ", render_text(typed([seen], [])))
    twice = Outcome("corda-ent-fastpath", [("tick",)], [Violation("CORDA-DEDUP-001", "strict", 3, "N-1 committed a second time", "step 3")], [])
    failed_run = _result([(name, twice)], failure=twice, profile="corda-ent-fastpath")
    failed_run.findings["CORDA-DEDUP-007"] = seen.findings["CORDA-DEDUP-007"]
    assert _row(failed_run, "CORDA-DEDUP-001")["verdict"] == "fail"
    elsewhere = _result([(name, _clean())], profile="corda-os")
    assert _row(elsewhere, "CORDA-DEDUP-001")["verdict"] != "known departure"
