"""One conformance run: saved regressions first, then the catalogue, then generated scenarios.

Why this order: a bug found once must be found again at once (regressions); the catalogue gives the
per-rule matrix whatever the generator draws; the generated scenarios look for what neither knew.
A generated failure is shrunk by Hypothesis, rerun once more on its own to make the report (the
step, the event, expected and actual outputs, the rules broken), and saved as a regression.
"""

from __future__ import annotations

import time
from pathlib import Path

from rmkit.conformance.remp.driven.catalogue import catalogue
from rmkit.conformance.remp.driven.coverage import generated_scenarios
from rmkit.conformance.remp.driven.generate import run_generated
from rmkit.conformance.remp.driven.names import default_params
from rmkit.conformance.remp.driven.report import ConformReport, unreached
from rmkit.conformance.remp.driven.runner import FAIL, PASS, Failure, ScenarioResult, run_scenario
from rmkit.conformance.remp.driven.scenario import Scenario, read_scenario, write_scenario
from rmkit.conformance.remp.driven.scope import ROLES, rules_in_scope  # noqa: F401 (ROLES: the roles a run drives)
from rmkit.cli_options import DEFAULT_REGRESSIONS


def _timed(run, sc, impl) -> ScenarioResult:
    started = time.perf_counter()
    res = run(sc, impl)
    res.elapsed_s = time.perf_counter() - started
    return res


def run_suite(profile: str, roles, open_impl, *, max_examples: int = 100, seed: int | None = None,
              derandomize: bool = False, time_budget: float | None = None, catalogue_only: bool = False,
              regressions: Path | None = DEFAULT_REGRESSIONS, progress=None) -> ConformReport:
    """Run everything for ``roles``; ``open_impl(role)`` opens the implementation for a role."""
    started = time.perf_counter()
    rep = ConformReport(implementation="", profile=profile, roles=list(roles), rules=rules_in_scope(profile, roles))
    say = progress or (lambda msg: None)
    for role in roles:
        impl = open_impl(role)
        try:
            fixed = []  # (origin label, scenario, its file)
            if regressions is not None and regressions.is_dir():
                for path in sorted(regressions.glob("*.jsonl")):
                    sc = read_scenario(path)
                    if sc.role == role and sc.profile == profile:
                        fixed.append((f"regression {path.name}", sc, path))
            fixed += [(f"catalogue {sc.id}", sc, None) for sc in catalogue(profile, [role])]
            for n, (label, sc, path) in enumerate(fixed, 1):
                say(f"{role} {n}/{len(fixed)}: {label}")
                res = _timed(run_scenario, sc, impl)
                rep.results.append(res)
                if path is not None:
                    rep.saved_for[sc.id] = path
                if n == 1 and unreached(res):
                    # its first hello failed: the rest would fail the same way, each with a copy of the
                    # same error; the role is not driven, and no verdict is given on it
                    break
            rep.implementation = getattr(impl, "name", "") or rep.implementation
            mine = [r for r in rep.results if r.scenario.role == role]
            if mine and all(unreached(r) for r in mine):  # nothing got past the hello: nothing to search
                # the run stops here (as the pytest plugin's does): an implementation that cannot be
                # driven as one role is broken, and each further role would repeat its error
                rep.not_driven[role] = mine[0].failure.summary
                rep.not_tried = list(roles)[list(roles).index(role) + 1:]
                break
            if catalogue_only:
                continue
            kept = generated_scenarios(profile, [role])  # generated ones that caught a mutant: coverage evidence
            for n, sc in enumerate(kept, 1):
                say(f"{role} {n}/{len(kept)}: generated {sc.id}")
                rep.results.append(_timed(run_scenario, sc, impl))
            if max_examples == 0:
                continue
            say(f"{role}: searching up to {max_examples} generated scenarios"
                + (f" (at most {time_budget:g} s)" if time_budget else ""))
            budget = None if time_budget is None else max(0.1, time_budget - (time.perf_counter() - started))
            g = run_generated(role, profile, default_params(role, profile), impl, max_examples=max_examples, seed=seed,
                              derandomize=derandomize, time_budget=budget)
            rep.generated[role] = g
            if g.kit_error:
                rep.kit_errors.append(f"generator for {role}: {g.kit_error}")
                continue
            if g.failing is not None:
                res = run_scenario(g.failing, impl)
                res.elapsed_s = g.elapsed_s  # the search and its shrinking
                if res.verdict != FAIL:  # the implementation is not deterministic: say so, keep the failure
                    res.verdict = FAIL
                    res.failure = Failure("flaky", len(g.failing.events), None, [], None,
                                          f"failed while generated ({g.message}) but passed when rerun: "
                                          "the implementation is not deterministic for the same events")
                res.scenario.title = f"shrunk to {len(g.failing.events)} steps: {res.failure.summary[:80]}"
                rep.results.append(res)
                if regressions is not None and g.failing.events:  # a hello alone replays as no verdict
                    path = write_scenario(regressions / f"{role}-{profile}-{g.failing.digest()}.jsonl", g.failing,
                                          res.expected, res.failure.as_dict() if res.failure else None)
                    rep.saved.append(path)
                    rep.saved_for[res.scenario.id] = path
            else:
                summary = Scenario(id=f"generated-{role}", role=role, profile=profile, params={}, events=[],
                                   title=f"{g.examples} generated scenarios, {g.steps} steps", origin="generated")
                rep.results.append(ScenarioResult(summary, PASS, g.steps, elapsed_s=g.elapsed_s))
        finally:
            impl.close()
    rep.elapsed_s = time.perf_counter() - started
    return rep

