"""RMB's side of the pytest plugin: the daemon under test started once per test process (its own
redis-server and kit twins, as ``rmkit conform --protocol rmb --jobs 1``), then a test per saved
regression (under its file), per catalogue scenario (``conformance/rmb/driven/scenario.py::daemon::
catalogue-NN``, the module the catalogue is written in) and the generated search
(``daemon::generated-daemon``). A daemon that died in a test is started afresh for the next."""

from __future__ import annotations

import json
from pathlib import Path

from rmkit.cli_options import implementation_regressions
from rmkit.conformance.pytest_support import Entry, NotDriven, PytestSupport, RunOptions, Saved, ScenarioFailed, Skipped, Source

ROLE = "daemon"  # RMB drives one role; pytest groups its tests under this name


def scenario_text(run) -> list:
    """Every act of the scenario, in order, those with a broken check marked (the failing acts'
    checks and exchanges follow in :func:`describe_run`'s lines)."""
    sc = run.scenario
    bad = {i for i, a in enumerate(run.acts) if any(not c.ok for c in a.checks)}
    out = [f"  scenario ({len(sc.acts)} act(s), played at once; the daemon's key {sc.key_type}):"]
    out += [f"    {'>' if i in bad else ' '} {i + 1}. {json.dumps(act)}" for i, act in enumerate(sc.acts)]
    return out


class Support(PytestSupport):
    roles = (ROLE,)
    saved_glob = "rmb-*.json"

    def __init__(self):
        self.daemons = None  # (Daemons, event loop) of this process, started at the first need

    def check(self, opts: RunOptions) -> None:
        from rmkit.conformance.rmb.driven.cli import _check
        from collections import defaultdict

        from rmkit.conformance.rmb.driven.harness import expand_command

        _check(opts)
        expand_command(opts.impl_cmd, defaultdict(str))  # split as the harness splits it (an unclosed quote, an empty command)

    def read_saved(self, path) -> Saved:
        from rmkit.conformance.rmb.driven.scenario import read_scenario

        sc = read_scenario(path)
        return Saved(ROLE, sc.profile, sc.id, sc)

    def sources(self, opts: RunOptions) -> list:
        from rmkit.conformance.rmb.driven import scenario as module
        from rmkit.conformance.rmb.driven.scenario import catalogue
        from rmkit.protocols.rmb.model import rmb_spec

        slow = rmb_spec().behaviour(opts.profile)["retry_delay_s"] >= 1
        entries = [Entry(ROLE, sc.id, (sc, None)) for sc in catalogue(opts.profile, slow)]
        entries.append(Entry(ROLE, f"generated-{ROLE}", None))
        return self.saved_sources(opts) + [Source(Path(module.__file__), entries)]

    def _open(self, opts: RunOptions):
        """The running daemon, started again when it died in an earlier test."""
        import asyncio

        from rmkit.conformance.rmb.driven.cli import _close
        from rmkit.conformance.rmb.driven.daemons import Daemons
        from rmkit.errors import RmkitError

        if self.daemons is not None and not self.daemons[0].alive():
            self.close(opts)
        if self.daemons is None:
            loop = asyncio.new_event_loop()
            h = Daemons.create(opts.impl_cmd, opts.profile, 1, response_s=opts.timeout)
            try:
                loop.run_until_complete(h.start())
            except RmkitError as exc:
                _close(h, loop)
                raise NotDriven(str(exc)) from None
            self.daemons = (h, loop)
        return self.daemons

    def probe(self, opts: RunOptions, role: str) -> None:
        self._open(opts)  # kept for the tests of this process

    def run(self, opts: RunOptions, entry: Entry, properties: list) -> None:
        from rmkit.conformance.rmb.driven.judge import Rules

        h, loop = self._open(opts)
        rules = Rules(opts.profile)
        if entry.payload is None:
            self._generated(opts, h, loop, rules)
            return
        from rmkit.conformance.rmb.driven.suite import describe_run, run_all, run_scenario

        sc, path = entry.payload
        runs = run_all(h, loop, [sc]) or [loop.run_until_complete(run_scenario(h.harnesses[0], sc))]
        run = runs[0]
        properties.append(("rmkit-rules", ",".join(sorted({c.rule for a in run.acts for c in a.checks})) or "no-check-made"))
        if run.failed(rules):
            raise ScenarioFailed("\n".join([*describe_run(run, rules), *scenario_text(run),
                                            f"reproduce: {self.reproduce(opts, path, '--catalogue-only')}"]))

    def _generated(self, opts: RunOptions, h, loop, rules) -> None:
        from rmkit.conformance.rmb.driven.scenario import write_scenario
        from rmkit.conformance.rmb.driven.suite import _failure_dict, _final_run, describe_run, search

        if opts.max_examples == 0:
            raise Skipped("--rmkit-max-examples 0: no generated scenarios")
        g = search(h, loop, rules, max_examples=opts.max_examples, derandomize=opts.derandomize, seed=None,
                   time_budget=None, slow_retries=h.b["retry_delay_s"] >= 1)
        if g.failing is None:
            if g.examples == 0:
                raise ScenarioFailed("no generated scenario ran: nothing was checked")
            return
        final = _final_run(h, loop, g, rules)
        path = write_scenario(implementation_regressions(opts) / f"rmb-{opts.profile}-{g.failing.scenario.digest()}.json",
                              g.failing.scenario, failure=_failure_dict(final, rules))
        raise self.saved_failure(opts, [*describe_run(final, rules), *scenario_text(final)], path)

    def close(self, opts: RunOptions) -> None:
        if self.daemons is not None:
            from rmkit.conformance.rmb.driven.cli import _close

            h, loop = self.daemons
            self.daemons = None
            _close(h, loop)
