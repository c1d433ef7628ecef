"""Per-rule verdicts of `rmkit conform --protocol corda`: spec/corda/rules.yaml says which driven
role judges each rule (``driven``), the faulty examples show that each listed rule can be raised by
that role's judge and that the judge raises no unlisted one, and the report lists each judged rule
with its verdict (fail, finding, pass covered by N, not exercised, off) and names the rules the role
does not judge."""

import functools
import json
import xml.etree.ElementTree as ET

import pytest

from rmkit.cli import main
from rmkit.conformance.corda.driven import bridge, examples as ex
from rmkit.conformance.corda.driven.suite import search
from rmkit.protocols.corda.model import corda_spec

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]
REF = "rmkit.conformance.corda.driven.adapters:reference_factory"

# (role, faulty example, a profile in which its search fails or gives a finding): enough pairs that
# every rule a role lists is raised by one of them. Pipelining is faulty only where the profile keeps
# a session's order (spec); elsewhere its reordering is the as-built finding.
FAULTY = {"receiver": dict(ex.FAULTY), "bridge": {**bridge.FAULTY, "pipelining": bridge.Pipelining}}
CAUGHT_IN = [("receiver", name, "spec") for name in ex.FAULTY if not name.startswith("fast_path")] + [
    ("receiver", "fast_path_without_db_read", "corda-ent-fastpath"), ("receiver", "fast_path_at_mark", "corda-ent-fastpath"),
    ("receiver", "reverse_within_session", "corda-os"),
    ("bridge", "ack_on_send", "spec"), ("bridge", "no_rollback", "corda-os"), ("bridge", "pipelining", "spec")]


def listed(role: str) -> set[str]:
    """The rules spec/corda/rules.yaml says the role's judge can raise."""
    return {r.id for r in corda_spec("spec").rules if role in (r.driven or ())}


@functools.lru_cache(maxsize=None)
def raised(role: str, name: str, profile: str) -> frozenset:
    """The rules a derandomized search of the example raises, in the catalogue and in generated
    scenarios apart (each search stops at its first failure): strict ones of its failure, and findings."""
    out = set()
    for r in (search(FAULTY[role][name], profile, max_examples=0, role=role),
              search(FAULTY[role][name], profile, max_examples=100, role=role, named=False)):
        out |= ({v.rule for v in r.failure.strict} if r.failure else set()) | set(r.findings)
    return frozenset(out)


def test_every_rule_states_its_driven_roles():
    rules = list(corda_spec("spec").rules)
    assert all(r.driven is not None for r in rules), [r.id for r in rules if r.driven is None]
    for r in rules:
        assert bool(r.driven) != bool(r.judged_elsewhere), r.id   # no role judges it: say where it is judged


@pytest.mark.parametrize("role,name,profile", CAUGHT_IN)
def test_faulty_example_raises_only_rules_its_role_lists(role, name, profile):
    got = raised(role, name, profile)
    assert got, f"{name} ({role}, {profile}) raised nothing"
    assert got <= listed(role), f"{name} raised {sorted(got - listed(role))}, not listed as driven: [{role}]"


@pytest.mark.parametrize("role", ["receiver", "bridge"])
def test_every_listed_rule_is_raised_by_a_faulty_example(role):
    got = set().union(*(raised(r, n, p) for r, n, p in CAUGHT_IN if r == role))
    assert listed(role) == got, f"listed but never raised: {sorted(listed(role) - got)}; raised, unlisted: {sorted(got - listed(role))}"


@pytest.mark.slow
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("role", ["receiver", "bridge"])
def test_no_faulty_example_raises_an_unlisted_rule_in_any_profile(role, profile):
    for name in FAULTY[role]:
        assert raised(role, name, profile) <= listed(role), (name, sorted(raised(role, name, profile) - listed(role)))


# ---- the report ---------------------------------------------------------------------------------
def conform(capsys, *args, examples: int = 20) -> tuple[int, str]:
    code = main(["conform", "--protocol", "corda", "--derandomize", "--max-examples", str(examples), *args])
    return code, capsys.readouterr().out


def test_text_report_of_a_pass_lists_judged_rules_with_their_evidence_and_names_the_others(capsys, tmp_path):
    import re

    code, out = conform(capsys, "--impl", REF, "--regressions", str(tmp_path))
    assert code == 0
    receiver, bridge_part = out.split("\nbridge: profile spec")
    for rule in listed("receiver"):
        verdict = "off" if corda_spec("spec").mode(rule) == "off" else r"pass, covered by [1-9]\d*"
        assert re.search(rf"{verdict} +{rule} ", receiver), rule
    assert "CORDA-BRIDGE-001" not in receiver.split("not judged")[0]
    assert re.search(r"pass, covered by [1-9]\d* +CORDA-BRIDGE-001 ", bridge_part)
    assert re.search(r"not exercised +CORDA-BRIDGE-003 .*: no message over the maximum size", bridge_part)
    unjudged = next(line for line in receiver.splitlines() if line.strip().startswith("not judged as receiver:"))
    for rule in ("CORDA-ID-001", "CORDA-ID-002", "CORDA-ID-003", "CORDA-REDELIVER-001", "CORDA-ORDER-002",
                 "CORDA-QUEUE-001", "CORDA-BRIDGE-001"):
        assert rule in unjudged
    assert "rmkit check --protocol corda --settled" in unjudged and "--role bridge" in unjudged


