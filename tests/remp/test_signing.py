"""Ed25519 signing and verification of receipts: test vectors, key and validator-set files,
malformed cases, and the signature rules in the checker."""

import base64
import importlib.util
import json
import subprocess
import sys

import pytest
from nacl.bindings import crypto_sign_seed_keypair

from conftest import FIXTURES
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.protocols.remp.signing import (INVALID, MALFORMED, UNKNOWN_SOURCE, UNSIGNED, VALID, PrivateKey,
                                          Signer, SigningError, Verifier, derive_seed, generate_key_set,
                                          key_id, load_key_set, load_private_key, sign_receipt,
                                          signature_bytes, verify_receipt)
from rmkit.protocols.remp.keys import Session, ValidatorSet, decode_public_key, load_validator_set
from rmkit.protocols.remp.tlreceipt import decode_signature, signed_bytes
from rmkit.errors import InputError

VECTORS_DIR = FIXTURES / "tl"
VECTORS = [json.loads(line) for line in (VECTORS_DIR / "vectors.jsonl").read_text(encoding="utf-8").splitlines()]
ED25519_L = 2 ** 252 + 27742317777372353535851937790883648493  # the group order


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def valset_of(*keys: PrivateKey, full_nodes=(), sessions=None) -> ValidatorSet:
    """A validator set in memory: ``keys`` are the validators of one session (or ``sessions``:
    [(seqno, start, [keys])]), ``full_nodes`` the full nodes."""
    sessions = sessions or [(1, None, list(keys))]
    allk = [k for _, _, ks in sessions for k in ks] + list(full_nodes)
    roles = {k.id: "validator" for _, _, ks in sessions for k in ks} | {k.id: "fullnode" for k in full_nodes}
    return ValidatorSet("mem", roles, {k.id: k.public_key for k in allk}, {},
                        [Session(s, t, tuple(k.id for k in ks)) for s, t, ks in sessions],
                        frozenset(k.id for k in full_nodes))


VECTOR_KEY = PrivateKey(derive_seed("tl vectors", "source"))
VECTOR_SET = valset_of(VECTOR_KEY)
OTHER = PrivateKey(derive_seed("tests", "other"))


# ---- test vectors ---------------------------------------------------------------------------------
def test_vectors_are_what_the_builder_writes():
    mk = _load(VECTORS_DIR / "make_vectors.py", "make_vectors")
    assert (VECTORS_DIR / "vectors.jsonl").read_text(encoding="utf-8") == mk.text(), \
        "fixtures/remp/tl/vectors.jsonl is stale: run `make fixtures`"


def test_vectors_cover_every_kind_of_both_profiles():
    from rmkit.protocols.remp.model import model_for

    for profile in ("spec", "ever-node"):
        assert {v["kind"] for v in VECTORS if v["profile"] == profile} == set(model_for(profile).kinds)


@pytest.mark.parametrize("v", VECTORS, ids=[f"{v['profile']}-{v['kind']}" for v in VECTORS])
def test_vector_bytes_signature_and_key(v):
    rec = v["receipt"]
    assert signed_bytes(rec).hex() == v["tl_hex"]
    assert decode_signature(rec).hex() == v["signature_hex"] == signature_bytes(rec).hex()
    assert key_id(bytes.fromhex(v["public_key"])) == v["key_id"] == rec["source_id"]
    encoded = rec["signature"]
    assert (encoded == v["signature_hex"]) if v["profile"] == "spec" else (base64.b64decode(encoded).hex() == v["signature_hex"])
    assert verify_receipt(rec, VECTOR_SET) == (VALID, "")
    # the profile's signer writes the same signature
    assert sign_receipt(dict(rec, signature=""), VECTOR_KEY.seed, v["profile"])["signature"] == encoded


