"""`rmkit rmb verify` and `rmkit rmb sign` under bad input: malformed signatures and keys are
findings of their line (or a usage error for a key given on the command line), the lines are the
ones `rmkit check` reads, and every other line is still verified."""

import json

import pytest

from rmkit.cli import main
from rmkit.protocols.rmb.signing import keypair

GOOD = {"ver": 1, "uid": "u", "cmd": "c", "exp": 5, "try": 1, "dat": "", "src": 11, "dst": [2], "ret": "r", "now": 1}
SEED = bytes(range(32))
NO_POINT = "ff" * 32  # 32 bytes that decode to no Ristretto point: no sr25519 key


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


def signed(key_type: str = "sr25519", **fields) -> dict:
    return keypair(SEED, key_type).sign({**GOOD, **fields})


def public(key_type: str = "sr25519") -> str:
    return keypair(SEED, key_type).public.hex()


def write_lines(path, *msgs) -> str:
    path.write_text("".join(json.dumps(m) + "\n" for m in msgs))
    return str(path)


def directory(tmp_path, key: str, key_type: str = "sr25519") -> str:
    (tmp_path / "d.json").write_text(json.dumps({"twins": {"11": {"address": "127.0.0.1:1", "key_type": key_type, "public_key": key}}}))
    return str(tmp_path / "d.json")


@pytest.mark.parametrize("sig", [
    "73" + "ff" * 64,  # a scalar with its high bit set: schnorrkel refuses to read it
    "73" + "00" * 64,  # no schnorrkel marker bit
])
def test_a_structurally_invalid_sr25519_signature_is_a_finding_of_its_line(tmp_path, capsys, sig):
    log = write_lines(tmp_path / "m.jsonl", {**signed(), "sig": sig}, signed())
    code, out, _ = run(capsys, "rmb", "verify", "--public-key", public(), "--key-type", "sr25519", log)
    assert code == 1
    assert f"{log}:1: invalid: RMB-SIG-002" in out and f"{log}:2: valid (sr25519)" in out


def test_a_key_on_the_command_line_that_is_no_sr25519_point_is_a_usage_error(tmp_path, capsys):
    log = write_lines(tmp_path / "m.jsonl", signed())
    code, out, err = run(capsys, "rmb", "verify", "--public-key", NO_POINT, "--key-type", "sr25519", log)
    assert code == 2 and out == "" and "--public-key: not an sr25519 public key" in err


def test_a_directory_key_that_is_no_point_is_a_finding_of_each_line_as_check_judges_it(tmp_path, capsys):
    log = write_lines(tmp_path / "m.jsonl", signed(), {**signed(), "src": 12})
    code, out, _ = run(capsys, "rmb", "verify", "--directory", directory(tmp_path, NO_POINT), log)
    assert code == 1
    assert f"{log}:1: invalid: RMB-SIG-002: twin 11's key is no sr25519 public key" in out
    assert f"{log}:2: invalid: RMB-REMOTE-003" in out  # the next line is still judged


def test_the_same_directory_key_in_check_is_the_same_finding():
    from rmkit.protocols.rmb.signing import signature_verdict

    rule, why, used = signature_verdict(signed(), bytes.fromhex(NO_POINT), "sr25519", "twin 11's")
    assert (rule, used) == ("RMB-SIG-002", "sr25519") and "no sr25519 public key" in why


@pytest.mark.parametrize("bent", [
    lambda s: s.upper(),                      # upper-case hex
    lambda s: s[:2] + " " + s[2:],            # a space
    lambda s: s + "\n",                       # a trailing newline
    lambda s: " " + s,                        # a leading space
    lambda s: "0x" + s,
])
@pytest.mark.parametrize("key_type", ["ed25519", "sr25519"])
def test_a_sig_not_written_as_lower_case_hex_does_not_verify(tmp_path, capsys, bent, key_type):
    msg = signed(key_type)
    log = write_lines(tmp_path / "m.jsonl", {**msg, "sig": bent(msg["sig"])}, msg)
    code, out, _ = run(capsys, "rmb", "verify", "--public-key", public(key_type), "--key-type", key_type, log)
    assert code == 1
    assert f"{log}:1: invalid: RMB-SIG-001: sig is not lower-case hex" in out and f"{log}:2: valid" in out


