"""A fuzz suite of the command line: Hypothesis draws argument vectors (good, bad, non-finite,
empty, unwritable, missing) and input files (receipts mutated field by field and byte by byte,
Kafka records, gzip whole and truncated) for every command, and holds each run to the exit-code
contract: exit 0, 1 or 2; never a traceback or an internal error without --debug; exit 1 only
with a report that names a violation.

Bounded: each command gets a few dozen examples (the whole module runs in well under a minute on
one core); heavy back ends are kept out of the way: Spark is made missing (the audit then stops at
the missing dependency, after its arguments were checked), TLC points at a jar that does not
exist, and conform runs the catalogue of the in-process reference only.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from proc_support import CapturedStream
from rmkit.cli import main

CLEAN = FIXTURES / "rules" / "spec" / "clean-happy.jsonl"
KAFKA = FIXTURES / "rules" / "ever-node" / "REMP-EXPIRY-001.jsonl"
SEED = FIXTURES / "seed" / "examples.jsonl"
REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
# what a report that names a violation looks like, per command (exit 1 needs one)
NAMES_A_VIOLATION = re.compile(r"REMP-[A-Z]+-\d{3}|\bFAIL\b|\bfail\b|: (invalid|unknown-source|unsigned|malformed|outside)|"
                               r"out of date|violation")

# RMKIT_FUZZ_EXAMPLES=N: a longer, random (not derandomized) run, to look for new paths
_LONG = int(os.environ.get("RMKIT_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_LONG or 20, deadline=None, derandomize=not _LONG, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

# ---- inputs ----------------------------------------------------------------------------------
_RECEIPTS = [json.loads(x) for x in CLEAN.read_text().splitlines() if x.strip()]
_RECORDS = [json.loads(x) for x in KAFKA.read_text().splitlines() if x.strip()]
_ODD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                        st.text(max_size=20), st.just("0" * 64), st.just([[[[[]]]]]), st.just({"a": {}}),
                        st.just("\x00\x1b[31m\ud7ff"), st.just(10**30))


@st.composite
def receipt_lines(draw) -> bytes:
    """A log: fixture receipts or Kafka records, some fields replaced, dropped, misspelt or
    added, some lines cut or garbled; then maybe gzip, maybe truncated."""
    base = draw(st.sampled_from([_RECEIPTS, _RECORDS]))
    rows = [dict(r) for r in draw(st.lists(st.sampled_from(base), min_size=0, max_size=12))]
    lines = []
    for r in rows:
        target = r["value"] if "value" in r and isinstance(r["value"], dict) else r
        target = dict(target)
        for _ in range(draw(st.integers(0, 2))):
            action = draw(st.sampled_from(["set", "drop", "typo", "add"]))
            key = draw(st.sampled_from(sorted(target) or ["kind"]))
            if action == "set":
                target[key] = draw(_ODD_VALUES)
            elif action == "drop":
                target.pop(key, None)
            elif action == "typo" and len(key) > 3:
                target[key[:2] + key[3:]] = target.pop(key, None)
            else:
                target[draw(st.text(min_size=1, max_size=8))] = draw(_ODD_VALUES)
        if "value" in r and isinstance(r["value"], dict):
            r["value"] = draw(st.sampled_from([target, json.dumps(target), None, 7]))
            if draw(st.booleans()):
                r["timestamp"] = draw(_ODD_VALUES)
        else:
            r = target
        try:
            line = json.dumps(r).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError):
            line = b"{bad"
        if draw(st.integers(0, 9)) == 0:
            cut = draw(st.integers(0, len(line)))
            line = line[:cut] + draw(st.binary(max_size=4)) + line[cut:]
        lines.append(line)
    data = b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n", b"\n\n"]))
    if draw(st.integers(0, 4)) == 0:
        data = gzip.compress(data)
        if draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data)))]
    return data


# ---- arguments -------------------------------------------------------------------------------
# Each command: a valid core (its required arguments) and its options, each option with values
# that are good and values that are not; a draw mostly keeps the core and picks good values, so
# that runs get past argument parsing into the work, and now and then breaks one of them.
NUMBERS_BAD = ["0", "-1", "nan", "inf", "-inf", "1e400", "", "x"]
INTS_BAD = ["0", "-1", "x", "", "99999999999999999999"]
PATHS_BAD = ["{missing}", "{dir}", "{nodir}/f"]
OUTS_BAD = ["{nodir}/out", "{dir}", "{log}/x"]


def _o(flag, good, bad=()):
    return (flag, list(good), list(bad))


def _flag(flag):
    return (flag, None, None)


LOGS = ["{log}", "{log}", "-", "{log}.gz"]
COMMANDS = {
    "check": (["check", "{log}"], [
        _o("--profile", ["spec", "ever-node"], ["nope", ""]), _o("--format", ["text", "json", "junit"], ["xml"]),
        _o("--out", ["{out}"], OUTS_BAD), _o("--max-examples", ["0", "1", "3"], INTS_BAD[1:]),
        _o("--jobs", ["1", "2"], INTS_BAD), _o("--lifetime", ["250", "1", "2.5"], NUMBERS_BAD),
        _o("--horizon", ["60", "1000"], NUMBERS_BAD), _o("--validators", ["{validators}", "{roles}"], PATHS_BAD + ["{log}"]),
        _o("--color", ["never", "always"], ["x"]), _flag("--strict"), _o("", LOGS, PATHS_BAD),
    ]),
    "receipt encode": (["receipt", "encode", "{log}"], [
        _o("-o", ["{out}"], OUTS_BAD), _o("--profile", ["spec", "ever-node"], ["nope"]), _o("", LOGS, PATHS_BAD)]),
    "receipt sign": (["receipt", "sign", "--key", "{key}", "{log}"], [
        _o("--key", ["{key}"], PATHS_BAD + ["{log}", "{validators}"]), _flag("--replace-source"),
        _o("-o", ["{out}"], OUTS_BAD), _o("--profile", ["spec", "ever-node"], ["nope"]), _o("", LOGS, PATHS_BAD)]),
    "receipt verify": (["receipt", "verify", "--validators", "{validators}", "{log}"], [
        _o("--validators", ["{validators}"], PATHS_BAD + ["{log}", "{roles}", "{key}"]), _flag("--problems-only"),
        _o("--format", ["text", "jsonl"], ["x"]), _o("-o", ["{out}"], OUTS_BAD),
        _o("--profile", ["spec", "ever-node"], ["nope"]), _o("", LOGS, PATHS_BAD)]),
    "replay": (["replay", "{scenario}", "--impl", REFERENCE], [
        _o("--timeout", ["5", "0.5"], NUMBERS_BAD), _o("--format", ["text", "json"], ["x"]),
    ]),
    "replay-file": (["replay", "{log}", "--impl", REFERENCE], []),  # the input file as a scenario file
    "conform": (["conform", "--catalogue-only", "--regressions", "{regs}", "--impl", REFERENCE], [
        _o("--role", ["validator", "fullnode", "consumer"], ["nope", ""]),
        _o("--timeout", ["5"], NUMBERS_BAD), _o("--time-budget", ["30"], NUMBERS_BAD),
        _o("--max-examples", ["0"], ["-1", "x"]), _o("--format", ["text", "json", "junit"], ["x"]),
        _o("--out", ["{out}"], OUTS_BAD), _o("--html", ["{out}.html"], OUTS_BAD),
        _o("--profile", ["spec", "ever-node"], ["nope"]), _o("--seed", ["1"], ["x"]),
        _o("--impl", ["rmkit.conformance.remp.examples.non_sticky_final:factory", REFERENCE],
           ["nope", "os:nope", "os:sep", "json:loads", ":", "rmkit.reference_impl.remp.adapter:"]),
    ]),
    "simulate": (["simulate", "--messages", "3", "-o", "{out}"], [
        _o("-o", ["{out}", "-", "{out}.gz", "{outdir}/"], OUTS_BAD), _o("--seed", ["1", "7"], ["x"]),
        _o("--lifetime", ["250", "60"], NUMBERS_BAD + ["0.5", "1e9"]), _o("--violations", ["0.5"], NUMBERS_BAD + ["2"]),
        _o("--profile", ["spec", "ever-node"], ["nope"]), _o("--receipts", ["5"], INTS_BAD),
        _o("--validators", ["3"], INTS_BAD), _flag("--kafka"), _o("--messages", ["2"], INTS_BAD[:-1]),
    ]),
    "keys": (["keys", "gen", "--validators", "3", "--out", "{keysdir}"], [
        _o("--out", ["{keysdir}"], ["{log}", "{nodir}/k/{log}"]), _o("--validators", ["2"], INTS_BAD),
        _o("--sessions", ["2"], INTS_BAD), _o("--rotate", ["1"], INTS_BAD), _o("--full-nodes", ["0", "2"], INTS_BAD),
        _o("--seed", ["1", "abc"], [""]),
    ]),
    "spec docs": (["spec", "docs"], [_o("-o", ["{out}"], OUTS_BAD), _o("--check", ["{log}", "{out}"], PATHS_BAD)]),
    "spec diagram": (["spec", "diagram"], [_o("-o", ["{out}.dot"], OUTS_BAD + ["{out}.svg", "{out}.xyz"]),
                                           _o("--profile", ["spec", "ever-node"], ["nope"])]),
    "spec other": (["spec", "validate"], [_o("", ["profiles", "validate"], ["nope"])]),
    "explain": (["explain", "REMP-REPLAY-002"], [
        _o("", ["REMP-EXPIRY-001", "list", "remp-fin-001"], ["REMP-NOPE-001", "x", "", "rmb-x-1", "REMP-"])]),
    "tlc": (["tlc", "remp"], [
        _o("--config", ["small"], ["nope"]), _o("--timeout", ["60"], NUMBERS_BAD), _o("--workers", ["1"], INTS_BAD),
        _o("--simulate-depth", ["5"], INTS_BAD), _o("--seed", ["1"], ["x"]), _o("--out", ["{outdir}"], OUTS_BAD),
        _o("--trace-out", ["{out}"], OUTS_BAD), _o("--max-traces", ["3"], INTS_BAD),
        _o("--format", ["text", "json"], ["x"]), _flag("--list"), _o("", ["remp"], ["nope"]),
    ]),
    "audit": (["audit", "{log}"], [
        _o("--out", ["{outdir}"], OUTS_BAD), _o("--lifetime", ["250"], NUMBERS_BAD), _o("--horizon", ["60"], NUMBERS_BAD),
        _o("--max-examples", ["3"], INTS_BAD), _o("--partitions", ["2"], INTS_BAD),
        _o("--profile", ["spec", "ever-node"], ["nope"]), _o("", LOGS, PATHS_BAD),
    ]),
}


@st.composite
def argv_for(draw, command: str) -> list[str]:
    core, options = COMMANDS[command]
    argv = list(core)
    for flag, good, bad in draw(st.lists(st.sampled_from(options), max_size=3, unique_by=lambda o: o[0])) if options else []:
        if good is None:
            argv.append(flag)
            continue
        value = draw(st.sampled_from(bad)) if bad and draw(st.integers(0, 3)) == 0 else draw(st.sampled_from(good))
        if not flag:  # a positional: replaces the core's last argument
            argv[-1] = value
        elif flag in argv:  # an option of the core: its value changes
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    if draw(st.integers(0, 11)) == 0:  # now and then something that is not an argument at all
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(["--nope", "--", "=", "\x00"])))
    if draw(st.integers(0, 11)) == 0 and len(argv) > 1:  # or a required argument left out
        del argv[draw(st.integers(1, len(argv) - 1))]
    return argv


# ---- running ---------------------------------------------------------------------------------
_Std = CapturedStream


def _places(tmp):
    (tmp / "dir").mkdir(exist_ok=True)
    return {"log": tmp / "log.jsonl", "missing": tmp / "missing.jsonl", "dir": tmp / "dir", "nodir": tmp / "no" / "such",
            "out": tmp / "out.txt", "outdir": tmp / "outdir", "key": tmp / "keys" / "keys" / "fullnode.json",
            "validators": tmp / "keys" / "validators.yaml", "roles": tmp / "roles.yaml", "scenario": tmp / "sc.jsonl",
            "regs": tmp / "regs", "keysdir": tmp / "newkeys"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    places = _places(tmp)
    assert main(["keys", "gen", "--validators", "3", "--sessions", "1", "--seed", "1", "--out", str(tmp / "keys")]) == 0
    from rmkit.conformance.remp.driven.catalogue import catalogue
    from rmkit.conformance.remp.driven.scenario import write_scenario

    write_scenario(places["scenario"], catalogue("spec", ["validator"])[0])
    places["roles"].write_text("validators: [%s]\nfull_nodes: [%s]\n" % ("a" * 64, "b" * 64))
    return tmp


def run_cli(argv: list[str], stdin: bytes, monkeypatch) -> tuple[int, str, str]:
    out, err = _Std(), _Std()
    monkeypatch.setattr(sys, "stdin", _Std(stdin))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    try:
        code = main(argv)
    except SystemExit as e:  # argparse: usage errors (2) and --help (0)
        code = e.code
    finally:
        monkeypatch.setattr(sys, "stdout", sys.__stdout__)
        monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    return code, out.text(), err.text()


def hold_to_the_contract(argv, code, out, err, written: str = "") -> None:
    shown = f"rmkit {' '.join(map(repr, argv))}\n--- stdout\n{out[-1500:]}\n--- stderr\n{err[-1500:]}"
    assert code in (0, 1, 2), shown
    assert "Traceback" not in err, shown
    assert "internal error" not in err, shown
    if code == 1:
        assert NAMES_A_VIOLATION.search(out + err + written), shown


@pytest.fixture
def offline(monkeypatch, tmp_path_factory):
    """Heavy back ends out of the way (see the module's doc)."""
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setenv("RMKIT_TLA2TOOLS", str(tmp_path_factory.getbasetemp() / "no-such-tla2tools.jar"))
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "ci")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_keeps_the_exit_contract(command, workdir, offline, monkeypatch):
    places = {k: str(v) for k, v in _places(workdir).items()}

    @FUZZ
    @given(argv=argv_for(command), log=receipt_lines())
    def one(argv, log):
        (workdir / "log.jsonl").write_bytes(log)
        (workdir / "log.jsonl.gz").write_bytes(gzip.compress(log))
        for p in workdir.glob("out*"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        filled = [a.format(**places) if "{" in a else a for a in argv]
        code, out, err = run_cli(filled, log, monkeypatch)
        written = (workdir / "out.txt").read_text(errors="replace") if (workdir / "out.txt").is_file() else ""
        hold_to_the_contract(filled, code, out, err, written)
        if os.environ.get("RMKIT_FUZZ_STATS"):
            first = (err.strip().splitlines() or [""])[-1][:90]
            print(f"FUZZSTAT {command} {code} {first}", file=sys.__stderr__)

    one()
