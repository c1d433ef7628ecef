"""The TL core (rmkit.tl) and REMP receipts in their exact TL form (conformance.remp.tlreceipt)."""

import base64
import hashlib
import json
import shutil
import struct
import zlib

import orjson
import pytest
from hypothesis import assume, given, strategies as st

from conftest import FIXTURES, REPO
from rmkit.protocols.remp import tlreceipt as tr
from rmkit.protocols.remp.tlreceipt import (ReceiptConversionError, decode_signature, parse_signed_receipt,
                                            pub_key_id, receipt_from_pairs, receipt_to_tl, signed_bytes,
                                            signed_receipt_bytes, tl_to_receipt)
from rmkit.errors import SpecError, UsageError
from rmkit.specload import load_protocol_spec
from rmkit.tl import Schema, TlError, deserialize, normalize, pack_bytes, parse_line, serialize

# The table of section 1 of the reference notes, typed in independently of spec/remp/tl.yaml.
ID_TABLE = {
    "tonNode.rempFullnode": 0xD7145A5A, "tonNode.rempQueue": 0xEBABF815, "tonNode.rempCollator": 0x44F07DE7,
    "tonNode.rempShardchain": 0x237E2B37, "tonNode.rempMasterchain": 0xBCC0EAA3,
    "tonNode.rempSentToValidators": 0x2FF6C87B, "tonNode.rempNew": 0x5BFABD30, "tonNode.rempRejected": 0xB4E1EE77,
    "tonNode.rempAccepted": 0x30225E0E, "tonNode.rempIgnored": 0x43BEBB8B, "tonNode.rempDuplicate": 0x9ECD4334,
    "tonNode.rempTimeout": 0xB71796AF, "tonNode.rempReceipt": 0x3122B7A2, "tonNode.rempSignedReceipt": 0xB361C8DD,
    "tonNode.blockIdExt": 0x6752EB78, "pub.ed25519": 0x4813B4C6,
}
LEGACY_SIGNED_ID = 0xB169567B
SPEC = load_protocol_spec("remp")
TL = SPEC["tl"]
SCHEMA = tr.tl_schema()
KINDS = SPEC["kinds"]["kinds"]
PROFILES = list(SPEC["protocol"]["profiles"])
H = "16923245c4bd57762330e454926a81dcb45626b433121c51804075b3cc26984e"
SIG = bytes(range(64))


def u32(x: int) -> bytes:
    return struct.pack("<I", x)


# -- ids -------------------------------------------------------------------------------------------

def test_every_constructor_id_computed_from_its_line_equals_the_table():
    assert set(TL["constructors"]) == set(ID_TABLE)
    for name, entry in TL["constructors"].items():
        assert zlib.crc32(entry["line"].encode()) == ID_TABLE[name], name
        c = parse_line(entry["line"])
        assert (c.name, c.id, c.line) == (name, ID_TABLE[name], entry["line"])
        assert int(entry["id"], 16) == ID_TABLE[name]
        assert SCHEMA[name].id == ID_TABLE[name]
    old = TL["superseded"]["tonNode.rempSignedReceipt"]
    assert parse_line(old["line"]).id == LEGACY_SIGNED_ID == int(old["id"], 16)


def test_normalization_drops_comments_semicolon_explicit_id_and_vector_parentheses():
    line = "tonNode.blockIdExt  workchain:int shard:long seqno:int root_hash:int256 file_hash:int256 = tonNode.BlockIdExt; // c"
    assert parse_line(line).id == ID_TABLE["tonNode.blockIdExt"]
    assert normalize("a.b#1234abcd xs:(vector int) = a.B;") == "a.b xs:vector int = a.B"
    assert parse_line("a.b#1234abcd x:int = a.B").id == 0x1234ABCD
    c = parse_line("a.list xs:(vector int256) = a.List")
    assert c.id == zlib.crc32(b"a.list xs:vector int256 = a.List")
    assert str(c.fields[0].type) == "vector int256"


def test_bad_schema_lines_and_references_are_errors():
    with pytest.raises(TlError, match="constructor line"):
        parse_line("not a line")
    with pytest.raises(TlError, match="upper case"):
        parse_line("a.b x:int = a.lower")
    with pytest.raises(TlError, match="known boxed type"):
        Schema(["a.b x:a.Missing = a.B"])
    with pytest.raises(TlError, match="known constructor"):
        Schema(["a.b x:a.missing = a.B"])


