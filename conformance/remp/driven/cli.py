"""``rmkit conform`` and ``rmkit replay`` for REMP."""

from __future__ import annotations

import argparse
import sys

from rmkit.conformance.remp.driven.adapters import open_implementation
from rmkit.conformance.remp.driven.report import core_report, unreached
from rmkit.conformance.remp.driven.runner import PASS, explain_failure, run_scenario
from rmkit.conformance.remp.driven.scenario import read_scenario
from rmkit.conformance.remp.driven.scenario_text import scenario_lines
from rmkit.conformance.remp.driven.suite import ROLES, run_suite
from rmkit.errors import UsageError
from rmkit.conformreport import settings_of
from rmkit.cli_options import (derandomize_wanted, hypothesis_data_in, impl_argv, implementation_regressions,
                               stderr_progress)
from rmkit.guard import decided, emit_report, write_output


def conform(profile: str, args: argparse.Namespace) -> int:
    roles = args.role or list(ROLES)
    for r in roles:
        if r not in ROLES:
            raise UsageError(f"--role {r!r}: expected one of {', '.join(ROLES)}")
    folder = implementation_regressions(args)  # this implementation's own: never another's failures
    with hypothesis_data_in(folder):
        rep = run_suite(profile, roles, lambda role: open_implementation(args, role), max_examples=args.max_examples,
                        seed=args.seed, derandomize=derandomize_wanted(args.derandomize), time_budget=args.time_budget,
                        catalogue_only=args.catalogue_only, regressions=folder, progress=stderr_progress(args))
    rep.impl_argv, rep.settings = impl_argv(args), settings_of(args)
    kit_failed = rep.kit_errors and not any(r.verdict != PASS for r in rep.results)
    rep.exit = code = decided(2 if kit_failed or rep.not_driven else 0 if rep.verdict == PASS else 1)
    from rmkit.render.conform import render, render_html

    typed = core_report(rep)
    emit_report(render(typed, args.format), rep.verdict, args.out)
    if args.html:
        write_output(args.html, render_html(typed), "--html")
        print(f"HTML report written to {args.html}", file=sys.stderr)
    for role, why in rep.not_driven.items():
        print(f"rmkit conform: the implementation could not be driven as {role} (its first scenario failed at "
              f"the hello: {why}); no verdict on it"
              + (f"; the run stopped there ({', '.join(rep.not_tried)} not tried)" if rep.not_tried else ""), file=sys.stderr)
    if kit_failed:
        print("rmkit conform: the kit itself failed (see 'kit error' above); no verdict on the implementation",
              file=sys.stderr)
    return code  # (2: a tool failure, not a verdict)


def replay(args: argparse.Namespace) -> int:
    sc = read_scenario(args.scenario)
    impl = open_implementation(args, sc.role)
    try:
        res = run_scenario(sc, impl)
    finally:
        impl.close()
    if res.verdict == PASS and not sc.events:  # a header alone: a pass would be a verdict on nothing
        raise UsageError(f"{args.scenario}: the scenario has no steps: only the hello was checked, which is no pass")
    if args.format == "json":
        import orjson

        sys.stdout.write(orjson.dumps({"scenario": sc.id, "verdict": res.verdict, "steps": res.steps,
                                       "failure": res.failure.as_dict() if res.failure else None},
                                      option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(f"replaying {args.scenario}: {len(sc.events)} steps, role {sc.role}, profile {sc.profile}")
        if res.failure is None:
            print("\n".join(scenario_lines(res)))
        print(explain_failure(res))
    if unreached(res):  # as conform: no rule was put to it, so no verdict on it (not a failure, 1)
        print(f"rmkit replay: the implementation could not be driven (it failed at the hello: {res.failure.summary}); "
              "no verdict on it", file=sys.stderr)
        return 2
    return 0 if res.verdict == PASS else 1
