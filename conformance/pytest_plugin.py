"""pytest plugin (entry point ``pytest11``): ``pytest --rmkit-impl-cmd "CMD"`` runs driven conformance
against an implementation as pytest tests, so implementers add it to their CI in one line, for any
protocol with driven conformance (``--rmkit-protocol remp|rmb|corda``, default remp). Each named
scenario is a test, ``FILE::ROLE::SCENARIO``; each saved regression is one, under its own file; each
role's generated search is one (a failure shows the whole shrunk scenario, saved, and the ``rmkit``
command that reproduces it).

The plugin knows no protocol: what a test is, how it runs and what its failure says come from the
protocol (:meth:`rmkit.protocol.Protocol.pytest_support`, the contract in
:mod:`rmkit.conformance.pytest_support`).

Inert unless ``--rmkit-impl-cmd`` or ``--rmkit-impl`` is given. Options are checked before
collection (a wrong protocol, role, profile or count, a command that cannot be started, a
regressions folder that cannot be written, an unreadable saved scenario: a pytest usage error, exit
4), as ``rmkit conform`` checks them. Collection starts nothing. Before the first test runs, the
implementation is started and greeted once per role: one that cannot start or answers the hello
wrongly stops the run there, with its error once and exit 2 ("could not do its job", as ``rmkit
conform``), not 1, which would read as non-conformance. Should a test still fail at the hello (an
implementation that starts only sometimes), the session exits 2 too when no test of that role got
past it: whether one did travels with the test's report (a user property), so that the session
that decides the exit code knows it also when pytest-xdist ran the tests elsewhere.
"""

from __future__ import annotations

import os
import shutil

import pytest

from rmkit.cli_options import DEFAULT_TIMEOUT, derandomize_wanted
from rmkit.conformance.pytest_support import NotDriven, RunOptions, ScenarioFailed, Skipped
from rmkit.guard import positive_seconds

NOT_DRIVEN_EXIT = 2
PAST_HELLO = "rmkit-past-hello:"  # user property ``PAST_HELLO + role``: whether the test's scenario got past it


def pytest_addoption(parser):
    group = parser.getgroup("rmkit", "rmkit driven conformance")
    group.addoption("--rmkit-protocol", default="remp", metavar="NAME",
                    help="protocol the implementation speaks: remp (default), rmb, corda (those of rmkit conform --protocol)")
    group.addoption("--rmkit-impl-cmd", metavar="CMD", help="command starting the implementation (remp, corda: ROLE is "
                                                            "replaced by the role; rmb: its placeholders, spec/rmb/daemon.md)")
    group.addoption("--rmkit-impl", metavar="MODULE:FACTORY", help="a Python implementation instead of a process (remp, corda)")
    group.addoption("--rmkit-role", action="append", metavar="ROLE", help="role(s) to test (default: every role the protocol drives)")
    group.addoption("--rmkit-profile", metavar="PROFILE", help="profile the implementation claims (default: the protocol's)")
    group.addoption("--rmkit-max-examples", type=int, default=100, metavar="N", help="generated scenarios per role (default 100)")
    group.addoption("--rmkit-timeout", type=positive_seconds, default=DEFAULT_TIMEOUT, metavar="S", help="seconds per step (default 5)")
    group.addoption("--rmkit-regressions", metavar="DIR", help="folder of saved failing scenarios (default: the implementation's "
                                                               "own under .rmkit/regressions, as rmkit conform)")


def _active(config) -> bool:
    return bool(config.getoption("rmkit_impl_cmd") or config.getoption("rmkit_impl"))


def pytest_configure(config):
    """The options checked once, before any test is collected: a mistake in them is a usage error."""
    if not _active(config):
        return
    from rmkit.errors import RmkitError
    from rmkit.guard import check_writable_dir
    from rmkit.protocol import get_protocol

    try:
        proto = get_protocol(config.getoption("rmkit_protocol"))
        support = proto.pytest_support()
        if support is None:
            raise pytest.UsageError(f"--rmkit-protocol {proto.name}: the protocol has no driven conformance for pytest")
        roles = config.getoption("rmkit_role") or list(support.roles)
        bad = [r for r in roles if r not in support.roles]
        if bad:
            raise pytest.UsageError(f"--rmkit-role {bad[0]!r}: expected one of {', '.join(support.roles)} "
                                   f"(the roles protocol {proto.name} drives)")
        if config.getoption("rmkit_max_examples") < 0:
            raise pytest.UsageError(f"--rmkit-max-examples: expected a number >= 0, found {config.getoption('rmkit_max_examples')}")
        opts = RunOptions(protocol=proto.name, impl_cmd=config.getoption("rmkit_impl_cmd"), impl=config.getoption("rmkit_impl"),
                          roles=roles, profile=proto.check_profile(config.getoption("rmkit_profile")),
                          max_examples=config.getoption("rmkit_max_examples"), timeout=config.getoption("rmkit_timeout"),
                          regressions=config.getoption("rmkit_regressions"), derandomize=derandomize_wanted())
        from rmkit.cli_options import implementation_regressions

        check_writable_dir(str(implementation_regressions(opts)), "--rmkit-regressions")
        if opts.impl_cmd:
            import shlex

            words = shlex.split(opts.impl_cmd)
            if not words:
                raise pytest.UsageError("--rmkit-impl-cmd: empty command")
            if "{" not in words[0] and shutil.which(words[0]) is None:  # rmb's {python} is filled in later
                raise pytest.UsageError(f"--rmkit-impl-cmd {opts.impl_cmd!r}: cannot start {words[0]!r}: {_why_not_runnable(words[0])}")
        support.check(opts)
    except (RmkitError, ValueError) as exc:  # ValueError: shlex's unclosed quote
        raise pytest.UsageError(f"rmkit: {exc}") from None
    config.pluginmanager.register(_Session(support, opts), "rmkit-session")


