"""pytest plugin (entry point ``pytest11``): ``pytest --rmkit-impl-cmd "CMD"`` runs REMP driven
conformance against an implementation as pytest tests, so implementers add it to their CI in one
line. Each catalogue scenario is a test, ``spec/remp/conformance.yaml::ROLE::SCENARIO-ID``; each
saved regression is one, under its own file; each role's generated scenarios are one test (a
failure shows the shrunk scenario, saved, and the ``rmkit replay`` command that reruns it).

Inert unless ``--rmkit-impl-cmd`` or ``--rmkit-impl`` is given. Options are checked before
collection (a wrong role, profile or count, a command that cannot be started, a regressions folder
that cannot be written, an unreadable saved scenario: a pytest usage error, exit 4), as ``rmkit
conform`` checks them. An implementation that never gets past the hello for a role was not judged:
its tests fail saying so, and the session exits 2 ("could not do its job", as ``rmkit conform``),
not 1, which would read as non-conformance. Whether a test got past the hello travels with its
report (a user property), so that the session that decides the exit code knows it also when
pytest-xdist ran the tests in other processes.
"""

from __future__ import annotations

import os
import shutil

import pytest

from rmkit.conformance.cli_options import DEFAULT_TIMEOUT, derandomize_wanted, impl_argv, regressions_dir, replay_command
from rmkit.guard import positive_seconds

NOT_DRIVEN_EXIT = 2

ROLES = ("validator", "fullnode", "consumer")


def pytest_addoption(parser):
    group = parser.getgroup("rmkit", "rmkit driven conformance (REMP)")
    group.addoption("--rmkit-impl-cmd", metavar="CMD", help="command starting the implementation's adapter (ROLE is replaced by the role)")
    group.addoption("--rmkit-impl", metavar="MODULE:FACTORY", help="a Python implementation instead of a process")
    group.addoption("--rmkit-role", action="append", metavar="ROLE", help="role(s) to test (default: all)")
    group.addoption("--rmkit-profile", default="spec", metavar="PROFILE", help="profile the implementation claims (default spec)")
    group.addoption("--rmkit-max-examples", type=int, default=100, metavar="N", help="generated scenarios per role (default 100)")
    group.addoption("--rmkit-timeout", type=positive_seconds, default=DEFAULT_TIMEOUT, metavar="S", help="seconds per step (default 5)")
    group.addoption("--rmkit-regressions", metavar="DIR", help="folder of saved failing scenarios (default .rmkit/regressions)")


class _Args:
    def __init__(self, config):
        self.impl_cmd = config.getoption("rmkit_impl_cmd")
        self.impl = config.getoption("rmkit_impl")
        self.timeout = config.getoption("rmkit_timeout")


class ConformanceFailure(Exception):
    pass


def _active(config) -> bool:
    return bool(config.getoption("rmkit_impl_cmd") or config.getoption("rmkit_impl"))


def pytest_configure(config):
    """The options checked once, before any test runs: a mistake in them is a usage error."""
    if not _active(config):
        return
    from rmkit.errors import RmkitError
    from rmkit.guard import check_writable_dir
    from rmkit.protocol import get_protocol

    roles = config.getoption("rmkit_role") or []
    bad = [r for r in roles if r not in ROLES]
    if bad:
        raise pytest.UsageError(f"--rmkit-role {bad[0]!r}: expected one of {', '.join(ROLES)}")
    if config.getoption("rmkit_max_examples") < 0:
        raise pytest.UsageError(f"--rmkit-max-examples: expected a number >= 0, found {config.getoption('rmkit_max_examples')}")
    try:
        get_protocol("remp").check_profile(config.getoption("rmkit_profile"))
        check_writable_dir(str(regressions_dir(config.getoption("rmkit_regressions"))), "--rmkit-regressions")
        from rmkit.conformance.remp.driven.adapters import open_implementation

        # the command's form checked (its process starts with the first scenario), or MODULE:FACTORY loaded
        impl = open_implementation(_Args(config), (roles or ROLES)[0])
        argv = getattr(impl, "argv", None)
        impl.close()
        if argv is not None and shutil.which(argv[0]) is None:
            raise pytest.UsageError(f"--rmkit-impl-cmd {config.getoption('rmkit_impl_cmd')!r}: cannot start "
                                    f"{argv[0]!r}: {_why_not_runnable(argv[0])}")
    except (RmkitError, ValueError) as exc:  # ValueError: shlex's unclosed quote
        raise pytest.UsageError(f"rmkit: {exc}") from None
    config.pluginmanager.register(_Reachability(), "rmkit-reachability")