def _flip(value):
    """The value with one bit flipped, keeping its JSON type and format (hex stays hex of the same length)."""
    if isinstance(value, bool) or value is None:
        raise TypeError(value)
    if isinstance(value, int):
        return value ^ 1
    if value == "":
        return "\x01"  # nothing to flip: the smallest change (its length byte changes)
    if all(c in "0123456789abcdefABCDEF" for c in value) and value:
        return format(int(value, 16) ^ 1, f"0{len(value)}x")
    return value[:-1] + chr(ord(value[-1]) ^ 1)


@pytest.mark.parametrize("v", VECTORS, ids=[f"{v['profile']}-{v['kind']}" for v in VECTORS])
def test_a_flipped_bit_in_any_field_breaks_the_signature(v):
    rec = v["receipt"]
    for name, value in rec.items():
        if name == "kind":
            continue
        changed = dict(rec, **{name: _flip(value) if name != "signature" else
                               (format(int(v["signature_hex"], 16) ^ 1, "0128x") if v["profile"] == "spec"
                                else base64.b64encode(bytes.fromhex(v["signature_hex"])[:-1] + bytes([bytes.fromhex(v["signature_hex"])[-1] ^ 1])).decode())})
        status, reason = verify_receipt(changed, VECTOR_SET)
        expected = UNKNOWN_SOURCE if name == "source_id" else INVALID
        assert status == expected, (name, value, status, reason)


def test_a_different_kind_with_the_same_fields_breaks_the_signature():
    rec = next(v["receipt"] for v in VECTORS if v["profile"] == "spec" and v["kind"] == "IgnoredByCollator")
    assert verify_receipt(dict(rec, kind="IgnoredByShardchain"), VECTOR_SET).status == INVALID
    assert verify_receipt(dict(rec, kind="IgnoredByColator"), VECTOR_SET).status == MALFORMED


# ---- malformed and mismatched --------------------------------------------------------------------
SPEC_VEC = next(v for v in VECTORS if v["profile"] == "spec" and v["kind"] == "Finalized")


@pytest.mark.parametrize("sig,status,why", [
    ("ab" * 63, MALFORMED, "63 bytes"),
    ("ab" * 65, MALFORMED, "65 bytes"),
    ("ab" * 32, MALFORMED, "32 bytes"),  # the seed example's "32 bytes hex"
    (base64.b64encode(b"\1" * 63).decode(), MALFORMED, "63 bytes"),
    ("zz" * 64, MALFORMED, "96 bytes"),
    ("!?" * 64, MALFORMED, "neither encoding"),
    ("", UNSIGNED, "no signature"),
])
def test_wrong_signatures(sig, status, why):
    res = verify_receipt(dict(SPEC_VEC["receipt"], signature=sig), VECTOR_SET)
    assert res.status == status and why in res.reason, res


def test_non_canonical_encodings_are_malformed_or_invalid():
    raw = bytes.fromhex(SPEC_VEC["signature_hex"])
    rec = SPEC_VEC["receipt"]
    b64 = base64.b64encode(raw).decode()
    assert verify_receipt(dict(rec, signature=b64), VECTOR_SET).status == VALID  # either encoding is read
    assert verify_receipt(dict(rec, signature=raw.hex().upper()), VECTOR_SET).status == VALID  # hex digits in any case
    # base64 whose unused bits are set, without padding, with a line break: not canonical
    last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".index(b64[-3])
    loose = b64[:-3] + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[last ^ 1] + "=="
    for sig in (loose, b64.rstrip("="), b64[:40] + "\n" + b64[40:]):
        res = verify_receipt(dict(rec, signature=sig), VECTOR_SET)
        assert res.status == MALFORMED, (sig, res)
    # Ed25519 malleability: S + L is the same scalar mod L, but not the canonical encoding
    s = int.from_bytes(raw[32:], "little") + ED25519_L
    assert s < 2 ** 256
    assert verify_receipt(dict(rec, signature=(raw[:32] + s.to_bytes(32, "little")).hex()), VECTOR_SET).status == INVALID


