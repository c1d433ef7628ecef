"""Per-rule verdicts of a driven run, one role at a time: which rules of spec/corda/rules.yaml the
role's judge can raise (each rule's ``driven`` roles) and what the run's evidence says of each, and
which rules the role does not judge, with where they are judged. A bare PASS would read as covering
every rule; it covers only these.

Verdicts, from evidence: ``failed`` (a strict violation of the rule occurred), ``finding`` (a
non-strict one: the profile's known departure, allowed to pass), ``not broken`` (the role judges it
and no scenario of this run broke it; not a claim that a scenario could have: that is evidence of
another kind, a scenario catching a mutant that breaks the rule), ``off`` (the profile does not
check it), ``not reached`` (no message reached the implementation: nothing was judged).
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from rmkit.conformance.corda.spec import corda_spec
from rmkit.render.junit import xml_safe
from rmkit.rules import OFF

FAILED, FINDING, HELD, OFF_HERE, NOT_REACHED = "failed", "finding", "not broken", "off", "not reached"


def judged_rules(role: str, profile: str) -> list:
    """The rules the role's judge can raise, in spec order."""
    return [r for r in corda_spec(profile).rules if role in (r.driven or ())]


def not_judged(role: str, profile: str) -> dict[str, str]:
    """rule -> where it is judged instead: another driven role, or the spec's ``judged_elsewhere``."""
    return {r.id: (f"rmkit conform --protocol corda --role {' / '.join(r.driven)}" if r.driven else r.judged_elsewhere)
            for r in corda_spec(profile).rules if role not in (r.driven or ())}


def _evidence(result) -> dict[str, tuple[str, str]]:
    """rule -> (failed or finding, the first violation's line) from the failure and the findings."""
    out: dict[str, tuple[str, str]] = {}
    violations = list(result.failure.violations) if result.failure else []
    for rule, outcome in result.findings.items():
        violations += [v for v in outcome.violations if v.rule == rule]
    for v in violations:
        verdict = FAILED if v.mode == "strict" else FINDING
        if v.rule not in out or (verdict == FAILED and out[v.rule][0] != FAILED):
            out[v.rule] = (verdict, v.render())
    return out


def rule_rows(result) -> list[dict]:
    """One row per rule the result's role judges: id, title, verdict, evidence (empty when not broken)."""
    seen = _evidence(result)
    rows = []
    for rule in judged_rules(result.role, result.profile):
        verdict, evidence = seen.get(rule.id, (None, ""))
        if verdict is None:
            verdict = (OFF_HERE if rule.mode(result.profile) == OFF else
                       NOT_REACHED if result.verdict == "nothing checked" else HELD)
        rows.append({"id": rule.id, "title": rule.title, "verdict": verdict, "evidence": evidence})
    return rows


def text_lines(result) -> list[str]:
    """The per-rule table of one role, and the one line naming what the role does not judge."""
    out = [f"  rules judged as {result.role}:"]
    for row in rule_rows(result):
        note = f"  (off in profile {result.profile})" if row["verdict"] == OFF_HERE else ""
        out.append(f"    {row['verdict']:<11} {row['id']:<20} {row['title']}{note}")
    out.append(f"  not judged as {result.role}: " + "; ".join(
        f"{', '.join(ids)} ({where})" for where, ids in _grouped(not_judged(result.role, result.profile)).items()))
    return out


def _grouped(where_by_rule: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for rule, where in where_by_rule.items():
        out.setdefault(where, []).append(rule)
    return out


def json_fields(result) -> dict:
    """What a role's entry of the JSON report says per rule: rule -> verdict, and rule -> where judged."""
    return {"rules": {row["id"]: row["verdict"] for row in rule_rows(result)},
            "not_judged": not_judged(result.role, result.profile)}


def junit(results, breakdown) -> str:
    """One test suite per role, one test case per rule it judges: failed is a failure, a finding
    passes with the violation in system-out, off and not reached are skipped. An implementation
    that broke down adds a failing ``implementation`` case (its scenario broke no rule). What the
    role does not judge is in the suite's system-out. ``breakdown(result)``: that failure's text, or None."""
    suites = []
    for r in results:
        rows = rule_rows(r)
        cases = []
        for row in rows:
            body = ""
            if row["verdict"] == FAILED:
                body = f"<failure message={quoteattr(row['evidence'][:500])} type=\"rule\"/>"
            elif row["verdict"] == FINDING:
                body = f"<system-out>{escape('finding: ' + row['evidence'])}</system-out>"
            elif row["verdict"] in (OFF_HERE, NOT_REACHED):
                why = f"off in profile {r.profile}" if row["verdict"] == OFF_HERE else "no message reached the implementation"
                body = f"<skipped message={quoteattr(why)}/>"
            cases.append(f'    <testcase classname="rmkit.conform.corda.{r.role}" name={quoteattr(row["id"])}>{body}</testcase>')
        broke = breakdown(r)
        if broke:
            cases.append(f'    <testcase classname="rmkit.conform.corda.{r.role}" name="implementation">'
                         f"<failure message={quoteattr(broke[:500])} type=\"breakdown\"/></testcase>")
        fails = sum(row["verdict"] == FAILED for row in rows) + bool(broke)
        skipped = sum(row["verdict"] in (OFF_HERE, NOT_REACHED) for row in rows)
        others = "; ".join(f"{rule}: {where}" for rule, where in not_judged(r.role, r.profile).items())
        suites.append(f'  <testsuite name="rmkit conform corda {r.role}, profile {r.profile}" tests="{len(cases)}" '
                      f'failures="{fails}" skipped="{skipped}">\n' + "\n".join(cases)
                      + f"\n    <system-out>{escape('not judged as ' + r.role + ': ' + others)}</system-out>\n  </testsuite>")
    return xml_safe('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n' + "\n".join(suites) + "\n</testsuites>\n")