def _why_not_runnable(program: str) -> str:
    """Why ``program`` (which ``shutil.which`` did not find runnable) cannot be started, as its
    author would fix it."""
    if os.sep in program and os.path.isdir(program):
        return "it is a directory"
    if os.sep in program and os.path.exists(program):
        return "the file is not executable (chmod +x it, or start it through its interpreter: sh FILE, python FILE)"
    return "no such executable (give a path or a command on PATH)"


PAST_HELLO = "rmkit-past-hello:"  # user property ``PAST_HELLO + role``: whether the test's scenario got past it


class _Reachability:
    """Per role, whether any test's scenario got past the hello, read from the test reports: the
    reports reach the session that decides the exit code, which with pytest-xdist is not the one
    that ran the tests."""

    def __init__(self):
        self.reached: dict = {}  # role -> whether a scenario of it got past the hello
        self.lost: list = []  # the roles none of whose scenarios did

    def pytest_runtest_logreport(self, report):
        for name, value in report.user_properties:
            if isinstance(name, str) and name.startswith(PAST_HELLO):
                role = name[len(PAST_HELLO):]
                self.reached[role] = self.reached.get(role, False) or bool(value)

    def pytest_sessionfinish(self, session):
        if hasattr(session.config, "workerinput"):  # an xdist worker: its controller decides
            return
        self.lost = [role for role, reached in self.reached.items() if not reached]
        if self.lost:
            session.exitstatus = NOT_DRIVEN_EXIT

    def pytest_terminal_summary(self, terminalreporter):
        if self.lost:
            terminalreporter.write_line(f"rmkit: the implementation could not be driven as {', '.join(self.lost)} "
                                        "(every scenario failed at the hello): no conformance verdict", red=True)


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario=None, role=None, **kw):
        super().__init__(**kw)
        self.scenario, self.role = scenario, role

    def runtest(self):
        from rmkit.conformance.remp.driven.adapters import open_implementation
        from rmkit.conformance.remp.driven.generate import run_generated
        from rmkit.conformance.remp.driven.names import default_params
        from rmkit.conformance.remp.driven.report import unreached
        from rmkit.conformance.remp.driven.runner import FAIL, explain_failure, run_scenario
        from rmkit.conformance.remp.driven.scenario import write_scenario

        cfg = self.config
        impl = open_implementation(_Args(cfg), self.role)
        try:
            if self.scenario is not None:
                from rmkit.conformance.remp.driven.coverage import NO_RULE, rules_measured_by

                # the rules the scenario is measured to catch (evidence, not the catalogue's intent): a
                # property of the test (JUnit <properties>), found when it runs, not at collection
                measured = rules_measured_by(self.scenario, cfg.getoption("rmkit_profile"))
                self.user_properties.append(("rmkit-rules", ",".join(measured) or NO_RULE))
                res = run_scenario(self.scenario, impl)
                self._note_reached(not unreached(res))
                if unreached(res):
                    raise ConformanceFailure(f"the implementation could not be driven: it failed at the hello, so no "
                                             f"rule was put to it (no conformance verdict)\n{explain_failure(res)}")
                if res.verdict == FAIL:
                    raise ConformanceFailure(f"{explain_failure(res)}\nreproduce: {self._reproduce()}")
                return
            profile = cfg.getoption("rmkit_profile")
            if cfg.getoption("rmkit_max_examples") == 0:
                pytest.skip("--rmkit-max-examples 0: no generated scenarios")
            g = run_generated(self.role, profile, default_params(self.role, profile), impl,
                              max_examples=cfg.getoption("rmkit_max_examples"),
                              derandomize=derandomize_wanted())
            if g.kit_error:
                raise ConformanceFailure(f"kit error in the generator (please report):\n{g.kit_error}")
            if g.failing is not None:
                res = run_scenario(g.failing, impl)
                if not g.failing.events:  # a hello alone: nothing to save, nothing judged
                    raise ConformanceFailure(f"the implementation could not be driven: it failed at the hello "
                                             f"(no conformance verdict)\n{explain_failure(res) if res.failure else g.message}")
                self._note_reached(True)
                regs = regressions_dir(cfg.getoption("rmkit_regressions"))
                path = write_scenario(regs / f"{self.role}-{profile}-{g.failing.digest()}.jsonl", g.failing, res.expected,
                                      res.failure.as_dict() if res.failure else None)
                raise ConformanceFailure(f"{explain_failure(res) if res.failure else g.message}\n"
                                         f"saved: {path}\nreproduce: {replay_command('remp', path, impl_argv(_Args(cfg)))}")
            if g.examples == 0:
                raise ConformanceFailure("no generated scenario ran: nothing was checked")
            self._note_reached(True)
        finally:
            impl.close()

    def _reproduce(self) -> str:
        """The one paste that runs this test again: pytest with the same options, this test alone."""
        import shlex

        opts = [f"--rmkit-profile={self.config.getoption('rmkit_profile')}"]
        for name in ("rmkit_impl_cmd", "rmkit_impl", "rmkit_regressions"):
            if self.config.getoption(name):
                opts.append(f"--{name.replace('_', '-')}={self.config.getoption(name)}")
        if self.config.getoption("rmkit_timeout") != DEFAULT_TIMEOUT:
            opts.append(f"--rmkit-timeout={self.config.getoption('rmkit_timeout'):g}")
        return shlex.join(["pytest", *opts, "-k", self.name])

    def _note_reached(self, reached: bool) -> None:
        self.user_properties.append((PAST_HELLO + self.role, reached))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"rmkit conform {self.role}: {self.name}"


