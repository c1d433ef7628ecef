"""`rmkit keys gen`, `rmkit receipt encode | sign | verify`, `rmkit simulate --keys` and
`rmkit check --validators` with keys, as a user meets them."""

import json
import re

import pytest

from conftest import FIXTURES
from rmkit.cli import main

VECTORS = [json.loads(x) for x in (FIXTURES / "tl" / "vectors.jsonl").read_text().splitlines()]
RULES = FIXTURES / "rules"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    assert main(["keys", "gen", "--validators", "4", "--sessions", "6", "--seed", "cli", "--out", str(d)]) == 0
    return d


@pytest.mark.parametrize("argv", [["keys", "gen"], ["receipt", "encode"], ["receipt", "sign"], ["receipt", "verify"]])
def test_help(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(argv + ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: rmkit" in out and ("exit codes" in out or "examples" in out)


def test_groups_without_an_action_print_help_and_exit_2(capsys):
    for group in ("keys", "receipt"):
        code, out, _ = run(capsys, group)
        assert code == 2 and "usage: rmkit" in out


def test_keys_gen_is_deterministic_with_a_seed(capsys, tmp_path, keys):
    code, _, err = run(capsys, "keys", "gen", "--validators", "4", "--sessions", "6", "--seed", "cli", "--out", tmp_path / "again")
    assert code == 0 and "validators.yaml" in err
    assert (tmp_path / "again" / "validators.yaml").read_text() == (keys / "validators.yaml").read_text()
    code, _, err = run(capsys, "keys", "gen", "--validators", "0", "--out", tmp_path / "x")
    assert code == 2 and "--validators" in err


def test_encode_prints_the_signed_bytes_of_each_receipt(capsys, tmp_path):
    src = tmp_path / "v.jsonl"
    src.write_text("".join(json.dumps(v["receipt"]) + "\n" for v in VECTORS))
    code, out, err = run(capsys, "receipt", "encode", src)
    assert code == 0 and out.splitlines() == [v["tl_hex"] for v in VECTORS]
    # Kafka records are read too; bad lines are reported with file:line and field, the run goes on
    lines = [json.dumps({"topic": "t", "timestamp": 1, "key": "k", "value": VECTORS[0]["receipt"]}), "not json",
             json.dumps(dict(VECTORS[1]["receipt"], message_id="xyz")), json.dumps(VECTORS[2]["receipt"])]
    src.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "receipt", "encode", src)
    assert code == 2 and out.splitlines() == [VECTORS[0]["tl_hex"], VECTORS[2]["tl_hex"]]
    assert "v.jsonl:2: not JSON" in err and "v.jsonl:3: field message_id" in err


def test_sign_then_verify(capsys, tmp_path, keys):
    unsigned = [{k: v for k, v in x["receipt"].items() if k not in ("source_id", "signature")} for x in VECTORS if x["profile"] == "spec"]
    n = len(unsigned)
    src = tmp_path / "u.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in unsigned))
    key = keys / "keys" / "validator-1.json"
    code, out, err = run(capsys, "receipt", "sign", "--key", key, src, "-o", tmp_path / "s.jsonl")
    assert code == 0 and f"signed {n} receipt(s)" in err
    signed = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert all(len(r["signature"]) == 128 for r in signed)
    code, out, _ = run(capsys, "receipt", "verify", "--validators", keys / "validators.yaml", tmp_path / "s.jsonl")
    assert code == 0 and out.splitlines()[-1].startswith(f"{n} receipt(s): {n} valid, 0 invalid")
    # a changed receipt, one signed by another node in this one's name, an unknown source, an unsigned one
    bad = list(signed)
    bad[0] = dict(bad[0], timestamp=bad[0]["timestamp"] + 1)
    bad[1] = json.loads(run(capsys, "receipt", "sign", "--key", keys / "keys" / "validator-2.json", "--replace-source", _file(tmp_path, [signed[1]]))[1])
    bad[1]["source_id"] = signed[1]["source_id"]
    bad[2] = dict(bad[2], source_id="ab" * 32)
    bad[3] = dict(bad[3], signature="")
    code, out, _ = run(capsys, "receipt", "verify", "--validators", keys / "validators.yaml", "--problems-only", _file(tmp_path, bad))
    lines = out.splitlines()
    assert code == 1 and len(lines) == 5
    assert ":1: invalid: " in lines[0] and ":2: invalid: " in lines[1] and ":3: unknown-source: " in lines[2] and ":4: unsigned: " in lines[3]
    assert lines[-1] == f"{n} receipt(s): {n - 4} valid, 2 invalid, 1 unknown-source, 1 unsigned, 0 malformed"
    code, out, _ = run(capsys, "receipt", "verify", "--validators", keys / "validators.yaml", "--format", "jsonl", _file(tmp_path, bad[:2]))
    docs = [json.loads(x) for x in out.splitlines()]
    assert code == 1 and [d.get("status") for d in docs[:2]] == ["invalid", "invalid"] and docs[2]["summary"]["invalid"] == 2


def _file(tmp_path, recs, name="x.jsonl"):
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs))
    return p


