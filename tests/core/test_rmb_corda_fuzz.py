"""A fuzz suite of the RMB and Corda commands, as tests/core/test_cli_fuzz.py has for REMP's: Hypothesis
draws inputs damaged in every way a real file or environment is (bad JSON, values of a wrong type
or out of range, deep nesting, encodings and byte order marks, line endings other than newline,
huge lines, gzip whole and cut) and argument vectors (good and bad values, missing files), and
runs each command with its standard streams open, closed or broken. Each run is held to the
exit-code contract: exit 0, 1 or 2; never a traceback or an internal error without --debug; exit 1
only with a report that names a violation; and no exit 0 from a verdict whose report was lost.

Derandomized and bounded in the default run (each command a couple of dozen examples, the line
limit lowered so that a "huge" line is a few kilobytes). RMKIT_FUZZ_EXAMPLES=N runs N random
examples per command instead, to look for new paths.
"""

from __future__ import annotations

import copy
import errno
import gzip
import json
import os
import re
import shutil
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from proc_support import CapturedStream
from rmkit.cli import main

_LONG = int(os.environ.get("RMKIT_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_LONG or 25, deadline=None, derandomize=not _LONG, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
LINE_LIMIT = 4096  # the line-size limit in these runs: a "huge" line is past it without costing time
NAMES_A_VIOLATION = re.compile(r"(RMB|CORDA)-[A-Z]+-\d{3}|\bFAIL\b|\bfail\b|: invalid|violation")

RMB_LOG = REPO / "fixtures" / "rmb" / "rules" / "spec"
RMB_DIRECTORY = REPO / "fixtures" / "rmb" / "rules" / "directory.json"
CORDA_LOG = REPO / "fixtures" / "corda" / "rules" / "spec"
CORDA_REFERENCE = "rmkit.conformance.corda.driven.adapters:reference_factory"
SEED = "00" * 32


def _lines(folder, n=6) -> list[dict]:
    out = []
    for path in sorted(folder.glob("*.jsonl"))[:n]:
        out += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return out


_RMB_RECORDS = _lines(RMB_LOG)
_CORDA_RECORDS = _lines(CORDA_LOG)
_MSG = {"ver": 1, "uid": "u", "cmd": "c", "exp": 5, "try": 1, "dat": "", "src": 1, "dst": [2], "ret": "r", "now": 1}


def _signed() -> list[dict]:
    from rmkit.protocols.rmb.signing import keypair

    return [keypair(bytes.fromhex(SEED), kt).sign(_MSG) for kt in ("ed25519", "sr25519")]


_MESSAGES = _signed()
_DEEP = "[" * 3000 + "]" * 3000
_ODD = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.text(max_size=12),
                 st.just([[[[[]]]]]), st.just({"a": {}}), st.just(10**30), st.just("\u2028\u0085\r"), st.just(["p2"]),
                 st.just("\x00\x1b[31m"))


def _bend_sig(draw, sig: str) -> str:
    how = draw(st.sampled_from(["upper", "space", "newline", "cut", "scalar", "marker", "0x", "keep"]))
    return {"upper": sig.upper(), "space": sig[:4] + " " + sig[4:], "newline": sig + "\n", "cut": sig[:-2],
            "scalar": sig[:2] + "ff" * 64, "marker": sig[:2] + "00" * 64, "0x": "0x" + sig, "keep": sig}[how]


@st.composite
def damaged(draw, base: list[dict], sig: bool = False) -> bytes:
    """Records (or messages) with fields replaced, dropped or added, lines cut or garbled, odd line
    endings and encodings, a deep or huge line now and then; then maybe gzip, maybe cut."""
    rows = [dict(r) for r in draw(st.lists(st.sampled_from(base), min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=8))]
    lines = []
    for r in rows:
        for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # most lines whole: runs reach the verdicts too
            key = draw(st.sampled_from(sorted(r) or ["x"]))
            action = draw(st.sampled_from(["set", "drop", "add"]))
            if action == "set":
                r[key] = draw(_ODD)
            elif action == "drop":
                r.pop(key, None)
            else:
                r[draw(st.text(min_size=1, max_size=6))] = draw(_ODD)
        if sig and isinstance(r.get("sig"), str) and draw(st.booleans()):
            r["sig"] = _bend_sig(draw, r["sig"])
        try:
            line = json.dumps(r, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError):
            line = b"{bad"
        kind = draw(st.integers(0, 39))
        if kind == 0:
            cut = draw(st.integers(0, len(line)))
            line = line[:cut] + draw(st.binary(max_size=4)) + line[cut:]
        elif kind == 1:
            line = _DEEP.encode()
        elif kind == 2:
            line = b'{"pad": "' + b"x" * (LINE_LIMIT + 10) + b'"}'
        elif kind == 3:
            line = line.decode("utf-8", "replace").encode("utf-16")
        lines.append(line)
    sep = draw(st.sampled_from([b"\n", b"\n", b"\r\n", b"\r", "\u2028".encode(), "\u0085".encode()]))
    data = sep.join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n", b"\n\n"]))
    if draw(st.integers(0, 5)) == 0:
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 6)) == 0:
        data = gzip.compress(data)
        if draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data)))]
    return data