def test_tl_yaml_with_a_wrong_id_names_file_line_and_the_crc(tmp_path, monkeypatch):
    root = tmp_path / "spec"
    shutil.copytree(REPO / "spec", root)
    path = root / "remp" / "tl.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace('id: "9ecd4334"', 'id: "9ecd4335"'), encoding="utf-8")
    monkeypatch.setenv("RMKIT_SPEC_DIR", str(root))
    load_protocol_spec.cache_clear()
    tr.clear_cache()
    try:
        with pytest.raises(SpecError, match=r"tl.yaml:\d+.*rempDuplicate.id.*CRC32 is 9ecd4334"):
            tr.tl_schema()
    finally:
        monkeypatch.delenv("RMKIT_SPEC_DIR")
        load_protocol_spec.cache_clear()
        tr.clear_cache()


# -- byte layouts ----------------------------------------------------------------------------------

def test_block_id_ext_layout_by_hand():
    block = {"@type": "tonNode.blockIdExt", "workchain": -1, "shard": -(1 << 63), "seqno": 0x01020304,
             "root_hash": bytes(range(32)), "file_hash": bytes(range(32, 64))}
    bare = (b"\xff\xff\xff\xff" + b"\x00\x00\x00\x00\x00\x00\x00\x80" + b"\x04\x03\x02\x01"
            + bytes(range(32)) + bytes(range(32, 64)))
    assert serialize(SCHEMA, block, boxed=False) == bare
    assert serialize(SCHEMA, block) == b"\x78\xeb\x52\x67" + bare
    assert deserialize(SCHEMA, bare, "tonNode.blockIdExt") == block
    assert deserialize(SCHEMA, b"\x78\xeb\x52\x67" + bare, "tonNode.BlockIdExt") == block


@pytest.mark.parametrize("n, prefix, pad", [(3, b"\x03", 0), (253, b"\xfd", 2), (254, b"\xfe\xfe\x00\x00", 2),
                                            (300, b"\xfe\x2c\x01\x00", 0)])
def test_string_layouts_by_hand(n, prefix, pad):
    data = bytes(i % 251 + 1 for i in range(n))
    wire = pack_bytes(data)
    assert wire == prefix + data + b"\0" * pad
    assert len(wire) % 4 == 0
    s = Schema(["t.s s:string = t.S", "t.b b:bytes = t.B"])
    assert deserialize(s, u32(s["t.b"].id) + wire, "t.B") == {"@type": "t.b", "b": data}
    text = "x" * n
    assert serialize(s, {"@type": "t.s", "s": text}, boxed=False) == prefix + text.encode() + b"\0" * pad


def test_receipt_layout_by_hand():
    r = {"kind": "RejectedByCollator", "message_id": H, "timestamp": 1632750383000, "source_id": "ab" * 32,
         "signature": "", "block_id": "11" * 32, "block_file_hash": "22" * 32, "block_seqno": 7,
         "shard": "3800000000000000", "wc": 0, "error": "ab"}
    expect = (u32(0x3122B7A2) + bytes.fromhex(H) + u32(0xB4E1EE77) + u32(0x44F07DE7)
              + struct.pack("<iqi", 0, 0x3800000000000000, 7) + b"\x11" * 32 + b"\x22" * 32
              + b"\x02ab\x00" + struct.pack("<q", 1632750383000) + b"\xab" * 32)
    assert signed_bytes(r) == expect
    assert serialize(SCHEMA, receipt_to_tl(r)) == expect


def test_absent_blocks_are_the_default_block_id():
    r = {"kind": "RejectedByFullnode", "message_id": H, "timestamp": 1, "source_id": H, "signature": "", "error": ""}
    status = receipt_to_tl(r)["status"]
    assert status["block_id"] == {"@type": "tonNode.blockIdExt", "workchain": 0, "shard": -(1 << 63), "seqno": 0,
                                  "root_hash": bytes(32), "file_hash": bytes(32)}
    default = struct.pack("<iqi", 0, -(1 << 63), 0) + bytes(64)
    assert default in signed_bytes(r)
    assert tl_to_receipt(receipt_to_tl(r)) == r  # the default block is written back as no block fields


def test_pub_key_id_is_sha256_of_the_boxed_key():
    key = bytes(range(32))
    assert pub_key_id(key) == hashlib.sha256(b"\xc6\xb4\x13\x48" + key).digest()
    with pytest.raises(ReceiptConversionError, match="public_key: expected 32 bytes.*found 31 bytes"):
        pub_key_id(key[:31])


