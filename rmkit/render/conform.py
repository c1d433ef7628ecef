"""A driven run's report (:class:`rmkit.conformreport.ConformReport`) as JUnit XML and as a
standalone HTML page: one shape for every protocol.

JUnit: one test suite per judge (a role's, or the run's) with a test case per rule: a strict rule
broken fails (its evidence, what to do, the command that reproduces it), a finding or a known
departure passes with it in system-out, a pass names the scenarios behind it in system-out, a rule
without a verdict is skipped with why (never passed); an implementation that broke down adds a
failing ``implementation`` case. A protocol that lists scenarios as cases adds a suite per origin.

HTML: the verdict and the rules broken first, then each failing scenario with the command that
reproduces it, then the per-rule matrix, then every scenario run.
"""

from __future__ import annotations

from rmkit.conformreport import DEPARTURE, FAIL, FINDING, LEGEND, OFF, PASS, UNJUDGED, ConformReport, RuleGroup, RuleResult
from rmkit.render.junit import Case, Suite, render_suites


def _case(classname: str, rule: RuleResult, profile: str) -> Case:
    case = Case(classname, rule.id)
    if rule.status == FAIL:
        case.failure = (rule.evidence, "rule", rule.detail or rule.evidence)
    elif rule.status == FINDING:
        case.out = f"finding (non-strict in profile {profile}):\n{rule.detail or rule.evidence}"
    elif rule.status == DEPARTURE:
        case.out = f"known departure of profile {profile}: {rule.evidence}"
    elif rule.status == PASS:
        case.out = f"pass, covered by {len(rule.covered_by)}: {', '.join(rule.covered_by)}"
    elif rule.status in UNJUDGED:
        case.skipped = rule.why if rule.status == OFF else f"{rule.status}: {rule.why}"
    return case


def shown(rule: RuleResult) -> str:
    """A rule's status as the text and HTML reports word it."""
    return f"pass, covered by {len(rule.covered_by)}" if rule.status == PASS else rule.status


def rule_table_lines(group: RuleGroup, indent: str = "", legend: bool = True) -> list[str]:
    """The text report's per-rule table of one judge: the legend, a row per rule (its status, id
    and title; why, for a rule without a verdict; the evidence, for one broken), and what the
    judge does not judge."""
    out = [f"{indent}{LEGEND}"] if legend else []
    out.append(f"{indent}rules judged as {group.name}:" if group.name else f"{indent}per-rule table:")
    for r in group.rules:
        said = f": {r.why}" if r.status in UNJUDGED else f": {r.evidence[:160]}" if r.evidence else ""
        out.append(f"{indent}  {shown(r):<20} {r.id:<17} {r.title}{said}")
    if group.note:
        out.append(f"{indent}{group.note}")
    return out


def render_junit(rep: ConformReport) -> str:
    suites = []
    if rep.scenario_cases:
        by_origin: dict[str, list] = {}
        for s in rep.scenarios:
            by_origin.setdefault(s.origin, []).append(s)
        for origin, ss in by_origin.items():
            cases = [Case(f"rmkit.conform.{origin}.{s.role}", s.case_name or s.id, time=s.elapsed_s,
                          failure=(s.failure.summary, s.failure.kind, f"{s.failure.text}\n  reproduce: {s.reproduce}")
                          if s.failure else None) for s in ss]
            suites.append(Suite(f"rmkit conform {origin}", cases, time=sum(s.elapsed_s for s in ss)))
    for g in rep.groups:
        classname = f"rmkit.conform.{rep.protocol}.{g.name or rep.profile}"
        cases = [_case(classname, r, rep.profile) for r in g.rules]
        if g.breakdown is not None:
            b = g.breakdown
            cases.append(Case(classname, "implementation", failure=(b.summary, b.kind, b.text)))
        name = f"rmkit conform {rep.protocol}{' ' + g.name if g.name else ''}, profile {rep.profile}"
        suites.append(Suite(name, cases, out=g.note or None, time=g.elapsed_s or None))
    return render_suites(suites, time=rep.elapsed_s)


def render_html(rep: ConformReport) -> str:
    from rmkit.render.html import e, page, status_cell, table

    by_role = any(name for name, _ in rep.rules)  # a column for the judge's role when there are several

    def role(name: str) -> list[str]:
        return [e(name)] if by_role else []

    sections = []
    broken = [(g, r) for g, r in rep.rules if r.status == FAIL]
    if broken:
        sections.append(("failing", "Rules broken", table(
            (["role"] if by_role else []) + ["rule", "title", "evidence"],
            [role(g) + [f"<code>{e(r.id)}</code>", e(r.title), e(r.evidence)] for g, r in broken], "failing")))
    if rep.not_driven:
        sections.append(("not-driven", "Not driven", "<ul>" + "".join(
            f"<li>role <b>{e(name)}</b>: the implementation never got past the hello ({e(why)}); no verdict on it</li>"
            for name, why in rep.not_driven.items()) + "</ul>"))
    fails = [f"<h3 id='{e(s.id)}'>{e(s.id)} <span class='dim'>({e(s.role)}, {e(s.origin)})</span></h3>"
             f"<p>Reproduce:</p><code class='reproduce'>{e(s.reproduce)}</code><pre>{e(s.failure.text)}</pre>"
             for s in rep.scenarios if s.failure is not None]
    if fails:  # (a breakdown is a failing scenario's: shown with it)
        sections.append(("scenarios-failed", "Failing scenarios", "\n".join(fails)))
    sections.append(("rules", "Per-rule matrix", (f"<p>{e(rep.matrix_note)}</p>" if rep.matrix_note else "") + table(
        (["role"] if by_role else []) + ["rule", "title", "mode", "status", "covered by / why", "evidence"],
        [role(g) + [f"<code>{e(r.id)}</code>", e(r.title), e(r.mode), status_cell(r.status),
                    e(f"covered by {len(r.covered_by)}: {', '.join(r.covered_by)}" if r.covered_by else r.why),
                    e(r.evidence)] for g, r in rep.rules], "matrix")))
    if rep.scenarios:
        sections.append(("scenarios", "Every scenario run", table(
            ["id", "origin", "role", "title", "verdict", "steps", "s"],
            [[f"<code>{e(s.id)}</code>", e(s.origin), e(s.role), e(s.title), status_cell(s.verdict),
              "" if s.steps is None else str(s.steps), f"{s.elapsed_s:.2f}"] for s in rep.scenarios])))
    if rep.kit_errors:
        sections.append(("kit-errors", "Kit errors (please report)", "".join(f"<pre>{e(x)}</pre>" for x in rep.kit_errors)))
    facts = [("implementation", f"<code>{e(rep.implementation)}</code>"),
             ("run with", f"<code>{e(' '.join(rep.impl_argv))}</code>"),
             ("protocol / profile", e(f"{rep.protocol} / {rep.profile}")), ("roles", e(", ".join(rep.roles))),
             ("scenarios", e(rep.summary))]
    return page(f"rmkit conform: {rep.title}", rep.verdict, facts, sections)