def test_signature_of_another_receipt_is_invalid():
    a, b = (v["receipt"] for v in VECTORS[:2])
    assert verify_receipt(dict(a, signature=b["signature"]), VECTOR_SET).status == INVALID


def test_source_id_that_does_not_match_the_signing_key():
    rec = SPEC_VEC["receipt"]
    both = valset_of(VECTOR_KEY, OTHER)
    # signed by the vector key, but naming OTHER (a known source): the signature is not OTHER's
    assert verify_receipt(dict(rec, source_id=OTHER.id), both).status == INVALID
    # naming nobody the validator set knows
    res = verify_receipt(dict(rec, source_id=OTHER.id), VECTOR_SET)
    assert res.status == UNKNOWN_SOURCE and OTHER.id in res.reason
    assert verify_receipt(dict(rec, source_id="12"), VECTOR_SET).status == MALFORMED


def test_receipt_fields_that_cannot_be_serialized_are_malformed():
    rec = SPEC_VEC["receipt"]
    for bad in ({"block_seqno": "many"}, {"timestamp": 2 ** 64}, {"block_id": "xy"}, {"block_seqno": None}):
        changed = {k: v for k, v in {**rec, **bad}.items() if v is not None}
        if "block_seqno" in bad and bad["block_seqno"] is None:
            changed.pop("block_seqno", None)
        res = verify_receipt(changed, VECTOR_SET)
        assert res.status == MALFORMED and next(iter(bad)) in res.reason, (bad, res)


# ---- signing ---------------------------------------------------------------------------------------
def test_sign_sets_a_missing_source_id_and_refuses_another_one():
    rec = {k: v for k, v in SPEC_VEC["receipt"].items() if k not in ("source_id", "signature")}
    signed = sign_receipt(rec, OTHER, "spec")
    assert list(signed)[:5] == ["kind", "message_id", "timestamp", "source_id", "signature"]
    assert signed["source_id"] == OTHER.id and len(signed["signature"]) == 128
    assert verify_receipt(signed, valset_of(OTHER)).status == VALID
    with pytest.raises(SigningError) as err:
        sign_receipt(SPEC_VEC["receipt"], OTHER, "spec")
    assert err.value.field == "source_id" and VECTOR_KEY.id in str(err.value) or OTHER.id in str(err.value)
    replaced = sign_receipt(SPEC_VEC["receipt"], OTHER, "ever-node", replace_source=True)
    assert replaced["source_id"] == OTHER.id and base64.b64decode(replaced["signature"])
    assert verify_receipt(replaced, valset_of(OTHER)).status == VALID
    with pytest.raises(SigningError):
        sign_receipt(dict(rec, kind="Bogus"), OTHER, "spec")


def test_signer_matches_sign_receipt():
    signer = Signer([VECTOR_KEY, OTHER], "spec")
    rec = dict(SPEC_VEC["receipt"], signature="")
    assert signer.sign_in_place(dict(rec))["signature"] == sign_receipt(rec, VECTOR_KEY.seed, "spec")["signature"]


# ---- key files and validator sets ---------------------------------------------------------------------
def test_key_set_is_deterministic_and_loads(tmp_path):
    generate_key_set(tmp_path / "a", validators=4, sessions=3, seed="7")
    generate_key_set(tmp_path / "b", validators=4, sessions=3, seed="7")
    generate_key_set(tmp_path / "c", validators=4, sessions=3, seed="8")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 1 + 4 + 1 + 1  # validators.yaml, a pool of 4 + 1 rotating, one full node
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
    assert (tmp_path / "a" / "validators.yaml").read_text() != (tmp_path / "c" / "validators.yaml").read_text()
    ks = load_key_set(tmp_path / "a")
    vs = ks.validator_set
    assert [len(s.order) for s in vs.sessions] == [4, 4, 4] and len(vs.full_nodes) == 1
    assert vs.sessions[0].order != vs.sessions[1].order  # one validator rotates out per session
    key = load_private_key(tmp_path / "a" / "keys" / "validator-1.json")
    assert key.id in vs.sessions[0].validators and key.role == "validator"
    assert (tmp_path / "a" / "keys" / "validator-1.json").stat().st_mode & 0o077 == 0


