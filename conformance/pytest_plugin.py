"""pytest plugin (entry point ``pytest11``): ``pytest --rmkit-impl-cmd "CMD"`` runs REMP driven
conformance against an implementation as pytest tests, so implementers add it to their CI in one
line. Each catalogue scenario is a test named by its id and the rules it checks; each role's
generated scenarios are one test (a failure shows the shrunk scenario, saved for ``rmkit replay``).

Inert unless ``--rmkit-impl-cmd`` or ``--rmkit-impl`` is given.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rmkit.conformance.cli_options import derandomize_wanted
from rmkit.guard import positive_seconds

ROLES = ("validator", "fullnode", "consumer")


def pytest_addoption(parser):
    group = parser.getgroup("rmkit", "rmkit driven conformance (REMP)")
    group.addoption("--rmkit-impl-cmd", metavar="CMD", help="command starting the implementation's adapter (ROLE is replaced by the role)")
    group.addoption("--rmkit-impl", metavar="MODULE:FACTORY", help="a Python implementation instead of a process")
    group.addoption("--rmkit-role", action="append", metavar="ROLE", help="role(s) to test (default: all)")
    group.addoption("--rmkit-profile", default="spec", metavar="PROFILE", help="profile the implementation claims (default spec)")
    group.addoption("--rmkit-max-examples", type=int, default=100, metavar="N", help="generated scenarios per role (default 100)")
    group.addoption("--rmkit-timeout", type=positive_seconds, default=5.0, metavar="S", help="seconds per step (default 5)")
    group.addoption("--rmkit-regressions", metavar="DIR", help="folder of saved failing scenarios (default .rmkit/regressions)")


class _Args:
    def __init__(self, config):
        self.impl_cmd = config.getoption("rmkit_impl_cmd")
        self.impl = config.getoption("rmkit_impl")
        self.timeout = config.getoption("rmkit_timeout")


class ConformanceFailure(Exception):
    pass


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario=None, role=None, **kw):
        super().__init__(**kw)
        self.scenario, self.role = scenario, role

    def runtest(self):
        from rmkit.conformance.remp.driven.adapters import open_implementation
        from rmkit.conformance.remp.driven.generate import run_generated
        from rmkit.conformance.remp.driven.names import default_params
        from rmkit.conformance.remp.driven.runner import FAIL, explain_failure, run_scenario
        from rmkit.conformance.remp.driven.scenario import write_scenario

        cfg = self.config
        impl = open_implementation(_Args(cfg), self.role)
        try:
            if self.scenario is not None:
                res = run_scenario(self.scenario, impl)
                if res.verdict == FAIL:
                    raise ConformanceFailure(explain_failure(res))
                return
            profile = cfg.getoption("rmkit_profile")
            g = run_generated(self.role, profile, default_params(self.role, profile), impl,
                              max_examples=cfg.getoption("rmkit_max_examples"),
                              derandomize=derandomize_wanted())
            if g.kit_error:
                raise ConformanceFailure(f"kit error in the generator (please report):\n{g.kit_error}")
            if g.failing is not None:
                res = run_scenario(g.failing, impl)
                regs = Path(cfg.getoption("rmkit_regressions") or Path(".rmkit") / "regressions")
                path = write_scenario(regs / f"{self.role}-{profile}-{g.failing.digest()}.jsonl", g.failing, res.expected,
                                      res.failure.as_dict() if res.failure else None)
                raise ConformanceFailure(f"{explain_failure(res) if res.failure else g.message}\n"
                                         f"saved: {path} (rerun: rmkit replay {path} --impl-cmd ...)")
        finally:
            impl.close()

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"rmkit conform: {self.name}"


def pytest_collection_modifyitems(session, config, items):
    if not (config.getoption("rmkit_impl_cmd") or config.getoption("rmkit_impl")):
        return
    from rmkit.conformance.remp.driven.catalogue import catalogue
    from rmkit.conformance.remp.driven.scenario import read_scenario

    profile = config.getoption("rmkit_profile")
    roles = config.getoption("rmkit_role") or list(ROLES)
    regs = Path(config.getoption("rmkit_regressions") or Path(".rmkit") / "regressions")
    if regs.is_dir():
        for path in sorted(regs.glob("*.jsonl")):
            sc = read_scenario(path)
            if sc.role in roles and sc.profile == profile:
                items.append(ScenarioItem.from_parent(session, name=f"rmkit-regression[{path.stem}]", scenario=sc, role=sc.role))
    for sc in catalogue(profile, roles):
        items.append(ScenarioItem.from_parent(session, name=f"rmkit[{sc.id}:{','.join(sc.checks)}]", scenario=sc, role=sc.role))
    for role in roles:
        items.append(ScenarioItem.from_parent(session, name=f"rmkit[generated-{role}]", role=role))
