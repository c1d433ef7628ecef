"""A compiled module is never older than the source it was built from.

Why: ``setup.py`` compiles some modules in place (a ``.pyx``, or a ``.py`` in Cython's pure Python
mode), and Python imports the compiled file before the source beside it. An edit to the source
without a rebuild would leave the old code running with no sign of it; this test names the module
and the command that rebuilds it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def compiled_sources() -> list[tuple[Path, Path]]:
    """(source, compiled file) for every extension setup.py names whose compiled file is built in place."""
    text = (REPO / "setup.py").read_text()
    pairs = []
    for name, source in re.findall(r'Extension\(\s*"([\w.]+)",\s*\["([^"]+)"\]', text):
        src = REPO / source
        stem = name.rsplit(".", 1)[-1]
        for built in src.parent.glob(f"{stem}.*.so"):
            pairs.append((src, built))
    return pairs


def test_setup_names_its_extensions_and_their_sources_exist():
    text = (REPO / "setup.py").read_text()
    names = re.findall(r'Extension\(\s*"([\w.]+)",\s*\["([^"]+)"\]', text)
    assert names, "setup.py names no extension in the form this test reads: update the pattern"
    for _, source in names:
        assert (REPO / source).is_file(), source


def test_no_compiled_module_is_older_than_its_source():
    stale = [f"{built.relative_to(REPO)} is older than {src.relative_to(REPO)}"
             for src, built in compiled_sources() if built.stat().st_mtime < src.stat().st_mtime]
    assert not stale, ("; ".join(stale) + ": the compiled module would run the old code. "
                       "Rebuild it: `.venv/bin/pip install --no-deps -e .` (or `make` after touching setup.py)")