def _why_not_runnable(program: str) -> str:
    """Why ``program`` (which ``shutil.which`` did not find runnable) cannot be started, as its
    author would fix it."""
    if os.sep in program and os.path.isdir(program):
        return "it is a directory"
    if os.sep in program and os.path.exists(program):
        return "the file is not executable (chmod +x it, or start it through its interpreter: sh FILE, python FILE)"
    return "no such executable (give a path or a command on PATH)"


class _Session:
    """The run's protocol support and options, the hello checked before any test, and per role
    whether any test got past the hello, read from the test reports: the reports reach the session
    that decides the exit code, which with pytest-xdist is not the one that ran the tests."""

    def __init__(self, support, opts: RunOptions):
        self.support, self.opts = support, opts
        self.reached: dict = {}  # role -> whether a test of it got past the hello
        self.lost: list = []  # the roles none of whose tests did

    def pytest_collection_modifyitems(self, session, config, items):
        """The conformance tests, made from the options without running anything."""
        from rmkit.errors import RmkitError

        try:
            sources = self.support.sources(self.opts)
        except RmkitError as exc:
            raise pytest.UsageError(f"rmkit: a saved scenario cannot be read (fix or remove it): {exc}") from None
        for source in sources:
            _add_source(session, source, items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        """Each role's hello, once, before any test (in the process that hands the tests out): an
        implementation that cannot be driven stops the run with its error, no test run."""
        cfg = session.config
        if cfg.option.collectonly or hasattr(cfg, "workerinput") or (session.testsfailed and not cfg.option.continue_on_collection_errors):
            return None
        wanted = {item.role for item in session.items if isinstance(item, ScenarioItem)}
        roles = [r for r in self.opts.roles if r in wanted or not session.items]  # xdist's controller collects nothing
        for role in roles:
            try:
                self.support.probe(self.opts, role)
            except NotDriven as exc:
                self._close()
                pytest.exit(f"rmkit: the implementation could not be driven as {role}: {exc}\n"
                            "no test was run: no conformance verdict", returncode=NOT_DRIVEN_EXIT)
        return None

    def pytest_runtest_logreport(self, report):
        for name, value in report.user_properties:
            if isinstance(name, str) and name.startswith(PAST_HELLO):
                role = name[len(PAST_HELLO):]
                self.reached[role] = self.reached.get(role, False) or bool(value)

    def pytest_sessionfinish(self, session):
        self._close()
        if hasattr(session.config, "workerinput"):  # an xdist worker: its controller decides
            return
        self.lost = [role for role, reached in self.reached.items() if not reached]
        if self.lost:
            session.exitstatus = NOT_DRIVEN_EXIT

    def _close(self) -> None:
        self.support.close(self.opts)

    def pytest_terminal_summary(self, terminalreporter):
        if self.lost:
            terminalreporter.write_line(f"rmkit: the implementation could not be driven as {', '.join(self.lost)} "
                                        "(every test failed at the hello): no conformance verdict", red=True)


def _state(config) -> _Session:
    return config.pluginmanager.get_plugin("rmkit-session")


class ScenarioItem(pytest.Item):
    def __init__(self, *, entry=None, **kw):
        super().__init__(**kw)
        self.entry = entry
        self.role = entry.role

    def runtest(self):
        state = _state(self.config)
        try:
            state.support.run(state.opts, self.entry, self.user_properties)
        except NotDriven as exc:
            self.user_properties.append((PAST_HELLO + self.role, False))
            raise ConformanceFailure(f"the implementation could not be driven as {self.role}: it failed at the hello, "
                                     f"so no rule was put to it (no conformance verdict)\n{exc}") from None
        except Skipped as exc:
            self.user_properties.append((PAST_HELLO + self.role, True))
            pytest.skip(str(exc))
        except ScenarioFailed as exc:
            self.user_properties.append((PAST_HELLO + self.role, True))
            raise ConformanceFailure(str(exc)) from None
        self.user_properties.append((PAST_HELLO + self.role, True))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"rmkit conform {self.role}: {self.name}"


class ConformanceFailure(Exception):
    pass


class ConformanceSource(pytest.File):
    """The file scenarios come from, as pytest's collector of them: a saved regression or the
    protocol's catalogue (also the home of its generated search). It gives the tests real node
    ids, ``FILE::ROLE::SCENARIO``, and JUnit a classname."""

    def collect(self):
        return []  # its children are made by pytest_collection_modifyitems, from the options


class RoleGroup(pytest.Collector):
    """The tests of one role within a source."""

    def collect(self):
        return []


def _add_source(session, source, items) -> None:
    """A source node and its tests, reported as collected (pytest counts collected tests from
    collect reports, so "collected N items" is true)."""
    from _pytest.reports import CollectReport

    from rmkit.specload import spec_root

    path, root = source.path.resolve(), session.config.rootpath
    package = spec_root().parent  # the installed rmkit: a file of it named as the package names it
    if path.is_relative_to(root):
        nodeid = path.relative_to(root).as_posix()
    elif path.is_relative_to(package):
        nodeid = "rmkit/" + path.relative_to(package).as_posix()
    else:
        nodeid = path.as_posix()
    node = ConformanceSource.from_parent(session, path=path, nodeid=nodeid)
    groups: dict = {}
    made = []
    for entry in source.entries:
        if entry.role not in groups:
            groups[entry.role] = RoleGroup.from_parent(node, name=entry.role)
        made.append(ScenarioItem.from_parent(groups[entry.role], name=entry.name, entry=entry))
    session.config.hook.pytest_collectreport(report=CollectReport(node.nodeid, "passed", None, made))
    items.extend(made)