# -- Hypothesis: generic round trips ----------------------------------------------------------------

def _value(schema: Schema, t, depth=0):
    if t.kind == "builtin":
        return {"int": st.integers(-(1 << 31), (1 << 31) - 1), "long": st.integers(-(1 << 63), (1 << 63) - 1),
                "int128": st.binary(min_size=16, max_size=16), "int256": st.binary(min_size=32, max_size=32),
                "int512": st.binary(min_size=64, max_size=64), "string": st.text(max_size=300),
                "bytes": st.binary(max_size=600)}[t.name]
    if t.kind == "vector":
        return st.lists(_value(schema, t.item, depth + 1), max_size=3)
    cs = [schema[t.name]] if t.kind == "bare" else schema.by_type[t.name]
    return st.one_of([_object(schema, c, depth + 1) for c in cs])


def _object(schema: Schema, c, depth=0):
    return st.fixed_dictionaries({"@type": st.just(c.name), **{f.name: _value(schema, f.type, depth) for f in c.fields}})


@pytest.mark.parametrize("name", sorted(ID_TABLE))
@given(data=st.data())
def test_every_constructor_round_trips_boxed_and_bare(name, data):
    c = SCHEMA[name]
    obj = data.draw(_object(SCHEMA, c))
    boxed = serialize(SCHEMA, obj)
    assert boxed[:4] == u32(ID_TABLE[name])
    assert deserialize(SCHEMA, boxed, c.result) == obj
    bare = serialize(SCHEMA, obj, boxed=False)
    assert bare == boxed[4:]
    assert deserialize(SCHEMA, bare, name) == obj
    assert len(boxed) % 4 == 0


# -- Hypothesis: receipts ------------------------------------------------------------------------

_HASH = st.binary(min_size=32, max_size=32).map(bytes.hex)
_FORMATS = {
    "hash256": _HASH, "uint": st.integers(0, (1 << 31) - 1), "posint": st.integers(1, (1 << 31) - 1),
    "int": st.integers(-(1 << 31), (1 << 31) - 1), "string": st.text(max_size=300),
    "shard_hex": st.binary(min_size=8, max_size=8).map(bytes.hex), "unix_ms": st.integers(0, (1 << 63) - 1),
}
_DEFAULT_SHARD = {"block_id": "00" * 32, "block_file_hash": "00" * 32, "block_seqno": 0, "shard": "8000000000000000", "wc": 0}


@st.composite
def receipts(draw, kind: str, profile: str):
    """A canonical JSON receipt of ``kind`` in ``profile``'s style (what the node or the simulator
    writes): lower-case hex, every field of a present group, no group equal to the default block."""
    k = KINDS[kind]
    r = {"kind": kind, "message_id": draw(_HASH), "timestamp": draw(_FORMATS["unix_ms"]), "source_id": draw(_HASH)}
    sig = draw(st.none() | st.binary(min_size=64, max_size=64))
    enc = TL["receipt"]["signature"]["encoding"][profile]
    r["signature"] = "" if sig is None else (sig.hex() if enc == "hex" else base64.b64encode(sig).decode())
    for gname in k.get("groups") or {}:
        if draw(st.booleans()):
            group = {name: draw(_FORMATS[f["format"]]) for name, f in SPEC["kinds"]["field_groups"][gname].items()}
            assume(group != _DEFAULT_SHARD)
            r.update(group)
    for name, f in (k.get("fields") or {}).items():
        r[name] = draw(_FORMATS[f["format"]])
    return r


ALL_KINDS = [(k, p) for k in KINDS for p in PROFILES]


@pytest.mark.parametrize("kind, profile", ALL_KINDS)
@given(data=st.data())
def test_json_tl_json_round_trips_for_every_kind_and_profile(kind, profile, data):
    r = data.draw(receipts(kind, profile))
    tl = receipt_to_tl(r)
    wire = serialize(SCHEMA, tl)
    assert deserialize(SCHEMA, wire, "tonNode.RempReceipt") == tl
    assert signed_bytes(r) == wire
    back = tl_to_receipt(tl, profile=profile, signature=decode_signature(r))
    assert back == r
    signed = signed_receipt_bytes(r, SIG)
    assert signed[:4] == u32(ID_TABLE["tonNode.rempSignedReceipt"]) and signed.endswith(SIG)
    assert parse_signed_receipt(signed) == (tl, SIG)