def test_json_report_carries_a_verdict_per_judged_rule(capsys, tmp_path):
    code, out = conform(capsys, "--impl", REF, "--regressions", str(tmp_path), "--profile", "corda-os", "--format", "json",
                        examples=100)   # enough for the bridge's as-built finding
    assert code == 0
    doc = json.loads(out)
    by_role = {g["name"]: g["extras"] for g in doc["groups"]}
    rules = {(r["group"], r["id"]): r for r in doc["rules"]}
    assert {rid for group, rid in rules if group == "receiver"} == listed("receiver")
    dedup = rules["receiver", "CORDA-DEDUP-001"]
    assert dedup["status"] == "pass" and len(dedup["covered_by"]) >= 1
    assert rules["receiver", "CORDA-DEDUP-006"]["status"] == "off"        # no fast path in corda-os
    assert rules["bridge", "CORDA-BRIDGE-003"]["status"] == "finding"     # oversize dropped, as built
    assert by_role["receiver"]["first_broken"] is None
    assert set(by_role["receiver"]["not_judged"]) == set(corda_spec("spec").rules.ids()) - listed("receiver")
    assert "rmkit check" in by_role["receiver"]["not_judged"]["CORDA-ID-001"]
    assert by_role["receiver"]["not_judged"]["CORDA-BRIDGE-002"] == "rmkit conform --protocol corda --role bridge"


def test_failing_run_shows_the_rule_failed(capsys, tmp_path):
    bad = ["--impl", "rmkit.conformance.corda.driven.examples:AckBeforeCommit", "--role", "receiver",
           "--regressions", str(tmp_path)]
    code, out = conform(capsys, *bad)
    assert code == 1
    assert "first rule broken: CORDA-ACK-001 at " in out
    assert "\n  fail                 CORDA-ACK-001 " in out and "  fail                 CORDA-DEDUP-002 " not in out
    # the measured scenario that failed ended the run: the others did not run clean, so no pass
    assert "not exercised        CORDA-DEDUP-001   Effect committed more than once: no scenario that catches its mutant ran clean in this run (it ended at the failure of RCV-" in out
    code, out = conform(capsys, *bad, "--format", "json")
    doc = json.loads(out)
    rules = {r["id"]: r for r in doc["rules"]}
    assert code == 1 and doc["exit"] == 1 and rules["CORDA-ACK-001"]["status"] == "fail"
    assert doc["groups"][0]["extras"]["first_broken"] == "CORDA-ACK-001"


def test_junit_report_has_one_case_per_judged_rule(capsys, tmp_path):
    bad = ["--impl", "rmkit.conformance.corda.driven.examples:AckBeforeCommit", "--role", "receiver",
           "--regressions", str(tmp_path), "--format", "junit"]
    code, out = conform(capsys, *bad)
    assert code == 1
    cases = {c.get("name"): c for c in ET.fromstring(out).iter("testcase")}
    assert set(cases) == listed("receiver")
    failure = cases["CORDA-ACK-001"].find("failure")
    saved = next(tmp_path.glob("corda-receiver-spec-*.json"))
    assert failure is not None and failure.text.splitlines()[-1] == (
        f"reproduce: rmkit replay --protocol corda {saved} --impl rmkit.conformance.corda.driven.examples:AckBeforeCommit")
    assert cases["CORDA-DEDUP-001"].find("failure") is None
    assert cases["CORDA-DEDUP-001"].find("skipped").get("message").startswith("not exercised: ")
    assert cases["CORDA-DEDUP-006"].find("skipped").get("message") == "off in profile spec"
    code, out = conform(capsys, "--impl", REF, "--role", "receiver", "--regressions", str(tmp_path / "ref"), "--format", "junit")
    cases = {c.get("name"): c for c in ET.fromstring(out).iter("testcase")}
    assert code == 0 and cases["CORDA-DEDUP-001"].find("system-out").text.startswith("pass, covered by ")


def test_explain_says_where_a_rule_without_records_is_judged_as_the_spec_does():
    from rmkit.explain import not_loggable
    from rmkit.protocol import get_protocol

    corda = get_protocol("corda")
    assert "rmkit conform --protocol corda --role bridge" in not_loggable(corda, corda.rules()["CORDA-BRIDGE-001"])
    queue = not_loggable(corda, corda.rules()["CORDA-QUEUE-001"])   # no driven role judges it: the spec's judged_elsewhere
    assert "rmkit conform" not in queue and corda_spec("spec").rules["CORDA-QUEUE-001"].judged_elsewhere in queue
