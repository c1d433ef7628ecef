"""A driven run's report (:class:`rmkit.conformreport.ConformReport`) as text, JSON, JUnit XML and
a standalone HTML page: one shape for every protocol; a protocol supplies only its labels and its
extras, through the report.

Text: a header (the verdict, the implementation, profile, roles and settings, then the protocol's
own lines), every scenario by origin, the informational differences, the per-rule table of each
judge, the findings, each failure with the command that reproduces it, what could not be driven,
the kit's own errors, the scenarios saved, and one summary line with the exit code.

JSON: :func:`report_dict`, held to ``spec/schema/conform-report.schema.json``.

JUnit: one test suite per judge (a role's, or the run's) with a test case per rule: a strict rule
broken fails (its evidence, what to do, the command that reproduces it), a finding or a known
departure passes with it in system-out, a pass names the scenarios behind it in system-out, a rule
without a verdict is skipped with why (never passed); an implementation that broke down adds a
failing ``implementation`` case. A protocol that lists scenarios as cases adds a suite per origin.

HTML: the verdict and the rules broken first, then each failing scenario with the command that
reproduces it, then the per-rule matrix, then every scenario run.
"""

from __future__ import annotations

from dataclasses import asdict

import orjson

from rmkit.conformreport import (DEPARTURE, FAIL, FINDING, FORMAT, LEGEND, NO_VERDICT, OFF, PASS, UNJUDGED, ConformReport, RuleGroup,
                                 RuleResult)
from rmkit.render.junit import Case, Suite, render_suites

