"""Per-rule verdicts of a driven run, one role at a time, from evidence: which rules of
spec/corda/rules.yaml the role's judge can raise (each rule's ``driven`` roles) and what the run
shows of each, and which rules the role does not judge, with where they are judged. A bare PASS
would read as covering every rule; it covers only these, and only as far as evidence goes.

Verdicts: ``fail`` (a strict violation of the rule occurred), ``finding`` (a non-strict one: the
profile's known departure, allowed to pass), ``pass`` with the number of scenarios that catch the
rule's mutant (:mod:`.coverage`) and ran clean in this run, ``not exercised`` with why (no such
scenario ran clean, none exists and the spec says why, no message reached the implementation),
``off`` (the profile does not check it). Never a pass that no scenario able to catch a breach
backs.

A failure is named by the first requirement the implementation's own outputs broke
(:func:`first_broken`): violations are ordered by where they happened (the scenario's step, then
the drain), not by when the judge could decide them.
"""

from __future__ import annotations

import re

from rmkit.protocols.corda.model import corda_spec
from rmkit.rules import OFF

FAIL, FINDING, PASS, OFF_HERE, NOT_EXERCISED = "fail", "finding", "pass", "off", "not exercised"
DEPARTURE = "known departure"


def judged_rules(role: str, profile: str) -> list:
    """The rules the role's judge can raise, in spec order."""
    return [r for r in corda_spec(profile).rules if role in (r.driven or ())]


def not_judged(role: str, profile: str) -> dict[str, str]:
    """rule -> where it is judged instead: another driven role, or the spec's ``judged_elsewhere``."""
    return {r.id: (f"rmkit conform --protocol corda --role {' / '.join(r.driven)}" if r.driven else r.judged_elsewhere)
            for r in corda_spec(profile).rules if role not in (r.driven or ())}


# ---- the first rule broken ------------------------------------------------------------------------
_STEP = re.compile(r"step (\d+)")
_TICK = re.compile(r"drain tick (\d+)")


def position(v, log: list[str] = ()) -> tuple:
    """Where a violation happened, as an order: the hello, the scenario's steps, the drain (by its
    ticks; a drain restart after the last tick logged before it), the durability check, the end.
    A violation the judge could only decide later (at the end of the drain) keeps the place it names."""
    where = v.where or f"step {v.step}"
    m = _STEP.match(where)
    if m:
        return (1, int(m.group(1)), 0)
    m = _TICK.match(where)
    if m:
        return (2, int(m.group(1)), 0)
    if where.startswith("drain restart"):
        ticks = 0
        for line in log:
            if line.startswith(f"{where}:"):
                break
            t = _TICK.match(line)
            ticks = int(t.group(1)) if t else ticks
        return (2, ticks, 1)
    if where.startswith("durability"):
        return (3, 0, 0)
    if where.startswith("the end"):
        return (4, 0, 0)
    return (0, 0, 0)


def first_broken(violations, log: list[str] = ()):
    """The strict violation that happened first (ties: the judge's order), or None."""
    strict = [v for v in violations if v.mode == "strict"]
    return min(strict, key=lambda v: position(v, log), default=None)


def ordered(violations, log: list[str] = ()) -> list:
    """The violations in the order they happened."""
    return sorted(violations, key=lambda v: position(v, log))


# ---- per-rule verdicts ----------------------------------------------------------------------------
def _outcomes(result) -> list:
    """Every outcome of the run that is evidence: the named scenarios that passed (their findings),
    the failure as reported (a named scenario's shrunk: its violations are those of the scenario
    shown, not the consequences the longer one went on to), the outcome showing each finding."""
    from .judge import failed

    out = [o for _, o in result.played if not failed(o)]
    if result.failure is not None:
        out.append(result.failure)
    out += [o for o in result.findings.values() if all(o is not x for x in out)]
    return out


