"""The spec loads, is validated at start-up, and every rule is tied to its source text."""

import re
import shutil

import pytest
from spec_support import broken_spec_copy

from conftest import REPO, SEEDS
from rmkit.conformance.remp.docs import spec_markdown
from rmkit.protocols.remp.model import RempModel
from rmkit.errors import SpecError
from rmkit.specload import load_protocol_spec

SPEC_FILES = ["protocol", "rules", "kinds", "formats", "transitions", "lifetimes", "outcomes"]


def _norm(text: str) -> str:
    text = re.sub(r"<[^>]+>", "", text)  # the seeds' HTML colour tags
    text = text.replace("**", "")
    return " ".join(text.split())


def _sources(spec):
    for r in spec["rules"]["rules"]:
        yield r["id"], r["source"]
    for name, k in spec["kinds"]["kinds"].items():
        yield name, k["source"]
    for role, r in spec["transitions"]["roles"].items():
        for name, t in r["kinds"].items():
            if "why" in t:
                yield f"{role}.{name}", t["why"]
    for o in spec["outcomes"]["outcomes"]:
        if "source" in o:
            yield o["name"], o["source"]
    for name, f in spec["formats"]["formats"].items():
        if "source" in f:
            yield name, f["source"]
    for name, b in spec["behaviours"]["behaviours"].items():
        yield name, b["source"]
    for name, t in spec["protocol"]["thresholds"].items():
        yield name, t["source"]
    tl = spec["tl"]
    for part in ("constructors", "superseded", "not_modelled"):
        for name, c in (tl.get(part) or {}).items():
            yield f"tl.{part}.{name}", c["source"]
    for req in spec["conformance"]["requirements"]:
        yield f"conformance.{req['id']}", req["source"]
    yield "adapter.comparison", spec["adapter"]["comparison"]["source"]
    for fr in spec["freedoms"]["freedoms"]:
        for i, src in enumerate(fr["sources"]):
            yield f"freedoms.{fr['id']}.sources[{i}]", src
        for i, rd in enumerate(fr.get("readings") or ()):
            yield f"freedoms.{fr['id']}.readings[{i}]", rd["source"]
    receipt = tl["receipt"]
    yield "tl.receipt.signed_source", receipt["signed_source"]
    for where in ("default_block", "signature"):
        yield f"tl.receipt.{where}", receipt[where]["source"]
    for name, group in receipt["groups"].items():
        if "source" in group:
            yield f"tl.receipt.groups.{name}", group["source"]


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents (../shared/seeds) are not beside this checkout")
def test_every_quote_is_in_its_seed_document():
    spec = load_protocol_spec("remp")
    docs = {p.name[:3]: _norm(p.read_text(encoding="utf-8")) for p in SEEDS.glob("00*_*.txt")}
    ref = (SEEDS.parent / "reference" / "remp-as-built.md")
    checked = 0
    for where, src in _sources(spec):
        if "quote" in src:
            assert src["doc"] in docs, f"{where}: unknown document {src['doc']}"
            assert _norm(src["quote"]) in docs[src["doc"]], f"{where}: quote not found in document {src['doc']}: {src['quote']!r}"
            checked += 1
        else:
            assert src["doc"] == "remp-as-built"
            m = re.match(r"section (\d)", src["fact"])
            assert m, f"{where}: a reference fact must name its section: {src['fact']!r}"
            if ref.is_file():
                assert f"## {m.group(1)}." in ref.read_text(encoding="utf-8")
    assert checked >= 30


def test_every_rule_has_id_severity_source_and_mode_per_profile():
    m = RempModel("spec")
    assert len(m.rules) >= 20
    for r in m.rules:
        assert re.fullmatch(r"REMP-[A-Z]+-\d{3}", r.id)
        assert r.severity in ("critical", "major", "minor")
        assert set(r.modes) == {"spec", "ever-node"}
        assert r.citation()


def test_both_profiles_compile_and_differ_where_reference_says():
    spec, ever = RempModel("spec"), RempModel("ever-node")
    assert spec.kinds["Timeout"].in_table and not ever.kinds["Timeout"].in_table
    assert not spec.kinds["AcceptedByQueue"].in_table and ever.kinds["AcceptedByQueue"].in_table
    assert spec.kinds["Finalized"].issuers == {"fullnode"}
    assert "validator" in ever.kinds["Finalized"].issuers
    assert "rejected" in ever.kinds["IncludedIntoAcceptedBlock"].transitions["validator"][1]
    assert "rejected" not in spec.kinds["IncludedIntoAcceptedBlock"].transitions["validator"][1]
    assert spec.mode("REMP-SEQ-001") == "strict" and ever.mode("REMP-SEQ-001") == "off"
    assert ever.zero_time_roles == {"validator"} and not spec.zero_time_roles
    assert spec.default_lifetime_s == 250
    assert [spec.threshold("fanout_min", n) for n in (3, 7, 10)] == [2, 3, 4]  # floor(N/3)+1
    assert [spec.threshold("stop_collation_rejected", n) for n in (3, 7, 10)] == [2, 5, 7]  # ceil(2N/3)
    assert [spec.threshold("faulty_max", n) for n in (3, 7, 10)] == [0, 2, 3]  # floor((N-1)/3)


