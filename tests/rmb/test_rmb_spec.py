"""spec/rmb loads, cross-checks, ties every rule and setting to its seed sentence or reference
fact (verbatim), and its generated README is current."""

import base64
import binascii
import re
import shutil

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from spec_support import broken_spec_copy

from conftest import REPO
from rmkit.conformance.rmb.docs import flow_diagram, spec_markdown
from rmkit.protocols.rmb.model import is_base64, message_problems, rmb_spec
from rmkit.errors import SpecError
from rmkit.specload import load_protocol_spec, load_schema

# The seed documents and the reference facts live in shared/ beside the checkout (or beside its parent).
SHARED = next((p for p in (REPO.parent / "shared", REPO.parent.parent / "shared") if (p / "seeds").is_dir()), None)
PROFILES = {"spec", "rmb-rs-v1", "rmb-go"}


def _norm(text: str) -> str:
    return " ".join(text.replace("**", "").split())


def _sources(spec):
    for r in spec["rules"]["rules"]:
        yield r["id"], r["source"]
    for name, f in spec["message"]["fields"].items():
        yield f"message.{name}", f["source"]
    sig = spec["signature"]
    for where in ("challenge", "digest", "mnemonic"):
        yield f"signature.{where}", sig[where]["source"]
    yield "signature.not_covered", sig["not_covered_source"]
    yield "signature.key_types", sig["key_types_source"]
    for name, s in spec["behaviour"]["settings"].items():
        yield f"behaviour.{name}", s["source"]
    for a in spec["behaviour"]["ambiguities"]:
        yield f"ambiguity.{a['id']}", a["source"]


@pytest.mark.skipif(SHARED is None, reason="the seed documents (shared/seeds) are not beside this checkout")
def test_every_quote_and_fact_is_verbatim_in_its_source():
    spec = load_protocol_spec("rmb")
    seed = _norm(next((SHARED / "seeds").glob("004_*.txt")).read_text(encoding="utf-8"))
    ref_text = (SHARED / "reference" / "rmb-as-built.md").read_text(encoding="utf-8")
    sections = {m.group(1): m.start() for m in re.finditer(r"^## (.+)$", ref_text, re.M)}
    quotes = facts = 0
    for where, src in _sources(spec):
        if "quote" in src:
            assert src["doc"] == "004", where
            assert _norm(src["quote"]) in seed, f"{where}: quote not found in document 004: {src['quote']!r}"
            quotes += 1
        else:
            assert src["doc"] == "rmb-as-built", where
            m = re.fullmatch(r"\[([^\]]+)\] (.+)", src["fact"], re.S)
            assert m and m.group(1) in sections, f"{where}: a fact starts with [its reference section]: {src['fact'][:60]!r}"
            start = sections[m.group(1)]
            end = min([s for s in sections.values() if s > start], default=len(ref_text))
            assert _norm(m.group(2)) in _norm(ref_text[start:end]), f"{where}: fact not verbatim in section {m.group(1)!r}"
            facts += 1
    assert quotes >= 30 and facts >= 25


def test_rules_have_ids_severities_and_a_mode_per_profile():
    s = rmb_spec()
    assert len(s.rules) >= 40
    assert len(set(s.rules.ids())) == len(s.rules)
    for r in s.rules:
        assert re.fullmatch(r"RMB-[A-Z]+-\d{3}", r.id)
        assert set(r.modes) == PROFILES and r.severity in ("critical", "major", "minor", "info") and r.citation()
        if r.severity == "info":  # reported, never failing
            assert "strict" not in r.modes.values(), r.id


def test_every_setting_and_ambiguity_covers_each_profile_and_names_known_rules():
    s = rmb_spec()
    for name, st in s.raw["behaviour"]["settings"].items():
        assert set(st["values"]) == PROFILES, name
        assert all(rid in s.rules for rid in st["rules"]), name
    for a in s.raw["behaviour"]["ambiguities"]:
        assert set(a["readings"]) == PROFILES


def test_profiles_differ_where_the_reference_says():
    spec, rs, go = (rmb_spec().behaviour(p) for p in ("spec", "rmb-rs-v1", "rmb-go"))
    assert (spec["remote_endpoint"], rs["remote_endpoint"], go["remote_endpoint"]) == ("/rmb-remote", "/zbus-remote", "/zbus-remote")
    assert (spec["status_wrong_destination"], rs["status_wrong_destination"]) == (403, 400)
    assert (spec["reply_without_backlog"], rs["reply_without_backlog"]) == (408, 202)
    assert (spec["uid_scheme"], go["uid_scheme"]) == ("uuid4", "{dst}.{n}")
    assert (spec["retry_on"], rs["retry_on"], go["retry_on"]) == ("connection", "connection", "any")
    assert rs["try_bounds"] == {"min": 1, "max": 5} and rs["command_queue_limit"] == 500
    assert spec["local_shortcut"] and not rs["local_shortcut"]
    assert go["scrubber"]["default_exp_s"] == 3600 and spec["scrubber"] is None
    assert (spec["forward_job"], rs["forward_job"]) == ("{uid}:{dst}", "{uid}.{dst}")
    assert spec["proxy"]["request_queue"] == "msgbus.system.proxy" and rs["proxy"]["request_queue"] == "msgbus.system.proxy.request"
    assert go["accepted"] == {"status": 200, "body": {"status": "accepted"}}
    modes = rmb_spec().rules
    assert modes["RMB-LOCAL-003"].mode("rmb-rs-v1") == "off" and modes["RMB-REMOTE-006"].mode("spec") == "off"