def test_sign_refuses_another_source_and_reports_the_line(capsys, tmp_path, keys):
    rec = VECTORS[0]["receipt"]
    code, out, err = run(capsys, "receipt", "sign", "--key", keys / "keys" / "fullnode.json", _file(tmp_path, ["[]", rec]))
    assert code == 2 and out == ""
    assert "x.jsonl:1: expected a JSON object" in err and "x.jsonl:2: field source_id: the receipt names source" in err


def test_verify_usage_and_input_errors(capsys, tmp_path, keys):
    code, _, err = run(capsys, "receipt", "verify", "--validators", RULES / "nope.yaml", _file(tmp_path, [VECTORS[0]["receipt"]]))
    assert code == 2 and "cannot read" in err
    roles = tmp_path / "roles.yaml"
    roles.write_text(f"validators: [{'ab' * 32}]\n")
    code, _, err = run(capsys, "receipt", "verify", "--validators", roles, _file(tmp_path, [VECTORS[0]["receipt"]]))
    assert code == 2 and "public keys" in err
    code, out, err = run(capsys, "receipt", "verify", "--validators", keys / "validators.yaml", _file(tmp_path, ["{oops"]))
    assert code == 2 and "x.jsonl:1: not JSON" in err and out.startswith("0 receipt(s)")
    code, _, err = run(capsys, "receipt", "verify", "--validators", keys / "validators.yaml", tmp_path / "missing.jsonl")
    assert code == 2 and "no such file" in err


def test_verify_ever_node_allows_unsigned_validator_receipts(capsys):
    code, out, _ = run(capsys, "receipt", "verify", "--profile", "ever-node", "--validators", RULES / "validators.yaml",
                       RULES / "ever-node" / "clean-happy.jsonl")
    assert code == 0 and "unsigned as the ever-node profile allows" in out
    code, out, _ = run(capsys, "receipt", "verify", "--validators", RULES / "validators.yaml", RULES / "ever-node" / "clean-happy.jsonl")
    assert code == 1  # the documents' profile wants every receipt signed


def test_verify_and_sign_read_kcat_envelopes_as_check_does(capsys, tmp_path, keys):
    """The ever-node fixture's Kafka records as ``kcat -C -J`` envelopes (``payload``, ``ts``):
    verified as the Kafka records are, and signed keeping the envelope's layout."""
    kafka = [json.loads(x) for x in (RULES / "ever-node" / "clean-happy.jsonl").read_text().splitlines() if x.strip()]
    kcat = [{"topic": r["topic"], "partition": r["partition"], "offset": r["offset"], "key": r.get("key"),
             "payload": json.dumps(r["value"]) if i % 2 else r["value"], "ts": r["timestamp"]} for i, r in enumerate(kafka)]
    argv = ["receipt", "verify", "--profile", "ever-node", "--validators", RULES / "validators.yaml"]
    want = run(capsys, *argv, RULES / "ever-node" / "clean-happy.jsonl")
    got = run(capsys, *argv, _file(tmp_path, kcat))
    assert got[0] == want[0] == 0 and got[1].splitlines()[-1] == want[1].splitlines()[-1] and "malformed" not in got[2]
    code, out, err = run(capsys, "receipt", "sign", "--key", keys / "keys" / "fullnode.json", "--replace-source", _file(tmp_path, kcat))
    signed = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and len(signed) == len(kcat)
    assert all(set(s) == set(k) and type(s["payload"]) is type(k["payload"]) for s, k in zip(signed, kcat))


