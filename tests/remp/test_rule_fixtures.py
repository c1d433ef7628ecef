"""Each rule fires on its own fixture and only there; the clean fixtures (legal surprises included)
stay silent, for both profiles."""

import json

import pytest

from conftest import FIXTURES
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.protocols.remp.model import model_for
from rmkit.protocols.remp.keys import load_validator_set

ROOT = FIXTURES / "rules"
MANIFEST = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))["fixtures"]


def checker(entry, profile=None, **kw) -> RempLogChecker:
    """The checker a fixture is run with: its profile, and its validator set when it names one."""
    valset = load_validator_set(str(ROOT / entry["validators"])) if entry.get("validators") else None
    return RempLogChecker(profile or entry["profile"], validator_set=valset, **kw)


@pytest.mark.parametrize("entry", MANIFEST, ids=[f["file"] for f in MANIFEST])
def test_fixture_breaks_exactly_the_rules_it_names(entry):
    report = checker(entry).run([str(ROOT / entry["file"])])
    assert sorted(report.counts) == entry["expect"], [(v.rule, v.explanation) for v in report.violations]
    if entry["expect"]:
        assert report.verdict in ("fail", "non-strict")
        modes = {model_for(entry["profile"]).mode(r) for r in entry["expect"]}
        assert report.verdict == ("fail" if "strict" in modes else "non-strict")
    else:
        assert report.verdict == "pass", report.reasons


@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_every_active_rule_has_a_fixture_of_its_own(profile):
    model = model_for(profile)
    named = {f["file"].split("/")[1][:-6] for f in MANIFEST if f["profile"] == profile}
    missing = [r.id for r in model.rules if r.mode(profile) != "off" and r.id not in named]
    assert not missing, f"rules with no fixture in profile {profile}: {missing}"


@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_off_rules_are_silent_on_every_fixture(profile):
    off = {r.id for r in model_for(profile).rules if r.mode(profile) == "off"}
    for entry in MANIFEST:
        report = checker(entry, profile).run([str(ROOT / entry["file"])])
        assert not off & set(report.counts), entry["file"]


def test_every_fixture_verifies_against_the_validator_set():
    """The fixtures' receipts are really signed: checked with the validator set, each fixture
    finds what it finds without one, and no more (ever-node: plus REMP-SIG-004 for its unsigned
    validator receipts)."""
    valset = load_validator_set(str(ROOT / "validators.yaml"))
    for entry in MANIFEST:
        if entry.get("validators"):
            continue
        report = RempLogChecker(entry["profile"], validator_set=valset).run([str(ROOT / entry["file"])])
        found = set(report.counts) - ({"REMP-SIG-004"} if entry["profile"] == "ever-node" else set())
        # with the session starts, expiry is judged by session (REMP-EXPIRY-003/004) instead of by time
        assert sorted(found) == entry.get("expect_with_sessions", entry["expect"]), (entry["file"], report.counts)
        assert not report.not_checked


@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_signature_rules_are_not_checked_without_keys_and_say_so(profile):
    entry = next(e for e in MANIFEST if e["file"] == f"{profile}/REMP-SIG-002.jsonl")
    report = RempLogChecker(profile).run([str(ROOT / entry["file"])])
    assert report.verdict == "pass" and not report.counts
    assert set(report.not_checked) == {r.id for r in model_for(profile).rules if r.requires and r.mode(profile) != "off"}
    assert "--validators" in next(iter(report.not_checked.values()))


def test_fixture_files_are_what_the_builder_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mk", FIXTURES / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    for rel, text in mk.write_all().items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, f"{rel} is stale: run `make fixtures`"


def test_session_rules_are_not_checked_without_session_starts():
    """REMP-EXPIRY-003/004 need the sessions' start times: without them the run says so, and the
    time proxies (REMP-EXPIRY-001/002) judge instead."""
    entry = next(e for e in MANIFEST if e["file"] == "spec/REMP-EXPIRY-003.jsonl")
    report = RempLogChecker("spec").run([str(ROOT / entry["file"])])
    assert report.verdict == "pass" and not report.counts
    assert {"REMP-EXPIRY-003", "REMP-EXPIRY-004"} <= set(report.not_checked)
    assert "start_ms" in report.not_checked["REMP-EXPIRY-003"]
