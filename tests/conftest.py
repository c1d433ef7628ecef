"""Shared test set-up: Hypothesis profiles (``ci`` is derandomized; `make test` selects it)."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=40)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "remp"
# The design documents live beside the checkout (../shared/seeds); RMKIT_SEEDS_DIR names another place.
SEEDS = Path(os.environ.get("RMKIT_SEEDS_DIR", REPO.parent / "shared" / "seeds"))


@pytest.fixture(scope="session")
def spark():
    """The one Spark session of a test process (each xdist worker has its own): local[2],
    loopback, UI off, 2 shuffle partitions. Every protocol's audit tests share it: starting a JVM
    costs more than most audits of a fixture."""
    pytest.importorskip("pyspark")
    from rmkit.spark_checks.session import get_session

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    s = get_session("local[2]", shuffle_partitions=2, progress=False)
    yield s
    s.stop()


# Modules that run for minutes (TLC, Spark, the driven suite's runs). `make test` spreads modules over
# two worker processes (pytest-xdist's loadfile: one module per worker at a time, so that a module's
# server or session starts once); handing out the longest first (as measured on two
# cores) keeps one worker from running a long module alone at the end while the other idles.
LONG_MODULES = ("test_tla_model", "test_audit_parity", "test_tla_mutations", "test_tla_corda", "test_driven",
                "test_spark_audit", "test_rmb_conform", "test_tla_rmb", "test_pytest_plugin_protocols",
                "test_tla_agreement", "test_rmb_conform_reach")


def pytest_configure(config):
    # xdist hands out modules by their number of tests unless told to keep the collection's order;
    # that order is the one set below (longest first), not the count of tests, which says little
    # of a module's time (a TLC module has few tests, each of seconds)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


# Modules that share a costly set-up are one unit of work, run by one xdist worker one after the
# other (every other module is a unit of its own): the `spark` fixture's modules
# share one Spark session (a JVM: ~12 s of CPU to start and warm) instead of one per worker; the
# modules that run `rmkit conform` on REMP share its coverage measure (tens of seconds per profile,
# kept in memory and in .rmkit/coverage), which two workers would otherwise measure at once.
SHARED_SETUP = {
    "spark-session": ("test_audit_parity", "test_spark_audit", "test_corda_checker", "test_rmb_audit",
                      "test_audit_one_pass", "test_audit_log_clock"),
    "remp-coverage": ("test_driven", "test_pytest_plugin_protocols", "test_driven_harness", "test_exit_contract",
                      "test_conform_coverage"),
}
_UNIT_OF = {module: unit for unit, modules in SHARED_SETUP.items() for module in modules}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with each group of SHARED_SETUP as one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedSetupScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return _UNIT_OF.get(Path(scope).stem, scope)

    return SharedSetupScheduling(config, log)


def pytest_collection_modifyitems(session, config, items):
    def rank(item) -> int:
        name = item.path.stem if hasattr(item, "path") else ""
        return LONG_MODULES.index(name) if name in LONG_MODULES else len(LONG_MODULES)

    items.sort(key=rank)  # stable: the order within a module is kept