def test_simulate_with_keys_passes_check_with_validators(capsys, tmp_path, keys):
    log = tmp_path / "sim.jsonl"
    code, _, _ = run(capsys, "simulate", "--keys", keys, "--messages", "80", "--seed", "2", "--lifetime", "60", "-o", log)
    assert code == 0
    vs = keys / "validators.yaml"
    for jobs in ("1", "2"):
        code, out, _ = run(capsys, "check", "--lifetime", "60", "--validators", vs, "--jobs", jobs, "--format", "json", log)
        doc = json.loads(out)
        # the key set's sessions carry no start times: expiry is judged by time, not by session
        assert code == 0 and doc["verdict"] == "pass", doc["counts"]
        assert set(doc["not_checked"]) == {"REMP-EXPIRY-003", "REMP-EXPIRY-004"}, doc["not_checked"]
        assert doc["metrics"]["signatures"]["valid"] > 500 and doc["metrics"]["signatures"]["invalid"] == 0
    code, out, _ = run(capsys, "receipt", "verify", "--validators", vs, "--problems-only", log)
    assert code == 0 and " 0 invalid" in out
    # without --validators the signature rules are listed as not checked, in every format
    code, out, _ = run(capsys, "check", "--lifetime", "60", log)
    assert code == 0 and "not checked" in out
    code, out, _ = run(capsys, "check", "--lifetime", "60", "--format", "junit", log)
    assert re.search(r'name="REMP-SIG-002">\s*<skipped message="Signature does not verify: not checked', out), out


def test_explain_signature_rules(capsys):
    for rule in ("REMP-SIG-002", "REMP-SIG-003", "REMP-SIG-004"):
        code, out, _ = run(capsys, "explain", rule)
        assert code == 0 and f"-> {rule}" in out, out


def test_verify_judges_the_profiles_signature_encoding_as_check_does(capsys, tmp_path, keys):
    import base64

    unsigned = [{k: v for k, v in x["receipt"].items() if k not in ("source_id", "signature")} for x in VECTORS if x["profile"] == "spec"]
    src = _file(tmp_path, unsigned[:3], "u.jsonl")
    code, out, _ = run(capsys, "receipt", "sign", "--key", keys / "keys" / "validator-1.json", src)
    signed = [json.loads(x) for x in out.splitlines()]
    # the same signature in base64, as the ever-node profile writes it: it verifies, but is not spec's encoding
    other = [dict(r, signature=base64.b64encode(bytes.fromhex(r["signature"])).decode()) for r in signed]
    code, out, _ = run(capsys, "receipt", "verify", "--validators", keys / "validators.yaml", _file(tmp_path, other, "b.jsonl"))
    assert code == 1 and out.splitlines()[-1] == "3 receipt(s): 0 valid, 0 invalid, 0 unknown-source, 0 unsigned, 3 malformed"
    assert "the spec profile's encoding" in out and "verifies in another encoding" in out
    code, _, _ = run(capsys, "check", "--validators", keys / "validators.yaml", _file(tmp_path, other, "b.jsonl"))
    assert code == 1  # rmkit check: REMP-SIG-001
    code, out, _ = run(capsys, "receipt", "verify", "--profile", "ever-node", "--validators", keys / "validators.yaml",
                       _file(tmp_path, other, "b.jsonl"))
    assert "3 valid" in out.splitlines()[-1]


def test_the_receipt_command_is_remps_own_and_takes_no_other_protocol(capsys, tmp_path, keys):
    """`rmkit receipt` is added by REMP (its receipts, their TL encoding and signature encodings);
    `--protocol remp`, as command lines written for the core's command gave it, still runs it."""
    from rmkit.protocol import get_protocol

    import argparse

    sub = argparse.ArgumentParser().add_subparsers()
    get_protocol("remp").add_commands(sub)
    assert "receipt" in sub.choices
    src = _file(tmp_path, [VECTORS[0]["receipt"]])
    assert run(capsys, "receipt", "encode", "--protocol", "remp", src)[0] == 0
    with pytest.raises(SystemExit) as exit_:
        main(["receipt", "encode", "--protocol", "rmb", str(src)])
    assert exit_.value.code == 2 and "--protocol: invalid choice: 'rmb'" in capsys.readouterr().err
