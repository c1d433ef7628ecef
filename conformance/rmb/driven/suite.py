"""One conformance run against a daemon: saved regressions, the catalogue, then generated
scenarios with shrinking; per-rule verdicts from the checks that ran; the run as every
protocol's conform report is typed (:func:`core_report`).

A failing generated scenario is shrunk by Hypothesis (fewer acts, simpler answers), run once more
on its own for the report, and saved so that ``rmkit replay`` reruns it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from rmkit.conformance.rmb.driven.acts import Ctx, run_act
from rmkit.conformance.rmb.driven.daemons import Daemons, daemons_of
from rmkit.conformance.rmb.driven.harness import Harness
from rmkit.conformance.rmb.driven.judge import ActResult, Rules
from rmkit.conformance.rmb.driven.scenario import (DAEMON_KEY_TYPES, Scenario, catalogue, has_proxy, scenario_strategy,
                                                   write_scenario)


# Hypothesis' time to shrink a generated failure after it was found: the run with the catalogue
# (rmb-go's, with its 5 s retries, about 30 s) and the search stays within two minutes
SHRINK_BUDGET_S = 60.0


@dataclass
class ScenarioRun:
    scenario: Scenario
    acts: list[ActResult]
    crashed: str = ""
    seconds: float = 0.0

    def failures(self, rules: Rules, strict_only: bool = True) -> list[tuple[ActResult, object]]:
        out = []
        for a in self.acts:
            for c in a.checks:
                if not c.ok and rules.mode(c.rule) != "off" and (not strict_only or rules.mode(c.rule) == "strict"):
                    out.append((a, c))
        return out

    def failed(self, rules: Rules) -> bool:
        return bool(self.crashed) or bool(self.failures(rules))


async def run_scenario(h: Harness, sc: Scenario, ctx: Ctx | None = None) -> ScenarioRun:
    """Play every act of ``sc`` at once against the running daemon."""
    ctx = ctx or Ctx(h)
    start = time.monotonic()
    results = await asyncio.gather(*(run_act(ctx, a) for a in sc.acts))
    run = ScenarioRun(sc, list(results), seconds=time.monotonic() - start)
    if not h.alive():
        run.crashed = f"the implementation exited (status {h.proc.returncode}): {h.stderr_tail(600)}"
    return run


def run_all(target: Harness | Daemons, loop, scenarios: list[Scenario]) -> list[ScenarioRun]:
    """Every scenario, side by side on the daemons (:meth:`Daemons.deal`), in the order given;
    those no daemon took because the daemons died are left out."""
    d = daemons_of(target)
    return loop.run_until_complete(d.deal(scenarios, lambda h, sc: run_scenario(h, sc)))


def run_batches(target: Harness | Daemons, loop, scenarios: list[Scenario], say=None) -> list[ScenarioRun]:
    """The catalogue (or any named scenarios) side by side on the daemons."""
    if say and scenarios:
        say(f"catalogue {scenarios[0].id}..{scenarios[-1].id} on {daemons_of(target).jobs} daemon(s)")
    return run_all(target, loop, scenarios)


@dataclass
class Generated:
    examples: int = 0  # generated scenarios run (shrink runs not counted)
    seconds: float = 0.0
    failing: ScenarioRun | None = None
    found_after_s: float | None = None
    shrink_runs: int = 0
    died: ScenarioRun | None = None  # the scenario in which the daemon exited: nothing ran after it


def draw_scenarios(profile: str, slow_retries: bool, n: int, derandomize: bool, seed: int | None) -> list[tuple[str, list]]:
    """The first ``n`` scenarios (the daemon's key type, the acts) Hypothesis draws with these settings, drawn only:
    :func:`search` runs them side by side, then replays the same draw to shrink a failure."""
    drawn: list = []
    explore = _explorer(profile, slow_retries, n, derandomize, seed, shrink=False)
    explore(lambda key_type, acts: drawn.append((key_type, acts)))
    return drawn


def _explorer(profile: str, slow_retries: bool, n: int, derandomize: bool, seed: int | None, shrink: bool):
    """``explore(body)``: Hypothesis calls ``body(key_type, acts)`` for each of ``n`` drawn scenarios (and,
    with ``shrink``, for each simplification of one that raised). The same arguments draw the same
    scenarios in the same order, whatever ``body`` does as long as it does not raise."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]

    def explore(body) -> None:
        @settings(max_examples=max(1, n), derandomize=derandomize and seed is None, deadline=None, database=None, phases=phases,
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=False, print_blob=False)
        @given(st.sampled_from(DAEMON_KEY_TYPES[:1] * 3 + DAEMON_KEY_TYPES[1:]), scenario_strategy(slow_retries, proxy=has_proxy(profile)))
        def scenario(key_type, acts):
            body(key_type, acts)
        if seed is not None:
            from hypothesis import seed as hseed

            scenario = hseed(seed)(scenario)
        scenario()
    return explore


def search(target: Harness | Daemons, loop: asyncio.AbstractEventLoop, rules: Rules, *, max_examples: int, derandomize: bool,
           seed: int | None, time_budget: float | None, slow_retries: bool, shrink_budget_s: float = SHRINK_BUDGET_S) -> Generated:
    """Generated scenarios until one fails (then shrunk) or ``max_examples`` pass.

    Hypothesis draws the scenarios first (:func:`draw_scenarios`: the same seed draws the same ones
    at any ``--jobs``), and they run side by side on the daemons, each daemon taking the next when
    one of its own ends; the first failure stops the dealing, and the failure of the earliest drawn
    scenario is the one kept. To shrink it, Hypothesis draws the same scenarios again, passes those
    before it without running them (they passed), and shrinks it from there, one run at a time.
    The smallest failing scenario any run saw is the one reported."""
    from hypothesis.errors import HypothesisException

    d = daemons_of(target)
    g = Generated()
    start = time.monotonic()
    if seed is None and not derandomize:
        import random

        seed = random.getrandbits(64)  # the draw is replayed to shrink: the same seed both times
    drawn = draw_scenarios(d.profile, slow_retries, max_examples, derandomize, seed)
    scenarios = [Scenario(f"generated-{i}", d.profile, acts, key_type=key) for i, (key, acts) in enumerate(drawn, 1)]
    index = {id(sc): i for i, sc in enumerate(scenarios)}
    first_failed = [len(scenarios)]

    def stop(i: int) -> bool:
        # every scenario drawn before the earliest failure so far still runs: the failure kept is
        # the earliest drawn one, whichever daemon found which first
        return i > first_failed[0] or (time_budget is not None and time.monotonic() - start > time_budget)

    async def run_one(h: Harness, sc: Scenario) -> ScenarioRun:
        run = await run_scenario(h, sc)
        if run.failed(rules):
            first_failed[0] = min(first_failed[0], index[id(sc)])
        return run

    runs = loop.run_until_complete(d.deal(scenarios, run_one, stop=stop))
    if not runs and scenarios and not d.alive():
        runs = [loop.run_until_complete(run_scenario(d.dead()[0], scenarios[0]))]  # report the death by a run
    g.examples = len(runs)
    failed = [r for r in runs if r.failed(rules)]
    if not failed:
        g.seconds = time.monotonic() - start
        return g
    g.found_after_s = time.monotonic() - start
    first = failed[0]  # runs keep the order of the draw
    crashed = [r for r in runs if r.crashed]
    if crashed:
        # a daemon is gone (and every later scenario on it would fail for that alone): the
        # scenario it died in is the failure, as it ran; shrinking would pick the simplest of
        # scenarios that never made the daemon fail
        g.died = crashed[0]
        g.failing = crashed[0]
        g.seconds = time.monotonic() - start
        return g
    smallest = [first]

    def size(run: ScenarioRun) -> tuple:
        return (len(run.scenario.acts), len(json.dumps(run.scenario.acts)))

    target_acts = json.dumps([first.scenario.key_type, first.scenario.acts], sort_keys=True)
    shrinking = [False]

    def body(key_type, acts) -> None:
        if not shrinking[0]:
            if json.dumps([key_type, acts], sort_keys=True) != target_acts:
                return  # drawn before the failure (it passed) or after it
            shrinking[0] = True
        elif time.monotonic() - start - g.found_after_s > shrink_budget_s or not d.alive():
            return  # out of budget (or the daemon died): the smallest so far stands
        g.shrink_runs += 1
        run = run_all(d, loop, [Scenario(f"{first.scenario.id}-shrink-{g.shrink_runs}", d.profile, acts, key_type=key_type)])
        if run and run[0].crashed:
            g.died = run[0]
            return
        if run and run[0].failed(rules):
            if size(run[0]) <= size(smallest[0]):
                smallest[:] = [run[0]]
            raise AssertionError(run[0].scenario.id)

    try:
        _explorer(d.profile, slow_retries, max_examples, derandomize, seed, shrink=True)(body)
    except (AssertionError, HypothesisException):
        pass  # the failure (or a flaky replay) is in ``smallest``
    if len(smallest[0].scenario.acts) > 1 and g.died is None and d.alive():
        # the acts of a scenario run at once and share nothing: one that fails alone is the smaller
        # failure (Hypothesis may stop short of it when its shrink budget or a timing flake ends it)
        acts = smallest[0].scenario.acts
        g.shrink_runs += len(acts)
        alone = run_all(d, loop, [Scenario(f"{smallest[0].scenario.id}-alone", d.profile, [act], key_type=smallest[0].scenario.key_type)
                                  for act in acts])
        failed = [r for r in alone if r.failed(rules)]
        if failed:
            smallest[:] = [failed[0]]
    g.seconds = time.monotonic() - start
    g.failing = smallest[0]
    return g


@dataclass
class ConformReport:
    implementation: str
    profile: str
    runs: list[ScenarioRun] = field(default_factory=list)
    generated: Generated | None = None
    final: ScenarioRun | None = None  # the shrunk failure rerun on its own
    jobs: int = 1  # daemons the scenarios ran on side by side
    saved: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    impl_argv: list = field(default_factory=list)  # --impl-cmd CMD as given: what a rerun repeats
    settings: dict = field(default_factory=dict)  # the run's options (rmkit.conformreport.settings_of)
    exit: int | None = None  # the command's exit code, once decided

    def per_rule(self, rules: Rules) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for run in self.runs + ([self.final] if self.final else []):
            for a in run.acts:
                for c in a.checks:
                    if rules.mode(c.rule) == "off":
                        continue
                    out.setdefault(c.rule, [0, 0])[0 if c.ok else 1] += 1
        return out

    def reproduce(self, run: ScenarioRun) -> str:
        """One paste that reproduces ``run``: ``rmkit replay`` of the shrunk failure's saved file,
        else the catalogue run (which holds every named scenario)."""
        import shlex

        from rmkit.cli_options import replay_command

        if run is self.final and self.saved:
            return replay_command("rmb", self.saved[-1], self.impl_argv)
        return shlex.join(["rmkit", "conform", "--protocol", "rmb", "--profile", self.profile, "--catalogue-only",
                           *(self.impl_argv or ["--impl-cmd", "CMD"])])

    def failing_runs(self, rules: Rules) -> list[ScenarioRun]:
        return [r for r in self.runs + ([self.final] if self.final else []) if r.failed(rules)]

    def verdict(self, rules: Rules) -> str:
        return "fail" if self.failing_runs(rules) else "pass"


def run_suite(target: Harness | Daemons, loop, *, max_examples: int, derandomize: bool, seed: int | None, time_budget: float | None,
              catalogue_only: bool, regressions: list[Scenario], save_dir: Path | None, progress=None) -> ConformReport:
    h = daemons_of(target)
    rules = Rules(h.profile)
    rep = ConformReport(h.name, h.profile, jobs=h.jobs)
    start = time.monotonic()
    say = progress or (lambda m: None)
    slow = h.b["retry_delay_s"] >= 1
    if regressions:
        say(f"{len(regressions)} saved regression(s)")
    rep.runs += run_batches(h, loop, list(regressions) + catalogue(h.profile, slow), say)
    if not catalogue_only and max_examples > 0 and h.alive():
        say("generated scenarios")
        g = search(h, loop, rules, max_examples=max_examples, derandomize=derandomize, seed=seed, time_budget=time_budget,
                   slow_retries=slow)
        rep.generated = g
        if g.failing is not None:
            rep.final = _final_run(h, loop, g, rules)
            if g.died is not None and g.died is not g.failing:
                rep.runs.append(g.died)  # the daemon died while the failure found before was shrunk
            if save_dir is not None:
                path = save_dir / f"rmb-{h.profile}-{g.failing.scenario.digest()}.json"
                rep.saved.append(write_scenario(path, g.failing.scenario, failure=_failure_dict(rep.final, rules)))
    rep.seconds = time.monotonic() - start
    return rep


def _final_run(h: Daemons, loop, g: Generated, rules: Rules) -> ScenarioRun:
    """The generated failure as the report shows it: rerun once on its own when the daemon still
    runs (a failure that does not come back is said to be non-deterministic); as it ran when the
    daemon has exited (nothing can run again)."""
    if not h.alive():
        run = g.failing
        run.scenario.title = ("the implementation exited during this scenario (not shrunk: it cannot run again)" if run.crashed
                              else f"shrunk to {len(run.scenario.acts)} act(s); the implementation exited later (not rerun)")
        return run
    rerun = run_all(h, loop, [g.failing.scenario])[0]
    run = rerun if rerun.failed(rules) else g.failing
    run.scenario.title = f"shrunk to {len(g.failing.scenario.acts)} act(s)" + \
        ("" if rerun.failed(rules) else " (passed when rerun: the implementation is not deterministic here)")
    return run


def _failure_dict(run: ScenarioRun, rules: Rules) -> dict:
    return {"crashed": run.crashed, "checks": [{"act": i, **c.as_dict()} for i, a in enumerate(run.acts)
                                               for c in a.checks if not c.ok and rules.mode(c.rule) != "off"]}


# ---- reports --------------------------------------------------------------------------------------
def describe_run(run: ScenarioRun, rules: Rules, evidence_lines: int = 30) -> list[str]:
    sc = run.scenario
    out = [f"{sc.id} ({sc.origin}{': ' + sc.title if sc.title else ''}), profile {sc.profile}, the daemon's key {sc.key_type}: FAIL"]
    if run.crashed:
        out.append(f"  {run.crashed}")
    for i, a in enumerate(run.acts):
        bad = [c for c in a.checks if not c.ok and rules.mode(c.rule) != "off"]
        if not bad:
            continue
        out.append(f"  act {i + 1}: {json.dumps(a.act)}")
        for c in bad:
            out.append(f"    {c.rule} ({rules.severity(c.rule)}, {rules.mode(c.rule)}) {rules.title(c.rule)}: {c.detail}")
            out.append(f"      what to do: {rules.advice(c.rule)}")
        out.append("    exchanges and Redis operations:")
        out += [f"      {line}" for line in a.evidence[:evidence_lines]]
        if len(a.evidence) > evidence_lines:
            out.append(f"      ... {len(a.evidence) - evidence_lines} more")
    return out


def failure_dicts(run: ScenarioRun, rules: Rules) -> list[dict]:
    """Each failed check of ``run`` (strict or not) as the JSON reports give it: the act, the rule
    with its title, mode and what to do, what was found, and the act's exchanges and Redis
    operations; the same fields as the text report's, so a reader of either can act on it."""
    return [{"act": a.act, **c.as_dict(), "title": rules.title(c.rule), "mode": rules.mode(c.rule),
             "severity": rules.severity(c.rule), "advice": rules.advice(c.rule), "evidence": a.evidence}
            for a, c in run.failures(rules, strict_only=False)]


def render_replay_json(run: ScenarioRun, rules: Rules) -> str:
    """``rmkit replay --protocol rmb --format json``: the verdict, every check made, and each
    failure with its evidence and what to do."""
    sc = run.scenario
    return json.dumps({"scenario": sc.id, "profile": sc.profile, "verdict": "fail" if run.failed(rules) else "pass",
                       "crashed": run.crashed,
                       "checks": [{"act": i, **c.as_dict()} for i, a in enumerate(run.acts) for c in a.checks],
                       "failures": failure_dicts(run, rules)}, indent=2) + "\n"


def core_report(rep: ConformReport, evidence_lines: int = 30):
    """The run as every protocol's conform report is typed (:mod:`rmkit.conformreport`): one
    judge (the daemon's) with a row per rule the profile judges. A strict rule some check broke
    fails, with its first finding, what to do, every finding and the first failing act's exchanges
    and Redis operations; a non-strict one is a finding; a rule no scenario reached has no verdict,
    with why. A daemon that exited under test is the judge's breakdown."""
    from rmkit import conformreport as core
    from rmkit.conformance.rmb.driven.coverage import rule_evidence

    rules = Rules(rep.profile)
    verdicts = rule_evidence(rep, rules)
    every = rep.runs + ([rep.final] if rep.final else [])
    failed: dict[str, list[tuple[ActResult, object]]] = {}
    first_run: dict[str, ScenarioRun] = {}  # rule -> the first scenario that broke it (its reproduce command)
    for run in every:
        for a, c in run.failures(rules, strict_only=False):
            failed.setdefault(c.rule, []).append((a, c))
            first_run.setdefault(c.rule, run)
    rows = []
    for r in rules.spec.rules:
        mode = rules.mode(r.id)
        if mode == "off":
            continue
        what, n = verdicts[r.id]
        row = core.RuleResult(r.id, r.title, mode, core.NOT_EXERCISED if what == "not exercised" else core.PASS)
        rows.append(row)
        if what == "not exercised":
            row.why = n
            continue
        found = failed.get(r.id)
        if not found:
            row.covered_by = n if what == "pass" else []
            continue
        lines = [f"{r.id} ({rules.severity(r.id)}, {mode}) {r.title}", f"what to do: {r.advice}"]
        lines += [f"{c.detail}  [act {json.dumps(a.act)}]" for a, c in found]
        lines += ["exchanges and Redis operations of the first failing act:"] + found[0][0].evidence[:evidence_lines]
        lines.append(f"reproduce: {rep.reproduce(first_run[r.id])}")
        row.status = core.FAIL if mode == "strict" else core.FINDING
        row.evidence, row.detail = found[0][1].detail, "\n".join(lines)
    checks = rep.per_rule(rules)
    for row in rows:
        held, broke = checks.get(row.id, [0, 0])
        row.extras = {"checks": held + broke, "failed_checks": broke}
    crashed = [run for run in every if run.crashed]
    breakdown = core.Failure(crashed[0].crashed, "crash", f"in scenario {crashed[0].scenario.id}: {crashed[0].crashed}\n"
                             "what to do: find why the daemon exited in its own output") if crashed else None
    scenarios = []
    for run in every:
        bad = run.failed(rules)
        found = run.failures(rules, strict_only=False)
        first = next((c.detail for _, c in found), run.crashed or "")
        scenarios.append(core.ScenarioResult(
            run.scenario.id, "daemon", run.scenario.origin, run.scenario.title, "fail" if bad else "pass",
            len(run.scenario.acts), run.seconds,
            failure=core.Failure(first, "crash" if run.crashed else "rule",
                                 "\n".join(describe_run(run, rules, evidence_lines)[1:])) if bad else None,
            reproduce=rep.reproduce(run), rules=list(dict.fromkeys(c.rule for _, c in found)),
            extras={"key_type": run.scenario.key_type, "acts": run.scenario.acts, "crashed": run.crashed,
                    "failures": failure_dicts(run, rules)}))
    g = rep.generated
    generated = None if g is None else {"examples": g.examples, "seconds": round(g.seconds, 2),
                                        "found_after_s": g.found_after_s, "shrink_runs": g.shrink_runs}
    notes = [f"{len(rep.runs)} scenario(s) run besides generation, {rep.seconds:.1f} s, on {rep.jobs} daemon(s) side by side"]
    if g is not None:
        notes.append(f"generated: {g.examples} scenario(s) in {g.seconds:.1f} s"
                     + (f"; first failure after {g.found_after_s:.1f} s, {g.shrink_runs} shrink run(s)"
                        if g.found_after_s is not None else ""))
    return core.ConformReport(
        "rmb", "RMB v1", rep.profile, rep.implementation, rep.impl_argv, ["daemon"], rep.verdict(rules), rep.seconds,
        groups=[core.RuleGroup("", rows, breakdown, elapsed_s=rep.seconds)], scenarios=scenarios,
        summary=f"{len(rep.runs)} besides generation, {rep.seconds:.1f} s" + (f"; {g.examples} generated" if g is not None else ""),
        saved=[str(p) for p in rep.saved], settings=rep.settings, exit=rep.exit, notes=notes,
        extras={"jobs": rep.jobs, "generated": generated})


def render_junit(rep: ConformReport, evidence_lines: int = 30) -> str:
    """JUnit XML for CI: one test case per rule the profile judges (:func:`core_report`,
    :func:`rmkit.render.conform.render_junit`)."""
    from rmkit.render.conform import render_junit as junit

    return junit(core_report(rep, evidence_lines))


def render_html(rep: ConformReport) -> str:
    """The standalone page every protocol's run has (:func:`rmkit.render.conform.render_html`)."""
    from rmkit.render.conform import render_html as html

    return html(core_report(rep))