def test_private_key_file_errors_name_file_line_and_field(tmp_path):
    good = PrivateKey(derive_seed("x", 1)).document()
    p = tmp_path / "k.json"
    p.write_text(json.dumps(dict(good, public_key="00" * 32), indent=1))
    with pytest.raises(InputError, match=r"k.json:\d+: public_key: the seed gives"):
        load_private_key(p)
    p.write_text(json.dumps(dict(good, seed="abc"), indent=1))
    with pytest.raises(InputError, match=r"k.json:\d+: at seed: 'abc' does not match"):
        load_private_key(p)


def _valset_file(tmp_path, text):
    p = tmp_path / "v.yaml"
    p.write_text(text)
    return str(p)


K1, K2, K3 = (PrivateKey(derive_seed("vs", i)) for i in range(3))


def test_validator_set_reads_hex_and_base64_keys_and_derives_ids(tmp_path):
    b64 = base64.b64encode(K2.public_key).decode()
    vs = load_validator_set(_valset_file(tmp_path, f"""
full_nodes: [{K3.public_key.hex().upper()}]
sessions:
  - {{seqno: 5, start_ms: 1000, validators: [{K1.public_key.hex()}, {{public_key: "{b64}", name: v2, id: {K2.id}}}]}}
  - {{seqno: 6, start_ms: 2000, validators: ["{b64}"]}}
"""))
    assert vs.roles == {K1.id: "validator", K2.id: "validator", K3.id: "fullnode"}
    assert vs.names == {K2.id: "v2"} and vs.timed
    assert vs.session_index_at(1500) == 0 and vs.session_index_at(2000) == 1 and vs.session_index_at(10) == -1
    assert K1.id in vs.members(0) and K1.id in vs.members(1)  # the previous session's validators stay members


@pytest.mark.parametrize("text,where,what", [
    ("sessions:\n  - seqno: 1\n    validators: [abc]\n", ":3:", "sessions[0] (seqno 1) validators[0]: expected an Ed25519 public key"),
    ("sessions:\n  - seqno: 1\n    validators:\n      - " + "ab" * 31 + "\n", ":4:", "hex of 31 bytes"),
    ("sessions:\n  - seqno: 1\n    validators:\n      - " + base64.b64encode(b"x" * 33).decode() + "\n", ":4:", "base64 of 33 bytes"),
    ("sessions:\n  - {seqno: 2, validators: [K1]}\n  - {seqno: 1, validators: [K1]}\n", ":3:", "increasing seqno"),
    ("sessions:\n  - {seqno: 1, start_ms: 5, validators: [K1]}\n  - {seqno: 2, start_ms: 4, validators: [K1]}\n", ":3:", "start_ms >= 5"),
    ("sessions:\n  - {seqno: 1, start_ms: 5, validators: [K1]}\n  - {seqno: 2, validators: [K1]}\n", ":3:", "every session or for none"),
    ("full_nodes: [K1]\nsessions:\n  - {seqno: 1, validators: [K1]}\n", ":3:", "listed as a fullnode"),
    ("sessions:\n  - {seqno: 1, validators: [{public_key: K1, id: " + "ab" * 32 + "}]}\n", ":2:", "but the entry says id"),
    ("sessions:\n  - {seqno: 1, validators: []}\n", ":2:", "sessions[0].validators"),
    ("sessions:\n  - {seqno: 1, validators: [K1], extra: 1}\n", ":2:", "extra"),
    ("validators: [nothex]\n", ":1:", "validators[0]"),
    ("- just a list\n", "", "expected a mapping"),
])
def test_validator_set_errors_say_where_and_what(tmp_path, text, where, what):
    with pytest.raises(InputError) as err:
        load_validator_set(_valset_file(tmp_path, text.replace("K1", K1.public_key.hex())))
    msg = str(err.value)
    assert f"v.yaml{where}" in msg and what in msg, msg


