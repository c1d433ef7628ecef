"""`rmkit rmb ...` and the rmb protocol through the core commands: exit codes and messages."""

import json

from conftest import REPO
from rmkit.cli import main
from rmkit.reference_impl.rmb.cluster import demo_seed


def test_core_commands_know_rmb(capsys, tmp_path):
    assert main(["spec", "validate", "--protocol", "rmb"]) == 0
    assert "47 rules" in capsys.readouterr().out
    assert main(["explain", "RMB-SIG-003"]) == 0
    assert "pxy" in capsys.readouterr().out
    assert main(["spec", "docs", "--protocol", "rmb", "--check", str(REPO / "spec" / "rmb" / "README.md")]) == 0
    capsys.readouterr()
    assert main(["spec", "profiles", "--protocol", "rmb"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("spec:")
    (tmp_path / "x.jsonl").write_text("{}\n")
    assert main(["check", "--protocol", "rmb", str(tmp_path / "x.jsonl")]) == 2
    assert "no log checker" in capsys.readouterr().err


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["rmb", "up", "0"]) == 2
    assert main(["rmb", "verify", "--public-key", "00" * 32, "-"]) == 2
    assert "needs --key-type" in capsys.readouterr().err
    (tmp_path / "m.json").write_text("{}")
    assert main(["rmb", "sign", "--seed", "abc", "--key-type", "ed25519", str(tmp_path / "m.json")]) == 2
    assert main(["rmb", "sign", "--mnemonic", "not a real mnemonic at all", "--key-type", "sr25519", str(tmp_path / "m.json")]) == 2
    assert "mnemonic" in capsys.readouterr().err


def test_serve_refuses_a_key_that_is_not_the_directorys(tmp_path, capsys):
    from rmkit.conformance.rmb.signing import keypair

    pub = keypair(demo_seed(1), "ed25519").public.hex()
    (tmp_path / "d.json").write_text(json.dumps({"twins": {"1": {"address": "127.0.0.1:1", "key_type": "ed25519", "public_key": pub}}}))
    assert main(["rmb", "serve", "--twin", "1", "--directory", str(tmp_path / "d.json"), "--seed", demo_seed(2).hex()]) == 2
    assert "not the directory's ed25519 key" in capsys.readouterr().err
    assert main(["rmb", "serve", "--twin", "5", "--directory", str(tmp_path / "d.json"), "--seed", demo_seed(1).hex()]) == 2
    assert main(["rmb", "serve", "--twin", "1", "--directory", str(tmp_path / "d.json"), "--seed", demo_seed(1).hex(),
                 "--redis", "redis://127.0.0.1:1/0", "--listen", "127.0.0.1:0"]) == 2  # no Redis there: cannot start
    assert "cannot start" in capsys.readouterr().err
