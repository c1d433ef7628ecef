"""The documents' excerpts of real output stay true (README.md, ARCHITECTURE.md, CONTRIBUTING.md and
every page of docs/): each is compared with a run of the command the document names beside it. An excerpt abridges (``…`` stands for the rest of a value, ``{…}`` and
``[…]`` for a whole one, ``, …`` for further entries) but never states what a run does not show."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from docs_support import REPO, documents
from rmkit.cli import main

# a fenced JSON block right after a paragraph line naming the command that printed it
EXCERPT = re.compile(r"`(rmkit [^`]+)`[^\n]*\n+```json\n(.*?)```", re.S)
ANYTHING = "\u2026"


def _excerpts() -> list[tuple[str, str, str]]:
    """(document, command, excerpt) for every excerpt of every document."""
    return [(str(doc.relative_to(REPO)), command, excerpt)
            for doc in documents() for command, excerpt in EXCERPT.findall(doc.read_text(encoding="utf-8"))]


def _as_json(excerpt: str):
    """The excerpt as JSON: a whole elided value becomes the wildcard string, elided entries go."""
    text = re.sub(r"\{…\}|\[…\]", lambda _: json.dumps(ANYTHING), excerpt)
    text = re.sub(r",\s*…", "", text)
    return json.loads(text)


def _differences(shown, real, at: str = "") -> list[str]:
    """Where the excerpt ``shown`` states something the real report ``real`` does not."""
    if shown == ANYTHING:
        return []
    if isinstance(shown, dict):
        if not isinstance(real, dict):
            return [f"{at}: an object in the document, {type(real).__name__} in the run"]
        missing = [k for k in shown if k not in real]
        if missing:
            return [f"{at}: keys {missing} not in the run"]
        order = [k for k in real if k in shown]
        problems = [f"{at}: keys in the order {list(shown)}, the run's order is {order}"] if order != list(shown) else []
        return problems + [p for k in shown for p in _differences(shown[k], real[k], f"{at}.{k}")]
    if isinstance(shown, list):
        if not isinstance(real, list) or len(real) < len(shown) or (not shown and real):
            return [f"{at}: {shown!r} in the document, {real!r:.200} in the run"]
        return [p for i, item in enumerate(shown) for p in _differences(item, real[i], f"{at}[{i}]")]
    if isinstance(shown, str) and ANYTHING in shown:
        pattern = ".*".join(re.escape(part) for part in shown.split(ANYTHING))
        ok = isinstance(real, str) and re.fullmatch(pattern, real, re.S)
        return [] if ok else [f"{at}: {shown!r} in the document, {real!r:.200} in the run"]
    return [] if shown == real and type(shown) is type(real) else [f"{at}: {shown!r} in the document, {real!r:.200} in the run"]


def test_the_documents_have_a_json_report_excerpt_to_keep_true():
    assert any("--format json" in command for _, command, _ in _excerpts())


def test_a_page_added_to_docs_is_read_without_being_listed(tmp_path):
    (tmp_path / "README.md").write_text("no excerpt\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "new.md").write_text("`rmkit check --format json x.jsonl`:\n\n```json\n{}\n```\n")
    found = [(d.name, EXCERPT.findall(d.read_text())) for d in documents(tmp_path)]
    assert found == [("README.md", []), ("new.md", [("rmkit check --format json x.jsonl", "{}\n")])]


@pytest.mark.parametrize("document, command, excerpt", _excerpts(), ids=[f"{d}: {c}" for d, c, _ in _excerpts()])
def test_each_json_excerpt_is_what_its_command_prints(capsys, monkeypatch, document, command, excerpt):
    monkeypatch.chdir(REPO)
    argv = shlex.split(command)
    assert argv[0] == "rmkit"
    main(argv[1:])
    real = json.loads(capsys.readouterr().out)
    assert _differences(_as_json(excerpt), real) == []


def test_the_comparison_finds_a_wrong_value():
    real = {"a": 1, "b": [{"id": "7184f4c4"}, {"id": "e5c7"}], "c": "x"}
    assert _differences(_as_json('{"a": 1, "b": [{"id": "7184…"}, …], …}'), real) == []
    assert _differences(_as_json('{"a": 1, "b": [{"id": "0548…"}, …]}'), real) != []
    assert _differences(_as_json('{"c": "x", "a": 1}'), real) != []  # order
    assert _differences(_as_json('{"a": 1, "b": []}'), real) != []

