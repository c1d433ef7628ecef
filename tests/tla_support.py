"""A TLA+ model copied into a test's folder with texts of one spec replaced: the mutation tests of
every model build their mutants this way (a mechanism removed by a textual edit, each edit's text
found exactly once so that a model change cannot silently turn a mutation into a no-op)."""

from __future__ import annotations

import shutil
from pathlib import Path


def mutated_copy(model_dir: Path, folder: Path, spec_file: str, replacements, name: str = "") -> Path:
    """Copy every .tla of ``model_dir`` into ``folder`` and apply ``replacements`` ((old, new)
    pairs) to ``spec_file``; return the folder."""
    for f in model_dir.glob("*.tla"):
        shutil.copy(f, folder / f.name)
    spec = folder / spec_file
    text = spec.read_text()
    for old, new in replacements:
        found = text.count(old)
        assert found == 1, f"{name or spec_file}: expected the text to mutate once in {spec_file}, found it {found} times: {old!r}"
        text = text.replace(old, new)
    spec.write_text(text)
    return folder