def _rmb_scenario_docs():
    from rmkit.conformance.rmb.driven.scenario import FORMAT, catalogue

    return [{"format": FORMAT, "protocol": "rmb", "id": sc.id, "profile": "spec", "title": sc.title, "acts": sc.acts}
            for sc in catalogue("spec", False)[:12]]


_CORDA_SCENARIOS = [{"protocol": "corda", "role": "receiver", "profile": "spec",
                     "steps": [["arrive", 0, False], ["deliver"], ["arrive", 1, True], ["tick"], ["crash"], ["deliver"]]},
                    {"protocol": "corda", "role": "bridge", "profile": "spec", "steps": []}]


def _paths(doc, depth: int = 6) -> list[list]:
    """Where a value can be replaced: every field and element down to ``depth`` levels (a planted
    deep value is not walked again)."""
    out = [[]]
    if depth and isinstance(doc, dict):
        for k, v in doc.items():
            out += [[k] + p for p in _paths(v, depth - 1)]
    elif depth and isinstance(doc, list):
        for i, v in enumerate(doc):
            out += [[i] + p for p in _paths(v, depth - 1)]
    return out


@st.composite
def damaged_scenario(draw, protocol: str) -> bytes:
    """A scenario the kit wrote, with values at any depth replaced by odd ones (a list for a
    string, 10^30 for a number, deep nesting), then maybe broken JSON or a BOM."""
    doc = json.loads(json.dumps(draw(st.sampled_from(_rmb_scenario_docs() if protocol == "rmb" else _CORDA_SCENARIOS))))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        if not path:
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        # a copy: a later step may change what it holds, and the drawn value is shared between examples
        parent[path[-1]] = copy.deepcopy(draw(st.one_of(_ODD, st.just(json.loads("[" * 60 + "]" * 60)))))
    text = json.dumps(doc, indent=draw(st.sampled_from([None, 1]))).encode()
    kind = draw(st.integers(0, 9))
    if kind == 0:
        text = text[: draw(st.integers(0, len(text)))]
    elif kind == 1:
        text = _DEEP.encode()
    elif kind == 2:
        text = b"\xef\xbb\xbf" + text
    return text


# ---- commands ---------------------------------------------------------------------------------
def _o(flag, good, bad=()):
    return (flag, list(good), list(bad))


