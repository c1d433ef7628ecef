"""The result of a REMP conformance run, as a typed value, and the run as every protocol's conform
report is typed (:func:`core_report`; :mod:`rmkit.render.conform` writes it as text, JSON, JUnit and
HTML).

The per-rule table (the matrix): every rule of the log rule set that the roles run can break, and
every driven requirement of ``spec/remp/conformance.yaml``, with its status from evidence: fail (the
implementation's outputs or receipts broke it), pass (a scenario that catches the rule's mutant ran
clean), or not covered (with the reason; never shown as passing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    settings: dict = field(default_factory=dict)  # the run's options (rmkit.conformreport.settings_of)
    exit: int | None = None  # the command's exit code, once decided

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

    def exercised(self) -> dict:
        """role -> what the generated scenarios drew of each parameter the documents leave open."""
        return {role: {k: sorted(v) for k, v in g.exercised.items()}
                for role, g in self.generated.items() if getattr(g, "exercised", None)}



def _range_text(values) -> str:
    """A parameter's drawn values, shortest form: ``1-16 (16 values)`` or the values themselves."""
    vs = sorted(values)
    if len(vs) > 4 and all(isinstance(v, int) for v in vs) and vs == list(range(vs[0], vs[-1] + 1)):
        return f"{vs[0]}-{vs[-1]} ({len(vs)} values)"
    return "{" + ", ".join(str(v) for v in vs) + "}"


def _case_name(r: ScenarioResult, profile: str) -> str:
    """A scenario's test case name: its id and the rules it is measured to catch (evidence, not the
    catalogue's declared ``checks``); a scenario that declares rules yet catches none says so."""
    from rmkit.conformance.remp.driven.coverage import NO_RULE, rules_measured_by

    rules = rules_measured_by(r.scenario, profile)
    if rules:
        return f"{r.scenario.id} [{' '.join(rules)}]"
    return f"{r.scenario.id} [{NO_RULE}]" if r.scenario.checks else r.scenario.id


def notes(rep: ConformReport) -> list[str]:
    """REMP's own lines under the report's header: each role's generated search, what it drew of
    each parameter the documents leave open, and the roles a run that stopped early did not try."""
    out = [f"generated {role}: {g.examples} scenarios, {g.steps} steps in {g.elapsed_s:.1f} s"
           + (" - FAILED, shrunk to %d steps" % len(g.failing.events) if g.failing else "")
           for role, g in rep.generated.items()]
    out += [f"exercised ({role}): " + "; ".join(f"{k} {_range_text(v)}" for k, v in ex.items())
            for role, ex in rep.exercised().items()]
    if rep.not_tried:
        out.append(f"the run stopped at a role not driven: {', '.join(rep.not_tried)} not tried")
    return out


def core_report(rep: ConformReport):
    """The run as every protocol's conform report is typed (:mod:`rmkit.conformreport`): the
    per-rule table as one judge's, every scenario (each a JUnit case, named with the rules it is
    measured to catch). REMP's own fields are its ``extras``: per scenario the checks the catalogue
    declares and the failure in full (step, event, expected and actual outputs); per rule the
    scenarios that broke it and those that ran clean; for the run the generated search per role,
    what it drew (``exercised``) and the roles not tried."""
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
            detail=f"{evidence}\nreproduce: {rep.reproduce(first)}" if first is not None else evidence,
            extras={"failed": row["failed"], "clean": row["clean"]}))
    scenarios, shown = [], set()  # an implementation's stderr, shown once however many scenarios end with it
    for r in rep.results:
        failure = None
        if r.failure is not None:
            err = r.failure.stderr.strip()
            failure = core.Failure(r.failure.summary, r.failure.kind, explain_failure(r, stderr=err not in shown))
            shown.add(err)
        scenarios.append(core.ScenarioResult(
            r.scenario.id, r.scenario.role, r.scenario.origin, r.scenario.title, r.verdict, r.steps, r.elapsed_s, failure,
            rep.reproduce(r), _case_name(r, rep.profile),
            rules=[rid for rid, _ in r.failure.rules] if r.failure else [],
            informational=[d.as_dict() for d in r.differences],
            extras={"checks": list(r.scenario.checks), "failure": r.failure.as_dict() if r.failure else None}))
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
        not_driven=rep.not_driven, kit_errors=rep.kit_errors, saved=[str(p) for p in rep.saved],
        settings=rep.settings, exit=rep.exit, notes=notes(rep),
        extras={"exercised": rep.exercised(),
                "generated": {role: {"examples": g.examples, "steps": g.steps, "elapsed_s": round(g.elapsed_s, 3),
                                     "failed": g.failing is not None, "message": g.message}
                              for role, g in rep.generated.items()},
                "not_tried": list(rep.not_tried)})


def render_junit(rep: ConformReport) -> str:
    """One test case per scenario (named with the rules it is measured to catch), grouped by
    origin, and one per rule (:func:`rmkit.render.conform.render_junit`)."""
    from rmkit.render.conform import render_junit as junit

    return junit(core_report(rep))


def render_html(rep: ConformReport) -> str:
    """The standalone page every protocol's run has (:func:`rmkit.render.conform.render_html`)."""
    from rmkit.render.conform import render_html as html

    return html(core_report(rep))

