"""Every TLC configuration of every model in tla/manifest.json: what each must check, read from its
.cfg text alone (no TLC run). A configuration that leaves TypeOK out can pass with a variable
holding a value no action was written for, so tla/README.md promises TypeOK everywhere."""

from __future__ import annotations

import json
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


# ---- the properties list: every promise with its mutation and witness, runnable as written --------
def _manifest_doc():
    return json.loads(load_manifest().path.read_text())


def _property_rows():
    man = load_manifest()
    return [(man.model(m["name"]), p) for m in _manifest_doc()["models"] for p in m.get("properties", [])]


def _checked(model, cfg) -> set[str]:
    text = (model.dir / cfg.cfg).read_text()
    return _invariants(text) | {n for line in re.findall(r"(?m)^\s*PROPERT(?:Y|IES)\s+(.*)$", text) for n in line.split()}


@pytest.mark.parametrize("model, prop", _property_rows(), ids=lambda v: v["name"] if isinstance(v, dict) else v.name)
def test_a_listed_property_names_a_runnable_mutation_and_witness(model, prop):
    """The mutation's configuration checks the property and passes unmutated (no finding), each edit's
    text occurs once in its file, and the witness is an operator of the configuration's module."""
    assert prop["kind"] in ("invariant", "property") and prop["promises"] and prop["adversary"]
    mutation, witness = prop["mutation"], prop["witness"]
    assert mutation["expect"] in ("violation", "liveness", "deadlock") and mutation["what"]
    cfg = model.config(mutation["config"])
    assert prop["name"] in _checked(model, cfg) and not cfg.finding, (prop["name"], cfg.name)
    section = "INVARIANTS" if prop["kind"] == "invariant" else "PROPERTIES"
    assert re.search(rf"(?m)^\s*{section}?\s.*\b{prop['name']}\b", (model.dir / cfg.cfg).read_text()), section
    for edit in mutation["edits"]:
        text = (model.dir / edit["file"]).read_text()
        assert text.count(edit["old"]) == 1, (edit["file"], edit["old"])
    wcfg = model.config(witness["config"])
    module = _with_extended(model.dir, wcfg.module)
    assert re.search(rf"(?m)^{witness['invariant']} ==", module), (wcfg.module, witness["invariant"])


def _with_extended(folder, name: str, seen=None) -> str:
    """The text of module ``name`` and of the model's own modules it EXTENDS (an MC module may take
    its witnesses from the module it extends)."""
    seen = set() if seen is None else seen
    path = folder / f"{name}.tla"
    if name in seen or not path.exists():
        return ""
    seen.add(name)
    text = path.read_text()
    ext = re.search(r"(?m)^EXTENDS\s+(.+)$", text)
    for other in (ext.group(1).split(",") if ext else []):
        text += _with_extended(folder, other.strip(), seen)
    return text


@pytest.mark.parametrize("model", [m for m in load_manifest().models
                                   if any(x["name"] == m.name and "properties" in x for x in _manifest_doc()["models"])],
                         ids=lambda m: m.name)
def test_every_checked_property_is_listed(model):
    """Whatever a passing configuration checks (TypeOK aside) has its mutation and witness listed."""
    listed = {p["name"] for m, p in _property_rows() if m.name == model.name}
    checked = set().union(*(_checked(model, c) for c in model.configs if not c.finding)) - {"TypeOK"}
    assert checked <= listed, sorted(checked - listed)
