"""The example violation ``rmkit explain`` prints: the records of a rule's own fixture that the
violation's evidence names, with the violation (every protocol's explain shows it the same way)."""

from __future__ import annotations

from typing import Any

from rmkit.verdict import Violation

WIDTH = 150  # characters of a record shown


def fixture_example(hit: Violation, lines: list[str], profile: str, fixture: str, why: str) -> dict[str, Any]:
    wanted = sorted({e.line for e in hit.evidence})
    shown = [f"{n:3}: {lines[n - 1][:WIDTH]}{'…' if len(lines[n - 1]) > WIDTH else ''}" for n in wanted if 0 < n <= len(lines)]
    return {"profile": profile, "fixture": fixture, "why": why, "records": shown, "violation": hit}
