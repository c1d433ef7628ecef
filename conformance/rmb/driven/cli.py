"""``rmkit conform --protocol rmb --impl-cmd CMD`` and ``rmkit replay --protocol rmb FILE``.

Exit 0 every strict rule held (non-strict findings are reported), 1 a scenario broke a strict rule
or the daemon died under test, 2 the daemon could not be started, the run checked nothing, it was
interrupted (Ctrl-C, SIGTERM: the daemon and its redis-server are stopped first), or another tool
failure.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from rmkit.errors import NothingChecked, UsageError

IMPL_HELP = ("rmb: CMD starts the daemon under test; placeholders {python} (this Python), {redis} (its own fresh Redis URL), {twin}, {key_file} "
             "(a file holding its seed as 0x + 64 hex digits), {seed}, {key_type}, {directory} (the twin directory, JSON), "
             "{listen} (HOST:PORT it must serve HTTP on), {host}, {port}, {profile}, {workdir}")


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--rmb-workdir", metavar="DIR", help="rmb: keep the directory, key, Redis and the daemon's output in DIR "
                                                            "(with --jobs N above 1: DIR/job-1 .. DIR/job-N; default: a temporary "
                                                            "folder, removed). " + IMPL_HELP)
    group.add_argument("--jobs", type=int, metavar="N", help="rmb: run N daemons under test at once, each on its own Redis with its "
                                                             "own kit twins, and deal the scenarios to them side by side (the "
                                                             "verdicts are those of --jobs 1; default: the cores + 1). A daemon "
                                                             "that cannot run as several instances at once: --jobs 1. "
                                                             "The contract: spec/rmb/daemon.md")


def jobs_wanted(args: argparse.Namespace) -> int:
    from rmkit.conformance.rmb.driven.daemons import MAX_JOBS, default_jobs

    jobs = getattr(args, "jobs", None)
    if jobs is None:
        return default_jobs()
    if not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs: expected a number of daemons from 1 to {MAX_JOBS}, found {jobs}")
    return jobs


def _check(args: argparse.Namespace) -> str:
    if getattr(args, "impl", None):
        raise UsageError("--impl: protocol rmb drives a daemon process at its wire; give --impl-cmd CMD")
    if getattr(args, "role", None):
        raise UsageError("--role: protocol rmb has one role (the daemon); leave --role out")
    return args.impl_cmd


def _forget(exc: BaseException) -> None:
    """Drop what an interrupt's traceback holds (the coroutines it cut short would each warn
    "never awaited" when the interpreter frees them later)."""
    import gc
    import traceback
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if exc.__traceback__ is not None:
            traceback.clear_frames(exc.__traceback__)
        exc.__traceback__ = None
        gc.collect()


@contextlib.contextmanager
def _interrupts_unwind():
    """While the harness runs, SIGINT and SIGTERM unwind through its cleanup
    (:mod:`rmkit.interrupts`: exit 2, "interrupted; no verdict"; a signal during the cleanup waits
    for its end), quietly: one line, no traceback of the tasks it cut short."""
    from rmkit.interrupts import signals_interrupt

    with signals_interrupt():
        try:
            yield
        except KeyboardInterrupt as exc:
            _forget(exc)
            del exc
            raise KeyboardInterrupt from None


def _open(args, profile: str, jobs: int = 1):
    import asyncio  # here, not at the top: every rmkit command builds this module's arguments

    from rmkit.conformance.rmb.driven.daemons import Daemons

    loop = asyncio.new_event_loop()
    h = Daemons.create(_check(args), profile, jobs, response_s=args.timeout, workdir=getattr(args, "rmb_workdir", None))
    try:
        loop.run_until_complete(h.start())
    except BaseException:
        _close(h, loop)
        raise
    return h, loop


def _close(h, loop) -> None:
    """Cancel what an interrupted run left in the loop (quietly: an interrupt is no task's failure),
    then stop the daemon, its redis-server and the kit twins; a signal meanwhile waits for the end."""
    import asyncio

    from rmkit.interrupts import held

    with held():
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.set_exception_handler(lambda loop, context: None)  # a task that failed on the way down says nothing now
        loop.run_until_complete(h.stop())
        loop.close()


def _checks(runs) -> int:
    return sum(len(a.checks) for run in runs for a in run.acts)


def regressions_for(folder: Path, profile: str) -> list:
    from rmkit.conformance.rmb.driven.scenario import read_scenario

    if not folder.is_dir():
        return []
    return [sc for sc in (read_scenario(p) for p in sorted(folder.glob("rmb-*.json"))) if sc.profile == profile]


def conform(profile: str, args: argparse.Namespace) -> int:
    from rmkit.conformance.rmb.driven.judge import Rules
    from rmkit.conformance.rmb.driven.suite import core_report, run_suite
    from rmkit.conformreport import settings_of
    from rmkit.render.conform import render, render_html
    from rmkit.cli_options import (derandomize_wanted, hypothesis_data_in, impl_argv,
                                   implementation_regressions, stderr_progress)
    from rmkit.guard import decided, emit_report, write_output

    _check(args)
    folder = implementation_regressions(args)
    regressions = regressions_for(folder, profile)
    jobs = jobs_wanted(args)
    with _interrupts_unwind(), hypothesis_data_in(folder):
        h, loop = _open(args, profile, jobs)
        try:
            rep = run_suite(h, loop, max_examples=args.max_examples, derandomize=derandomize_wanted(args.derandomize), seed=args.seed,
                            time_budget=args.time_budget, catalogue_only=args.catalogue_only, regressions=regressions,
                            save_dir=folder, progress=stderr_progress(args))
        finally:
            _close(h, loop)
    rep.impl_argv, rep.settings = impl_argv(args), settings_of(args)
    verdict = rep.verdict(Rules(profile))
    if verdict == "pass" and not _checks(rep.runs + ([rep.final] if rep.final else [])):
        raise NothingChecked(f"no scenario checked anything against profile {profile}: no verdict")
    rep.exit = code = decided(0 if verdict == "pass" else 1)
    typed = core_report(rep)
    emit_report(render(typed, args.format), verdict, args.out)
    if args.html:
        write_output(args.html, render_html(typed), "--html")
        print(f"HTML report written to {args.html}", file=sys.stderr)
    return code


def replay(args: argparse.Namespace) -> int:
    from rmkit.conformance.rmb.driven.judge import Rules
    from rmkit.conformance.rmb.driven.scenario import read_scenario
    from rmkit.conformance.rmb.driven.suite import describe_run, render_replay_json, run_all

    sc = read_scenario(args.scenario)
    with _interrupts_unwind():
        h, loop = _open(args, sc.profile)
        try:
            runs = run_all(h, loop, [sc])  # started with the scenario's key type
            if not runs:
                from rmkit.conformance.rmb.driven.suite import run_scenario

                runs = [loop.run_until_complete(run_scenario(h.harnesses[0], sc))]  # the daemon died: said by the run
            run = runs[0]
        finally:
            _close(h, loop)
    rules = Rules(sc.profile)
    if not run.failed(rules) and not _checks([run]):
        raise NothingChecked(f"{args.scenario}: checked nothing (no act of it applies to profile {sc.profile}, e.g. a proxy act "
                             "where the profile has no proxy): no verdict")
    if args.format == "json":
        sys.stdout.write(render_replay_json(run, rules))
    else:
        print(f"replaying {args.scenario}: {len(sc.acts)} act(s), profile {sc.profile}")
        if run.failed(rules):
            print("\n".join(describe_run(run, rules)))
        else:
            n = sum(len(a.checks) for a in run.acts)
            print(f"{sc.id}: pass ({n} checks held)")
    return 1 if run.failed(rules) else 0
