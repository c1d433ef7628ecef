"""The documents for people who carry on the work stay true: the README stays a front door, every
link between the documents leads somewhere, and ARCHITECTURE.md's rule index is the code's and
names every rule."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from docs_support import REPO, documents


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rule_index = _load(REPO / "docs" / "rule_index.py")


# -- the README -------------------------------------------------------------------------------
def test_the_readme_is_a_front_door():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 210
    for command in ("make demo", "make test"):
        assert command in text
    for protocol in ("REMP", "RMB", "Corda"):
        assert f"| {protocol}" in text, protocol
    for command in ("check", "audit", "conform", "replay", "explain", "tlc", "spec", "simulate", "keys", "receipt"):
        assert re.search(rf"^\| `{command}` \|", text, re.M), command


# a benchmark figure: a ratio, a rate, a size or a time measured (the README links bench/RESULTS.md)
FIGURE = re.compile(r"\d[\d,.]*\s?(×|x the|times the|receipts/s|records/s|msg/s|scenarios/s|[KMG]i?B\b|ms\b|µs\b|s\b)")


def test_the_readme_holds_no_measurement():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert FIGURE.findall(text) == []
    assert FIGURE.search("five runs gave 2.56, 2.61 times the parse (about 460,000 receipts/s)")  # the pattern bites


# -- links ------------------------------------------------------------------------------------
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def _broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor}")
    return broken


@pytest.mark.parametrize("doc", [*documents(), REPO / "bench" / "RESULTS.md"], ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_leads_somewhere(doc):
    assert _broken_links(doc) == []


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# Checking a Corda node's records\n\n[x](a.md#checking-a-corda-nodes-records) "
                                   "[y](b.md) [z](a.md#nowhere) [w](https://example.org/x)\n")
    assert _broken_links(tmp_path / "a.md") == ["b.md: no such file", "a.md#nowhere: no heading #nowhere"]


# -- the rule index ---------------------------------------------------------------------------
def test_the_rule_index_is_current():
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert rule_index.rewritten(text) == text, "ARCHITECTURE.md's rule index is stale: run `make docs`"


def test_the_rule_index_names_every_rule_of_the_spec():
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    index = text[text.index(rule_index.BEGIN):text.index(rule_index.END)]
    listed = set(re.findall(r"^\| ([A-Z]+-[A-Z]+-\d{3}) \|", index, re.M))
    for rules in sorted(REPO.glob("spec/*/rules.yaml")):
        ids = {r["id"] for r in yaml.safe_load(rules.read_text(encoding="utf-8"))["rules"]}
        assert ids and ids <= listed, (rules.parent.name, sorted(ids - listed))


def test_a_rule_no_code_names_is_listed_with_the_reason_the_spec_gives():
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    nowhere = [rule for rule, where in rule_index.index().items() if where == []]
    assert nowhere  # RMB-REMOTE-008 and others: no code names them
    reasons = rule_index.unjudged_reasons()
    for rule in nowhere:
        assert f"- {rule}: {reasons[rule]}" in text


def test_the_index_finds_a_rule_where_code_names_it_not_where_a_docstring_does(tmp_path):
    module = tmp_path / "judge.py"
    module.write_text('''
"""Judges REMP-SEQ-001."""
LOST = "REMP-LIVE-001"
REASONS = {"REMP-SIG-002": "a table of ids judges nothing"}


class Checker:
    def feed(self, line):
        """REMP-KIND-001 is judged elsewhere."""
        self.find("REMP-REPLAY-002", line)

    def close(self):
        return LOST


def helper():
    return ["REMP-TIME-001"]
''')
    assert rule_index.names_in(module) == {"REMP-REPLAY-002": {"Checker.feed"}, "REMP-LIVE-001": {"Checker.close"},
                                           "REMP-TIME-001": {"helper"}}
