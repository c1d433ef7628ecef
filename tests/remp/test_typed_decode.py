"""The REMP checker's typed decoder (protocols/remp/records.py) against the general reading
(orjson into a dict): on every REMP fixture log, under both profiles, the two give the same report;
line by line, a receipt the typed decoder accepts carries the same fields as its dict; and the
lines where the two JSON readers differ are left to the general reading."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.protocols.remp.model import model_for
from rmkit.render.jsonout import render_json

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p for p in (ROOT / "fixtures" / "remp").rglob("*.jsonl*") if p.is_file())
PROFILES = ("spec", "ever-node")


def _report(path: Path, profile: str, typed: bool) -> dict:
    rep = RempLogChecker(profile, typed=typed, max_examples=0).run([str(path)])
    out = orjson.loads(render_json(rep))
    for timing in ("elapsed_s", "receipts_per_s"):
        out["metrics"].pop(timing, None)
    return out


def test_fixtures_found():
    assert len(FIXTURES) > 40, FIXTURES


@pytest.mark.parametrize("profile", PROFILES)
def test_same_report_on_every_fixture(profile):
    differ = [p.relative_to(ROOT).as_posix() for p in FIXTURES if _report(p, profile, True) != _report(p, profile, False)]
    assert not differ


def _fields(dec, ki, rec) -> dict:
    return {name: getattr(rec, name) for name in rec.__struct_fields__} | {"kind": ki.name}


@pytest.mark.parametrize("profile", PROFILES)
def test_typed_receipt_equals_its_dict(profile):
    dec = model_for(profile).typed_decoder()
    decode, kind_of = dec.decode, dec.kind_of
    typed = 0
    for path in FIXTURES:
        if path.suffix != ".jsonl":
            continue
        for line in path.read_bytes().splitlines():
            try:
                rec = decode(line)
            except Exception:  # noqa: BLE001 - the general reading takes the line
                continue
            typed += 1
            obj = orjson.loads(line)
            got = _fields(decode, kind_of[type(rec)], rec)
            assert got == {k: obj.get(k) for k in got}, line
            assert set(obj) <= set(got), line
    assert typed > 5_000


# Lines on which msgspec and orjson would not agree, or which the typed receipt cannot hold:
# each must raise in the typed decoder so that the general reading judges it.
LEFT_TO_THE_GENERAL_READING = [
    b'{"kind":"PutIntoQueue","timestamp":99999999999999999999999}',  # orjson: a float; msgspec: an int
    b'{"kind":"PutIntoQueue","timestamp":9223372036854775808}',  # beyond 64 signed bits
    b'{"kind":"PutIntoQueue","timestamp":true}',
    b'{"kind":"PutIntoQueue","timestamp":1.0}',
    b'{"kind":"PutIntoQueue","message_id":7}',
    b'{"kind":"PutIntoQueue","signatre":"00"}',  # a misspelt field: REMP-SCHEMA-001 names it
    b'{"kind":"PutIntoQueue","vendor_field":1}',  # an implementation's own field
    b'{"kind":"Put_Into_Queue"}',  # unknown kind: REMP-KIND-001 explains
    b'{"kind":7}',
    b'{"message_id":"00"}',
    b'{"topic":"t","value":{"kind":"PutIntoQueue"}}',  # a Kafka record
    b'["kind","PutIntoQueue"]',
    b'{"kind":"PutIntoQueue","source_id":"\\ud800"}',
    b'{"kind":"PutIntoQueue"} trailing',
    b'\xef\xbb\xbf{"kind":"PutIntoQueue"}',
    b'{"kind":"SentToValidators","sent_to":"3"}',
    # a required field missing or null: not typed, so that the general reading reports it
    b'{"kind":"SentToValidators","total_validators":7}',
    b'{"kind":"SentToValidators","sent_to":-1,"total_validators":7}',  # below the field's minimum
    b'{"kind":"SentToValidators","sent_to":3,"total_validators":0}',
    b'{"kind":"SentToValidators","sent_to":null,"total_validators":7}',
    b'{"kind":"IncludedIntoAcceptedBlock","block_id":null,"block_file_hash":"00","block_seqno":1,"shard":"8000000000000000","wc":0}',
    b'{"kind":"IncludedIntoAcceptedBlock","block_file_hash":"00","block_seqno":1,"shard":"8000000000000000","wc":0}',
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("line", LEFT_TO_THE_GENERAL_READING)
def test_typed_decoder_leaves_odd_lines_alone(profile, line):
    decode = model_for(profile).typed_decoder().decode
    with pytest.raises(Exception):  # noqa: B017 - any error sends the line to the general reading
        decode(line)


def test_odd_lines_judged_alike(tmp_path):
    """A log of the odd lines above among good ones: the same report either way."""
    good = (ROOT / "fixtures" / "remp" / "logs" / "sim-spec-faults.jsonl").read_bytes().splitlines()[:400]
    odd = [line for line in LEFT_TO_THE_GENERAL_READING]
    # the first good receipts again, with a repeated key (the last one wins in both readers),
    # a null field and the master block's file hash missing (recovered by the general reading)
    first = orjson.loads(good[0])
    odd.append(good[0][:-1] + b',"timestamp":' + str(first["timestamp"] + 1).encode() + b"}")
    odd.append(good[1].replace(b'"source_id":', b'"source_id":null,"x_source_id":'))
    fin = next(line for line in good if b'"Finalized"' in line)
    odd.append(orjson.dumps({k: v for k, v in orjson.loads(fin).items() if k != "mc_block_file_hash"}))
    # a whole receipt but for one required field, missing or null
    inc = orjson.loads(next(line for line in good if b'"IncludedIntoAcceptedBlock"' in line))
    odd.append(orjson.dumps({k: v for k, v in inc.items() if k != "wc"}))
    odd.append(orjson.dumps({**inc, "block_seqno": None}))
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"\n".join(good[:200] + odd + good[200:]) + b"\n")
    for profile in PROFILES:
        assert _report(path, profile, True) == _report(path, profile, False)


@pytest.mark.parametrize("profile", PROFILES)
def test_typed_kafka_record_equals_its_dict(profile):
    """A Kafka dump's record typed whole (records.py ``decode_records``): its receipt, time,
    partition and key are the dict's; the dumps of the fixtures are read this way, not in general."""
    dec = model_for(profile).typed_decoder()
    typed = 0
    for path in FIXTURES:
        if path.suffix != ".jsonl":
            continue
        for line in path.read_bytes().splitlines():
            try:
                rec = dec.decode_record(line)
            except Exception:  # noqa: BLE001 - the general reading takes the line
                continue
            typed += 1
            obj = orjson.loads(line)
            assert (rec.timestamp, rec.key, rec.topic, rec.partition, rec.offset) == \
                   (obj["timestamp"], obj["key"], obj.get("topic"), obj.get("partition"), obj.get("offset"))
            got = _fields(dec, dec.kind_of[type(rec.value)], rec.value)
            assert got == {k: obj["value"].get(k) for k in got}, line
    assert typed > 100


@pytest.mark.parametrize("typed", [True, False])
def test_a_record_produced_again_is_one_receipt(tmp_path, typed):
    """A Kafka record produced again (another offset and time, the same receipt) is a redelivery,
    read typed or in general."""
    src = ROOT / "fixtures" / "remp" / "rules" / "spec" / "clean-kafka-keyed.jsonl"
    lines = src.read_bytes().splitlines()
    again = orjson.loads(lines[1])
    again["offset"] = 10_000
    again["timestamp"] += 5
    path = tmp_path / "again.jsonl"
    path.write_bytes(b"\n".join(lines[:2] + [orjson.dumps(again)] + lines[2:]) + b"\n")
    rep = RempLogChecker("spec", typed=typed).run([str(path)])
    assert rep.metrics["redelivered_receipts"] == 1
    assert rep.verdict == "pass", rep.counts
