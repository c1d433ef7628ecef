"""A spec tree copied into a test's folder with one line broken, for the tests that show how a
broken spec file is reported (every protocol's spec loads through the same loader)."""

from __future__ import annotations

import shutil
from pathlib import Path

from rmkit.specload import load_protocol_spec, load_schema

REPO = Path(__file__).resolve().parent.parent


def broken_spec_copy(tmp_path, monkeypatch, protocol: str, file: str, old: str, new: str, *caches) -> Path:
    """Copy spec/ to ``tmp_path``, replace ``old`` by ``new`` once in ``spec/<protocol>/<file>``,
    point RMKIT_SPEC_DIR at the copy and clear the loaders' caches (and ``caches``, a protocol's
    own compiled-spec caches) so that the next load reads it."""
    root = tmp_path / "spec"
    shutil.copytree(REPO / "spec", root)
    path = root / protocol / file
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    monkeypatch.setenv("RMKIT_SPEC_DIR", str(root))
    for f in (load_protocol_spec, load_schema, *caches):
        f.cache_clear()
    return root
