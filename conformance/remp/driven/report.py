"""The result of a conformance run, as a typed value, and its renderings: text, JSON, JUnit, HTML.

The per-rule table (the matrix): every rule of the log rule set that the roles run can break, and
every driven requirement of ``spec/remp/conformance.yaml``, with its status from evidence: fail (the
implementation's outputs or receipts broke it), pass (a scenario that catches the rule's mutant ran
clean), or not covered (with the reason; never shown as passing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from rmkit.conformance.remp.driven.runner import FAIL, PASS, ScenarioResult, explain_failure

NOT_COVERED = "not covered"
NOT_REACHED = "not reached"  # every scenario that covers the rule ended before its first event (e.g. a crash at hello)


def unreached(r: ScenarioResult) -> bool:
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
    # role -> why: every scenario of the role failed at the hello (the implementation could not be
    # started or driven); no rule was put to it, so there is no verdict on it for that role
    not_driven: dict = field(default_factory=dict)
    not_tried: list = field(default_factory=list)  # the roles after a role not driven: the run stopped there
    elapsed_s: float = 0.0
    saved_for: dict = field(default_factory=dict)  # scenario id -> its file (a regression read, a failure saved)
    impl_argv: list = field(default_factory=list)  # --impl-cmd CMD or --impl M:F as given: what a rerun repeats

    def reproduce(self, r: ScenarioResult) -> str:
        """One paste that reproduces ``r``: ``rmkit replay`` of its saved file, else the catalogue
        run of its role (a catalogue or regression scenario is found again by the same run)."""
        from rmkit.cli_options import replay_command

        if r.scenario.id in self.saved_for:
            return replay_command("remp", self.saved_for[r.scenario.id], self.impl_argv)
        import shlex

        return shlex.join(["rmkit", "conform", "--role", r.scenario.role, "--profile", self.profile,
                           "--max-examples", "0", *(self.impl_argv or ["--impl-cmd", "CMD"])])

    @property
    def verdict(self) -> str:
        if self.kit_errors or not self.results:
            return FAIL  # a run that checked nothing fails loudly
        return FAIL if any(r.verdict == FAIL for r in self.results) else PASS

    def table(self) -> list[dict]:
        """Per rule, from evidence: ``fail`` when a scenario's outputs or receipts broke it; ``pass``
        when a scenario that catches the rule's mutant (:mod:`.coverage`) ran clean; else ``not
        covered``, with the reason. ``covered_by``: the scenarios that catch its mutant."""
        from rmkit.conformance.remp.driven.coverage import coverage
        from rmkit.conformance.remp.driven.mutants import why_not_covered

        cov = coverage(self.profile) if self.rules else {}
        ran = {}
        for r in self.results:
            ran.setdefault(r.scenario.id, []).append(r)
        rows = []
        for rid, title in self.rules.items():
            failed = [r.scenario.id for r in self.results
                      if r.failure is not None and rid in {x for x, _ in r.failure.rules}]
            covered_by = [sid for sid in cov.get(rid, []) if sid in ran]
            clean = [sid for sid in covered_by if all(r.verdict == PASS for r in ran[sid])]
            if failed:
                status, why = FAIL, ""
            elif clean:
                status, why = PASS, ""
            elif covered_by and all(unreached(r) for sid in covered_by for r in ran[sid]):
                status, why = NOT_REACHED, "the implementation never got past hello in the scenarios that cover it"
            else:
                status = NOT_COVERED
                why = ("its covering scenarios failed for other reasons" if covered_by
                       else why_not_covered(rid, self.profile, self.roles))
            rows.append({"id": rid, "title": title, "status": status, "covered_by": covered_by, "clean": clean,
                         "failed": failed, "why": why, "scenarios": covered_by})
        return rows

    def informational(self) -> list:
        """(scenario id, difference) of every informational difference: outputs that differ from
        the reference's where no requirement of the documents names the difference."""
        return [(r.scenario.id, d) for r in self.results for d in r.differences]

    def exercised(self) -> dict:
        """role -> what the generated scenarios drew of each parameter the documents leave open."""
        return {role: {k: sorted(v) for k, v in g.exercised.items()}
                for role, g in self.generated.items() if getattr(g, "exercised", None)}

    def as_dict(self) -> dict:
        return {
            "verdict": self.verdict, "implementation": self.implementation, "profile": self.profile, "roles": self.roles,
            "elapsed_s": round(self.elapsed_s, 3),
            "rules": self.table(),
            "scenarios": [{"id": r.scenario.id, "role": r.scenario.role, "origin": r.scenario.origin, "title": r.scenario.title,
                           "checks": list(r.scenario.checks), "verdict": r.verdict, "steps": r.steps,
                           "failure": r.failure.as_dict() if r.failure else None,
                           "informational": [d.as_dict() for d in r.differences]} for r in self.results],
            "exercised": self.exercised(),
            "generated": {role: {"examples": g.examples, "steps": g.steps, "elapsed_s": round(g.elapsed_s, 3),
                                 "failed": g.failing is not None, "message": g.message}
                          for role, g in self.generated.items()},
            "saved": [str(p) for p in self.saved],
            "kit_errors": self.kit_errors,
            "not_driven": self.not_driven,
            "not_tried": self.not_tried,
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
    for role, ex in rep.exercised().items():
        out.append(f"exercised ({role}): " + "; ".join(f"{k} {_range_text(v)}" for k, v in ex.items()))
    info = rep.informational()
    if info:
        out.append("")
        out.append(f"informational: {len(info)} step(s) whose outputs differ from the reference's where no requirement "
                   "of the documents names the difference (not failures):")
        for sid, d in info[:5]:
            out.append(f"  {sid} step {d.step}: {d.summary[:160]}")
        if len(info) > 5:
            out.append(f"  ... {len(info) - 5} more (JSON report: scenarios[].informational)")
    from rmkit.render.conform import rule_table_lines

    out.append("")
    for group in core_report(rep).groups:
        out += rule_table_lines(group)
    failures = [r for r in rep.results if r.verdict == FAIL]
    if failures:
        out.append("")
        out.append("failures:")
        shown = set()  # an implementation's stderr, printed once however many scenarios end with it
        for r in failures:
            err = r.failure.stderr.strip() if r.failure else ""
            out.append(explain_failure(r, stderr=err not in shown))
            shown.add(err)
            out.append(f"  reproduce: {rep.reproduce(r)}")
            out.append("")
    for p in rep.saved:
        out.append(f"saved failing scenario: {p}")
    for e in rep.kit_errors:
        out.append(f"kit error (please report): {e}")
    for role, why in rep.not_driven.items():
        out.append(f"not driven: role {role}: the implementation never got past the hello ({why}); "
                   "no verdict on it for this role")
    judged = [r for r in rep.results if r.verdict == FAIL and not unreached(r)]
    if rep.not_driven and not judged and not rep.kit_errors:
        out.append(f"verdict: NO VERDICT: the implementation could not be driven as {', '.join(rep.not_driven)} "
                   f"({len(rep.results)} scenarios, {rep.elapsed_s:.1f} s"
                   + (f"; the run stopped there, {', '.join(rep.not_tried)} not tried)" if rep.not_tried else ")"))
    else:
        out.append(f"verdict: {rep.verdict.upper()} ({len(rep.results)} scenarios, {rep.elapsed_s:.1f} s)")
    return "\n".join(out) + "\n"


def _range_text(values) -> str:
    """A parameter's drawn values, shortest form: ``1-16 (16 values)`` or the values themselves."""
    vs = sorted(values)
    if len(vs) > 4 and all(isinstance(v, int) for v in vs) and vs == list(range(vs[0], vs[-1] + 1)):
        return f"{vs[0]}-{vs[-1]} ({len(vs)} values)"
    return "{" + ", ".join(str(v) for v in vs) + "}"


def render_json(rep: ConformReport) -> str:
    return orjson.dumps(rep.as_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"


def _case_name(r: ScenarioResult, profile: str) -> str:
    """A scenario's test case name: its id and the rules it is measured to catch (evidence, not the
    catalogue's declared ``checks``); a scenario that declares rules yet catches none says so."""
    from rmkit.conformance.remp.driven.coverage import NO_RULE, rules_measured_by

    rules = rules_measured_by(r.scenario, profile)
    if rules:
        return f"{r.scenario.id} [{' '.join(rules)}]"
    return f"{r.scenario.id} [{NO_RULE}]" if r.scenario.checks else r.scenario.id


def core_report(rep: ConformReport):
    """The run as every protocol's conform report is typed (:mod:`rmkit.conformreport`): the
    per-rule table as one judge's, every scenario (each a JUnit case, named with the rules it is
    measured to catch)."""
    from rmkit import conformreport as core
    from rmkit.protocols.remp.model import model_for

    model_rules = model_for(rep.profile).rules
    by_id = {r.scenario.id: r for r in rep.results}
    rows = rep.table()
    rules = []
    for row in rows:
        rule = model_rules[row["id"]] if row["id"] in model_rules else None
        evidence = "broken in " + ", ".join(row["failed"]) if row["failed"] else ""
        first = by_id.get(row["failed"][0]) if row["failed"] else None
        rules.append(core.RuleResult(
            row["id"], row["title"], rule.mode(rep.profile) if rule else "driven", row["status"],
            covered_by=row["covered_by"], evidence=evidence, why=row["why"],
            detail=f"{evidence}\nreproduce: {rep.reproduce(first)}" if first is not None else evidence))
    scenarios = [core.ScenarioResult(
        r.scenario.id, r.scenario.role, r.scenario.origin, r.scenario.title, r.verdict, r.steps, r.elapsed_s,
        core.Failure(r.failure.summary, r.failure.kind, explain_failure(r)) if r.failure else None,
        rep.reproduce(r), _case_name(r, rep.profile)) for r in rep.results]
    covered = sum(1 for r in rows if r["covered_by"])
    undrivable = sum(1 for r in rows if not r["covered_by"] and r["why"].startswith("not drivable"))
    unexplained = sum(1 for r in rows if r["status"] == NOT_COVERED and not r["why"].startswith("not drivable"))
    judged = [r for r in rep.results if r.verdict == FAIL and not unreached(r)]
    return core.ConformReport(
        "remp", "REMP", rep.profile, rep.implementation, rep.impl_argv, rep.roles,
        core.NO_VERDICT if rep.not_driven and not judged and not rep.kit_errors else rep.verdict, rep.elapsed_s,
        groups=[core.RuleGroup("", rules)] if rules else [], scenarios=scenarios, scenario_cases=True,
        summary=f"{len(rep.results)} ({sum(1 for r in rep.results if r.verdict == FAIL)} failed), {rep.elapsed_s:.1f} s",
        matrix_note=(f"Coverage: {covered} of {len(rows)} rules in scope are covered by a scenario (catalogue or generated) "
                     f"that catches their mutant (a reference that breaks exactly that rule) with a failure attributed to "
                     f"the rule; {undrivable} are listed as not drivable, with the reason; {unexplained} are neither (see "
                     f"why). A rule passes only when a covering scenario ran clean."),
        not_driven=rep.not_driven, kit_errors=rep.kit_errors, saved=[str(p) for p in rep.saved])


def render_junit(rep: ConformReport) -> str:
    """One test case per scenario (named with the rules it is measured to catch), grouped by
    origin, and one per rule (:func:`rmkit.render.conform.render_junit`)."""
    from rmkit.render.conform import render_junit as junit

    return junit(core_report(rep))


def render_html(rep: ConformReport) -> str:
    """The standalone page every protocol's run has (:func:`rmkit.render.conform.render_html`)."""
    from rmkit.render.conform import render_html as html

    return html(core_report(rep))


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
