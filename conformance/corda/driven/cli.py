"""``rmkit conform --protocol corda`` and ``rmkit replay --protocol corda``: exit 0 when every
role passes (non-strict findings are reported), 1 when a scenario failed (a strict rule broken, or
the implementation crashed, timed out or answered something that is no reply after its hello),
2 when there is no verdict: the implementation could not be driven (it cannot start, or never
got past a hello), no message reached it (nothing was checked), or the run was interrupted
(SIGINT, SIGTERM: every process it started is stopped first)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from rmkit.cli_options import derandomize_wanted, hypothesis_data_in, impl_argv, implementation_regressions
from rmkit.conformreport import settings_of
from rmkit.errors import NothingChecked, RmkitError, UsageError
from rmkit.guard import OutputError, decided, emit_report
from rmkit.interrupts import signals_interrupt

from .adapters import ROLES, ImplementationFailed, open_factory
from .bridge import run_bridge
from .suite import (close, exchange, failed, load_regressions, outcome_json, overall, play_once, problems, read_saved,
                    run, save, search, steps_text, typed)


class ImplementationError(RmkitError):
    """The implementation could not be driven (exit 2)."""


def conform(profile: str, args: argparse.Namespace) -> int:
    roles = args.role or list(ROLES)
    for r in roles:
        if r not in ROLES:
            raise UsageError(f"--role {r!r}: protocol corda drives the roles {', '.join(ROLES)}")
    with signals_interrupt(), hypothesis_data_in(implementation_regressions(args)):
        return _conform(profile, roles, args)   # SIGINT and SIGTERM: every process stopped, then exit 2


def _conform(profile: str, roles: list[str], args: argparse.Namespace) -> int:
    started = time.monotonic()
    # this implementation's own folder, as for the other protocols: never another's failures
    folder = implementation_regressions(args)
    saved = load_regressions(folder)
    factory = open_factory(args)
    derandomize = derandomize_wanted(args.derandomize)
    results = []
    for role in roles:
        mine = [(path, steps) for r, p, path, steps in saved if r == role and p == profile]
        budget = None if args.time_budget is None else max(0.1, args.time_budget - (time.monotonic() - started))
        # --catalogue-only, or --max-examples 0: the saved and the named scenarios only (spec/corda/catalogue.yaml)
        examples = 0 if args.catalogue_only else args.max_examples
        try:
            results.append(search(factory, profile, max_examples=examples, derandomize=derandomize,
                                  seed=args.seed, role=role, regressions=mine, time_budget=budget))
        except ImplementationFailed as exc:
            raise ImplementationError(f"the implementation could not be driven as {role}: {exc}") from None
    for result in results:
        if result.failure and not result.regression:
            try:
                result.saved = str(save(result, folder))
            except OSError as exc:
                raise OutputError(f"regressions folder {folder}: cannot save the failure ({exc.strerror or exc})") from None
    verdict = overall(results)
    code = decided({"fail": 1, "nothing checked": 2}.get(verdict, 0))
    rep = typed(results, impl_argv(args), settings_of(args), code)
    from rmkit.render.conform import render, render_html

    emit_report(render(rep, args.format), verdict, args.out)
    if getattr(args, "html", None):
        from rmkit.guard import write_output

        write_output(args.html, render_html(rep), "--html")
        print(f"HTML report written to {args.html}", file=sys.stderr)
    more = ("only the saved and the named scenarios ran; drop --catalogue-only, or give --max-examples 1 or more"
            if args.max_examples == 0 or args.catalogue_only else "raise --max-examples or --time-budget")
    for r in results:
        if r.verdict == "nothing checked":
            print(f"rmkit conform: nothing checked as {r.role}: no message reached the implementation in "
                  f"{r.examples} scenarios ({more}); no verdict", file=sys.stderr)
    return code


def replay(args: argparse.Namespace) -> int:
    role, profile, steps = read_saved(args.scenario)
    factory = open_factory(args)
    with signals_interrupt():   # SIGINT and SIGTERM: the implementation stopped, then exit 2
        out, delivered = _replay(factory, role, profile, steps)
    if not failed(out) and not delivered:
        raise NothingChecked(f"nothing checked: no message reached the implementation in {args.scenario} "
                             f"({len(steps)} steps); no verdict")
    verdict = "fail" if failed(out) else "pass"
    code = decided(1 if failed(out) else 0)
    if args.format == "json":
        sys.stdout.write(json.dumps({"protocol": "corda", "scenario": str(args.scenario), "role": role, "profile": profile,
                                     "verdict": verdict, **outcome_json(profile, out)}, indent=2) + "\n")
        return code
    print(f"replaying {args.scenario}: {len(steps)} steps, role {role}, profile {profile}: {steps_text(steps)}")
    print("exchange:")
    for line in exchange(out, limit=200):
        print(f"  {line}")
    for line in problems(profile, out):
        print(line)
    print(verdict)
    return code


def _replay(factory, role: str, profile: str, steps: list):
    """The outcome of one run of ``steps`` and the deliveries answered. An implementation that
    breaks down after its hello fails the scenario; one that never answers the hello could not be
    driven (exit 2)."""
    impl = None
    try:
        impl = factory(role)
        return play_once(run_bridge if role == "bridge" else run, impl, profile, steps), impl.delivered
    except ImplementationFailed as exc:
        raise ImplementationError(f"the implementation could not be driven: {exc}") from None
    finally:
        if impl is not None:
            close(impl)