def test_signature_spec_covers_exactly_the_signed_fields():
    s = rmb_spec()
    signed = {n for n, f in s.fields.items() if f["signed"]}
    assert set(s.signature["challenge"]["pieces"]) == signed
    assert s.signature["challenge"]["pieces"][-1] == "pxy"
    assert set(s.signature["not_covered"]) == {"exp", "try", "shm", "err", "tag", "sig"}


def test_message_schema_comes_from_message_yaml():
    good = {"ver": 1, "uid": "", "cmd": "a.b", "exp": 10, "try": 2, "dat": "aGk=", "src": 0, "dst": [2], "ret": "r", "now": 1}
    assert message_problems(good) == []
    assert [p[0] for p in message_problems({**good, "dst": []})] == ["RMB-MSG-006"]
    assert [p[0] for p in message_problems({**good, "dat": "not base64!"})] == ["RMB-MSG-002"]
    assert [p[:2] for p in message_problems({**good, "ver": 2})] == [("RMB-MSG-001", "ver")]
    assert [p[:2] for p in message_problems({**good, "now": "1"})] == [("RMB-MSG-001", "now")]
    assert message_problems([1])[0][0] == "RMB-MSG-001"


@pytest.fixture
def broken_spec(tmp_path, monkeypatch):
    def make(file, old, new):
        broken_spec_copy(tmp_path, monkeypatch, "rmb", file, old, new, rmb_spec)
    yield make
    for f in (load_protocol_spec, load_schema, rmb_spec):
        f.cache_clear()


def test_missing_profile_value_names_file_and_line(broken_spec):
    broken_spec("behaviour.yaml", "values: {spec: 401, rmb-rs-v1: 401, rmb-go: 400}", "values: {spec: 401, rmb-rs-v1: 401}")
    with pytest.raises(SpecError, match=r"spec/rmb/behaviour.yaml:\d+.*status_bad_signature.*rmb-go"):
        rmb_spec()


def test_unknown_rule_in_a_setting_names_file_and_line(broken_spec):
    broken_spec("behaviour.yaml", "rules: [RMB-LOCAL-001]", "rules: [RMB-LOCAL-099]")
    with pytest.raises(SpecError, match=r"behaviour.yaml:\d+.*unknown rule 'RMB-LOCAL-099'"):
        rmb_spec()


def test_challenge_piece_that_is_not_signed_is_an_error(broken_spec):
    broken_spec("signature.yaml", "pieces: [ver, uid", "pieces: [ver, exp, uid")
    with pytest.raises(SpecError, match=r"signature.yaml:\d+.*'exp' is not a field marked signed"):
        rmb_spec()


def test_generated_readme_is_committed_and_current():
    assert (REPO / "spec" / "rmb" / "README.md").read_text(encoding="utf-8") == spec_markdown(), \
        "spec/rmb/README.md is stale: run `make docs`"


def test_flow_diagram_names_each_profiles_endpoints():
    assert "/rmb-remote" in flow_diagram("spec") and "/zbus-remote" in flow_diagram("rmb-rs-v1")
    assert "dst == local" in flow_diagram("spec") and "dst == local" not in flow_diagram("rmb-go")


@pytest.mark.parametrize("old, new, where", [
    ("rmb-go: any}", "rmb-go: anyy}", r"settings\.retry_on\.values\.rmb-go: 'anyy' is not one of"),
    ("{min: 1, max: 5}", '{min: "1", max: 5}', r"settings\.try_bounds\.values\.rmb-rs-v1\.min: '1' is not of type 'integer'"),
    ("values: {spec: 400, rmb-rs-v1: 400, rmb-go: 400}", "values: {spec: 400, rmb-rs-v1: 400, rmb-go: 40}",
     r"settings\.status_bad_body\.values\.rmb-go: 40 is less than the minimum of 100"),
])
def test_a_setting_value_of_the_wrong_type_names_file_line_and_field(broken_spec, old, new, where):
    """Every setting's values are typed: a value the daemons, harness, checker or TLA+ tables would
    read wrongly (a retry rule misspelt flips RetryAnyIn silently) is refused at load."""
    broken_spec("behaviour.yaml", old, new)
    with pytest.raises(SpecError, match=r"spec/rmb/behaviour.yaml:\d+: at " + where):
        rmb_spec()


_BASE64_ALPHABET = "ABZaz09+/=-_ é\n"


@settings(max_examples=400)
@example('A===')
@example('====')
@example('AB=C')
@example('=AAA')
@example('AA==')
@example('AAA=')
@example('AB')
@example('Zm9v')
@example('Zm9=')
@example('Zg==')
@example('Zh==')
@example('é===')
@example('')
@given(st.one_of(st.text(alphabet=_BASE64_ALPHABET, max_size=12),
                 st.binary(max_size=9).map(lambda b: base64.b64encode(b).decode("ascii")),
                 st.text(max_size=8)))
def test_base64_told_by_its_form_is_what_the_strict_decode_takes(text):
    """is_base64's form check (no decode) says yes only where the strict decode takes the text,
    and the decode decides every other text: the verdict is the strict decode's."""
    try:
        base64.b64decode(text.encode("ascii"), validate=True)
        decodes = len(text) % 4 == 0
    except (binascii.Error, UnicodeEncodeError, ValueError):
        decodes = False
    assert is_base64(text) == decodes