INPUTS_BAD = ["{missing}", "{dir}"]
OUTS_BAD = ["{nodir}/out", "{dir}"]
COMMANDS = {
    # (core argv, options, what the input file holds)
    "check rmb": (["check", "--protocol", "rmb", "{log}"], [
        _o("--directory", ["{directory}"], ["{missing}", "{log}", "{badkeys}"]), _o("--profile", ["spec", "rmb-go", "rmb-rs-v1"], ["x"]),
        _o("--format", ["text", "json", "junit"]), _o("--jobs", ["1", "2"], ["0"]), _o("--out", ["{out}"], OUTS_BAD),
        _o("", ["{log}", "-", "{log}.gz"], INPUTS_BAD)], "rmb-log"),
    "check corda": (["check", "--protocol", "corda", "{log}"], [
        _o("--profile", ["spec", "corda-os"], ["x"]), _o("--format", ["text", "json"]), _o("--jobs", ["1", "2"]),
        _o("", ["{log}", "-", "{log}.gz"], INPUTS_BAD)], "corda-log"),
    "rmb sign": (["rmb", "sign", "--seed", SEED, "--key-type", "ed25519", "{log}"], [
        _o("--key-type", ["ed25519", "sr25519"], ["x"]), _o("--seed", [SEED], ["0" * 63, "zz" * 32, " " + SEED]),
        _o("", ["{log}", "-"], INPUTS_BAD)], "messages"),
    "rmb verify key": (["rmb", "verify", "--public-key", "{pub}", "--key-type", "ed25519", "{log}"], [
        _o("--key-type", ["ed25519", "sr25519"]), _o("--public-key", ["{pub}", "{srpub}"], ["ff" * 32, "00" * 31, "x"]),
        _o("--format", ["text", "jsonl"]), _o("", ["{log}", "-"], INPUTS_BAD)], "messages"),
    "rmb verify directory": (["rmb", "verify", "--directory", "{msgdir}", "{log}"], [
        _o("--directory", ["{msgdir}"], ["{badkeys}", "{missing}", "{log}"]), _o("--format", ["text", "jsonl"]),
        _o("", ["{log}", "-"], INPUTS_BAD)], "messages"),
    "replay rmb": (["replay", "--protocol", "rmb", "{log}", "--impl-cmd", "{missing}"], [
        _o("--format", ["text", "json"]), _o("--timeout", ["5"], ["0", "nan"])], "rmb-scenario"),
    "replay corda": (["replay", "--protocol", "corda", "{log}", "--impl", CORDA_REFERENCE], [
        _o("--format", ["text", "json"]), _o("--timeout", ["5"], ["0", "nan"])], "corda-scenario"),
}
INPUT = {"rmb-log": damaged(_RMB_RECORDS), "corda-log": damaged(_CORDA_RECORDS), "messages": damaged(_MESSAGES, sig=True),
         "rmb-scenario": damaged_scenario("rmb"), "corda-scenario": damaged_scenario("corda")}


@st.composite
def argv_for(draw, command: str) -> list[str]:
    core, options, _ = COMMANDS[command]
    argv = list(core)
    for flag, good, bad in draw(st.lists(st.sampled_from(options), max_size=3, unique_by=lambda o: o[0])):
        value = draw(st.sampled_from(bad)) if bad and draw(st.integers(0, 4)) == 0 else draw(st.sampled_from(good))
        if not flag:  # the input: the core's own place, whatever options follow it
            argv[core.index("{log}")] = value
        elif flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    return argv


# ---- standard streams -------------------------------------------------------------------------
_Std = CapturedStream


class _Broken(_Std):
    """A stdout whose reader went away (EPIPE) or that was opened the wrong way (EBADF)."""

    def __init__(self, err: int):
        super().__init__()
        self.err = err

    def write(self, s):
        raise (BrokenPipeError if self.err == errno.EPIPE else OSError)(self.err, os.strerror(self.err))


