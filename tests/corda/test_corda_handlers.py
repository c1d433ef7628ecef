"""Every Corda rule lives in a known set of places: one handler, a fixture, and an injector, or a
reason stated in the rule's entry of spec/corda/rules.yaml.

- the handler: ``conformance/corda/handlers.py`` registers exactly one handler per rule id of
  ``spec/corda/rules.yaml`` that a node's records can show (none for an id the spec does not have),
  every event the checker raises has a listener, and a rule without a handler is one whose
  ``not_loggable`` says the records cannot show it;
- the fixture: ``fixtures/corda/rules/manifest.json`` names a fixture that breaks the rule, or the
  records cannot show it;
- the injector: ``conformance/corda/faults.py`` ``PLANTERS`` plants the rule into a simulated log
  (and the checker finds exactly what was planted), or its ``not_planted`` (or
  ``not_loggable``) says why nothing does.
"""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest
import yaml

from rmkit.conformance.corda import handlers
from rmkit.conformance.corda.checker import CordaLogChecker
from rmkit.conformance.corda.faults import PLANTERS
from rmkit.protocols.corda.model import corda_spec

import corda_records_sim as sim

REPO = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((REPO / "spec" / "corda" / "rules.yaml").read_text(encoding="utf-8"))["rules"]
RULE_IDS = [r["id"] for r in RULES]
NOT_IN_RECORDS = {r["id"]: r["not_loggable"] for r in RULES if r.get("not_loggable")}
NOT_PLANTED = {r["id"]: r["not_planted"] for r in RULES if r.get("not_planted")}
MANIFEST = json.loads((REPO / "fixtures" / "corda" / "rules" / "manifest.json").read_text(encoding="utf-8"))["fixtures"]
PROFILES = ("spec", "corda-os", "corda-os-2021", "corda-ent-fastpath")


def _handler_classes() -> list[type]:
    """The classes of handlers.py that judge something (an ``on_<event>`` listener or a ``span``)."""
    return [obj for obj in vars(handlers).values()
            if isinstance(obj, type) and issubclass(obj, handlers.Handler)
            and any(n.startswith("on_") or n == "span" for n in dir(obj))]


@pytest.mark.parametrize("rule", RULE_IDS)
def test_every_rule_has_exactly_one_handler_or_the_records_cannot_show_it(rule):
    owners = [cls.__name__ for cls in _handler_classes() if rule in cls.rules and handlers.REGISTRY.get(rule) is cls]
    if rule in NOT_IN_RECORDS:
        assert not owners, f"{rule} has a handler ({owners}): drop it from its not_loggable in rules.yaml"
    else:
        assert len(owners) == 1, f"{rule}: handlers {owners} (register one with @handles({rule!r}))"


def test_the_registry_and_the_reasons_name_only_rules_of_the_spec():
    assert not set(handlers.REGISTRY) - set(RULE_IDS)
    assert not set(NOT_IN_RECORDS) - set(RULE_IDS)
    assert not set(NOT_PLANTED) - set(RULE_IDS)
    assert not set(PLANTERS) - set(RULE_IDS)


def test_every_handler_class_is_registered():
    unregistered = [cls.__name__ for cls in _handler_classes() if cls not in handlers.REGISTRY.values()]
    assert not unregistered


def test_a_rule_registered_twice_is_refused():
    with pytest.raises(ValueError, match="two handlers"):
        @handlers.handles(RULE_IDS[0])
        class Again(handlers.Handler):
            pass


def _events_raised() -> set[str]:
    """Every ``hooks.<event>`` the checker reads (the engine's events, raised by the exact and the
    bounded reading of a share)."""
    out = set()
    trees = [ast.parse((REPO / "conformance" / "corda" / f).read_text(encoding="utf-8")) for f in ("share.py", "stream.py")]
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "hooks":
            out.add(node.attr)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "hooks":
            out.add(node.attr)
    return out


def test_every_event_the_checker_raises_has_a_listener():
    from rmkit.conformance.corda.share import _ShareRun

    run = _ShareRun(CordaLogChecker("spec"), ["-"])
    events = _events_raised()
    assert len(events) > 10, events  # (the scan found the engine's events)
    silent = sorted(e for e in events if getattr(run.hooks, e) is None)
    assert not silent, f"events no handler listens to: {silent}"


@pytest.mark.parametrize("rule", RULE_IDS)
def test_every_rule_the_records_show_has_a_fixture(rule):
    named = [f["file"] for f in MANIFEST if any((e if isinstance(e, str) else e[0]) == rule for e in f["expect"])]
    assert named or rule in NOT_IN_RECORDS, f"{rule}: no fixture in fixtures/corda/rules/manifest.json breaks it"


@pytest.mark.parametrize("rule", RULES, ids=RULE_IDS)
def test_every_rule_has_an_injector_or_says_why_not(rule):
    rid = rule["id"]
    reason = NOT_PLANTED.get(rid) or NOT_IN_RECORDS.get(rid)
    if rid in PLANTERS:
        assert not reason, f"{rid} has an injector ({PLANTERS[rid].__name__}): drop its not_planted"
    else:
        assert reason, f"{rid}: add an injector to faults.PLANTERS, or say in rules.yaml (not_planted) why none"


def _pairs(report) -> set:
    return {(v.rule, v.subject) for v in report.violations}


@pytest.mark.parametrize("rule", sorted(PLANTERS))
def test_each_injector_plants_exactly_its_rule(rule, tmp_path):
    """Into clean simulated logs of every profile where it can plant: the checker finds the planted
    (rule, id) and nothing else it did not find on the clean log."""
    planted_somewhere = False
    for profile in PROFILES:
        spec = corda_spec(profile)
        if spec.rules[rule].mode(profile) == "off":
            continue
        for seed in range(6):
            lines = [json.loads(x) for x in sim.run(profile, seed, messages=5).splitlines()]
            got = PLANTERS[rule](lines, random.Random(seed), spec)
            if got is None:
                continue
            new, planted = got
            clean = tmp_path / f"clean-{profile}-{seed}.jsonl"
            clean.write_text("".join(json.dumps(r) + "\n" for r in lines))
            bad = tmp_path / f"bad-{profile}-{seed}.jsonl"
            bad.write_text("".join(json.dumps(r) + "\n" for r in new))
            before = _pairs(CordaLogChecker(profile, settled=True).run([str(clean)]))
            after = _pairs(CordaLogChecker(profile, settled=True).run([str(bad)]))
            assert set(planted) <= after, (profile, seed, planted, after)
            assert after - before <= set(planted), (profile, seed, after - before - set(planted))
            planted_somewhere = True
    assert planted_somewhere, f"{rule}: its injector found nothing to plant into in any profile's simulated logs"
