"""Every protocol's driven run is one typed report (rmkit/conformreport.py), rendered by one JUnit
writer and one HTML page (rmkit/render/conform.py): a rule's status decides its test case, and
no status without a verdict ever shows as passing."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from html_support import read_page
from rmkit import conformreport as core
from rmkit.render.conform import render_html, render_junit


def _report(**over) -> core.ConformReport:
    rules = [core.RuleResult("X-A-001", "Broken", "strict", core.FAIL, evidence="lost at step 3",
                             detail="lost at step 3\nwhat to do: keep it\nreproduce: rmkit replay s.json"),
             core.RuleResult("X-A-002", "Found", "non-strict", core.FINDING, evidence="late by 2 s"),
             core.RuleResult("X-A-003", "Held", "strict", core.PASS, covered_by=["S-1", "S-2"]),
             core.RuleResult("X-A-004", "Unreached", "strict", core.NOT_EXERCISED, why="no scenario reached it"),
             core.RuleResult("X-A-005", "Off here", "off", core.OFF, why="off in profile p")]
    scenarios = [core.ScenarioResult("S-1", "node", "catalogue", "clean", "pass", 3),
                 core.ScenarioResult("S-3", "node", "generated", "shrunk", "fail", 2,
                                     failure=core.Failure("lost at step 3", "rule", "the whole scenario"),
                                     reproduce="rmkit replay --protocol x s.json --impl-cmd CMD")]
    fields = dict(protocol="x", title="X", profile="p", implementation="impl", impl_argv=["--impl-cmd", "CMD"],
                  roles=["node"], verdict="fail", elapsed_s=1.5,
                  groups=[core.RuleGroup("", rules, core.Failure("exited with 3", "crash", "in scenario S-3"))],
                  scenarios=scenarios, summary="2 scenarios")
    return core.ConformReport(**(fields | over))


def test_junit_has_a_case_per_rule_whose_status_decides_it():
    root = ET.fromstring(render_junit(_report()))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["X-A-001"].find("failure").get("message") == "lost at step 3"
    assert "reproduce: rmkit replay s.json" in cases["X-A-001"].find("failure").text
    assert cases["X-A-002"].find("failure") is None and "late by 2 s" in cases["X-A-002"].find("system-out").text
    assert cases["X-A-003"].find("system-out").text == "pass, covered by 2: S-1, S-2"
    assert cases["X-A-004"].find("skipped").get("message") == "not exercised: no scenario reached it"
    assert cases["X-A-005"].find("skipped").get("message") == "off in profile p"
    assert cases["implementation"].find("failure").get("type") == "crash"
    suite = root.find("testsuite")
    assert suite.get("name") == "rmkit conform x, profile p" and suite.get("failures") == "2" and suite.get("skipped") == "2"
    assert "S-3" not in cases  # scenarios are cases only where the protocol lists them so


def test_junit_lists_scenarios_by_origin_where_the_protocol_asks():
    root = ET.fromstring(render_junit(_report(scenario_cases=True)))
    names = [s.get("name") for s in root.iter("testsuite")]
    assert names == ["rmkit conform catalogue", "rmkit conform generated", "rmkit conform x, profile p"]
    failed = next(c for c in root.iter("testcase") if c.get("name") == "S-3").find("failure")
    assert "reproduce: rmkit replay --protocol x s.json --impl-cmd CMD" in failed.text


@pytest.mark.parametrize("roles", [False, True])
def test_the_page_puts_the_verdict_the_broken_rule_and_the_reproduce_command_first(roles):
    rep = _report()
    if roles:
        rep.groups[0].name = "node"
    page = read_page(render_html(rep))
    assert page.verdict == "fail" and page.sections[:3] == ["failing", "scenarios-failed", "rules"]
    assert "X-A-001" in page.text["failing"] and "X-A-003" not in page.text["failing"]
    assert page.reproduce == ["rmkit replay --protocol x s.json --impl-cmd CMD"]
    html = render_html(rep)
    assert "<td>covered by 2: S-1, S-2</td>" in html
    assert ("<th>role</th><th>rule</th>" in html) is roles  # a column for the judge only where there are several


def test_the_text_table_says_each_rules_status_and_why_there_is_none():
    from rmkit.render.conform import rule_table_lines

    rep = _report()
    rep.groups[0].name, rep.groups[0].note = "node", "not judged as node: X-B-001 (rmkit check)"
    lines = rule_table_lines(rep.groups[0], "  ")
    assert lines[0].startswith("  per rule: fail; finding") and lines[1] == "  rules judged as node:"
    rows = [line.strip() for line in lines[2:]]
    assert any(r.startswith("fail") and "X-A-001" in r and r.endswith(": lost at step 3") for r in rows)
    assert any(r.startswith("pass, covered by 2") and "X-A-003" in r for r in rows)
    assert any(r.startswith("not exercised") and r.endswith("Unreached: no scenario reached it") for r in rows)
    assert lines[-1] == "  not judged as node: X-B-001 (rmkit check)"