_JUNK = st.sampled_from([None, True, 1.5, "", "x", -1, 1 << 31, 1 << 63, "A" * 64, " " * 64, "0x" + "0" * 62,
                         "+" + "0" * 15, "ab" * 31 + " 0", "\ud800", [], {}])


@pytest.mark.parametrize("kind", list(KINDS))
@given(data=st.data())
def test_fast_signed_bytes_equals_the_generic_codec(kind, data):
    r = data.draw(receipts(kind, data.draw(st.sampled_from(PROFILES))))
    keys = sorted(set(r) | {"block_id", "wc", "mc_block_id", "mc_block_file_hash", "error", "sent_to"})
    for _ in range(data.draw(st.integers(0, 2))):  # break it a little, or not at all
        key = data.draw(st.sampled_from(keys))
        if data.draw(st.booleans()):
            r.pop(key, None)
        else:
            r[key] = data.draw(_JUNK)
    fast = tr._tables().fast[kind](r) if isinstance(r.get("kind"), str) and r["kind"] in KINDS else None
    try:
        ref = serialize(SCHEMA, receipt_to_tl(r))
    except ReceiptConversionError as exc:
        assert fast is None, f"fast path accepted what the reference rejects: {exc}"
        with pytest.raises(ReceiptConversionError) as again:
            signed_bytes(r)
        assert str(again.value) == str(exc)
    else:
        assert fast is None or fast == ref
        assert signed_bytes(r) == ref


def test_fast_path_takes_every_receipt_of_the_bundled_logs():
    fast = tr._tables().fast
    n = 0
    for path in sorted((FIXTURES / "logs").glob("*-clean.jsonl")):
        for line in path.read_bytes().splitlines()[:3000]:
            rec = orjson.loads(line)
            r = rec if "kind" in rec else rec["value"]
            r = orjson.loads(r) if isinstance(r, str) else r
            out = fast[r["kind"]](r)
            assert out is not None and out == serialize(SCHEMA, receipt_to_tl(r)), r
            n += 1
    assert n > 1000


