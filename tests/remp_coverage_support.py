"""REMP's measured coverage (which scenario catches which rule's mutant: :mod:`rmkit.conformance.
remp.driven.coverage`) put where a run in another folder reads it. The measure takes tens of
seconds of generated scenarios per profile; a test that starts `rmkit conform` or pytest's plugin
in its own folder would otherwise measure it again in every run, while what it tests is the run,
not the measure (the measure itself is tested by tests/remp/test_conform_coverage.py)."""

from __future__ import annotations

from pathlib import Path

import orjson


def seed_coverage(folder: Path, profile: str = "spec") -> None:
    """The measure of ``profile`` (computed once in this process, or read from the repository's
    cache) written where a run whose working folder is ``folder`` looks for it."""
    from rmkit.conformance.remp.driven import coverage as cov

    cache = folder / cov.CACHE_DIR
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{cov.key(profile)}-{profile}.json").write_bytes(orjson.dumps(cov._measured(profile)))
