"""Every REMP rule lives in a known set of places: one handler, a fixture, and an injector or a
stated reason (CONTRIBUTING.md, "Changing a REMP rule").

- the handler: ``conformance/remp/handlers.py`` registers exactly one handler per rule id of
  ``spec/remp/rules.yaml`` (and none for an id the spec does not have), and every event the
  checker raises has a listener;
- the fixture: ``fixtures/remp/rules/manifest.json`` names a fixture that breaks the rule;
- the injector: ``conformance/remp/faults.py`` ``PLANTERS`` plants the rule in simulated logs, or
  the rule's ``not_planted`` in rules.yaml says why nothing does (and only then).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

from rmkit.conformance.remp import handlers
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.conformance.remp.faults import PLANTERS

REPO = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((REPO / "spec" / "remp" / "rules.yaml").read_text(encoding="utf-8"))["rules"]
RULE_IDS = [r["id"] for r in RULES]
MANIFEST = json.loads((REPO / "fixtures" / "remp" / "rules" / "manifest.json").read_text(encoding="utf-8"))["fixtures"]


def _handler_classes() -> list[type]:
    """The classes of handlers.py that listen to an event (have an ``on_<event>`` method)."""
    return [obj for obj in vars(handlers).values()
            if isinstance(obj, type) and issubclass(obj, handlers.Handler) and any(n.startswith("on_") for n in dir(obj))]


@pytest.mark.parametrize("rule", RULE_IDS)
def test_every_rule_has_exactly_one_handler(rule):
    owners = [cls.__name__ for cls in _handler_classes() if rule in cls.rules and handlers.REGISTRY.get(rule) is cls]
    assert len(owners) == 1, f"{rule}: handlers {owners} (register one with @handles({rule!r}))"


def test_the_registry_names_only_rules_of_the_spec():
    assert not set(handlers.REGISTRY) - set(RULE_IDS)


def test_every_handler_class_is_registered():
    """A handler class left out of the registry would never be bound to its events."""
    unregistered = [cls.__name__ for cls in _handler_classes() if cls not in handlers.REGISTRY.values()]
    assert not unregistered


def test_a_rule_registered_twice_is_refused():
    with pytest.raises(ValueError, match="two handlers"):
        @handlers.handles(RULE_IDS[0])
        class Again(handlers.Handler):
            pass


def _events_raised() -> set[str]:
    """Every ``hooks.<event>`` the checker reads (the engine's events)."""
    tree = ast.parse((REPO / "conformance" / "remp" / "checker.py").read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "hooks":
            out.add(node.attr)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "hooks":
            out.add(node.attr)
    return out


def test_every_event_the_checker_raises_has_a_listener():
    checker = RempLogChecker("spec")
    checker.begin(["-"])
    events = _events_raised()
    assert len(events) > 20, events  # (the scan found the engine's events)
    silent = sorted(e for e in events if getattr(checker.hooks, e) is None)
    assert not silent, f"events no handler listens to: {silent}"


@pytest.mark.parametrize("rule", RULE_IDS)
def test_every_rule_has_a_fixture(rule):
    named = [f["file"] for f in MANIFEST if any((e if isinstance(e, str) else e.get("rule")) == rule for e in f["expect"])]
    assert named, f"{rule}: no fixture in fixtures/remp/rules/manifest.json breaks it"


@pytest.mark.parametrize("rule", RULES, ids=RULE_IDS)
def test_every_rule_has_an_injector_or_says_why_not(rule):
    reason = rule.get("not_planted")
    if rule["id"] in PLANTERS:
        assert not reason, f"{rule['id']} has an injector ({PLANTERS[rule['id']].__name__}): drop its not_planted"
    else:
        assert reason, f"{rule['id']}: add an injector to faults.PLANTERS, or say in rules.yaml (not_planted) why none"