def test_seed_examples_convert_and_the_repeated_file_hash_is_recovered():
    lines = (FIXTURES / "seed" / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        r = json.loads(line, object_pairs_hook=receipt_from_pairs)
        assert tl_to_receipt(receipt_to_tl(r)) == {**r, "signature": ""}
    finalized = json.loads(lines[6], object_pairs_hook=receipt_from_pairs)
    assert finalized["mc_block_file_hash"].startswith("33b2") and finalized["block_file_hash"].startswith("00a2")
    master = receipt_to_tl(finalized)["status"]["master_id"]
    assert master["workchain"] == -1 and master["seqno"] == 234 and master["file_hash"].hex().startswith("33b2")
    plain = json.loads(lines[6])  # a plain reader keeps the last key: the master file hash is lost, taken as zero
    assert receipt_to_tl(plain)["status"]["master_id"]["file_hash"] == bytes(32)
    with pytest.raises(ReceiptConversionError, match="signature: expected 64 bytes.*found 32 bytes"):
        decode_signature(finalized)  # the seed's signatures are 32-byte placeholders


def test_legacy_signed_receipt_with_signature_bytes_is_decoded():
    r = {"kind": "PutIntoQueue", "message_id": H, "timestamp": 5, "source_id": H, "signature": ""}
    inner = signed_bytes(r)
    old = u32(LEGACY_SIGNED_ID) + pack_bytes(inner) + pack_bytes(SIG)
    assert parse_signed_receipt(old) == (receipt_to_tl(r), SIG)
    with pytest.raises(TlError, match="64 signature bytes"):
        parse_signed_receipt(u32(LEGACY_SIGNED_ID) + pack_bytes(inner) + pack_bytes(SIG[:63]))


# -- strict decoding ---------------------------------------------------------------------------------

def _rejected(error: str) -> bytes:
    return signed_bytes({"kind": "RejectedByQueue", "message_id": H, "timestamp": 9, "source_id": H, "signature": "", "error": error})


ERROR_AT = 4 + 32 + 4 + 4 + 80  # the error string of a rejected receipt starts here


def test_strict_decoding_truncated_and_trailing():
    wire = _rejected("ab")
    with pytest.raises(TlError, match=r"source_id: expected 32 bytes \(int256\), found 31 bytes.*offset 136"):
        deserialize(SCHEMA, wire[:-1], "tonNode.RempReceipt")
    with pytest.raises(TlError, match=rf"1 trailing byte.*offset {len(wire)}"):
        deserialize(SCHEMA, wire + b"\0", "tonNode.RempReceipt")
    with pytest.raises(TlError, match=r"expected 4 bytes \(constructor id of tonNode.RempReceipt\), found 0 bytes.*offset 0"):
        deserialize(SCHEMA, b"", "tonNode.RempReceipt")


def test_strict_decoding_unknown_and_misplaced_ids():
    wire = bytearray(_rejected("ab"))
    wire[36:40] = u32(0xDEADBEEF)
    with pytest.raises(TlError) as err:
        deserialize(SCHEMA, bytes(wire), "tonNode.RempReceipt")
    msg = str(err.value)
    assert "tonNode.rempReceipt.status" in msg and "tonNode.RempMessageStatus" in msg and "0xdeadbeef" in msg
    assert "offset 36" in msg
    wire[36:40] = u32(ID_TABLE["tonNode.rempQueue"])  # a level where the status belongs
    with pytest.raises(TlError, match=r"the id of tonNode.rempQueue \(type tonNode.RempMessageLevel\).*offset 36"):
        deserialize(SCHEMA, bytes(wire), "tonNode.RempReceipt")


def test_strict_decoding_padding_prefix_and_utf8():
    wire = bytearray(_rejected("ab"))
    assert wire[ERROR_AT:ERROR_AT + 4] == b"\x02ab\x00"
    wire[ERROR_AT + 3] = 1
    with pytest.raises(TlError, match=rf"status.error: expected zero padding bytes, found 0x01 at byte offset {ERROR_AT + 3}"):
        deserialize(SCHEMA, bytes(wire), "tonNode.RempReceipt")
    good = _rejected("abc")
    assert good[ERROR_AT:ERROR_AT + 4] == b"\x03abc"
    long_form = good[:ERROR_AT] + b"\xfe\x03\x00\x00abc\x00" + good[ERROR_AT + 4:]
    with pytest.raises(TlError, match=rf"canonical.*0xfe form for length 3 at byte offset {ERROR_AT}"):
        deserialize(SCHEMA, long_form, "tonNode.RempReceipt")
    reserved = good[:ERROR_AT] + b"\xff" + good[ERROR_AT + 1:]
    with pytest.raises(TlError, match=rf"0xff is reserved.*offset {ERROR_AT}"):
        deserialize(SCHEMA, reserved, "tonNode.RempReceipt")
    bad_utf8 = good[:ERROR_AT] + b"\x03a\xffc" + good[ERROR_AT + 4:]
    with pytest.raises(TlError, match=rf"UTF-8.*offset {ERROR_AT + 2}"):
        deserialize(SCHEMA, bad_utf8, "tonNode.RempReceipt")


def test_signed_receipt_errors_point_into_the_embedded_receipt():
    r = {"kind": "RejectedByQueue", "message_id": H, "timestamp": 9, "source_id": H, "signature": "", "error": "ab"}
    wire = bytearray(signed_receipt_bytes(r, SIG))
    start = 4 + 1  # the id, then a one-byte length prefix
    wire[start + ERROR_AT + 3] = 7
    with pytest.raises(TlError) as err:
        parse_signed_receipt(bytes(wire))
    assert "tonNode.rempSignedReceipt.receipt" in str(err.value) and f"offset {start + ERROR_AT + 3}" in str(err.value)
    with pytest.raises(TlError, match="trailing"):
        parse_signed_receipt(signed_receipt_bytes(r, SIG) + b"\0")


def test_serialize_checks_values():
    block = {"@type": "tonNode.blockIdExt", "workchain": 1 << 31, "shard": 0, "seqno": 0, "root_hash": bytes(32), "file_hash": bytes(32)}
    with pytest.raises(TlError, match=r"tonNode.blockIdExt.workchain: expected an int in"):
        serialize(SCHEMA, block)
    with pytest.raises(TlError, match=r"root_hash: expected 32 bytes \(int256\), found 31 bytes"):
        serialize(SCHEMA, {**block, "workchain": 0, "root_hash": bytes(31)})
    with pytest.raises(TlError, match="unknown field"):
        serialize(SCHEMA, {**block, "workchain": 0, "extra": 1})
    with pytest.raises(TlError, match="no such key"):
        serialize(SCHEMA, {"@type": "tonNode.blockIdExt"})


# -- conversion errors --------------------------------------------------------------------------------

BASE = {"kind": "IncludedIntoBlock", "message_id": H, "timestamp": 1, "source_id": H, "signature": SIG.hex(),
        "block_id": H, "block_file_hash": H, "block_seqno": 1, "shard": "3800000000000000", "wc": 0}


@pytest.mark.parametrize("change, pattern", [
    ({"message_id": None}, r"message_id: expected a value \(required for every receipt\), found no such field"),
    ({"message_id": "zz" * 32}, r"message_id: expected 64 hex digits .*non-hex"),
    ({"source_id": H[:-2]}, r"source_id: expected 64 hex digits .*62 characters"),
    ({"kind": "Nope"}, r"kind: expected one of the kinds of kinds.yaml .*found 'Nope'"),
    ({"kind": "AddedToBlock"}, r"kind: .*did you mean IncludedIntoBlock"),
    ({"kind": None}, r"kind: expected one of the kinds"),
    ({"wc": None}, r"wc: expected a value \(the shard_block group of IncludedIntoBlock is present"),
    ({"wc": True}, r"wc: expected an integer, found True"),
    ({"block_seqno": 1 << 31}, r"block_seqno: expected an integer in \[-2147483648, 2147483647\]"),
    ({"shard": "0x00000000000000"}, r"shard: expected 16 hex digits"),
    ({"timestamp": 1.5}, r"timestamp: expected an integer, found 1.5"),
    ({"error": "x"}, r"error: expected no error on IncludedIntoBlock \(kinds.yaml gives this kind no such field"),
])
def test_conversion_errors_name_the_field(change, pattern):
    r = {k: v for k, v in {**BASE, **change}.items() if v is not None or k == "kind"}
    with pytest.raises(ReceiptConversionError, match=pattern):
        receipt_to_tl(r)
    with pytest.raises(ReceiptConversionError, match=pattern):
        signed_bytes(r)


def test_signature_decoding():
    assert decode_signature(BASE) == SIG
    assert decode_signature({**BASE, "signature": SIG.hex().upper()}) == SIG
    assert decode_signature({**BASE, "signature": base64.b64encode(SIG).decode()}) == SIG
    assert decode_signature({**BASE, "signature": ""}) is None
    assert decode_signature({k: v for k, v in BASE.items() if k != "signature"}) is None
    for bad, pattern in [(SIG[:63].hex(), r"signature: expected 64 bytes .*found 63 bytes of hex"),
                         (base64.b64encode(SIG[:63]).decode(), r"signature: expected 64 bytes \(base64\), found 63 bytes"),
                         ("not base64!", r"signature: expected 128 hex digits or base64 of 64 bytes"),
                         (base64.b64encode(SIG).decode()[:-3] + "B==", r"canonical base64"),
                         (123, r"signature: expected a string")]:
        with pytest.raises(ReceiptConversionError, match=pattern):
            decode_signature({**BASE, "signature": bad})
    with pytest.raises(ReceiptConversionError, match="signature: expected 64 bytes, found 63 bytes"):
        signed_receipt_bytes(BASE, SIG[:63])
    with pytest.raises(ReceiptConversionError, match="signature: expected 64 bytes, found 63 bytes"):
        tl_to_receipt(receipt_to_tl(BASE), signature=SIG[:63])


def test_tl_to_receipt_refuses_what_the_kind_cannot_carry():
    tl = receipt_to_tl({"kind": "AcceptedByFullnode", "message_id": H, "timestamp": 1, "source_id": H})
    assert tl["status"]["level"]["@type"] == "tonNode.rempFullnode"
    tl["status"]["block_id"]["seqno"] = 5
    with pytest.raises(ReceiptConversionError, match=r"status.block_id: expected the default block id \(kind AcceptedByFullnode"):
        tl_to_receipt(tl)
    fin = receipt_to_tl({**BASE, "kind": "Finalized", "mc_block_id": H, "mc_block_file_hash": H, "mc_block_seqno": 3})
    fin["status"]["master_id"]["workchain"] = 0
    with pytest.raises(ReceiptConversionError, match=r"status.master_id.workchain: expected -1"):
        tl_to_receipt(fin)
    fin["status"]["level"] = {"@type": "tonNode.rempFullnode"}
    fin["status"]["master_id"]["workchain"] = -1
    with pytest.raises(ReceiptConversionError, match="kind AcceptedByFullnode has no block fields"):
        tl_to_receipt(fin)
    with pytest.raises(UsageError, match="unknown REMP profile"):
        tl_to_receipt(fin, profile="nope")
    with pytest.raises(ReceiptConversionError, match=r"tonNode.rempReceipt.message_id: expected 32 bytes"):
        tl_to_receipt({**fin, "message_id": b"x"})
