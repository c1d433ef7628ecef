"""``rmkit conform --protocol corda`` and ``rmkit replay --protocol corda``: exit 0 when every
profile passes (non-strict findings are reported), 1 when a strict rule was broken, 2 when the
implementation could not be driven (it cannot start, exits, or does not answer)."""

from __future__ import annotations

import argparse
import time

from rmkit.conformance.cli_options import derandomize_wanted, regressions_dir
from rmkit.errors import RmkitError, UsageError
from rmkit.guard import OutputError, decided, emit_report

from .adapters import ROLES, ImplementationFailed, open_factory
from .bridge import run_bridge
from .suite import close, load_regressions, read_saved, render, run, save, search, to_json


class ImplementationError(RmkitError):
    """The implementation could not be driven (exit 2)."""


def conform(profile: str, args: argparse.Namespace) -> int:
    roles = args.role or list(ROLES)
    for r in roles:
        if r not in ROLES:
            raise UsageError(f"--role {r!r}: protocol corda drives the roles {', '.join(ROLES)}")
    if args.format == "junit":
        raise UsageError("--format junit: protocol corda writes text or json")
    if args.html:   # said, not ignored: a run that seems to honour it and writes nothing misleads
        raise UsageError("--html: protocol corda writes text or json (--html applies to remp and rmb)")
    if args.catalogue_only:
        raise UsageError("--catalogue-only: protocol corda has no catalogue of named scenarios, only generated ones "
                         "(--catalogue-only applies to remp and rmb)")
    started = time.monotonic()
    # the same folder, and RMKIT_REGRESSIONS, as the other protocols (checked writable by `rmkit conform`)
    folder = regressions_dir(args.regressions)
    saved = load_regressions(folder)
    factory = open_factory(args)
    derandomize = derandomize_wanted(args.derandomize)
    results = []
    for role in roles:
        mine = [(path, steps) for r, p, path, steps in saved if r == role and p == profile]
        budget = None if args.time_budget is None else max(0.1, args.time_budget - (time.monotonic() - started))
        try:
            results.append(search(factory, profile, max_examples=args.max_examples or 1, derandomize=derandomize,
                                  seed=args.seed, role=role, regressions=mine, time_budget=budget))
        except ImplementationFailed as exc:
            raise ImplementationError(f"the implementation could not be driven as {role}: {exc}") from None
    notes = ""
    for result in results:
        if result.failure and not result.regression:
            try:
                result.saved = str(save(result, folder))
            except OSError as exc:
                raise OutputError(f"regressions folder {folder}: cannot save the failure ({exc.strerror or exc})") from None
            notes += f"saved to {result.saved} (rerun: rmkit replay --protocol corda {result.saved} ...)\n"
    text = to_json(results) if args.format == "json" else render(results) + notes
    failed = any(r.failure for r in results)
    code = decided(1 if failed else 0)
    emit_report(text, "fail" if failed else "pass", args.out)
    return code


def replay(args: argparse.Namespace) -> int:
    role, profile, steps = read_saved(args.scenario)
    factory = open_factory(args)
    impl = None
    try:
        impl = factory(role)
        out = (run_bridge if role == "bridge" else run)(impl, profile, steps, role)
    except ImplementationFailed as exc:
        raise ImplementationError(f"the implementation could not be driven: {exc}") from None
    finally:
        if impl is not None:
            close(impl)
    for line in out.log:
        print(line)
    for v in out.violations:
        print(v.render())
    print("fail" if out.strict else "pass")
    return 1 if out.strict else 0