def test_roles_only_files_still_give_roles(tmp_path):
    vs = load_validator_set(_valset_file(tmp_path, f"validators: [{K1.id}]\nfull_nodes: [{K2.id.upper()}]\n"))
    assert vs.roles == {K1.id: "validator", K2.id: "fullnode"} and not vs.has_keys
    with pytest.raises(ValueError, match="source ids only"):
        Verifier(vs)


# ---- the checker's signature rules -------------------------------------------------------------------
mk = _load(FIXTURES / "make_rule_fixtures.py", "mk")
FIX_SET = load_validator_set(str(FIXTURES / "rules" / "validators.yaml"))


def run(tmp_path, lines, profile="spec", valset=FIX_SET, jobs=1):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return RempLogChecker(profile, validator_set=valset, jobs=jobs).run([str(path)])


@pytest.mark.parametrize("jobs", [1, 2])
def test_unknown_source_is_a_signature_finding_not_a_role_one(tmp_path, jobs):
    stranger = PrivateKey(derive_seed("tests", "stranger"))
    log = mk.Log("spec").happy()
    rec = json.loads(log.lines[1])
    log.lines.append(json.dumps(sign_receipt(dict(rec, source_id=""), stranger, "spec")))
    report = run(tmp_path, log.lines, jobs=jobs)
    assert set(report.counts) == {"REMP-SIG-003"}, report.counts
    (v,) = report.violations
    assert stranger.id in v.explanation and "not the key id of any validator" in v.explanation
    assert report.metrics["signatures"]["unknown_source"] == 1 and report.metrics["signatures"]["valid"] == 9


def test_membership_follows_the_session_of_the_receipt(tmp_path):
    v4 = mk.KEYS["validator-4"]
    # session 3 starts at T0 + 20,000 s: V4 is a member from session 2 on (the next set), not in session 1
    late = mk.Log("spec", sign_validators=True).r("PutIntoQueue", mk.V4, 10_000_500).lines
    early = mk.Log("spec", sign_validators=True).r("PutIntoQueue", mk.V4, 500, msg=mk.MSG2).lines
    report = run(tmp_path, early + late)
    (v,) = [v for v in report.violations if v.rule == "REMP-SIG-003"]
    assert report.counts["REMP-SIG-003"] == 1 and v.evidence[0].line == 1
    assert "sessions 1, 2" in v.explanation and v4.id in v.explanation
    # one outcome per receipt: the one outside its session is not also counted valid
    assert sum(report.metrics["signatures"].values()) == len(early + late)
    assert report.metrics["signatures"]["outside_session"] == 1
    # without start times, membership of any session is enough
    untimed = ValidatorSet(FIX_SET.path, FIX_SET.roles, FIX_SET.keys, {}, [Session(s.seqno, None, s.order) for s in FIX_SET.sessions],
                           FIX_SET.full_nodes)
    assert "REMP-SIG-003" not in run(tmp_path, early + late, valset=untimed).counts


def test_ever_node_unsigned_validator_receipts_are_non_strict_with_keys(tmp_path):
    lines = mk.Log("ever-node").happy().lines
    assert run(tmp_path, lines, "ever-node", valset=None).verdict == "pass"
    report = run(tmp_path, lines, "ever-node")
    assert set(report.counts) == {"REMP-SIG-004"} and report.verdict == "non-strict"
    assert report.metrics["signatures"]["unsigned"] == report.counts["REMP-SIG-004"] == 11
    assert report.metrics["signatures"]["valid"] == 0  # the ever-node happy path has no full node receipt
    # a full node receipt without a signature is REMP-SIG-001's (strict) finding, not also SIG-004's
    lines += mk.Log("ever-node").r("RejectedByFullnode", mk.FN, 0, msg=mk.MSG2, error="bad", signature=None).lines
    assert set(run(tmp_path, lines, "ever-node").counts) == {"REMP-SIG-001", "REMP-SIG-004"}


