"""The Corda spec (spec/corda) loads, its cross-references are checked, every rule and fact is tied
to its source text, the generated README is current, and the protocol plugs in by entry point."""

import os
import re
import shutil
from pathlib import Path

import pytest
from spec_support import broken_spec_copy

from conftest import REPO, SEEDS
from rmkit.cli import main
from rmkit.conformance.corda.docs import path_diagram, spec_markdown
from rmkit.protocols.corda.model import corda_spec, profiles
from rmkit.errors import SpecError
from rmkit.protocol import get_protocol
from rmkit.specload import load_protocol_spec, load_schema

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]
# The seed documents live beside the checkout (../shared); RMKIT_SEEDS_DIR names another place.
SEED_DIR = Path(os.environ.get("RMKIT_SEEDS_DIR", SEEDS))


def _norm(text: str) -> str:
    return " ".join(text.replace("**", "").split())


def _fact_norm(text: str) -> str:
    """The reference's words without Markdown code marks or case, as facts quote them."""
    return _norm(text.replace("`", "")).lower()


def _sources(node, where=""):
    """Every ``source`` (and ``profile_params.*.source``) anywhere in the spec, with its place."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "source" and isinstance(v, dict) and "doc" in v:
                yield where, v
            elif k == "sources" and isinstance(v, list):
                yield from ((f"{where}.sources[{i}]", s) for i, s in enumerate(v))
            else:
                yield from _sources(v, f"{where}.{k}" if where else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _sources(v, f"{where}[{i}]")


@pytest.mark.skipif(not SEED_DIR.is_dir(), reason="the seed documents are not beside this checkout (set RMKIT_SEEDS_DIR)")
def test_every_quote_and_fact_is_in_its_source():
    spec = load_protocol_spec("corda")
    seed = _norm(next(SEED_DIR.glob("003_*.txt")).read_text(encoding="utf-8"))
    ref = _fact_norm((SEED_DIR.parent / "reference" / "corda-as-built.md").read_text(encoding="utf-8"))
    quotes = facts = 0
    for part in ("rules", "messages", "system"):
        for where, src in _sources(spec[part], part):
            if "quote" in src:
                assert src["doc"] == "003", where
                assert _norm(src["quote"]) in seed, f"{where}: quote not in document 003: {src['quote']!r}"
                quotes += 1
            else:
                assert src["doc"] == "corda-as-built", where
                m = re.match(r"section ([^:]+): (.*)", src["fact"])
                assert m, f"{where}: a reference fact names its section: {src['fact']!r}"
                assert f"## {m.group(1)}".lower() in ref, f"{where}: no section {m.group(1)!r} in corda-as-built.md"
                # the fact's words are the reference's, possibly joined from several sentences with '; '
                for piece in re.split(r"; | — ", m.group(2)):
                    piece = piece.strip().rstrip(".")
                    if len(piece) > 12:
                        assert _fact_norm(piece) in ref, f"{where}: not in the reference: {piece!r}"
                facts += 1
    assert quotes >= 8 and facts >= 15


def test_rules_have_ids_severities_modes_per_profile_and_sources():
    rules = get_protocol("corda").rules()
    assert len(rules) >= 15
    for r in rules:
        assert re.fullmatch(r"CORDA-[A-Z]+-\d{3}", r.id)
        assert r.severity in ("critical", "major", "minor")
        assert set(r.modes) == set(PROFILES)
        assert r.citation()


def test_profiles_differ_where_the_reference_says():
    assert profiles() == PROFILES
    os_, old, ent, spec = (corda_spec(p) for p in ("corda-os", "corda-os-2021", "corda-ent-fastpath", "spec"))
    assert os_.consequence == {"NEW": "process", "DUPLICATE": "ack_and_drop", "IN_FLIGHT": "discard"}
    assert old.consequence["IN_FLIGHT"] == "ack_and_drop" and old.mode("CORDA-DEDUP-004") == "off"
    assert ent.fast_path and not os_.fast_path and ent.mode("CORDA-DEDUP-006") == "strict"
    assert spec.in_order_bridge and not os_.in_order_bridge
    assert spec.mode("CORDA-ORDER-001") == "strict" and os_.mode("CORDA-ORDER-001") == "non-strict"
    assert spec.suspend_actions[:4] == ("persist_checkpoint", "persist_dedup_facts", "commit", "acknowledge")
    assert spec.id_format("N-7f3a-2-0").letter == "N" and spec.id_format("R--42").letter == "R"
    assert spec.id_format("E-9-s1").letter == "E" and spec.id_format("X-1") is None


def _broken_copy(tmp_path, monkeypatch, file, old, new):
    broken_spec_copy(tmp_path, monkeypatch, "corda", file, old, new, corda_spec)


@pytest.fixture
def restore_cache():
    yield
    load_protocol_spec.cache_clear()
    load_schema.cache_clear()
    corda_spec.cache_clear()


def test_schema_violation_names_file_line_and_field(tmp_path, monkeypatch, restore_cache):
    _broken_copy(tmp_path, monkeypatch, "system.yaml", "corda-os-2021: ack_and_drop", "corda-os-2021: ack_later")
    with pytest.raises(SpecError) as err:
        load_protocol_spec("corda")
    assert "spec/corda/system.yaml:" in str(err.value) and "ack_later" in str(err.value)
    assert err.value.line and err.value.line > 1


def test_missing_profile_value_is_a_cross_reference_error(tmp_path, monkeypatch, restore_cache):
    _broken_copy(tmp_path, monkeypatch, "system.yaml", "corda-ent-fastpath: true}", "}")
    with pytest.raises(SpecError, match=r"system.yaml:\d+.*missing \['corda-ent-fastpath'\]"):
        corda_spec("spec")


def test_generated_docs_are_committed_and_current():
    committed = (REPO / "spec" / "corda" / "README.md").read_text(encoding="utf-8")
    assert committed == spec_markdown(), "spec/corda/README.md is stale: run `make docs`"
    for rule in get_protocol("corda").rules():
        assert rule.id in committed


def test_diagram_shows_each_answers_consequence():
    assert 'IN_FLIGHT: discard' in path_diagram("corda-os")
    assert 'IN_FLIGHT: ack_and_drop' in path_diagram("corda-os-2021")


def test_cli_lists_validates_and_explains_corda(capsys):
    assert main(["protocols"]) == 0
    assert "corda:" in capsys.readouterr().out
    assert main(["spec", "validate", "--protocol", "corda"]) == 0
    assert main(["explain", "CORDA-ORDER-001"]) == 0
    out = capsys.readouterr().out
    assert "corda-os = non-strict" in out and "section Ordering" in out
    assert main(["check", "--protocol", "corda", str(REPO / "README.md")]) == 2  # no record in it: nothing checked


@pytest.mark.parametrize("old,new,says", [
    ("    driven: [bridge]\n", "", r"CORDA-BRIDGE-001: missing driven"),
    ("    driven: [bridge]\n", "    driven: [sender]\n", r"unknown driven role 'sender'"),
    ('    judged_elsewhere: "rmkit check --protocol corda --settled, on records taken after everything arrived"\n', "",
     r"CORDA-REDELIVER-001: no driven role judges it"),
])
def test_driven_roles_are_stated_and_known(tmp_path, monkeypatch, restore_cache, old, new, says):
    _broken_copy(tmp_path, monkeypatch, "rules.yaml", old, new)
    with pytest.raises(SpecError, match=r"rules.yaml:\d+.*(" + says + ")"):
        corda_spec("spec")
