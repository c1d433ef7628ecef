"""Corda's side of the pytest plugin: a test per saved regression (under its file) and each role's
generated search (``conformance/corda/driven/suite.py::ROLE::generated-ROLE``, the module the
scenarios are drawn in), run as ``rmkit conform --protocol corda`` runs them."""

from __future__ import annotations

from pathlib import Path

from rmkit.cli_options import implementation_regressions
from rmkit.conformance.corda.driven.adapters import ROLES
from rmkit.conformance.pytest_support import Entry, NotDriven, PytestSupport, RunOptions, Saved, ScenarioFailed, Skipped, Source


def _player(role: str):
    from .driven.bridge import run_bridge
    from .driven.suite import run

    return run_bridge if role == "bridge" else run


def failure_text(profile: str, out, what: str) -> list:
    """The whole failing scenario (every step), what went wrong with what to do, and the exchange."""
    from .driven.suite import exchange, problems, steps_text

    lines = [f"{what} ({len(out.actions)} steps): {steps_text(out.actions)}", *problems(profile, out), "exchange:"]
    return lines + [f"  {line}" for line in exchange(out, limit=200)]


class Support(PytestSupport):
    roles = ROLES
    saved_glob = "corda-*.json"

    def check(self, opts: RunOptions) -> None:
        from .driven.adapters import open_factory

        open_factory(opts)  # --impl loaded (a process starts with the first scenario)

    def read_saved(self, path) -> Saved:
        from .driven.suite import read_saved

        role, profile, steps = read_saved(path)
        return Saved(role, profile, path.stem, steps)

    def sources(self, opts: RunOptions) -> list:
        from .driven import suite

        return self.saved_sources(opts) + [Source(Path(suite.__file__), [Entry(role, f"generated-{role}", None) for role in opts.roles])]

    def probe(self, opts: RunOptions, role: str) -> None:
        from .driven.adapters import ImplementationFailed, harnessed, open_factory
        from .driven.suite import close, play_once

        impl = None
        try:
            impl = harnessed(open_factory(opts))(role)
            play_once(_player(role), impl, opts.profile, [])  # the hello, and a drain with nothing owed
        except ImplementationFailed as exc:
            raise NotDriven(str(exc)) from None
        finally:
            if impl is not None:
                close(impl)

    def run(self, opts: RunOptions, entry: Entry, properties: list) -> None:
        from .driven.adapters import ImplementationFailed, harnessed, open_factory
        from .driven.suite import close, failed, play_once, save, search

        factory = open_factory(opts)
        if entry.payload is not None:
            steps, path = entry.payload
            impl = harnessed(factory)(entry.role)
            try:
                out = play_once(_player(entry.role), impl, opts.profile, steps)
            except ImplementationFailed as exc:
                raise NotDriven(str(exc)) from None
            finally:
                close(impl)
            if failed(out):
                raise ScenarioFailed("\n".join([*failure_text(opts.profile, out, f"saved scenario {path} fails again"),
                                                f"reproduce: {self.reproduce(opts, path)}"]))
            return
        if opts.max_examples == 0:
            raise Skipped("--rmkit-max-examples 0: no generated scenarios")
        try:
            result = search(factory, opts.profile, max_examples=opts.max_examples, derandomize=opts.derandomize,
                            role=entry.role)
        except ImplementationFailed as exc:
            raise NotDriven(str(exc)) from None
        if result.failure is not None:
            path = save(result, implementation_regressions(opts))
            what = "shrunk scenario" if result.reproducible else "failing scenario (it passed when run again: not shrunk)"
            raise self.saved_failure(opts, failure_text(opts.profile, result.failure, what), path)
        if result.verdict == "nothing checked":
            raise ScenarioFailed(f"nothing checked: no message reached the implementation in {result.examples} scenarios")
