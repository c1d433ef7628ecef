"""Per-rule verdicts of `rmkit conform --protocol corda`: spec/corda/rules.yaml says which driven
role judges each rule (``driven``), the faulty examples show that each listed rule can be raised by
that role's judge and that the judge raises no unlisted one, and the report lists each judged rule
with its verdict (failed, finding, held) and names the rules the role does not judge."""

import functools
import json
import xml.etree.ElementTree as ET

import pytest

from rmkit.cli import main
from rmkit.conformance.corda.driven import bridge, examples as ex
from rmkit.conformance.corda.driven.suite import search
from rmkit.conformance.corda.spec import corda_spec

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


def test_text_report_of_a_pass_lists_judged_rules_as_held_and_names_the_others(capsys, tmp_path):
    code, out = conform(capsys, "--impl", REF, "--regressions", str(tmp_path))
    assert code == 0
    receiver, bridge_part = out.split("corda bridge, profile spec")
    for rule in listed("receiver"):
        verdict = "off" if corda_spec("spec").mode(rule) == "off" else "held"
        assert f"{verdict:<8} {rule}" in receiver, rule
    assert "held     CORDA-BRIDGE-001" not in receiver and "held     CORDA-BRIDGE-001" in bridge_part
    unjudged = next(line for line in receiver.splitlines() if line.strip().startswith("not judged as receiver:"))
    for rule in ("CORDA-ID-001", "CORDA-ID-002", "CORDA-ID-003", "CORDA-REDELIVER-001", "CORDA-ORDER-002",
                 "CORDA-QUEUE-001", "CORDA-BRIDGE-001"):
        assert rule in unjudged
    assert "rmkit check --protocol corda --settled" in unjudged and "--role bridge" in unjudged


def test_json_report_carries_a_verdict_per_judged_rule(capsys, tmp_path):
    code, out = conform(capsys, "--impl", REF, "--regressions", str(tmp_path), "--profile", "corda-os", "--format", "json",
                        examples=100)   # enough for the bridge's as-built finding
    assert code == 0
    by_role = {p["role"]: p for p in json.loads(out)["profiles"]}
    assert set(by_role["receiver"]["rules"]) == listed("receiver")
    assert by_role["receiver"]["rules"]["CORDA-DEDUP-001"] == "held"
    assert by_role["receiver"]["rules"]["CORDA-DEDUP-006"] == "off"        # no fast path in corda-os
    assert by_role["bridge"]["rules"]["CORDA-BRIDGE-003"] == "finding"     # oversize dropped, as built
    assert set(by_role["receiver"]["not_judged"]) == set(corda_spec("spec").rules.ids()) - listed("receiver")
    assert "rmkit check" in by_role["receiver"]["not_judged"]["CORDA-ID-001"]
    assert by_role["receiver"]["not_judged"]["CORDA-BRIDGE-002"] == "rmkit conform --protocol corda --role bridge"


def test_failing_run_shows_the_rule_failed(capsys, tmp_path):
    bad = ["--impl", "rmkit.conformance.corda.driven.examples:AckBeforeCommit", "--role", "receiver",
           "--regressions", str(tmp_path)]
    code, out = conform(capsys, *bad)
    assert code == 1
    assert "failed   CORDA-ACK-001" in out and "held     CORDA-DEDUP-001" in out
    code, out = conform(capsys, *bad, "--format", "json")
    assert code == 1 and json.loads(out)["profiles"][0]["rules"]["CORDA-ACK-001"] == "failed"


def test_junit_report_has_one_case_per_judged_rule(capsys, tmp_path):
    bad = ["--impl", "rmkit.conformance.corda.driven.examples:AckBeforeCommit", "--role", "receiver",
           "--regressions", str(tmp_path), "--format", "junit"]
    code, out = conform(capsys, *bad)
    assert code == 1
    cases = {c.get("name"): c for c in ET.fromstring(out).iter("testcase")}
    assert set(cases) == listed("receiver")
    assert cases["CORDA-ACK-001"].find("failure") is not None
    assert cases["CORDA-DEDUP-001"].find("failure") is None and cases["CORDA-DEDUP-001"].find("skipped") is None
    assert cases["CORDA-DEDUP-006"].find("skipped") is not None    # off in the spec profile


def test_explain_says_where_a_rule_without_records_is_judged_as_the_spec_does():
    from rmkit.conformance.corda.explain import explain_rule

    assert "rmkit conform --protocol corda --role bridge" in explain_rule("CORDA-BRIDGE-001")["not_loggable"]
    queue = explain_rule("CORDA-QUEUE-001")["not_loggable"]   # no driven role judges it: the spec's judged_elsewhere
    assert "rmkit conform" not in queue and corda_spec("spec").rules["CORDA-QUEUE-001"].judged_elsewhere in queue
