"""Every TLC configuration of every model in tla/manifest.json: what each must check, read from its
.cfg text alone (no TLC run). A configuration that leaves TypeOK out can pass with a variable
holding a value no action was written for, so tla/README.md promises TypeOK everywhere."""

from __future__ import annotations

import re

import pytest

from rmkit.tlc.manifest import load_manifest


def _configs():
    return [(model, cfg) for model in load_manifest().models for cfg in model.configs]


def _invariants(cfg_text: str) -> set[str]:
    """The names on every INVARIANT / INVARIANTS line of a .cfg (one or several per line)."""
    names: set[str] = set()
    for line in cfg_text.splitlines():
        m = re.match(r"^\s*INVARIANTS?\s+(.*)$", line)
        if m:
            names |= set(m.group(1).split())
    return names


@pytest.mark.parametrize("model, cfg", _configs(), ids=lambda v: getattr(v, "name", None))
def test_every_configuration_checks_type_ok(model, cfg):
    text = (model.dir / cfg.cfg).read_text()
    assert "TypeOK" in _invariants(text), f"{model.name}/{cfg.cfg}: no INVARIANT TypeOK"


def test_every_cfg_file_is_a_manifest_configuration():
    """A .cfg the manifest does not name would escape the check above (and every run)."""
    for model in load_manifest().models:
        listed = {cfg.cfg for cfg in model.configs}
        on_disk = {p.name for p in model.dir.glob("*.cfg")}
        assert on_disk <= listed, f"{model.name}: not in tla/manifest.json: {sorted(on_disk - listed)}"


@pytest.mark.parametrize("model, cfg", [(m, c) for m, c in _configs() if c.finding], ids=lambda v: getattr(v, "name", None))
def test_a_finding_configuration_checks_its_finding_alone(model, cfg):
    """TLC stops at the first violation: another property beside the finding is checked only up to
    the counterexample's depth, and a reader of the .cfg would take it for checked. A finding's
    configuration names TypeOK and the finding; the other properties go in a passing configuration."""
    text = (model.dir / cfg.cfg).read_text()
    assert _invariants(text) == {"TypeOK", cfg.finding["invariant"]}, f"{model.name}/{cfg.cfg}"
    assert not re.search(r"(?m)^\s*PROPERT(Y|IES)\s", text), f"{model.name}/{cfg.cfg}"