def _broken_copy(tmp_path, monkeypatch, file, old, new):
    broken_spec_copy(tmp_path, monkeypatch, "remp", file, old, new)


@pytest.fixture
def restore_cache():
    yield
    load_protocol_spec.cache_clear()


def test_schema_violation_names_file_line_and_field(tmp_path, monkeypatch, restore_cache):
    _broken_copy(tmp_path, monkeypatch, "rules.yaml", "severity: critical", "severity: catastrophic")
    with pytest.raises(SpecError) as err:
        load_protocol_spec("remp")
    msg = str(err.value)
    assert "spec/remp/rules.yaml:" in msg and "severity" in msg and "catastrophic" in msg
    assert err.value.line and err.value.line > 1


def test_bad_yaml_is_a_clear_error(tmp_path, monkeypatch, restore_cache):
    _broken_copy(tmp_path, monkeypatch, "kinds.yaml", "kinds:\n", "kinds:\n  - [unclosed\n")
    with pytest.raises(SpecError, match=r"kinds.yaml:\d+.*not valid YAML"):
        load_protocol_spec("remp")


def test_cross_reference_error_names_the_unknown_position(tmp_path, monkeypatch, restore_cache):
    _broken_copy(tmp_path, monkeypatch, "transitions.yaml", "to: collator", "to: colator")
    with pytest.raises(SpecError, match=r"transitions.yaml:\d+.*unknown position 'colator'"):
        RempModel("spec")


def test_generated_docs_are_committed_and_current():
    committed = (REPO / "spec" / "remp" / "README.md").read_text(encoding="utf-8")
    assert committed == spec_markdown(), "spec/remp/README.md is stale: run `make docs`"


def test_diagram_has_every_kind_of_each_profile():
    from rmkit.conformance.remp.protocol import PROTOCOL

    for profile in ("spec", "ever-node"):
        dot = PROTOCOL.diagram(profile)
        assert dot.startswith("digraph")
        for kind in PROTOCOL.model(profile).kinds.values():
            if kind.issuers:  # each kind a line of its edge's label (one edge per pair of positions)
                assert re.search(rf">{kind.name}\*?</font>", dot), kind.name


@pytest.mark.parametrize("new, found", [
    ("obsolete_after_sessions: two", "'two' is not of type 'integer'"),
    ("obsolete_after_sessions: 0", "0 is less than the minimum of 1"),
    ("session_count: 2", "'obsolete_after_sessions' is a required property"),
])
def test_replay_rule_number_is_typed(tmp_path, monkeypatch, restore_cache, new, found):
    """The documents' replay rule feeds the checker and the TLA+ tables: a wrong value is refused
    at load, naming file, line and field, rather than crashing a check or generating a bad model."""
    _broken_copy(tmp_path, monkeypatch, "lifetimes.yaml", "obsolete_after_sessions: 2", new)
    with pytest.raises(SpecError, match=r"spec/remp/lifetimes.yaml:\d+: at session_rules\.documents.*" + re.escape(found)):
        load_protocol_spec("remp")


def test_a_key_given_twice_is_an_error_with_both_lines(tmp_path, monkeypatch, restore_cache):
    """YAML keeps the last of two equal keys silently: a transition pasted twice with another
    target would change the model; the loader refuses it."""
    _broken_copy(tmp_path, monkeypatch, "transitions.yaml", "      AcceptedByQueue:\n",
                 "      PutIntoQueue:\n        to: rejected\n      AcceptedByQueue:\n")
    with pytest.raises(SpecError, match=r"transitions.yaml:(\d+).*found the key 'PutIntoQueue' twice in one mapping "
                                        r"\(first at line \d+\)"):
        load_protocol_spec("remp")


def test_a_key_given_twice_in_a_users_file_is_an_input_error(tmp_path):
    from rmkit.errors import InputError
    from rmkit.specload import read_user_document

    path = tmp_path / "v.json"
    path.write_text('{"sessions": [{"seqno": 1, "seqno": 2}]}\n')
    with pytest.raises(InputError, match=r"--validators .*v.json:1: .*found the key 'seqno' twice"):
        read_user_document(str(path), "--validators")
    path.write_text("a: &x [*x]\n")  # a recursive alias: walked once, no endless loop
    assert read_user_document(str(path), "--validators")[0]["a"]
