"""The kit's RMB v1 signer against the public npm client ts-rmb-http-client 1.1.2 (pinned in
interop/rmb-npm), both ways, both key types: messages the client signs verify in rmkit, and
messages rmkit signs verify with the client's own verifier (@polkadot/keyring)."""

import json
import sys

import pytest

from rmb_support import run_vectors
from rmkit.protocols.rmb.signing import BadSignature, keypair, seed_from_mnemonic, verify

WORDS = "bottom drive obey lake curtain smoke basket hold race lonely fit walk"
HEXSEED = "0x" + "5a" * 32
CASES = [
    # through the client's public API (one destination; it always sends pxy true)
    {"case": "sr-words-api", "key_type": "sr25519", "mnemonic": WORDS, "src": 7, "dst": [9], "cmd": "wallet.balance", "payload": '{"a": 1}'},
    {"case": "ed-words-api", "key_type": "ed25519", "mnemonic": WORDS, "src": 7, "dst": [9], "cmd": "wallet.balance", "payload": '{"a": 1}'},
    {"case": "sr-hex-nonascii-api", "key_type": "sr25519", "mnemonic": HEXSEED, "src": 41, "dst": [1002], "cmd": "zählen.größe✓", "payload": "héllo wörld ✓ 日本"},
    {"case": "ed-hex-nonascii-api", "key_type": "ed25519", "mnemonic": HEXSEED, "src": 41, "dst": [1002], "cmd": "zählen.größe✓", "payload": "héllo wörld ✓ 日本"},
    # the client's own signer with several destinations and pxy false/true
    {"case": "ed-multi-pxy-false", "key_type": "ed25519", "mnemonic": WORDS, "src": 1, "dst": [1, 23, 456], "cmd": "a.b", "payload": "x", "pxy": False, "uid": "u-1", "ret": "r-ü"},
    {"case": "sr-multi-pxy-false", "key_type": "sr25519", "mnemonic": WORDS, "src": 1, "dst": [2, 3], "cmd": "a.b", "payload": "x", "pxy": False, "uid": "u-2", "ret": "r"},
    {"case": "ed-multi-pxy-true", "key_type": "ed25519", "mnemonic": HEXSEED, "src": 5, "dst": [12, 3], "cmd": "c", "payload": "ÿ", "pxy": True, "uid": "u-3", "ret": "r"},
    {"case": "sr-multi-pxy-true", "key_type": "sr25519", "mnemonic": HEXSEED, "src": 5, "dst": [12, 3], "cmd": "c", "payload": "ÿ", "pxy": True, "uid": "u-4", "ret": "r"},
]
for c in CASES:
    c.setdefault("exp", 60), c.setdefault("try", 2), c.setdefault("now", 1_700_000_000 + len(c["case"]))


@pytest.fixture(scope="module")
def npm_signed():
    return {v["case"]: v for v in run_vectors("sign", CASES)}


def test_npm_signed_messages_verify_in_rmkit(npm_signed):
    for case in CASES:
        v = npm_signed[case["case"]]
        kp = keypair(seed_from_mnemonic(case["mnemonic"]), case["key_type"])
        assert v["public_key"] == kp.public.hex(), f"{case['case']}: key derivation differs from @polkadot/keyring"
        msg = v["message"]
        assert msg["pxy"] is case.get("pxy", True) and msg["dst"] == case["dst"] and msg["now"] == case["now"]
        assert verify(msg, kp.public, case["key_type"]) == case["key_type"], case["case"]
    assert {npm_signed[c["case"]]["message"]["sig"][:2] for c in CASES} == {"65", "73"}


def test_npm_signatures_break_where_the_challenge_says(npm_signed):
    for case in CASES:
        msg, pub = npm_signed[case["case"]]["message"], bytes.fromhex(npm_signed[case["case"]]["public_key"])
        for field, value in (("cmd", msg["cmd"] + "x"), ("dst", msg["dst"] + [99]), ("pxy", not msg["pxy"]), ("now", msg["now"] + 1)):
            with pytest.raises(BadSignature):
                verify({**msg, field: value}, pub)
        # fields outside the challenge may change in transit (RMB-SIG-005)
        assert verify({**msg, "exp": 1, "try": 9, "err": "e", "shm": "s"}, pub)
        # a verifier that always appends "false" would reject the client's pxy:true messages (RMB-SIG-003)
        if msg["pxy"]:
            with pytest.raises(BadSignature):
                verify({**msg, "pxy": False}, pub)


def test_ed25519_is_deterministic_and_matches_the_client_byte_for_byte(npm_signed):
    for case in CASES:
        if case["key_type"] == "ed25519":
            kp = keypair(seed_from_mnemonic(case["mnemonic"]), "ed25519")
            msg = npm_signed[case["case"]]["message"]
            assert kp.sign({**msg, "sig": ""})["sig"] == msg["sig"], case["case"]