def test_bad_signature_format_is_reported_once(tmp_path):
    lines = mk.Log("spec").happy().lines
    rec = json.loads(lines[2])
    lines[2] = json.dumps(dict(rec, signature=rec["signature"][:64]))  # 32 bytes: the SIG-001 format allows it
    lines[3] = json.dumps(dict(json.loads(lines[3]), signature="nothex"))
    report = run(tmp_path, lines)
    assert report.counts == {"REMP-SIG-001": 1, "REMP-SIG-002": 1}, report.counts
    assert "32 bytes" in next(v for v in report.violations if v.rule == "REMP-SIG-002").explanation


def test_roles_only_validator_set_leaves_signatures_not_checked(tmp_path):
    roles = ValidatorSet("roles.yaml", dict(FIX_SET.roles), sessions=[Session(0, None, tuple(FIX_SET.sessions[0].order))],
                         full_nodes=FIX_SET.full_nodes)
    report = run(tmp_path, mk.Log("spec").happy().lines, valset=roles)
    assert report.verdict == "pass" and "source ids only" in report.not_checked["REMP-SIG-002"]


def test_signed_simulator_log_passes_with_the_key_set(tmp_path):
    from rmkit.reference_impl.remp import simulate

    generate_key_set(tmp_path / "keys", validators=7, sessions=4, seed="sim")
    ks = load_key_set(tmp_path / "keys")
    lines = [json.dumps(r) for r in simulate(seed=3, messages=120, keys=ks, lifetime_s=60)]
    vs = ks.validator_set
    for jobs in (1, 2):
        report = run(tmp_path, lines, valset=vs, jobs=jobs)
        assert report.verdict == "pass", report.counts
        sig = report.metrics["signatures"]
        assert sig["valid"] == report.records - report.metrics["redelivered_receipts"] and sig["invalid"] == 0
    ever = [json.dumps(r) for r in simulate(seed=3, messages=60, keys=ks, profile="ever-node", lifetime_s=60, p_invalid=0.3)]
    fn = [json.loads(x) for x in ever if json.loads(x)["source_id"] in vs.full_nodes]
    assert fn and all(verify_receipt(r, vs).status == VALID for r in fn)  # ever-node: the full node signs, base64
    with pytest.raises(InputError, match="generate more"):
        list(simulate(seed=3, messages=2000, keys=ks, lifetime_s=10))


def test_signed_bytes_and_key_ids_agree_with_pynacl():
    pk, _ = crypto_sign_seed_keypair(VECTOR_KEY.seed)
    assert pk == VECTOR_KEY.public_key and key_id(pk) == VECTOR_KEY.id


def test_the_documented_validator_set_example_loads(tmp_path):
    from conftest import REPO

    text = (REPO / "spec" / "remp" / "keys.md").read_text(encoding="utf-8")
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    vs = load_validator_set(_valset_file(tmp_path, example))
    assert len(vs.full_nodes) == 1 and len(vs.sessions[0].order) == 2 and vs.timed
    assert vs.names["a347383283ed4ff9fe9e8fa75700d0d56f85d0a4d79627aa6eabbe12a370b4ad"] == "validator-2"