def rule_rows(result) -> list[dict]:
    """One row per rule the result's role judges: id, title, mode, verdict, and per verdict the
    evidence (fail, finding: the first violation's line), ``covered_by`` (pass: the scenarios that
    catch its mutant and ran clean) or ``why`` (not exercised)."""
    from . import coverage
    from .judge import failed

    cov = coverage.load()
    first: dict[str, object] = {}   # rule -> its first violation (strict first), over the run's outcomes
    for o in _outcomes(result):
        for v in ordered(o.violations, o.log):
            seen = first.get(v.rule)
            if seen is None or (v.mode == "strict" and seen.mode != "strict"):
                first[v.rule] = v
    rows = []
    for rule in judged_rules(result.role, result.profile):
        mode = rule.mode(result.profile)
        row = {"id": rule.id, "title": rule.title, "mode": mode, "evidence": "", "covered_by": [], "why": ""}
        v = first.get(rule.id)
        departed = (rule.known_departure or {}).get(result.profile)
        if v is not None:
            row.update(verdict=FAIL if v.mode == "strict" else FINDING, evidence=v.render())
        elif departed and first.get(departed["reported_as"]) is not None:
            # spec/corda/rules.yaml known_departure: the profile's reference facts break this rule so;
            # said on the rule's own line, never as a pass
            row.update(verdict=DEPARTURE, evidence=f"the profile's known departure, reported as {departed['reported_as']}: "
                                                   f"{first[departed['reported_as']].render()}")
        elif mode == OFF:
            row.update(verdict=OFF_HERE, why=f"off in profile {result.profile}")
        elif result.verdict == "nothing checked":
            row.update(verdict=NOT_EXERCISED, why="no message reached the implementation")
        else:
            catching = set(coverage.caught_by(rule.id, result.role, result.profile, cov))
            clean = [name for name, o in result.played if name in catching and not failed(o)
                     and not any(x.rule == rule.id for x in o.violations)]
            if clean:
                row.update(verdict=PASS, covered_by=clean)
            elif catching:
                ended = (" (a saved failure ended it first)" if result.regression else
                         f" (it ended at the failure of {result.named_failure})" if result.named_failure else "")
                row.update(verdict=NOT_EXERCISED, why=f"no scenario that catches its mutant ran clean in this run{ended}")
            else:
                row.update(verdict=NOT_EXERCISED, why=coverage.not_covered(rule.id, result.profile)
                           or "no scenario catches its mutant")
        rows.append(row)
    return rows


def headline(result) -> str | None:
    """The rule a failure is named by: the first requirement its outputs broke, and where."""
    if result.failure is None:
        return None
    v = first_broken(result.failure.violations, result.failure.log)
    return None if v is None else f"{v.rule} at {v.where or f'step {v.step}'}"


def _not_judged_line(result) -> str:
    return f"not judged as {result.role}: " + "; ".join(
        f"{', '.join(ids)} ({where})" for where, ids in _grouped(not_judged(result.role, result.profile)).items())