# -- the lines: those `rmkit check` reads ------------------------------------------------------
def test_lines_split_on_newline_only_with_a_bom_as_check_reads_them(tmp_path, capsys):
    msgs = [signed(cmd="a\u2028b"), signed(cmd="c\u0085d", uid="v"), signed(uid="w")]
    text = "\ufeff" + json.dumps(msgs[0], ensure_ascii=False) + "\n" + json.dumps(msgs[1], ensure_ascii=False) + "\r\n" + \
        json.dumps(msgs[2], ensure_ascii=False) + "\n"
    (tmp_path / "m.jsonl").write_bytes(text.encode("utf-8"))
    log = str(tmp_path / "m.jsonl")
    code, out, err = run(capsys, "rmb", "verify", "--public-key", public(), "--key-type", "sr25519", log)
    assert code == 0 and "3 valid, 0 invalid, 0 unreadable" in err
    assert [line.split(": ")[0] for line in out.splitlines()] == [f"{log}:1", f"{log}:2", f"{log}:3"]


def test_a_lone_cr_does_not_end_a_line(tmp_path, capsys):
    (tmp_path / "m.jsonl").write_bytes((json.dumps(signed()) + "\r" + json.dumps(signed()) + "\n" + json.dumps(signed())).encode())
    log = str(tmp_path / "m.jsonl")
    code, out, err = run(capsys, "rmb", "verify", "--public-key", public(), "--key-type", "sr25519", log)
    assert code == 2 and f"{log}:1: not JSON" in err and f"{log}:2: valid" in out and "1 valid, 0 invalid, 1 unreadable" in err


def test_deep_nesting_is_an_unreadable_line_and_the_rest_is_verified(tmp_path, capsys):
    (tmp_path / "m.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n" + json.dumps({**GOOD, "dat": [[[[[]]]]] * 1}) +
                                      "\n" + json.dumps(signed()) + "\n")
    log = str(tmp_path / "m.jsonl")
    code, out, err = run(capsys, "rmb", "verify", "--public-key", public(), "--key-type", "sr25519", log)
    assert code == 2 and f"{log}:1: not JSON (depth limit exceeded" in err
    assert f"{log}:2: invalid: RMB-MSG" in out and f"{log}:3: valid" in out


def test_a_line_past_the_limit_is_reported_unread(tmp_path, capsys, monkeypatch):
    import rmkit.conformance.rmb.messages_io as messages_io

    monkeypatch.setattr(messages_io, "MAX_LINE_BYTES", 1000)  # the limit's own figure is docs/input-limits.md's
    (tmp_path / "m.jsonl").write_text(json.dumps(signed(cmd="x" * 2000)) + "\n" + json.dumps(signed()) + "\n")
    log = str(tmp_path / "m.jsonl")
    code, out, err = run(capsys, "rmb", "verify", "--public-key", public(), "--key-type", "sr25519", log)
    assert code == 2 and f"{log}:1: line too long" in err and f"{log}:2: valid" in out


# -- closed standard streams -------------------------------------------------------------------
def _started_without(fd: int, *argv):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "rmkit", *map(str, argv)], capture_output=fd != 1, stderr=None if fd != 1 else subprocess.PIPE,
                          preexec_fn=lambda: os.close(fd), timeout=120)


@pytest.mark.parametrize("fd, argv", [
    (1, ["check", "--protocol", "rmb", "{log}"]),
    (1, ["rmb", "sign", "--seed", "00" * 32, "--key-type", "ed25519", "{log}"]),
    (1, ["rmb", "verify", "--public-key", public(), "--key-type", "sr25519", "{log}"]),  # a pass whose report is lost: none
    (0, ["rmb", "sign", "--seed", "00" * 32, "--key-type", "ed25519", "-"]),
    (0, ["rmb", "verify", "--public-key", public(), "--key-type", "sr25519", "-"]),
    (0, ["check", "--protocol", "corda", "-"]),
])
def test_a_closed_standard_stream_is_exit_2_naming_it(tmp_path, fd, argv):
    log = write_lines(tmp_path / "m.jsonl", signed())
    done = _started_without(fd, *[a.replace("{log}", log) for a in argv])
    assert done.returncode == 2, done.stderr
    assert f"standard {'output' if fd == 1 else 'input'} is closed".encode() in done.stderr, done.stderr


def test_with_stdout_and_stderr_closed_a_lost_report_is_still_exit_2(tmp_path):
    """The error about stdout had nowhere to go but stdout: it escaped as an exception, exit 1."""
    import os
    import subprocess
    import sys

    log = write_lines(tmp_path / "m.jsonl", signed())
    done = subprocess.run([sys.executable, "-m", "rmkit", "rmb", "verify", "--public-key", public(), "--key-type", "sr25519", log],
                          preexec_fn=lambda: (os.close(1), os.close(2)), timeout=120)
    assert done.returncode == 2