def run_cli(argv, stdin: bytes, stdin_state: str, stdout_state: str, monkeypatch):
    out, err = _Std(), _Std()
    monkeypatch.setattr(sys, "stdin", None if stdin_state == "closed" else _Std(stdin))
    monkeypatch.setattr(sys, "stdout", {"open": out, "closed": None, "epipe": _Broken(errno.EPIPE),
                                        "ebadf": _Broken(errno.EBADF)}[stdout_state])
    monkeypatch.setattr(sys, "stderr", err)
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    finally:
        monkeypatch.setattr(sys, "stdout", sys.__stdout__)
        monkeypatch.setattr(sys, "stderr", sys.__stderr__)
        monkeypatch.setattr(sys, "stdin", sys.__stdin__)
    return code, out.text(), err.text()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    from rmkit.protocols.rmb.signing import keypair

    tmp = tmp_path_factory.mktemp("rmbfuzz")
    (tmp / "dir").mkdir()
    shutil.copy(RMB_DIRECTORY, tmp / "directory.json")
    twins = {str(i): {"address": f"127.0.0.1:{7000 + i}", "key_type": kt, "public_key": keypair(bytes.fromhex(SEED), kt).public.hex()}
             for i, kt in ((1, "ed25519"), (2, "sr25519"))}
    (tmp / "msgdir.json").write_text(json.dumps({"twins": twins}))
    broken = json.loads(json.dumps({"twins": twins}))
    broken["twins"]["1"]["key_type"], broken["twins"]["1"]["public_key"] = "sr25519", "ff" * 32  # no sr25519 point
    (tmp / "badkeys.json").write_text(json.dumps(broken))
    return tmp


@pytest.fixture
def small_lines(monkeypatch):
    import rmkit.conformance.rmb.messages_io as messages_io
    import rmkit.jsondoc as jsondoc
    import rmkit.logread as logread
    import rmkit.peerread as peerread

    for module in (logread, peerread, messages_io, jsondoc):
        monkeypatch.setattr(module, "MAX_LINE_BYTES", LINE_LIMIT)


def hold_to_the_contract(argv, code, out, err, stdout_state: str, written: str = "") -> None:
    shown = f"rmkit {' '.join(map(repr, argv))} (stdout {stdout_state})\n--- stdout\n{out[-1500:]}\n--- stderr\n{err[-1500:]}"
    assert code in (0, 1, 2), shown
    assert "Traceback" not in err and "internal error" not in err, shown
    if code == 1 and stdout_state != "epipe":  # (a reader gone after the verdict was decided: it stands, unread)
        assert NAMES_A_VIOLATION.search(out + err + written), shown
    if stdout_state in ("closed", "ebadf") and code == 0 and "--out" not in argv and argv[:2] != ["rmb", "sign"]:
        pytest.fail(f"a verdict whose report could not be written ended with exit 0\n{shown}")
    if stdout_state in ("closed", "ebadf") and argv[:2] == ["rmb", "sign"] and code == 0:
        pytest.fail(f"signed messages that could not be written ended with exit 0\n{shown}")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_rmb_and_corda_commands_keep_the_exit_contract(command, workdir, small_lines, monkeypatch):
    places = {"log": workdir / "in.data", "missing": workdir / "missing", "dir": workdir / "dir", "nodir": workdir / "no" / "such",
              "out": workdir / "out.txt", "directory": workdir / "directory.json", "msgdir": workdir / "msgdir.json",
              "badkeys": workdir / "badkeys.json"}
    from rmkit.protocols.rmb.signing import keypair

    keys = {"pub": keypair(bytes.fromhex(SEED), "ed25519").public.hex(), "srpub": keypair(bytes.fromhex(SEED), "sr25519").public.hex()}
    filled_places = {**{k: str(v) for k, v in places.items()}, **keys}

    @FUZZ
    @given(argv=argv_for(command), data=INPUT[COMMANDS[command][2]],
           stdin_state=st.sampled_from(["open"] * 5 + ["closed"]), stdout_state=st.sampled_from(["open"] * 5 + ["closed", "epipe", "ebadf"]))
    def one(argv, data, stdin_state, stdout_state):
        places["log"].write_bytes(data)
        (workdir / "in.data.gz").write_bytes(gzip.compress(data))
        if places["out"].exists():
            places["out"].unlink()
        filled = [a.format(**filled_places) if "{" in a else a for a in argv]
        code, out, err = run_cli(filled, data, stdin_state, stdout_state, monkeypatch)
        written = places["out"].read_text(errors="replace") if places["out"].is_file() else ""
        hold_to_the_contract(filled, code, out, err, stdout_state, written)
        if os.environ.get("RMKIT_FUZZ_STATS"):
            first = (err.strip().splitlines() or [""])[-1][:90]
            print(f"FUZZSTAT {command} {stdout_state} {code} {first}", file=sys.__stderr__)

    one()
