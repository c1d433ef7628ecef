"""The result of a conformance run, as a typed value, and its renderings: text, JSON, JUnit, HTML.

The per-rule table (the matrix): every rule of the log rule set that the roles run can break, and
every driven requirement of ``spec/remp/conformance.yaml``, with the scenarios that exercised it and
its status: pass (exercised, never broken), fail (a scenario naming it failed, or a failing
scenario's receipts broke it), or not exercised (listed, never shown as passing).
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

import orjson

from rmkit.conformance.remp.driven.runner import FAIL, PASS, ScenarioResult, explain_failure
from rmkit.render.junit import xml_safe

NOT_EXERCISED = "not exercised"
NOT_REACHED = "not reached"  # every scenario naming the rule ended before its first event (e.g. a crash at hello)


def _unreached(r: ScenarioResult) -> bool:
    """The scenario failed before the implementation got past hello: its rules were never put to it."""
    return r.verdict == FAIL and r.failure is not None and r.failure.step == 0 and not r.failure.rules


@dataclass
class ConformReport:
    implementation: str
    profile: str
    roles: list
    results: list = field(default_factory=list)  # ScenarioResult: regressions, catalogue, generated
    generated: dict = field(default_factory=dict)  # role -> Generated
    rules: dict = field(default_factory=dict)  # id -> title (rules and requirements in scope)
    saved: list = field(default_factory=list)  # scenario files written
    kit_errors: list = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def verdict(self) -> str:
        if self.kit_errors or not self.results:
            return FAIL  # a run that checked nothing fails loudly
        return FAIL if any(r.verdict == FAIL for r in self.results) else PASS

    def table(self) -> list[dict]:
        rows = {rid: {"id": rid, "title": title, "status": NOT_EXERCISED, "scenarios": [], "failed": []}
                for rid, title in self.rules.items()}
        for r in self.results:
            sc = r.scenario
            named = set(sc.checks)
            broken = {rule for rule, _ in (r.failure.rules if r.failure else [])}
            for rid in named | broken:
                row = rows.get(rid)
                if row is None:
                    continue
                if _unreached(r):
                    row.setdefault("unreached", []).append(sc.id)
                    continue
                row["scenarios"].append(sc.id)
                if r.verdict == FAIL and (rid in broken or (rid in named and not broken)):
                    row["failed"].append(sc.id)
        for row in rows.values():
            if row["failed"]:
                row["status"] = FAIL
            elif row["scenarios"]:
                row["status"] = PASS
            elif row.get("unreached"):
                row["status"] = NOT_REACHED
        return list(rows.values())

    def as_dict(self) -> dict:
        return {
            "verdict": self.verdict, "implementation": self.implementation, "profile": self.profile, "roles": self.roles,
            "elapsed_s": round(self.elapsed_s, 3),
            "rules": self.table(),
            "scenarios": [{"id": r.scenario.id, "role": r.scenario.role, "origin": r.scenario.origin, "title": r.scenario.title,
                           "checks": list(r.scenario.checks), "verdict": r.verdict, "steps": r.steps,
                           "failure": r.failure.as_dict() if r.failure else None} for r in self.results],
            "generated": {role: {"examples": g.examples, "steps": g.steps, "elapsed_s": round(g.elapsed_s, 3),
                                 "failed": g.failing is not None, "message": g.message}
                          for role, g in self.generated.items()},
            "saved": [str(p) for p in self.saved],
            "kit_errors": self.kit_errors,
        }


def render_text(rep: ConformReport) -> str:
    out = [f"rmkit conform: {rep.implementation} | profile {rep.profile} | roles {', '.join(rep.roles)}", ""]
    by_origin: dict = {}
    for r in rep.results:
        by_origin.setdefault(r.scenario.origin, []).append(r)
    for origin in ("regression", "catalogue", "generated"):
        rs = by_origin.get(origin, [])
        if not rs:
            continue
        failed = [r for r in rs if r.verdict == FAIL]
        out.append(f"{origin}: {len(rs) - len(failed)}/{len(rs)} scenarios passed")
        for r in rs:
            mark = "ok  " if r.verdict == PASS else "FAIL"
            out.append(f"  {mark} {r.scenario.id:<34} {r.scenario.role:<9} {r.scenario.title[:70]}")
    for role, g in rep.generated.items():
        out.append(f"generated {role}: {g.examples} scenarios, {g.steps} steps in {g.elapsed_s:.1f} s"
                   + (" - FAILED, shrunk to %d steps" % len(g.failing.events) if g.failing else ""))
    out.append("")
    out.append("per-rule table:")
    for row in rep.table():
        out.append(f"  {row['status']:<14} {row['id']:<16} {row['title'][:60]}"
                   + (f"  (failed: {', '.join(row['failed'][:3])})" if row["failed"] else ""))
    failures = [r for r in rep.results if r.verdict == FAIL]
    if failures:
        out.append("")
        out.append("failures:")
        for r in failures:
            out.append(explain_failure(r))
            out.append("")
    for p in rep.saved:
        out.append(f"saved failing scenario: {p} (rerun: rmkit replay {p} --impl-cmd ...)")
    for e in rep.kit_errors:
        out.append(f"kit error (please report): {e}")
    out.append(f"verdict: {rep.verdict.upper()} ({len(rep.results)} scenarios, {rep.elapsed_s:.1f} s)")
    return "\n".join(out) + "\n"


def render_json(rep: ConformReport) -> str:
    return orjson.dumps(rep.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"


def render_junit(rep: ConformReport) -> str:
    """One test case per scenario (named with the rules it checks), grouped by origin."""
    suites = []
    by_origin: dict = {}
    for r in rep.results:
        by_origin.setdefault(r.scenario.origin, []).append(r)
    for origin, rs in by_origin.items():
        cases = []
        for r in rs:
            name = f"{r.scenario.id} [{' '.join(r.scenario.checks)}]" if r.scenario.checks else r.scenario.id
            body = ""
            if r.failure:
                body = (f"<failure message={quoteattr(r.failure.summary[:500])} type={quoteattr(r.failure.kind)}>"
                        f"{escape(explain_failure(r))}</failure>")
            cases.append(f'    <testcase classname="rmkit.conform.{origin}.{r.scenario.role}" name={quoteattr(name)}>{body}</testcase>')
        fails = sum(1 for r in rs if r.verdict == FAIL)
        suites.append(f'  <testsuite name="rmkit conform {origin}" tests="{len(rs)}" failures="{fails}">\n' + "\n".join(cases) + "\n  </testsuite>")
    return xml_safe('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n' + "\n".join(suites) + "\n</testsuites>\n")


def render_html(rep: ConformReport) -> str:
    """A standalone page: the verdict, the per-rule matrix, every scenario, every failure."""
    e = html.escape
    colour = {PASS: "#2e7d32", FAIL: "#c62828", NOT_EXERCISED: "#757575", NOT_REACHED: "#8d6e63"}
    rows = "\n".join(
        f"<tr><td><code>{e(r['id'])}</code></td><td>{e(r['title'])}</td>"
        f"<td style='color:#fff;background:{colour[r['status']]}'>{e(r['status'])}</td>"
        f"<td>{e(', '.join(r['scenarios'][:6]))}{' ...' if len(r['scenarios']) > 6 else ''}</td></tr>" for r in rep.table())
    scen = "\n".join(
        f"<tr><td><code>{e(r.scenario.id)}</code></td><td>{e(r.scenario.origin)}</td><td>{e(r.scenario.role)}</td>"
        f"<td>{e(r.scenario.title)}</td><td style='color:{colour[r.verdict]}'>{e(r.verdict)}</td><td>{r.steps}</td></tr>"
        for r in rep.results)
    fails = "\n".join(f"<h3>{e(r.scenario.id)}</h3><pre>{e(explain_failure(r))}</pre>" for r in rep.results if r.failure)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>rmkit conform: {e(rep.implementation)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}
pre{{background:#f5f5f5;padding:8px;overflow-x:auto}}</style></head><body>
<h1>REMP conformance: {e(rep.implementation)}</h1>
<p>Profile <b>{e(rep.profile)}</b>, roles {e(', '.join(rep.roles))}, {len(rep.results)} scenarios, generated on
{e(time.strftime('%Y-%m-%d %H:%M:%S'))}. Verdict: <b style="color:{colour[rep.verdict]}">{e(rep.verdict.upper())}</b></p>
<h2>Rules</h2><table><tr><th>rule</th><th>title</th><th>status</th><th>scenarios</th></tr>
{rows}</table>
<h2>Scenarios</h2><table><tr><th>id</th><th>origin</th><th>role</th><th>title</th><th>verdict</th><th>steps</th></tr>
{scen}</table>
<h2>Failures</h2>{fails or '<p>none</p>'}
</body></html>
"""


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