ORIGINS = ("regression", "catalogue", "generated")  # the order scenarios are listed in (then any other origin)
SHOWN_FAILURES = 10       # failing scenarios the text report shows in full (JSON and HTML: every one)
SHOWN_INFORMATIONAL = 5   # informational differences the text report lists


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
    sections.append(("rules", "Per-rule matrix", f"<p>{e(LEGEND)}</p>" + (f"<p>{e(rep.matrix_note)}</p>" if rep.matrix_note else "") + table(
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


# ---- JSON -----------------------------------------------------------------------------------------
def report_dict(rep: ConformReport) -> dict:
    """The run as one JSON object, the same fields for every protocol
    (``spec/schema/conform-report.schema.json``); a protocol's own are under ``extras``."""
    def failure(f) -> dict | None:
        return None if f is None else {"summary": f.summary, "kind": f.kind, "text": f.text}

    return {
        "format": FORMAT, "protocol": rep.protocol, "title": rep.title, "profile": rep.profile,
        "implementation": rep.implementation, "impl_argv": list(rep.impl_argv), "roles": list(rep.roles),
        "settings": dict(rep.settings), "verdict": rep.verdict, "exit": rep.exit_code,
        "elapsed_s": round(rep.elapsed_s, 3), "summary": rep.summary,
        "totals": rep.totals(), "coverage": rep.coverage(),
        "groups": [{"name": g.name, "verdict": g.verdict, "summary": g.summary, "note": g.note,
                    "elapsed_s": round(g.elapsed_s, 3), "breakdown": failure(g.breakdown), "extras": g.extras}
                   for g in rep.groups],
        "rules": [{"group": name, **{k: v for k, v in asdict(r).items()}} for name, r in rep.rules],
        "scenarios": [{"id": s.id, "role": s.role, "origin": s.origin, "title": s.title, "verdict": s.verdict,
                       "steps": s.steps, "elapsed_s": round(s.elapsed_s, 3), "rules": list(s.rules),
                       "failure": failure(s.failure), "reproduce": s.reproduce,
                       "informational": list(s.informational), "extras": s.extras} for s in rep.scenarios],
        "not_driven": dict(rep.not_driven), "kit_errors": list(rep.kit_errors), "saved": [str(p) for p in rep.saved],
        "extras": rep.extras,
    }


def render_json(rep: ConformReport) -> str:
    return orjson.dumps(report_dict(rep), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS,
                        default=str).decode() + "\n"


# ---- text -----------------------------------------------------------------------------------------
def _settings_text(settings: dict) -> str:
    given = [(k.replace("_", " "), v) for k, v in settings.items() if v not in (None, False)]
    return ", ".join(k if v is True else f"{k} {v}" for k, v in given)


def render_text(rep: ConformReport) -> str:
    out = [f"rmkit conform --protocol {rep.protocol}: {rep.verdict.upper()}",
           f"  implementation: {rep.implementation}",
           f"  profile {rep.profile} | roles {', '.join(rep.roles)}"
           + (f" | {_settings_text(rep.settings)}" if _settings_text(rep.settings) else "")]
    out += [f"  {line}" for line in rep.notes]
    by_origin: dict[str, list] = {}
    for s in rep.scenarios:
        by_origin.setdefault(s.origin, []).append(s)
    for origin in sorted(by_origin, key=lambda o: (ORIGINS.index(o) if o in ORIGINS else len(ORIGINS), o)):
        ss = by_origin[origin]
        out += ["", f"{origin}: {sum(1 for s in ss if s.verdict == PASS)}/{len(ss)} scenarios passed"]
        for s in ss:
            out.append(f"  {'ok  ' if s.verdict == PASS else 'FAIL'} {s.id:<34} {s.role:<9} {s.title[:70]}".rstrip())
    info = [(s.id, d) for s in rep.scenarios for d in s.informational]
    if info:
        out += ["", f"informational: {len(info)} difference(s) from the reference where no requirement of the documents "
                    "names the difference (not failures):"]
        for sid, d in info[:SHOWN_INFORMATIONAL]:
            at = f" step {d['step']}" if d.get("step") is not None else ""
            out.append(f"  {sid}{at}: {d['summary'][:160]}")
        if len(info) > SHOWN_INFORMATIONAL:
            out.append(f"  ... {len(info) - SHOWN_INFORMATIONAL} more (--format json: scenarios[].informational)")
    for i, g in enumerate(rep.groups):
        out.append("")
        if g.summary:
            out.append(f"{g.name + ': ' if g.name else ''}{g.summary}")
        out += rule_table_lines(g, legend=i == 0)
    if rep.coverage()["note"]:
        out.append(rep.coverage()["note"])
    findings = [(name, r) for name, r in rep.rules if r.status in (FINDING, DEPARTURE)]
    if findings:
        out += ["", "findings (non-strict in this profile, or the profile's known departures: reported, not failing):"]
        for name, r in findings:
            out.append(f"  {r.id}{' (' + name + ')' if name else ''}: {r.status}: {r.evidence}")
            out += [f"    {line}" for line in r.detail.splitlines() if line != r.evidence]
    failed = [s for s in rep.scenarios if s.failure is not None]
    if failed:
        out += ["", "failures:"]
        for s in failed[:SHOWN_FAILURES]:
            out.append(f"{s.id} ({s.role}, {s.origin}{': ' + s.title if s.title else ''}): FAIL: {s.failure.summary}")
            out += [f"  {line}" for line in s.failure.text.splitlines()]
            if s.reproduce:
                out.append(f"  reproduce: {s.reproduce}")
            out.append("")
        if len(failed) > SHOWN_FAILURES:
            out.append(f"... {len(failed) - SHOWN_FAILURES} more failing scenario(s) (--format json or --html lists all)")
    broke = [g for g in rep.groups if g.breakdown is not None and not failed]
    for g in broke:  # (a breakdown shows with its failing scenario; alone only where no scenario carries it)
        out.append(f"the implementation broke down{' as ' + g.name if g.name else ''}: {g.breakdown.summary}")
    for role, why in rep.not_driven.items():
        out.append(f"not driven: role {role}: the implementation never got past the hello ({why}); "
                   "no verdict on it for this role")
    out += [f"kit error (please report): {e}" for e in rep.kit_errors]
    out += [f"saved failing scenario: {p}" for p in rep.saved]
    totals = rep.totals()
    rules = "; rules: " + ", ".join(f"{n} {status}" for status, n in totals["rules"].items()) if totals["rules"] else ""
    if out[-1] != "":
        out.append("")
    cause = f": the implementation could not be driven as {', '.join(rep.not_driven)}" if rep.verdict == NO_VERDICT and \
        rep.not_driven else ""
    out.append(f"verdict: {rep.verdict.upper()}{cause} ({totals['scenarios']} scenarios, {totals['failed']} failed{rules}; "
               f"{rep.elapsed_s:.1f} s; exit {rep.exit_code})")
    return "\n".join(out) + "\n"


def render(rep: ConformReport, fmt: str) -> str:
    """``rmkit conform --format FMT`` of the run: text, json or junit."""
    return {"text": render_text, "json": render_json, "junit": render_junit}[fmt](rep)
