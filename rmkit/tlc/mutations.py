"""Mutations and witnesses: each property a model claims is shown to be able to fail, and to speak
of states the model reaches.

Why: a property that holds by construction, restates an action's guard, or is vacuous at the
configured sizes passes whatever the protocol does. ``tla/manifest.json`` therefore lists, per
property, a *mutation* (one mechanism of the protocol removed by textual edits of a copy of the
model, never the property's own text) that TLC must report as a violation of that property, and a
*witness* (an invariant of the root module that TLC must violate) showing that the states the
property is about are reached under the configuration's bounds.

A mutation is checked on a copy of the model folder with the edits applied (each ``old`` text must
occur exactly once in its file: a model change that moves the text fails loudly instead of checking
the unmutated model) and the configuration's own properties replaced by ``TypeOK`` and the property
alone, so that a shorter counterexample of another property cannot hide it. A witness is checked on
the unmutated configuration with its properties replaced by the witness invariant. TLC runs
breadth-first (simulated configurations too), one worker, ``-metadir`` in the temporary folder.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from rmkit.errors import SpecError
from rmkit.tlc.cfgfile import KEYWORDS
from rmkit.tlc.manifest import ConfigEntry, Edit, ModelEntry, PropertyEntry, result_name
from rmkit.tlc.result import DEADLOCK, ERROR, VIOLATION, TlcResult
from rmkit.tlc.runner import run_tlc

MUTATION, WITNESS = "mutation", "witness"
DEFAULT_TIMEOUT = 600.0
_CHECK_KEYWORDS = ("INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES")
_EXPECTED_RESULT = {"violation": "safety failure", "liveness": "liveness failure", "deadlock": "deadlock failure"}


@dataclass
class Check:
    """One run to make: a property's mutation or its witness."""

    model: ModelEntry
    prop: PropertyEntry
    check: str          # MUTATION | WITNESS

    @property
    def part(self):
        return self.prop.mutation if self.check == MUTATION else self.prop.witness

    @property
    def config(self) -> ConfigEntry:
        return self.model.config(self.part.config)

    @property
    def slow(self) -> bool:
        return self.config.slow if self.part.slow is None else self.part.slow

    @property
    def label(self) -> str:
        return f"{self.model.name}: {self.check} of {self.prop.name} ({self.config.name})"


@dataclass
class Outcome:
    """What a run showed: ``ok`` when TLC reported what the manifest expects; ``error`` when the
    check could not be made (an edit's text not found once, TLC gave no verdict)."""

    check: Check
    ok: bool
    summary: str
    seconds: float
    result: TlcResult | None = None
    error: str | None = None


def checks_of(model: ModelEntry, *, include_slow: bool = False, names: Iterable[str] | None = None) -> list[Check]:
    """Every mutation and witness of ``model`` (those of slow configurations only with
    ``include_slow``; only the properties in ``names`` when given)."""
    wanted = set(names) if names is not None else None
    out = []
    for prop in model.properties:
        if wanted is not None and prop.name not in wanted:
            continue
        for kind in (MUTATION, WITNESS):
            c = Check(model, prop, kind)
            if include_slow or not c.slow:
                out.append(c)
    return out


def apply_edits(src: Path, dst: Path, edits: Iterable[Edit], where: str = "") -> None:
    """Copy the model's .tla and .cfg files from ``src`` into ``dst`` and apply ``edits``; an edit
    whose ``old`` text is not found exactly once (or whose file is missing) is a :class:`SpecError`."""
    for f in src.iterdir():
        if f.suffix in (".tla", ".cfg") and f.is_file():
            shutil.copy2(f, dst / f.name)
    for k, e in enumerate(edits):
        target = dst / e.file
        if not target.is_file():
            raise SpecError("tla/manifest.json", f"{where}.edits[{k}].file", f"expected a file of the model, found no {e.file}")
        text = target.read_text(encoding="utf-8")
        found = text.count(e.old)
        if found != 1:
            raise SpecError("tla/manifest.json", f"{where}.edits[{k}].old",
                            f"expected the text once in {e.file}, found it {found} times: {e.old!r}")
        target.write_text(text.replace(e.old, e.new), encoding="utf-8")


def with_checks(cfg_text: str, invariants: list[str], properties: list[str] = ()) -> str:
    """``cfg_text`` with its INVARIANT(S) and PROPERTY(IES) sections replaced by the names given."""
    kept: list[str] = []
    skipping = False
    for line in cfg_text.splitlines():
        first = re.match(r"^\s*([A-Za-z_]+)", line)
        word = first.group(1) if first else None
        if word in KEYWORDS:
            skipping = word in _CHECK_KEYWORDS
        if not skipping:
            kept.append(line)
    if invariants:
        kept.append("INVARIANTS " + " ".join(invariants))
    if properties:
        kept.append("PROPERTIES " + " ".join(properties))
    return "\n".join(kept) + "\n"


def _judge(c: Check, result: TlcResult) -> tuple[bool, str]:
    if result.verdict == ERROR:
        return False, f"no verdict: {result.error.message if result.error else 'error'}"
    states = f"{len(result.trace)} states" if result.counterexamples else ""
    explored = f"{result.distinct_states:,} distinct states explored" if result.distinct_states is not None else ""
    found = result_name(result)
    if c.check == WITNESS:
        if result.verdict == VIOLATION and result.name == c.prop.witness.invariant:
            return True, f"{c.prop.witness.invariant} violated: reached in {states} ({explored})"
        return False, (f"expected {c.prop.witness.invariant} violated (its states reachable), found "
                       + (f"{found} of {result.name}" if result.verdict == VIOLATION else "no violation: the states are not reached"))
    want = _EXPECTED_RESULT[c.prop.mutation.expect]
    named = result.kind == DEADLOCK or result.name == c.prop.name
    if result.verdict == VIOLATION and found == want and named:
        what = "deadlock" if result.kind == DEADLOCK else f"{c.prop.name} violated"
        return True, f"caught: {what} in {states} ({explored})"
    return False, (f"not caught: expected {want} of {c.prop.name}, found "
                   + (f"{found} of {result.name}" if result.verdict == VIOLATION else "no violation"))


def run_check(c: Check, *, timeout: float | None = DEFAULT_TIMEOUT, progress: Callable | None = None) -> Outcome:
    """Run one mutation or witness; never raises for TLC's problems (they are an error outcome)."""
    cfg = c.config
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rmkit-mutant-") as tmp:
        work = Path(tmp)
        edits = c.prop.mutation.edits if c.check == MUTATION else []
        try:
            apply_edits(c.model.dir, work, edits, where=f"{c.model.name}.properties[{c.prop.name}].mutation")
        except SpecError as exc:
            return Outcome(c, False, "the mutation could not be applied", 0.0, error=str(exc))
        text = (work / cfg.cfg).read_text(encoding="utf-8")
        if c.check == WITNESS:
            text = with_checks(text, [c.prop.witness.invariant])
        elif c.prop.kind == "invariant":
            text = with_checks(text, ["TypeOK", c.prop.name])
        else:
            text = with_checks(text, ["TypeOK"], [c.prop.name])
        (work / cfg.cfg).write_text(text, encoding="utf-8")
        deadlock_check = c.check == MUTATION and c.prop.mutation.expect == "deadlock" or cfg.deadlock
        result = run_tlc(work, cfg.module, cfg.cfg, workers=1, deadlock_check=deadlock_check, timeout=timeout,
                         progress=progress)
    ok, summary = _judge(c, result)
    error = None if result.verdict != ERROR else summary
    return Outcome(c, ok, summary, time.monotonic() - started, result, error)


def hhmmss(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
