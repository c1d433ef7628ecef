"""What a protocol supplies so that the pytest plugin (:mod:`rmkit.conformance.pytest_plugin`)
drives its implementations: the contract between the protocol-neutral plugin and a protocol's
own module (``conformance/<protocol>/pytest_support.py``, handed out by
:meth:`rmkit.protocol.Protocol.pytest_support`).

The plugin owns pytest (options, items, node ids, the exit code); the protocol owns what a test
is: which sources hold its scenarios, how one runs, what its failure says. It never names pytest
types, so a protocol needs no pytest to be imported.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple


class NotDriven(Exception):
    """The implementation could not be driven as a role: it cannot start, or its hello failed. No
    rule was put to it, so there is no verdict; the plugin stops the whole run with this error,
    once (exit 2), as ``rmkit conform`` does."""


class ScenarioFailed(Exception):
    """A test's scenario failed: the message is the whole (shrunk) scenario, what was expected and
    what came, the rule broken, and the line that reproduces it."""


class Skipped(Exception):
    """Nothing to run in this test under these options (e.g. ``--rmkit-max-examples 0`` for a
    generated search)."""


class Entry(NamedTuple):
    """One test: its role, its name (the last part of its node id) and what the protocol needs to
    run it (a scenario, or None for the role's generated search)."""

    role: str
    name: str
    payload: Any


class Source(NamedTuple):
    """A file scenarios come from (a saved regression, a catalogue) and the tests made of it."""

    path: Path
    entries: list


class Saved(NamedTuple):
    """A saved failing scenario as its protocol reads it (:meth:`PytestSupport.read_saved`)."""

    role: str
    profile: str
    name: str  # the test's name under its file
    scenario: Any  # what the protocol runs


@dataclass
class RunOptions:
    """The plugin's options as a protocol reads them (the attribute names of ``rmkit conform``'s, so
    the protocols' own option readers take this object as they take the command's arguments)."""

    protocol: str
    impl_cmd: str | None
    impl: str | None
    roles: list
    profile: str
    max_examples: int
    timeout: float
    regressions: str | None  # --rmkit-regressions as given (None: the implementation's own default folder)
    derandomize: bool = False
    extra: dict = field(default_factory=dict)  # per protocol, what it keeps between tests of one process

    def conform_argv(self, *more: str) -> list:
        """``rmkit conform`` with these options and ``more`` (e.g. ``--role R --catalogue-only``):
        the command a failure tells the user to paste."""
        from rmkit.cli_options import impl_argv

        from rmkit.protocol import default_protocol

        argv = ["rmkit", "conform"] + (["--protocol", self.protocol] if self.protocol != default_protocol("conform") else [])
        argv += ["--profile", self.profile, *more]
        if self.regressions:
            argv += ["--regressions", self.regressions]
        return argv + impl_argv(self)

    def conform_command(self, *more: str) -> str:
        return shlex.join(self.conform_argv(*more))


class PytestSupport:
    """A protocol's side of the plugin. Subclasses set :attr:`roles` and implement the methods."""

    roles: tuple = ()
    saved_glob: str = "*"  # the protocol's saved scenarios among the files of an implementation's regressions folder

    def check(self, opts: RunOptions) -> None:
        """Check the options before anything is collected (raise :class:`rmkit.errors.RmkitError` or
        ValueError): a bad one is a usage error of the pytest run."""

    def sources(self, opts: RunOptions) -> list:
        """The :class:`Source` list, cheaply (nothing is started or measured here: collection must be
        fast)."""
        raise NotImplementedError

    def read_saved(self, path: Path) -> Saved:
        """One saved scenario (a file :attr:`saved_glob` matches); a damaged one raises a usage
        error naming it."""
        raise NotImplementedError

    def saved_sources(self, opts: RunOptions) -> list:
        """A :class:`Source` per saved failing scenario of the implementation's regressions folder
        (of the run's roles and profile), its one test's payload ``(scenario, path)``: they run
        first, as ``rmkit conform`` replays them first."""
        from rmkit.cli_options import implementation_regressions

        folder = implementation_regressions(opts)
        if not folder.is_dir():
            return []
        out = []
        for path in sorted(folder.glob(self.saved_glob)):
            saved = self.read_saved(path)
            if saved.role in opts.roles and saved.profile == opts.profile:
                out.append(Source(path, [Entry(saved.role, saved.name, (saved.scenario, path))]))
        return out

    def reproduce(self, opts: RunOptions, path: Path | None, *conform: str) -> str:
        """The line a failure ends with: ``rmkit replay`` of its saved file, or (a scenario not
        saved: a catalogue's) ``rmkit conform`` with the options ``conform`` that run it again."""
        from rmkit.cli_options import impl_argv, replay_command

        return replay_command(opts.protocol, path, impl_argv(opts)) if path is not None else opts.conform_command(*conform)

    def saved_failure(self, opts: RunOptions, lines: list, path: Path) -> ScenarioFailed:
        """A generated scenario's failure, just saved to ``path``: what ``lines`` say, where it was
        saved and the ``rmkit replay`` that reruns it."""
        return ScenarioFailed("\n".join([*lines, f"saved: {path}", f"reproduce: {self.reproduce(opts, path)}"]))

    def probe(self, opts: RunOptions, role: str) -> None:
        """Start the implementation as ``role`` and greet it; raise :class:`NotDriven` with the error
        when that fails. Called once per role before any test runs."""
        raise NotImplementedError

    def run(self, opts: RunOptions, entry: Entry, properties: list) -> None:
        """Run one test: return when it passes, raise :class:`ScenarioFailed`, :class:`Skipped` or
        :class:`NotDriven`. ``properties`` takes (name, value) pairs reported with the test (JUnit
        ``<properties>``)."""
        raise NotImplementedError

    def close(self, opts: RunOptions) -> None:
        """Stop whatever the tests of this process left running (called once, at the end)."""
