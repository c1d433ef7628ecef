"""The core names no protocol: every file under ``rmkit/`` (code, comments, docstrings, data) is
free of the installed protocols' names, so a protocol is added or removed without touching the
core. The one place the core's distribution names them is the entry-point registry in
pyproject.toml (``[project.entry-points."rmkit.protocols"]``), which is outside ``rmkit/``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "rmkit"

# The protocols of this kit and the networks they come from, as the issue's `grep -il` looks for them.
NAMES = ("remp", "rmb", "corda", "everscale", "threefold")
NAMED = re.compile("|".join(NAMES), re.IGNORECASE)


def core_files() -> list[Path]:
    """Every source and data file of the core: build products (bytecode, the compiled extension)
    are left out, the source they are built from is read."""
    return sorted(p for p in CORE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".so", ".pyd", ".pyc", ".c"))


def protocol_names_in(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line naming a protocol."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if NAMED.search(line)]


def test_no_file_of_the_core_names_a_protocol():
    files = core_files()
    assert len(files) > 40 and CORE / "cli.py" in files and CORE / "protocol.py" in files
    found = {f"{p.relative_to(REPO)}:{n}": line for p in files
             for n, line in protocol_names_in(p.read_text(encoding="utf-8"))}
    assert not found, "the core names a protocol (a protocol's own words belong to its package):\n" + \
        "\n".join(f"  {where}: {line[:120]}" for where, line in found.items())


def test_the_search_finds_a_name_in_any_case_and_inside_words():
    assert protocol_names_in("x = 1\n# as REMP does\n") == [(2, "# as REMP does")]
    assert protocol_names_in('help="the Corda node"') and protocol_names_in("import rmkit.protocols.rmb.model")
    assert protocol_names_in("ThreeFold's bus; Everscale's shards") and not protocol_names_in("records, subjects, sources")


def test_the_protocols_are_named_in_the_entry_point_registry():
    """Where the core learns which protocols exist: the registry its distribution declares."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    registry = project["entry-points"]["rmkit.protocols"]
    assert {"remp", "rmb", "corda"} <= set(registry)
    assert all(target.startswith("rmkit.conformance.") for target in registry.values())