def _rmkit_signed():
    out = []
    for i, case in enumerate(CASES):
        kp = keypair(seed_from_mnemonic(case["mnemonic"]), case["key_type"])
        msg = {"ver": 1, "uid": f"uid-{i}-ü", "cmd": case["cmd"], "exp": 30, "try": 3,
               "dat": __import__("base64").b64encode(case["payload"].encode()).decode(), "src": case["src"], "dst": case["dst"],
               "ret": "ret-✓", "shm": "", "now": case["now"], "err": ""}
        if i % 3:
            msg["pxy"] = bool(i % 2)  # absent, true and false all occur
        out.append({"case": case["case"], "public_key": kp.public.hex(), "message": kp.sign(msg)})
    return out


def test_rmkit_signed_messages_verify_with_the_npm_client():
    signed = _rmkit_signed()
    tampered = [{**s, "case": s["case"] + "-tampered", "message": {**s["message"], "dat": "dGFtcGVyZWQ="}} for s in signed]
    results = {r["case"]: r for r in run_vectors("verify", signed + tampered)}
    for s in signed:
        if "pxy" in s["message"]:
            assert results[s["case"]]["ok"], f"{s['case']}: the npm client rejects rmkit's signature: {results[s['case']]}"
        else:  # found by running it: the client's challenge then ends in "undefined", so it rejects the message
            assert not results[s["case"]]["ok"], f"{s['case']}: expected the npm verifier to reject a message without pxy"
    assert sum("pxy" in s["message"] for s in signed) >= 5
    for t in tampered:
        assert not results[t["case"]]["ok"], f"{t['case']}: the npm verifier accepted a tampered message"


def _cli(monkeypatch, capsys, argv, stdin=""):
    """rmkit in this process (a subprocess per call costs seconds on a busy machine)."""
    import io

    from rmkit.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_verifies_npm_vectors_and_exit_codes(npm_signed, tmp_path, monkeypatch, capsys):
    lines = [json.dumps(npm_signed[c["case"]]["message"], ensure_ascii=False) for c in CASES if c["mnemonic"] == WORDS and c["key_type"] == "sr25519"]
    pub = npm_signed["sr-words-api"]["public_key"]
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cli = ["rmb", "verify", "--public-key", pub, "--key-type", "sr25519"]
    code, out, err = _cli(monkeypatch, capsys, cli + [str(good)])
    assert code == 0, out + err
    assert out.count(": valid (sr25519)") == len(lines)
    bad = json.loads(lines[0])
    bad["cmd"] = "other"
    code, out, _ = _cli(monkeypatch, capsys, cli + ["-"], json.dumps(bad))
    assert code == 1 and "RMB-SIG-002" in out
    code, _, err = _cli(monkeypatch, capsys, cli + ["-"], lines[0] + "\n{not json\n")
    assert code == 2 and "<stdin>:2: not JSON" in err
    code, _, err = _cli(monkeypatch, capsys, cli + [str(tmp_path / "missing.json")])
    assert code == 2 and "cannot read" in err


def test_cli_signs_with_a_mnemonic_and_verifies_through_a_directory(tmp_path, monkeypatch, capsys):
    msg = {"ver": 1, "uid": "u", "cmd": "c", "exp": 5, "try": 1, "dat": "", "src": 11, "dst": [12], "ret": "r", "now": 1}
    kp = keypair(seed_from_mnemonic(WORDS), "ed25519")
    (tmp_path / "dir.yaml").write_text(f"twins:\n  '11': {{address: '127.0.0.1:1', key_type: ed25519, public_key: '{kp.public.hex()}'}}\n")
    code, signed, err = _cli(monkeypatch, capsys, ["rmb", "sign", "--mnemonic", WORDS, "--key-type", "ed25519", "-"], json.dumps(msg))
    assert code == 0, err
    assert json.loads(signed)["sig"] == kp.sign(msg)["sig"]
    cli = ["rmb", "verify", "--directory", str(tmp_path / "dir.yaml"), "-"]
    assert _cli(monkeypatch, capsys, cli, signed)[0] == 0
    other = json.loads(signed)
    other["src"] = 99
    code, out, _ = _cli(monkeypatch, capsys, cli, json.dumps(other))
    assert code == 1 and "unknown source twin 99" in out
    (tmp_path / "bad.yaml").write_text("twins:\n  '11': {address: x, key_type: rsa, public_key: '00'}\n")
    code, _, err = _cli(monkeypatch, capsys, cli[:-2] + [str(tmp_path / "bad.yaml"), "-"], signed)
    assert code == 2 and "bad.yaml:2" in err