class ConformanceSource(pytest.File):
    """The file scenarios come from, as pytest's collector of them: a saved regression (.jsonl) or
    the REMP conformance catalogue (spec/remp/conformance.yaml, also the home of the generated
    search). It gives the tests real node ids, ``FILE::ROLE::SCENARIO``, and JUnit a classname."""

    def collect(self):
        return []  # its children are made by pytest_collection_modifyitems, from the options


class RoleGroup(pytest.Collector):
    """The tests of one role within a source."""

    def collect(self):
        return []


def _add_source(session, path, entries, items) -> None:
    """A source node and its tests, ``entries`` as (role, test name, scenario or None), reported as
    collected (pytest counts collected tests from collect reports, so "collected N items" is true)."""
    from _pytest.reports import CollectReport

    from rmkit.specload import spec_root

    root = session.config.rootpath
    if path.is_relative_to(root):
        nodeid = path.relative_to(root).as_posix()
    elif path.is_relative_to(spec_root().parent):  # the catalogue of an installed rmkit: as the package names it
        nodeid = "rmkit/" + path.relative_to(spec_root().parent).as_posix()
    else:
        nodeid = path.as_posix()
    source = ConformanceSource.from_parent(session, path=path, nodeid=nodeid)
    groups: dict = {}
    made = []
    for role, name, sc in entries:
        if role not in groups:
            groups[role] = RoleGroup.from_parent(source, name=role)
        made.append(ScenarioItem.from_parent(groups[role], name=name, scenario=sc, role=role))
    session.config.hook.pytest_collectreport(report=CollectReport(source.nodeid, "passed", None, made))
    items.extend(made)


def pytest_collection_modifyitems(session, config, items):
    """The conformance tests, made from the options without running anything (the rules a scenario
    is measured to catch are not computed here: that means running the mutants)."""
    if not _active(config):
        return
    from rmkit.conformance.remp.driven.catalogue import catalogue
    from rmkit.conformance.remp.driven.scenario import read_scenario
    from rmkit.errors import RmkitError
    from rmkit.specload import spec_root

    profile = config.getoption("rmkit_profile")
    roles = config.getoption("rmkit_role") or list(ROLES)
    regs = regressions_dir(config.getoption("rmkit_regressions"))
    if regs.is_dir():
        for path in sorted(regs.glob("*.jsonl")):
            try:
                sc = read_scenario(path)
            except RmkitError as exc:
                raise pytest.UsageError(f"rmkit: a saved scenario cannot be read (fix or remove it): {exc}") from None
            if sc.role in roles and sc.profile == profile:
                _add_source(session, path.resolve(), [(sc.role, sc.id, sc)], items)
    entries = [(sc.role, sc.id, sc) for sc in catalogue(profile, roles)]
    entries += [(role, f"generated-{role}", None) for role in roles]
    _add_source(session, (spec_root() / "remp" / "conformance.yaml").resolve(), entries, items)
