"""The catalogue of named Corda scenarios (spec/corda/catalogue.yaml): every crash point of the spec
and every window between a commit, its acknowledgement and the durability of its id has a scenario;
the reference and the legal variants pass it in every profile; faulty nodes whose fault sits in such
a window are caught by it at once (shrunk), and `--catalogue-only` runs it alone."""

import copy
import json

import pytest

from clock_support import cpu_spent
from rmkit.cli import main
from rmkit.conformance.corda.driven import bridge as brg, catalogue as cat, examples as ex
from rmkit.conformance.corda.driven.adapters import reference_factory
from rmkit.conformance.corda.driven.suite import search
from rmkit.errors import SpecError
from rmkit.specload import load_protocol_spec

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]


def test_every_crash_point_and_window_has_a_scenario_with_a_copy_on_the_broker():
    spec = load_protocol_spec("corda")
    named = cat.scenarios()
    windows = {sc.window for sc in named}
    assert windows == set(spec["catalogue"]["windows"])
    points = {spec["catalogue"]["windows"][w].get("crash_point") for w in windows}
    assert set(spec["system"]["crash_points"]) <= points
    for sc in named:
        if sc.role == "receiver" and sc.window in ("commit_to_ack", "commit_to_durable_ids"):
            # a second copy arrives before the window opens, or stays on the broker through it
            arrivals = [s for s in sc.steps if s[0] == "arrive"]
            assert len(arrivals) >= 2, sc.id


@pytest.fixture
def damaged(monkeypatch):
    """The catalogue loaded from a changed copy of the spec."""
    spec = copy.deepcopy(load_protocol_spec("corda"))

    def use(change):
        change(spec["catalogue"])
        monkeypatch.setattr(cat, "load_protocol_spec", lambda _: spec)
        cat.scenarios.cache_clear()
        try:
            return cat.scenarios()
        finally:
            monkeypatch.undo()
            cat.scenarios.cache_clear()
    return use


@pytest.mark.parametrize("change,says", [
    (lambda c: c["scenarios"].__setitem__(slice(None), [s for s in c["scenarios"] if s["window"] != "broker_restart"]),
     "no scenario plays the window 'broker_restart'"),
    (lambda c: c["scenarios"][0]["steps"].append(["arrive", 9, False]), "expected a message number 0 to 3"),
    (lambda c: c["scenarios"][0]["steps"].append(["transfer"]), "expected an action of the receiver role"),
    (lambda c: c["scenarios"][0]["checks"].append("CORDA-NOPE-001"), "unknown rule"),
    (lambda c: c["windows"]["before_commit"].__setitem__("crash_point", "nowhere"), "unknown crash point"),
])
def test_a_damaged_catalogue_is_refused_naming_the_field(damaged, change, says):
    with pytest.raises(SpecError, match=says) as err:
        damaged(change)
    assert "catalogue.yaml" in str(err.value)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("role,factory", [("receiver", reference_factory), ("bridge", reference_factory),
                                          ("receiver", ex.BatchingAcks), ("receiver", ex.SlowRhythm),
                                          ("receiver", ex.AbandonOnBrokerRestart), ("bridge", brg.BatchedLocalAcks)])
def test_the_reference_and_legal_variants_pass_the_catalogue(profile, role, factory):
    r = search(factory, profile, max_examples=0, role=role)
    assert r.failure is None, r.failure and [v.render() for v in r.failure.violations]
    assert r.named == [sc.id for sc in cat.catalogue(role, profile)] and r.examples == 0


CAUGHT = [  # (example, role, profile, rule): faults in a crash window the catalogue plays every run
    (ex.IdsWrittenLater, "receiver", "spec", "CORDA-DEDUP-005"),
    (ex.DuplicateAfterRestart, "receiver", "corda-os", "CORDA-DEDUP-005"),
    (ex.DedupOnlyInMemory, "receiver", "spec", "CORDA-DEDUP-005"),
    (ex.AckInFlight, "receiver", "spec", "CORDA-DEDUP-004"),
    (ex.FastPathAtMark, "receiver", "corda-ent-fastpath", "CORDA-DEDUP-006"),
    (ex.FastPathWithoutDbRead, "receiver", "corda-ent-fastpath", "CORDA-DEDUP-006"),
    (ex.ReverseWithinSession, "receiver", "spec", "CORDA-ORDER-001"),
    (brg.NoRollback, "bridge", "spec", "CORDA-BRIDGE-002"),
    (brg.Pipelining, "bridge", "spec", "CORDA-ORDER-001"),
]


@pytest.mark.parametrize("factory,role,profile,rule", CAUGHT)
def test_a_fault_in_a_crash_window_is_caught_by_the_catalogue_and_shrunk(factory, role, profile, rule):
    r = search(factory, profile, max_examples=0, role=role)
    assert r.named_failure is not None, f"{factory.__name__} passed the catalogue"
    assert rule in {v.rule for v in r.failure.strict}, [v.render() for v in r.failure.violations]
    named = next(sc for sc in cat.scenarios() if sc.id == r.named_failure)
    assert len(r.failure.actions) <= len(named.steps)


def test_ids_written_later_is_caught_by_the_default_derandomized_run_within_its_budget():
    with cpu_spent(120):
        r = search(ex.IdsWrittenLater, "spec")
    assert r.failure is not None and r.named_failure == "RCV-CRASH-AFTER-COMMIT-COPY-WAITING"
    assert "CORDA-DEDUP-005" in {v.rule for v in r.failure.strict}
    assert len(r.failure.actions) <= 5


REFERENCE = "rmkit.conformance.corda.driven.adapters:reference_factory"


def test_catalogue_only_runs_the_named_scenarios_alone(tmp_path, capsys):
    assert main(["conform", "--protocol", "corda", "--impl", REFERENCE, "--catalogue-only", "--format", "json",
                 "--regressions", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    for group in doc["groups"]:
        assert group["extras"]["generated"] == 0 and group["extras"]["named"] == [sc.id for sc in cat.catalogue(group["name"], "spec")]
    assert main(["conform", "--protocol", "corda", "--role", "receiver", "--catalogue-only", "--impl",
                 "rmkit.conformance.corda.driven.examples:IdsWrittenLater", "--regressions", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "named scenario RCV-CRASH-AFTER-COMMIT-COPY-WAITING" in out and "CORDA-DEDUP-005" in out


@pytest.mark.parametrize("sc", [sc for sc in cat.scenarios() if any(s[0] in ("crash", "broker_restart", "link_down")
                                                                    for s in sc.steps)], ids=lambda sc: sc.id)
def test_a_copy_is_still_on_the_broker_when_the_window_closes(sc):
    """The reference's exchange shows a delivery after the scenario's last crash, broker restart or
    link failure: a copy was still there for the window to be judged on."""
    from rmkit.conformance.corda.driven.adapters import harnessed
    from rmkit.conformance.corda.driven.bridge import run_bridge
    from rmkit.conformance.corda.driven.suite import run

    impl = harnessed(reference_factory)(sc.role)
    try:
        out = (run_bridge if sc.role == "bridge" else run)(impl, "spec", list(sc.steps))
    finally:
        impl.close()
    last = max(i for i, s in enumerate(sc.steps, 1) if s[0] in ("crash", "broker_restart", "link_down"))
    after = [line for line in out.log if not line.split(":", 1)[0].isdigit() or int(line.split(":", 1)[0]) > last]
    assert any("deliver" in line for line in after), out.log
