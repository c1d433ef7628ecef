"""`rmkit rmb up --dir D` writes two files: D/directory.json, the twin directory every
``--directory`` option reads, and D/twins.json, the twins' keys and ports (no directory). The
documents (README.md, docs/rmb*.md) name the right one, and the wrong one given as --directory gets
an error saying what is expected."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from docs_support import REPO, documents_text
from rmkit.cli import main

DOCUMENTS = documents_text()
RMB_LOG = str(REPO / "fixtures" / "rmb" / "logs" / "spec" / "twin-1.jsonl")


def _twins_file(tmp_path: Path) -> Path:
    """A twins.json as `rmkit rmb up` writes it (keys and ports of each twin it started)."""
    path = tmp_path / "twins.json"
    path.write_text(json.dumps([{"twin": 1, "key_type": "ed25519", "seed": "11" * 32, "redis": "redis://127.0.0.1:6400/0",
                                 "redis_port": 6400, "http": "127.0.0.1:8051", "log": "up/twin-1.log.jsonl"}], indent=2) + "\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("command", [["check", "--protocol", "rmb"], ["rmb", "verify"]])
def test_a_twins_file_given_as_the_directory_is_refused_naming_the_file_expected(tmp_path, capsys, command):
    twins = _twins_file(tmp_path)
    assert main([*command, "--directory", str(twins), RMB_LOG]) == 2
    err = capsys.readouterr().err
    assert "directory.json" in err and "rmb up" in err and "twin directory" in err
    assert "seed" not in err and "11" * 32 not in err  # the file's content (a private seed) is not quoted


def test_a_document_of_another_shape_says_what_a_directory_holds(tmp_path, capsys):
    path = tmp_path / "d.json"
    path.write_text('{"nodes": {}}\n', encoding="utf-8")
    assert main(["check", "--protocol", "rmb", "--directory", str(path), RMB_LOG]) == 2
    err = capsys.readouterr().err
    assert "twin directory" in err and '"twins"' in err


def test_the_twin_directory_in_examples_is_the_file_rmb_up_writes_for_it():
    named = re.findall(r"--directory (\S+)", DOCUMENTS)
    assert named, "the documents show --directory"
    assert [n for n in named if Path(n).stem == "twins"] == []
    assert "directory.json" in DOCUMENTS and "twins.json" in DOCUMENTS  # both files said for what they are
