"""``rmkit explain`` is one flow for every protocol (rmkit/explain.py): each rule either says why no
log can show it or shows a violation of itself found in its own planted fixture, and the command it
prints reproduces that violation with ``rmkit check``."""

from __future__ import annotations

import json

import pytest

from rmkit.cli import _parse_check, main
from rmkit.explain import explain, render_rule
from rmkit.protocol import capable, get_protocol, protocol_names
from rmkit.rules import OFF

CHECKING = [name for name in protocol_names() if capable(get_protocol(name), "check")]


def _empty(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    return path


def _manifest(proto) -> dict:
    return json.loads((proto.rule_fixture_root() / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", CHECKING)
def test_every_rule_shows_its_planted_example_or_says_why_no_log_can(name):
    proto = get_protocol(name)
    # the rules each fixture was planted with (an entry of `expect` is a rule id, or [rule id, subject, line])
    planted = {(f["profile"], f"{name}/rules/{f['file']}"): {e if isinstance(e, str) else e[0] for e in f["expect"]}
               for f in _manifest(proto)["fixtures"]}
    for rule in proto.rules():
        expl = explain(proto, rule.id, _parse_check)
        if rule.not_loggable:
            assert expl.example is None and expl.not_loggable.startswith(rule.not_loggable), rule.id
            continue
        if all(rule.mode(p) == OFF for p in proto.profiles()):
            continue
        ex = expl.example
        assert ex is not None, f"{rule.id}: no fixture shows it, and the spec does not say no log can"
        assert ex.violation.rule == rule.id and rule.mode(ex.profile) != OFF
        assert rule.id in planted[(ex.profile, ex.fixture)], f"{rule.id}: shown from a fixture not planted with it"
        assert ex.records, f"{rule.id}: the example shows none of the records its evidence names"


def test_the_checkers_list_the_rules_no_log_can_show_as_the_spec_does(tmp_path):
    """One fact, one place: a rule's ``not_loggable`` in rules.yaml is what a checker reports as not
    checked (a run over a log that shows something of every other rule), never as passing."""
    for name in CHECKING:
        proto = get_protocol(name)
        for profile in proto.profiles():
            expected = {r.id for r in proto.rules() if r.not_loggable and r.mode(profile) != OFF}
            report = proto.make_checker(profile, _parse_check(["--protocol", name, str(tmp_path / "x")])).run(
                [str(_empty(tmp_path))])
            assert expected <= set(report.not_checked), (name, profile, expected - set(report.not_checked))


# one rule each whose fixture needs an option of `rmkit check` (keys, a directory, a settled log)
@pytest.mark.parametrize("rule_id", ["REMP-SIG-003", "REMP-EXPIRY-001", "RMB-SIG-003", "CORDA-DEDUP-002"])
def test_the_reproduce_command_finds_the_example(rule_id, capsys):
    proto = get_protocol(rule_id.split("-")[0].lower())
    ex = explain(proto, rule_id, _parse_check).example
    assert ex.command[:2] == ["rmkit", "check"]
    assert main([*ex.command[1:], "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["counts"].get(rule_id) and report["profile"] == ex.profile
    assert any(v["rule"] == rule_id and v["explanation"] == ex.violation.explanation for v in report["violations"])


def test_the_text_names_rule_example_and_command():
    proto = get_protocol("corda")
    text = render_rule(explain(proto, "CORDA-DEDUP-002", _parse_check), proto.nouns)
    assert "example (spec profile, fixture corda/rules/spec/CORDA-DEDUP-002.jsonl): " in text
    assert "-> CORDA-DEDUP-002 on message " in text
    assert "reproduce: rmkit check --protocol corda --profile spec --settled " in text


def test_the_documented_output_is_the_real_one(capsys):
    """docs/explain.md shows one rule's output, the installed kit's path abridged to ``…``."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "explain.md").read_text(encoding="utf-8")
    command, shown = re.search(r"`(rmkit explain [^`]+)` prints[^\n]*\n+```text\n(.*?)```", doc, re.S).groups()
    assert main(command.split()[1:]) == 0
    real = capsys.readouterr().out
    pattern = ".*".join(re.escape(part) for part in shown.split("\u2026"))
    assert re.fullmatch(pattern, real, re.S), real