def _shifted_copy(lines, ms, message_id):
    """The same message's receipts for another message id, ``ms`` later, signed again."""
    by_id = {k.id: k for k in mk.KEYS.values()}
    out = []
    for line in lines:
        rec = json.loads(line)
        rec = dict(rec, message_id=message_id, timestamp=rec["timestamp"] + ms)
        out.append(json.dumps(sign_receipt(dict(rec, signature=""), by_id[rec["source_id"]], "spec")))
    return out


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_late_receipt_is_still_verified(tmp_path, jobs):
    """A receipt that arrives after its message was judged (the log's clock moved on with another
    message) is still checked: a forged one is REMP-SIG-002, a genuine one counts as valid."""
    log = mk.Log("spec").happy()
    later = _shifted_copy(log.lines, 700_000, "ab" * 32)  # past the horizon: the first is judged
    k = next(i for i, ln in enumerate(log.lines) if json.loads(ln)["kind"] == "IncludedIntoAcceptedBlock")
    accepted = json.loads(log.lines[k])
    forged = dict(accepted, timestamp=accepted["timestamp"] + 700_001)  # the signature covers the time
    report = run(tmp_path, log.lines + later + [json.dumps(forged)], jobs=jobs)
    assert report.metrics["late_receipts"] == 1
    assert report.counts.get("REMP-SIG-002") == 1, report.counts
    genuine = run(tmp_path, log.lines + later + [log.lines[k]], jobs=jobs)
    assert genuine.metrics["late_receipts"] == 1
    assert genuine.counts == {}, genuine.counts
    assert genuine.metrics["signatures"]["valid"] == 2 * len(log.lines) + 1


def test_public_keys_with_a_trailing_newline_are_refused_alike():
    pk = bytes(range(32))
    for text in (pk.hex() + "\n", base64.b64encode(pk).decode() + "\n"):
        with pytest.raises(ValueError, match="expected an Ed25519 public key"):
            decode_public_key(text)


def test_the_seeds_repeated_block_file_hash_is_kept_by_the_tools(tmp_path):
    """The seed's Finalized example writes the master block's file hash as a second
    ``block_file_hash``: ``rmkit receipt encode`` and ``rmkit check`` keep it (the signed bytes
    cover it), whichever block group comes first."""
    from rmkit.protocols.remp.tlreceipt import receipt_from_pairs, signed_bytes

    line = (FIXTURES / "seed" / "examples.jsonl").read_text().splitlines()[6]
    r = json.loads(line, object_pairs_hook=receipt_from_pairs)
    assert r["mc_block_file_hash"].startswith("33b2") and r["block_file_hash"].startswith("00a2")
    # the shard block's group first, its block_file_hash right before mc_block_id
    swapped = ('{"kind": "Finalized", "message_id": "%s", "timestamp": 1, "source_id": "%s", "block_id": "%s", '
               '"block_file_hash": "%s", "mc_block_id": "%s", "block_file_hash": "%s", "mc_block_seqno": 7, '
               '"block_seqno": 5, "shard": "8000000000000000", "wc": 0}'
               % ("11" * 32, "22" * 32, "33" * 32, "aa" * 32, "44" * 32, "bb" * 32))
    r2 = json.loads(swapped, object_pairs_hook=receipt_from_pairs)
    assert r2["block_file_hash"] == "aa" * 32 and r2["mc_block_file_hash"] == "bb" * 32
    path = tmp_path / "seed7.jsonl"
    path.write_text(line + "\n")
    out = subprocess.run([sys.executable, "-m", "rmkit", "receipt", "encode", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == signed_bytes(r).hex()


def test_malformed_reasons_say_what_the_value_looks_like():
    rec = SPEC_VEC["receipt"]
    # a number beyond 64 bits reaches the reader as a float: the reason says it is too big, not "not an integer"
    res = verify_receipt(dict(rec, timestamp=float(2 ** 70)), VECTOR_SET)
    assert res.status == MALFORMED and "beyond 64 bits" in res.reason and "TL long" in res.reason, res
    # 128 characters that are not all hex digits: read as base64, the reason says why it is not hex
    res = verify_receipt(dict(rec, signature="zz" * 64), VECTOR_SET)
    assert res.status == MALFORMED and "not a hex digit" in res.reason, res