def _grouped(where_by_rule: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for rule, where in where_by_rule.items():
        out.setdefault(where, []).append(rule)
    return out


def reproduce(result, impl: list[str]) -> str:
    """One paste that reproduces the role's failure: ``rmkit replay`` of its saved file, else the
    conform run of its role and profile, with the implementation as given."""
    import shlex

    from rmkit.cli_options import replay_command

    path = result.saved or result.regression
    if path:
        return replay_command("corda", path, impl)
    return shlex.join(["rmkit", "conform", "--protocol", "corda", "--role", result.role, "--profile", result.profile,
                       *(impl or ["--impl-cmd", "CMD"])])


def ran_text(result) -> str:
    """A role's run in one line: its verdict, the scenarios played, the time."""
    named = f"{len(result.named)} named scenario{'' if len(result.named) == 1 else 's'}"
    ran = ("a saved scenario, nothing generated" if result.regression else
           f"{named}, nothing generated" if result.named_failure or not result.examples else
           f"{len(result.named)} named and {result.examples} generated scenarios")
    ran += ", stopped by --time-budget" if result.budget_spent else ""
    ran += ", no message reached the implementation" if result.verdict == "nothing checked" else ""
    return f"profile {result.profile}: {result.verdict.upper()} ({ran}, {result.seconds:.1f} s)"


def core_report(results, breakdown, impl: list[str], outcome_text, settings: dict | None = None, exit: int | None = None,
                failure_parts=None):
    """The run as every protocol's conform report is typed (:mod:`rmkit.conformreport`): per role,
    one judge with a row per rule it judges (what the role does not judge is its note), the named
    scenarios played and each role's failure with the command that reproduces it.
    ``breakdown(result)``: that failure's breakdown text, or None; ``outcome_text(result)``: the
    failing scenario's steps, problems and exchange; ``failure_parts``: the suite's
    (:func:`.suite.typed`) ``steps_text(actions)``, ``what(result)`` (which failing scenario this is)
    and ``outcome_json(profile, outcome)``. Corda's own fields are ``extras``: per role
    the first rule broken, where the rules it does not judge are judged, the shortest scenario
    showing each finding, the deliveries answered; per failing scenario its steps, violations
    (with what to do), the breakdown and the exchange."""
    from pathlib import Path

    from rmkit import conformreport as core

    from .judge import failed
    steps_text, what_failed, outcome_json = failure_parts or (lambda actions: "", lambda r: "failing", lambda p, o: {})

    groups, scenarios = [], []
    for r in results:
        again = reproduce(r, impl)
        rows = []
        for row in rule_rows(r):
            rule = core.RuleResult(row["id"], row["title"], row["mode"], row["verdict"], covered_by=row["covered_by"],
                                   evidence=row["evidence"], why=row["why"])
            if row["verdict"] == FAIL:
                rule.detail = (f"{row['evidence']}\nwhat to do: {corda_spec(r.profile).rules[row['id']].advice}\n"
                               f"reproduce: {again}")
            elif row["verdict"] == FINDING and row["id"] in r.findings:
                f = r.findings[row["id"]]
                rule.detail = f"{row['evidence']}\nshortest seen in {len(f.actions)} steps: {steps_text(f.actions)}"
            rows.append(rule)
        broke = breakdown(r)
        v = first_broken(r.failure.violations, r.failure.log) if r.failure else None
        groups.append(core.RuleGroup(
            r.role, rows, core.Failure(broke, "breakdown", f"{broke}\nreproduce: {again}") if broke else None,
            note=_not_judged_line(r), elapsed_s=r.seconds, verdict=r.verdict, summary=ran_text(r),
            extras={"profile": r.profile, "generated": r.examples, "named": list(r.named), "named_failure": r.named_failure,
                    "time_budget_spent": r.budget_spent, "deliveries": r.delivered,
                    "first_broken": None if v is None else v.rule, "not_judged": not_judged(r.role, r.profile),
                    "findings": {rule: [list(a) for a in f.actions] for rule, f in r.findings.items()}}))
        scenarios += [core.ScenarioResult(name, r.role, "catalogue", "", "fail" if failed(o) else "pass", len(o.actions),
                                          rules=list(dict.fromkeys(x.rule for x in ordered(o.violations, o.log))),
                                          extras={"steps": [list(a) for a in o.actions]})
                      for name, o in r.played]
        if r.failure is not None:
            f = r.failure
            first = headline(r)
            name = Path(r.saved or r.regression).stem if (r.saved or r.regression) else f"{r.role}-{r.profile}"
            origin = "regression" if r.regression else "catalogue" if r.named_failure else "generated"
            what = what_failed(r)
            text = ([f"first rule broken: {first}"] if first else []) + outcome_text(r)
            scenarios.append(core.ScenarioResult(
                name, r.role, origin, f"{what}: {len(f.actions)} steps", "fail", len(f.actions),
                failure=core.Failure(first or broke or "failed", "rule" if first else "breakdown", "\n".join(text)),
                reproduce=again, rules=list(dict.fromkeys(x.rule for x in ordered(f.violations, f.log))),
                extras={"regression": r.regression, "saved": r.saved, "reproducible": r.reproducible,
                        **outcome_json(r.profile, f)}))
    verdict = "fail" if any(r.verdict == "fail" for r in results) else \
        "nothing checked" if any(r.verdict == "nothing checked" for r in results) else "pass"
    return core.ConformReport(
        "corda", "Corda P2P", ", ".join(sorted({r.profile for r in results})), " ".join(impl), impl,
        [r.role for r in results], verdict, sum(r.seconds for r in results), groups=groups, scenarios=scenarios,
        summary="; ".join(f"{r.role}: {r.verdict} ({r.examples} scenarios, {r.seconds:.1f} s)" for r in results),
        saved=[r.saved for r in results if r.saved], settings=settings or {}, exit=exit)
