"""Every RMB rule lives in a known set of places: one handler, a fixture and an injector, or a
stated reason.

- the handler: ``conformance/rmb/handlers.py`` registers exactly one handler per rule id of
  ``spec/rmb/rules.yaml`` that a log can show, none for an id the spec does not have, and none
  for a rule whose ``not_loggable`` in ``spec/rmb/rules.yaml`` says why no log line shows it (the
  stated reason); a handler reports findings on its own rules only;
- the fixture: ``fixtures/rmb/rules/manifest.json`` names a fixture that breaks the rule;
- the injector: ``fixtures/rmb/make_rule_fixtures.py`` ``plants()`` plants the rule into a log
  of the reference daemons' lines (the fixtures are written from it).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from rmkit.conformance.rmb import handlers
from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards

REPO = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load((REPO / "spec" / "rmb" / "rules.yaml").read_text(encoding="utf-8"))["rules"]
RULE_IDS = [r["id"] for r in RULES]
LOGCHECK = yaml.safe_load((REPO / "spec" / "rmb" / "logcheck.yaml").read_text(encoding="utf-8"))
LOGCHECK["not_loggable"] = {r["id"]: r["not_loggable"] for r in RULES if r.get("not_loggable")}  # as the model reads it
FIXTURES = REPO / "fixtures" / "rmb" / "rules"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))


def _planters() -> dict:
    spec = importlib.util.spec_from_file_location("make_rmb_rule_fixtures", REPO / "fixtures" / "rmb" / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    return mk.plants()


PLANTERS = _planters()


@pytest.mark.parametrize("rule", RULE_IDS)
def test_every_rule_has_exactly_one_handler_or_a_stated_reason(rule):
    handler = handlers.REGISTRY.get(rule)
    reason = LOGCHECK["not_loggable"].get(rule)
    if reason:
        assert handler is None, f"{rule} is not loggable ({reason}) yet has a handler {handler.__name__}"
        return
    assert handler is not None, f"{rule}: register a handler with @handles({rule!r}), or list it as not loggable"
    owners = [fn.__name__ for fn in handlers.JUDGES + handlers.ACROSS_LOG if rule in fn.rules]
    assert owners == [handler.__name__], f"{rule}: handlers {owners}"
    assert rule in LOGCHECK["checked"], f"{rule} has a handler but logcheck.yaml does not say what it reads"


def test_the_registry_names_only_rules_of_the_spec():
    assert set(handlers.REGISTRY) <= set(RULE_IDS)


def test_a_rule_registered_twice_is_refused():
    with pytest.raises(ValueError, match="two handlers"):
        handlers.handles(next(iter(handlers.REGISTRY)))(lambda g: None)


@pytest.mark.parametrize("rule", RULE_IDS)
def test_every_loggable_rule_has_a_fixture_and_an_injector(rule):
    if rule in LOGCHECK["not_loggable"]:
        return  # (the stated reason)
    named = [f["file"] for f in MANIFEST["fixtures"] if rule in f["expect"]]
    assert named, f"{rule}: no fixture in fixtures/rmb/rules/manifest.json breaks it"
    assert rule in PLANTERS, f"{rule}: no planted violation in fixtures/rmb/make_rule_fixtures.py plants()"


def test_a_handler_reports_its_own_rules_only(monkeypatch):
    """Each handler, run over every fixture, reports findings on the rules it is registered for:
    the registry is where a rule is judged, not a label."""
    strays = []

    def owned(fn):
        def run(g):
            found, pending = len(g.out.found), len(g.out.pending)
            fn(g)
            strays.extend((fn.__name__, f[0]) for f in g.out.found[found:] + g.out.pending[pending:] if f[0] not in fn.rules)
        return run

    monkeypatch.setattr(handlers, "JUDGES", [owned(fn) for fn in handlers.JUDGES])
    directory = str(FIXTURES / MANIFEST["directory"])
    judged = 0
    for entry in MANIFEST["fixtures"]:
        report = RmbLogChecker(RmbShards(entry["profile"], directory, max_examples=0), jobs=1).run([str(FIXTURES / entry["file"])])
        judged += report.subjects
    assert judged > len(MANIFEST["fixtures"])
    assert not strays, sorted(set(strays))
