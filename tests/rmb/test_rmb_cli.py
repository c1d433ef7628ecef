"""`rmkit rmb ...` and the rmb protocol through the core commands: exit codes and messages."""

import json

import pytest

from conftest import REPO
from rmkit.cli import main
from rmkit.reference_impl.rmb.cluster import demo_seed


def test_core_commands_know_rmb(capsys, tmp_path):
    assert main(["spec", "validate", "--protocol", "rmb"]) == 0
    assert "48 rules" in capsys.readouterr().out
    assert main(["explain", "RMB-SIG-003"]) == 0
    assert "pxy" in capsys.readouterr().out
    assert main(["spec", "docs", "--protocol", "rmb", "--check", str(REPO / "spec" / "rmb" / "README.md")]) == 0
    capsys.readouterr()
    assert main(["spec", "profiles", "--protocol", "rmb"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("spec:")
    (tmp_path / "x.jsonl").write_text("{}\n")
    assert main(["check", "--protocol", "rmb", "--format", "json", str(tmp_path / "x.jsonl")]) == 2  # not a log record
    problem = json.loads(capsys.readouterr().out)["input_problems"][0]
    assert (problem["line"], problem["field"]) == (1, "format")


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["rmb", "up", "0"]) == 2
    assert main(["rmb", "verify", "--public-key", "00" * 32, "-"]) == 2
    assert "needs --key-type" in capsys.readouterr().err
    (tmp_path / "m.json").write_text("{}")
    assert main(["rmb", "sign", "--seed", "abc", "--key-type", "ed25519", str(tmp_path / "m.json")]) == 2
    assert main(["rmb", "sign", "--mnemonic", "not a real mnemonic at all", "--key-type", "sr25519", str(tmp_path / "m.json")]) == 2
    assert "mnemonic" in capsys.readouterr().err


def test_serve_refuses_a_key_that_is_not_the_directorys(tmp_path, capsys):
    from rmkit.protocols.rmb.signing import keypair

    pub = keypair(demo_seed(1), "ed25519").public.hex()
    (tmp_path / "d.json").write_text(json.dumps({"twins": {"1": {"address": "127.0.0.1:1", "key_type": "ed25519", "public_key": pub}}}))
    assert main(["rmb", "serve", "--twin", "1", "--directory", str(tmp_path / "d.json"), "--seed", demo_seed(2).hex()]) == 2
    assert "not the directory's ed25519 key" in capsys.readouterr().err
    assert main(["rmb", "serve", "--twin", "5", "--directory", str(tmp_path / "d.json"), "--seed", demo_seed(1).hex()]) == 2
    assert main(["rmb", "serve", "--twin", "1", "--directory", str(tmp_path / "d.json"), "--seed", demo_seed(1).hex(),
                 "--redis", "redis://127.0.0.1:1/0", "--listen", "127.0.0.1:0"]) == 2  # no Redis there: cannot start
    assert "cannot start" in capsys.readouterr().err


@pytest.mark.slow  # starts two redis-servers and two daemon processes
def test_up_prints_how_to_reach_the_twins_and_stops_every_child_on_ctrl_c(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from rmb_support import redis_server_or_skip

    redis_server_or_skip()
    proc = subprocess.Popen([sys.executable, "-m", "rmkit", "rmb", "up", "2", "--dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while not lines or not lines[-1].startswith("ready"):
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        lines.append(line)
    assert "redis://127.0.0.1:" in "".join(lines) and "MessageBusClient(" in "".join(lines)
    twins = json.loads((tmp_path / "twins.json").read_text())
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 4  # two redis-servers, two daemons
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0 and "stopped" in proc.stdout.read()
    time.sleep(0.2)
    for pid in children:
        try:
            os.kill(int(pid), 0)
            raise AssertionError(f"child {pid} still runs")
        except ProcessLookupError:
            pass
    assert len({t["redis_port"] for t in twins}) == 2


SEED = "11" * 32
GOOD = {"ver": 1, "uid": "u", "cmd": "c", "exp": 5, "try": 1, "dat": "", "src": 11, "dst": [2], "ret": "r", "now": 1}


@pytest.mark.parametrize("msgs, where", [
    ([{}], ":1: RMB-MSG-001: field ver"),
    ([{**GOOD, "dst": "2", "now": 1.5}], ":1: RMB-MSG-006: field dst"),
    ([GOOD, {**GOOD, "now": 1.5}], ":2: RMB-MSG-001: field now"),  # one bad line: nothing is signed
])
def test_sign_refuses_a_message_verify_would_reject(tmp_path, capsys, msgs, where):
    f = tmp_path / "m.jsonl"
    f.write_text("".join(json.dumps(m) + "\n" for m in msgs))
    assert main(["rmb", "sign", "--seed", SEED, "--key-type", "ed25519", str(f)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"{f}{where}" in err and "nothing signed" in err


def test_what_sign_signs_verify_accepts(tmp_path, capsys):
    from rmkit.protocols.rmb.signing import keypair

    (tmp_path / "m.json").write_text(json.dumps({**GOOD, "sig": 5}))  # an old sig of any shape is replaced
    assert main(["rmb", "sign", "--seed", SEED, "--key-type", "ed25519", str(tmp_path / "m.json")]) == 0
    (tmp_path / "s.jsonl").write_text(capsys.readouterr().out)
    pub = keypair(bytes.fromhex(SEED), "ed25519").public.hex()
    assert main(["rmb", "verify", "--public-key", pub, "--key-type", "ed25519", str(tmp_path / "s.jsonl")]) == 0
    assert "valid (ed25519)" in capsys.readouterr().out


def _directory(tmp_path, port: int = 1) -> str:
    from rmkit.protocols.rmb.signing import keypair

    pub = keypair(demo_seed(1), "ed25519").public.hex()
    (tmp_path / "d.json").write_text(json.dumps({"twins": {"1": {"address": f"127.0.0.1:{port}", "key_type": "ed25519", "public_key": pub}}}))
    return str(tmp_path / "d.json")


@pytest.fixture
def busy_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _no_unclosed_session(capsys, caplog) -> str:
    import gc

    gc.collect()  # aiohttp warns of a session left open when it is collected
    err = capsys.readouterr().err
    assert "Unclosed" not in err and not any("Unclosed" in r.getMessage() for r in caplog.records)
    return err


def test_environment_problems_of_the_daemon_commands_name_the_option(tmp_path, capsys, caplog, busy_port):
    record = ["rmb", "record", "--target", "127.0.0.1:1"]
    cases = [
        (record + ["--listen", f"127.0.0.1:{busy_port}", "--log", str(tmp_path / "r.jsonl")], f"--listen 127.0.0.1:{busy_port}: the port is busy"),
        (record + ["--listen", "127.0.0.1:0", "--log", str(tmp_path / "nodir" / "r.jsonl")], "--log"),
        (record + ["--listen", "127.0.0.1:70000", "--log", str(tmp_path / "r.jsonl")], "--listen: expected HOST:PORT with PORT from 0 to 65535"),
        (["rmb", "record", "--listen", "127.0.0.1:0", "--target", "127.0.0.1:x", "--log", str(tmp_path / "r.jsonl")], "--target"),
        (["rmb", "serve", "--twin", "1", "--directory", _directory(tmp_path), "--seed", demo_seed(1).hex(),
          "--log", str(tmp_path / "nodir" / "t.jsonl")], "--log"),
        (["rmb", "serve", "--twin", "1", "--directory", _directory(tmp_path), "--seed", demo_seed(1).hex(),
          "--listen", "127.0.0.1:70000"], "--listen"),
        (["rmb", "serve", "--twin", "1", "--directory", _directory(tmp_path), "--seed", demo_seed(1).hex(),
          "--redis", "http://127.0.0.1:1"], "--redis"),
        (["rmb", "up", "1", "--dir", str(tmp_path / "d.json" / "sub")], "--dir"),  # under a file
    ]
    for argv, named in cases:
        assert main(argv) == 2, argv
        err = _no_unclosed_session(capsys, caplog)
        assert named in err and "internal error" not in err, (argv, err)


def test_up_names_dir_when_the_folder_cannot_be_made(capsys):
    import os

    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc")
    assert main(["rmb", "up", "1", "--dir", "/proc/rmkit-nope"]) == 2  # a folder nobody (not even root) can make
    err = capsys.readouterr().err
    assert "--dir /proc/rmkit-nope: cannot" in err and "internal error" not in err


def test_internal_error_in_an_rmb_command_shows_the_traceback_with_debug(tmp_path, capsys, monkeypatch):
    from rmkit.protocols.rmb import signing

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(signing, "keypair", broken)
    (tmp_path / "m.json").write_text(json.dumps(GOOD))
    argv = ["rmb", "sign", "--seed", SEED, "--key-type", "ed25519", str(tmp_path / "m.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "rmkit: internal error (RuntimeError: boom)" in err and "Traceback" not in err
    assert main(["--debug", *argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: boom" in err


def test_the_recorder_process_keeps_the_contract(tmp_path, capsys, caplog, busy_port):
    from rmkit.reference_impl.rmb import recorder

    assert recorder.main(["--listen", f"127.0.0.1:{busy_port}", "--target", "127.0.0.1:1", "--log", str(tmp_path / "r.jsonl")]) == 2
    assert "the port is busy" in _no_unclosed_session(capsys, caplog)


@pytest.mark.slow  # starts a redis-server
def test_serve_names_a_busy_listen_port(tmp_path, capsys, caplog, busy_port):
    from rmb_support import redis_server_or_skip

    from rmkit.reference_impl.rmb.redisproc import RedisServer

    redis_server_or_skip()
    with RedisServer() as redis:
        argv = ["rmb", "serve", "--twin", "1", "--directory", _directory(tmp_path, busy_port), "--seed", demo_seed(1).hex(),
                "--redis", redis.url]
        assert main(argv) == 2
    err = _no_unclosed_session(capsys, caplog)
    assert f"--listen 127.0.0.1:{busy_port}: the port is busy" in err and "internal error" not in err


def _children(pid: int) -> dict[int, str]:
    import subprocess

    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return {int(line.split(None, 1)[0]): line.split(None, 1)[1] for line in out.splitlines() if line.strip()}


def _gone(pids) -> bool:
    import os

    for pid in pids:
        try:
            os.kill(pid, 0)
            return False
        except ProcessLookupError:
            pass
    return True


@pytest.mark.slow  # starts a redis-server, a daemon and a recorder
def test_up_stops_every_twin_when_a_recorder_dies(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from rmb_support import redis_server_or_skip

    redis_server_or_skip()
    proc = subprocess.Popen([sys.executable, "-m", "rmkit", "rmb", "up", "1", "--record", "--dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children = {}
    try:
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            if line.startswith("ready"):
                break
        children = _children(proc.pid)
        recorder = next(pid for pid, args in children.items() if "rmb.recorder" in args)
        os.kill(recorder, signal.SIGKILL)
        assert proc.wait(15) == 2
        err = proc.stderr.read()
        assert "twin 1's recorder exited" in err and "exit -9" in err, err
        time.sleep(0.2)
        assert _gone(children), "a child of rmb up still runs"
    finally:
        if proc.poll() is None:  # up did not notice: stop it and its children here
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.slow  # starts a redis-server, a daemon and a recorder that fails
def test_a_recorder_that_cannot_start_says_why(tmp_path):
    from rmb_support import redis_server_or_skip

    from rmkit.errors import RmkitError
    from rmkit.reference_impl.rmb.cluster import Cluster

    redis_server_or_skip()
    (tmp_path / "recorder-1.log.jsonl").mkdir()  # its log cannot be written
    cluster = Cluster(1, workdir=tmp_path, record=True)
    with pytest.raises(RmkitError) as err:
        cluster.start(timeout=60)  # a hang guard: the recorder's exit ends it at once
    assert "twin 1's recorder exited" in str(err.value) and "--log" in str(err.value)
    assert _gone(p.pid for t in cluster.twins for p in (t.proc, t.recorder, t.redis.proc))


def test_options_that_make_no_sense_are_usage_errors(tmp_path, capsys):
    serve = ["rmb", "serve", "--twin", "1", "--directory", _directory(tmp_path), "--seed", demo_seed(1).hex()]
    for argv, named in [(["rmb", "up", "2", "--workers", "0"], "--workers"), (["rmb", "up", "2", "--workers", "-3"], "--workers"),
                        (["rmb", "up", "2", "--down", "-2"], "--down"), (serve + ["--workers", "0"], "--workers"),
                        (serve + ["--workers", "100000"], "--workers")]:
        assert main(argv) == 2, argv
        assert named in capsys.readouterr().err, argv


def test_verify_refuses_key_type_beside_a_directory(tmp_path, capsys):
    from rmkit.protocols.rmb.signing import keypair

    signed = keypair(demo_seed(1), "ed25519").sign({**GOOD, "src": 1})
    (tmp_path / "s.jsonl").write_text(json.dumps(signed) + "\n")
    argv = ["rmb", "verify", "--directory", _directory(tmp_path), str(tmp_path / "s.jsonl")]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv[:2] + ["--key-type", "sr25519"] + argv[2:]) == 2  # was ignored: "valid (ed25519)"
    assert "--key-type sr25519: only with --public-key" in capsys.readouterr().err


def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


def test_conform_and_replay_help_say_what_rmb_saves_and_substitutes(capsys):
    from rmkit.conformance.rmb.driven.harness import PLACEHOLDERS

    for cmd in ("conform", "replay"):
        text = " ".join(_help(capsys, cmd).split())
        assert "rmb: one JSON object (rmb-PROFILE-DIGEST.json)" in text.replace("rmb- PROFILE", "rmb-PROFILE")
        assert "corda: one JSON object (.json)" in text and "remp: JSON Lines (.jsonl)" in text
        impl = text.split("--impl-cmd CMD command", 1)[1].split("--impl MODULE", 1)[0]
        assert "remp: its adapter process; ROLE in CMD is replaced by the role" in impl
        assert "corda: its adapter process; ROLE in CMD is replaced by the role" in impl
        assert "rmb: the daemon under test; no ROLE" in impl
        assert all(f"{{{name}}}" in impl for name in PLACEHOLDERS), impl


@pytest.mark.parametrize("cmd, codes", [("sign", "02"), ("verify", "012"), ("serve", "02"), ("up", "02"), ("record", "02")])
def test_each_rmb_command_states_the_exit_codes_it_returns(capsys, cmd, codes):
    text = _help(capsys, "rmb", cmd)
    epilog = text.split("exit codes:", 1)[1]
    assert "exit codes:" not in epilog  # one list, its own
    assert "".join(line[2] for line in epilog.splitlines() if line[:2] == "  " and line[2:3].isdigit()) == codes
    assert "--debug before the command shows the traceback" in epilog
