"""The exit-code contract of every command: 0 pass, 1 violations, 2 the tool could not do its job.
Each test is one path that once ended in a traceback (and exit 1) or in a pass it did not earn."""

import gzip
import sys

import pytest

from conftest import FIXTURES
from rmkit.cli import build_parser, main
from rmkit.guard import CONTRACT

CLEAN = str(FIXTURES / "rules" / "spec" / "clean-happy.jsonl")


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's usage errors and --help
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def no_traceback(err: str) -> bool:
    return "Traceback" not in err


# -- the contract itself ----------------------------------------------------------------------
def _all_parsers(parser, path=()):
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _all_parsers(sub, path + (name,))


def test_every_help_states_the_contract():
    for path, parser in _all_parsers(build_parser()):
        text = parser.format_help()
        assert "exit codes" in text, path
        if not path:
            assert CONTRACT in text


def test_internal_error_is_one_line_and_exit_2(capsys, monkeypatch):
    from rmkit.conformance.remp import checker

    def boom(*a, **k):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(checker.RempLogChecker, "run", boom)
    code, _, err = run(capsys, "check", CLEAN)
    assert code == 2 and no_traceback(err)
    assert "internal error (ZeroDivisionError: planted); please report it with the command line" in err
    code, _, err = run(capsys, "--debug", "check", CLEAN)
    assert code == 2 and "Traceback" in err and "ZeroDivisionError" in err


def test_missing_optional_dependency_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    code, _, err = run(capsys, "audit", CLEAN)
    assert code == 2 and no_traceback(err)
    assert "pyspark" in err and "pip install 'rmkit[spark]'" in err


@pytest.mark.parametrize("argv", [
    ["check", "--lifetime", "nan", CLEAN], ["check", "--horizon", "inf", CLEAN], ["check", "--lifetime=-inf", CLEAN],
    ["tlc", "--timeout", "inf"], ["tlc", "--timeout", "nan"],
    ["conform", "--impl-cmd", "x", "--timeout", "nan"], ["conform", "--impl-cmd", "x", "--time-budget", "inf"],
    ["replay", CLEAN, "--impl-cmd", "x", "--timeout", "inf"],
    ["simulate", "-o", "-", "--lifetime", "nan"], ["simulate", "-o", "-", "--violations", "inf"],
    ["audit", CLEAN, "--lifetime", "nan"],
])
def test_non_finite_numbers_are_usage_errors(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and no_traceback(err) and "finite" in err


@pytest.mark.parametrize("argv", [
    ["check", "--lifetime", "1e308", CLEAN], ["check", "--horizon", "1e12", CLEAN], ["tlc", "--timeout", "1e300"],
])
def test_seconds_beyond_any_run_are_usage_errors_not_an_overflow(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and no_traceback(err) and "at most" in err, err


@pytest.mark.parametrize("option, argv", [
    ("--validators", ["check", "--validators", "{doc}", CLEAN]),
    ("--directory", ["check", "--protocol", "rmb", "--directory", "{doc}", CLEAN]),
    ("--key", ["receipt", "sign", "--key", "{doc}", CLEAN]),
])
def test_a_configuration_file_that_is_not_utf8_is_named_not_an_internal_error(capsys, tmp_path, option, argv):
    doc = tmp_path / "v.yaml"
    doc.write_bytes(b"sessions: [\xff\xfe]\n")
    code, _, err = run(capsys, *[a.replace("{doc}", str(doc)) for a in argv])
    assert code == 2 and no_traceback(err) and f"{option} {doc}: expected UTF-8 text" in err, err


# -- outputs are checked before the work ------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["check", "--out", "{missing}/r.json", CLEAN],
    ["check", "--format", "junit", "--out", "{tmp}", CLEAN],
    ["conform", "--impl-cmd", "true", "--out", "{missing}/r.txt"],
    ["conform", "--impl-cmd", "true", "--html", "{missing}/r.html"],
    ["spec", "docs", "-o", "{missing}/docs.md"],
    ["spec", "diagram", "-o", "{missing}/d.dot"],
    ["simulate", "--messages", "3", "-o", "{missing}/sim.jsonl"],
    ["tlc", "--trace-out", "{missing}/t.json"],
    ["tlc", "--out", "{file}"],
    ["audit", "--out", "{file}", CLEAN],
    ["keys", "gen", "--validators", "3", "--out", "{file}"],
    ["receipt", "encode", CLEAN, "-o", "{missing}/x.hex"],
])
def test_unwritable_outputs_exit_2_before_work(capsys, tmp_path, argv):
    f = tmp_path / "a-file"
    f.write_text("x")
    argv = [a.format(missing=tmp_path / "missing", tmp=tmp_path, file=f) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and no_traceback(err), err
    assert "cannot" in err or "expected a" in err
    assert not (tmp_path / "missing").exists()


# -- check ------------------------------------------------------------------------------------
def test_gzip_on_stdin_is_recognised_by_its_magic_bytes(capsys, monkeypatch):
    import io

    data = gzip.compress(open(CLEAN, "rb").read())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run(capsys, "check", "-")
    assert code == 0 and "PASS" in out, out + err


def test_truncated_gzip_reports_what_it_read(capsys, tmp_path):
    data = gzip.compress(open(CLEAN, "rb").read() * 20)
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(data[: len(data) * 2 // 3])
    code, out, err = run(capsys, "check", "--format", "json", str(p))
    assert code == 2 and no_traceback(err)
    import json

    doc = json.loads(out)
    assert doc["receipts"] > 0 and doc["verdict"] == "fail"
    assert any("truncated" in p["error"] or "end-of-stream" in p["error"] for p in doc["input_problems"])


# -- conform / replay -------------------------------------------------------------------------
REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
PY = sys.executable


def _module(tmp_path, monkeypatch, name, body):
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize("body,say", [
    ("raise RuntimeError('broken at import')\n", "importing"),
    ("import sys\nsys.exit(4)\n", "importing"),
    ("def factory(role):\n    raise ValueError('no such role here')\n", "cannot be started"),
    ("factory = 42\n", "callable"),
    ("def factory(role):\n    return object()\n", "hello() method"),
    ("x = 1\n", "no attribute"),
])
def test_an_impl_that_cannot_start_exits_2(capsys, tmp_path, monkeypatch, body, say):
    name = _module(tmp_path, monkeypatch, f"impl_{abs(hash(body))}", body)
    code, _, err = run(capsys, "conform", "--role", "consumer", "--impl", f"{name}:factory", "--catalogue-only",
                       "--regressions", str(tmp_path / "regs"))
    assert code == 2 and no_traceback(err) and say in err, err


def test_empty_impl_cmd_is_a_usage_error(capsys, tmp_path):
    code, _, err = run(capsys, "conform", "--role", "consumer", "--impl-cmd", "", "--catalogue-only",
                       "--regressions", str(tmp_path / "regs"))
    assert code == 2 and no_traceback(err) and "--impl-cmd" in err


def _adapter(tmp_path, body):
    script = tmp_path / "adapter.py"
    script.write_text("import sys, json, os, time\n" + body)
    return f"{PY} {script}"


def test_an_adapter_that_closes_stdout_and_runs_on_is_a_crash(capsys, tmp_path):
    cmd = _adapter(tmp_path, "os.close(1)\ntime.sleep(60)\n")
    code, out, err = run(capsys, "conform", "--role", "consumer", "--impl-cmd", cmd, "--catalogue-only",
                         "--regressions", str(tmp_path / "regs"), "--timeout", "2")
    assert code == 2 and no_traceback(err) and "could not be driven as consumer" in err  # never past the hello
    assert "kept running" in out


def test_a_crash_at_hello_marks_rules_not_reached(capsys, tmp_path):
    cmd = _adapter(tmp_path, "sys.exit(3)\n")
    code, out, err = run(capsys, "conform", "--role", "validator", "--impl-cmd", cmd, "--catalogue-only",
                         "--regressions", str(tmp_path / "regs"), "--format", "json")
    import json

    doc = json.loads(out)
    assert code == 2 and no_traceback(err) and "could not be driven as validator" in err  # no rule put to it
    assert doc["not_driven"] and "validator" in doc["not_driven"]
    statuses = {r["status"] for r in doc["rules"]}
    assert "fail" not in statuses and "not reached" in statuses


def test_junit_of_conform_is_valid_xml_when_the_adapter_prints_binary(capsys, tmp_path):
    from xml.etree import ElementTree as ET

    cmd = _adapter(tmp_path, "line = sys.stdin.readline()\nsys.stdout.buffer.write(b'\\x00\\x01\\x1b[31m\\xff\\xfe junk\\n')\n"
                             "sys.stdout.flush()\nsys.stderr.buffer.write(b'\\x07\\x08 err\\n')\n")
    code, out, err = run(capsys, "conform", "--role", "consumer", "--impl-cmd", cmd, "--catalogue-only",
                         "--regressions", str(tmp_path / "regs"), "--format", "junit")
    assert code == 2 and no_traceback(err)  # it never got past the hello: no verdict, and still a valid report
    ET.fromstring(out.split("\n", 1)[1])


class _Hangs:
    name = "hangs"

    def __init__(self, role):
        self.role = role

    def hello(self, params):
        return {"type": "ready"}

    def step(self, event):
        import time

        from clock_support import PLANTED_DELAY

        time.sleep(PLANTED_DELAY)

    def bye(self):
        pass


class _Huge(_Hangs):
    def step(self, event):
        return [{"type": "Receipt", "receipt": {"kind": "x" * 1000}}] * 10_000


def test_in_process_step_that_never_returns_times_out(capsys, tmp_path, monkeypatch):
    import time

    from clock_support import PLANTED_DELAY

    mod = _module(tmp_path, monkeypatch, "hang_impl", "from test_exit_contract import _Hangs as factory\n")
    start = time.monotonic()
    code, out, err = run(capsys, "replay", _scenario(tmp_path), "--impl", f"{mod}:factory", "--timeout", "0.5")
    assert code == 1 and no_traceback(err)
    assert "timeout" in out and "0.5 s" in out
    assert time.monotonic() - start < PLANTED_DELAY   # cut at --timeout, not waited out


def test_in_process_oversized_answer_is_reported(capsys, tmp_path, monkeypatch):
    mod = _module(tmp_path, monkeypatch, "huge_impl", "from test_exit_contract import _Huge as factory\n")
    code, out, err = run(capsys, "replay", _scenario(tmp_path), "--impl", f"{mod}:factory")
    assert code == 1 and "oversized" in out


def test_process_oversized_answer_is_reported(capsys, tmp_path):
    cmd = _adapter(tmp_path, "for line in sys.stdin:\n"
                             "    m = json.loads(line)\n"
                             "    if m['type'] == 'hello': print(json.dumps({'type': 'ready'}), flush=True)\n"
                             "    else: sys.stdout.write('x' * (8 << 20)); sys.stdout.flush(); time.sleep(30)\n")
    code, out, err = run(capsys, "replay", _scenario(tmp_path), "--impl-cmd", cmd, "--timeout", "20")
    assert code == 1 and "oversized" in out and no_traceback(err)


def _scenario(tmp_path, header=None, steps=None):
    from rmkit.conformance.remp.driven.catalogue import catalogue
    from rmkit.conformance.remp.driven.scenario import write_scenario

    p = write_scenario(tmp_path / "sc.jsonl", catalogue("spec", ["validator"])[0])
    if header is not None or steps is not None:
        import json

        lines = [json.loads(x) for x in p.read_text().splitlines()]
        head = header(lines[0]) if header else lines[0]
        rest = steps(lines[1:]) if steps else lines[1:]
        p.write_text("".join(json.dumps(x) + "\n" for x in [head] + rest))
    return str(p)


def _set(path, value):
    def change(obj):
        obj = dict(obj)
        keys = path.split(".")
        target = obj
        for k in keys[:-1]:
            target[k] = dict(target[k])
            target = target[k]
        if value is _DROP:
            target.pop(keys[-1])
        else:
            target[keys[-1]] = value
        return obj
    return change


_DROP = object()


@pytest.mark.parametrize("header,say", [
    (_set("role", "nope"), "field role"), (_set("role", None), "field role"),
    (_set("profile", None), "field profile"), (_set("profile", "mainnet"), "field profile"),
    (_set("params", None), "field params"), (_set("params.own_id", _DROP), "own_id"),
    (_set("params.lifetime_ms", "60000"), "field params.lifetime_ms"),
    (_set("format", "rmkit-remp-scenario/2"), "field format"), (_set("format", _DROP), "field format"),
])
def test_replay_bad_header_names_line_and_field(capsys, tmp_path, header, say):
    code, _, err = run(capsys, "replay", _scenario(tmp_path, header=header), "--impl", REFERENCE)
    assert code == 2 and no_traceback(err) and ":1: " in err and say in err, err


def test_replay_mistyped_step_field_names_line_and_field(capsys, tmp_path):
    def steps(rows):
        rows = [dict(r) for r in rows]
        rows[1]["event"] = {**rows[1]["event"], "time": "soon"}
        return rows
    code, _, err = run(capsys, "replay", _scenario(tmp_path, steps=steps), "--impl", REFERENCE)
    assert code == 2 and no_traceback(err) and ":3: field event" in err, err


def test_replay_header_only_is_no_pass(capsys, tmp_path):
    code, out, err = run(capsys, "replay", _scenario(tmp_path, steps=lambda rows: []), "--impl", REFERENCE)
    assert code == 2 and "no steps" in err and "pass" not in out


# -- check and receipt: damaged input ---------------------------------------------------------
def _seed_finalized_nested_deep(tmp_path):
    deep = "[" * 1000 + "]" * 1000
    line = ('{"kind":"Finalized","message_id":"%s","source_id":"%s","timestamp":5,"block_id":"%s",'
            '"block_file_hash":"%s","mc_block_id":"%s","block_file_hash":"%s","extra":%s}'
            % ("a" * 64, "b" * 64, "c" * 64, "d" * 64, "e" * 64, "f" * 64, deep))
    p = tmp_path / "deep.jsonl"
    p.write_text(line + "\n")
    return str(p)


@pytest.mark.parametrize("argv", [["check"], ["receipt", "encode"]])
def test_deeply_nested_seed_finalized_is_no_recursion_error(capsys, tmp_path, argv):
    code, out, err = run(capsys, *argv, _seed_finalized_nested_deep(tmp_path))
    assert code in (1, 2) and no_traceback(err) and "internal error" not in err


def test_sign_replace_source_on_the_seed_examples(capsys, tmp_path):
    assert run(capsys, "keys", "gen", "--validators", "3", "--sessions", "1", "--seed", "1", "--out", str(tmp_path / "k"))[0] == 0
    code, out, err = run(capsys, "receipt", "sign", "--key", str(tmp_path / "k" / "keys" / "fullnode.json"),
                         "--replace-source", str(FIXTURES / "seed" / "examples.jsonl"))
    assert code == 0 and no_traceback(err) and out.count("\n") >= 5


def test_objects_that_are_no_receipt_at_all_are_unreadable_not_violations(capsys, tmp_path):
    """A line with none of a receipt's fields (another protocol's log, checked without --protocol)
    is not a receipt with schema violations: it is named as unreadable and nothing was checked
    (exit 2); a receipt that lacks some fields is still a violation of REMP-SCHEMA-001."""
    import json

    corda = FIXTURES.parent / "corda" / "rules" / "corda-os" / "clean-sessions.jsonl"
    code, out, err = run(capsys, "check", "--format", "json", str(corda))
    doc = json.loads(out)
    assert code == 2 and doc["receipts"] == 0 and set(doc["counts"]) == {"REMP-INPUT-001"}  # counted as unreadable lines
    assert "another protocol's log? give --protocol" in doc["input_problems"][0]["error"]
    receipt = json.loads((FIXTURES / "rules" / "spec" / "clean-happy.jsonl").read_text().splitlines()[0])
    lines = [json.dumps({"a": 1}), json.dumps({k: v for k, v in receipt.items() if k != "kind"})]
    code, out, err = run(capsys, "check", "--format", "json", str(_write(tmp_path, lines)))
    doc = json.loads(out)
    assert code == 2 and doc["unreadable"] == 1 and doc["receipts"] == 1 and "REMP-KIND-001" in doc["counts"]


def _write(tmp_path, lines, name="log.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _kafka_dump(tmp_path, stamps, name="dump.jsonl", kcat=False):
    """The ever-node fixture's Kafka records with their timestamps replaced; ``kcat``: as
    ``kcat -C -J`` envelopes (the value as ``payload``, the time as ``ts``)."""
    import json

    src = FIXTURES / "rules" / "ever-node" / "REMP-EXPIRY-001.jsonl"
    rows = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    out = []
    for i, r in enumerate(rows):
        r = dict(r)
        if stamps is _DROP:
            r.pop("timestamp")
        else:
            r["timestamp"] = stamps[i % len(stamps)]
        if kcat:
            r = {"topic": "remp", "partition": 0, "offset": i, "key": r.get("key"), "payload": r["value"],
                 **({"ts": r["timestamp"]} if "timestamp" in r else {})}
        out.append(json.dumps(r))
    p = tmp_path / name
    p.write_text("\n".join(out) + "\n")
    return str(p)


@pytest.mark.parametrize("kcat", [False, True], ids=["kafka", "kcat"])
@pytest.mark.parametrize("stamp", ["1700000000000", None, -5, 1.7e12, True])
def test_damaged_kafka_timestamps_are_input_problems_not_a_pass(capsys, tmp_path, stamp, kcat):
    import json

    code, out, err = run(capsys, "check", "--profile", "ever-node", "--format", "json", _kafka_dump(tmp_path, [stamp], kcat=kcat))
    doc = json.loads(out)
    assert code == 2 and doc["verdict"] == "fail"
    assert doc["input_problems"][0]["field"] == ("ts" if kcat else "timestamp") and doc["input_problems"][0]["line"] == 1
    assert doc["not_judged"]["REMP-EXPIRY-001"]["messages"] == 1


def test_rules_without_time_are_reported_not_judged(capsys, tmp_path):
    import json

    code, out, _ = run(capsys, "check", "--profile", "ever-node", "--format", "json", _kafka_dump(tmp_path, _DROP))
    doc = json.loads(out)
    assert doc["not_judged"]["REMP-EXPIRY-001"]["messages"] == 1 and "no usable time" in doc["not_judged"]["REMP-EXPIRY-001"]["why"]
    code, text, _ = run(capsys, "check", "--profile", "ever-node", _kafka_dump(tmp_path, _DROP))
    assert "1 not judged" in text
    # with numeric timestamps the same log is judged, and fails
    code, out, _ = run(capsys, "check", "--profile", "ever-node", "--format", "json",
                       str(FIXTURES / "rules" / "ever-node" / "REMP-EXPIRY-001.jsonl"))
    assert code == 1 and json.loads(out)["not_judged"] == {}


def test_a_field_close_to_a_known_one_is_reported(capsys, tmp_path):
    import json

    rows = [json.loads(x) for x in open(CLEAN) if x.strip()]
    i = next(i for i, r in enumerate(rows) if "signature" in r)
    rows[i]["signatre"] = rows[i].pop("signature")
    rows[0]["vendor_extension"] = 1  # an implementation's own field: not a finding
    p = tmp_path / "typo.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, _ = run(capsys, "check", "--format", "json", str(p))
    doc = json.loads(out)
    found = [v["explanation"] for v in doc["violations"] if v["rule"] == "REMP-SCHEMA-001"]
    assert code == 1 and any("signatre: unknown field; did you mean 'signature'?" in e for e in found)
    assert not any("vendor_extension" in e for e in found)


def test_check_junit_is_valid_xml_with_control_characters(capsys, tmp_path):
    import json
    from xml.etree import ElementTree as ET

    rows = [json.loads(x) for x in open(CLEAN) if x.strip()]
    rows[1]["kind"] = "Final\x01ized\x1b[31m"
    p = tmp_path / "ctl.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\x00\x02 not json\n")
    code, out, _ = run(capsys, "check", "--format", "junit", str(p))
    assert code == 2
    root = ET.fromstring(out)
    assert root.get("failures") != "0" and "\\x01" in out


@pytest.mark.slow
def test_audit_on_a_truncated_gzip_exits_2_like_check(capsys, tmp_path):
    data = gzip.compress(open(CLEAN, "rb").read() * 50)
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(data[:-40])
    assert run(capsys, "check", str(p))[0] == 2
    code, _, err = run(capsys, "audit", "--master", "local[1]", str(p))
    assert code == 2 and "Traceback" not in err.split("rmkit: error")[-1]


def test_replay_events_the_reference_cannot_take_name_the_line(capsys, tmp_path):
    def steps(rows):
        rows = [dict(r) for r in rows]
        i = [i for i, r in enumerate(rows) if r["event"]["type"] == "SessionSwitch"][1]
        rows[i]["event"] = {**rows[i]["event"], "start_time": -(2 ** 62)}
        return rows

    from rmkit.conformance.remp.driven.catalogue import catalogue
    from rmkit.conformance.remp.driven.scenario import write_scenario

    sc = next(s for s in catalogue("ever-node", ["validator"]) if s.id == "CAT-VAL-008")
    p = write_scenario(tmp_path / "s.jsonl", sc)
    import json

    rows = [json.loads(x) for x in p.read_text().splitlines()]
    p.write_text("".join(json.dumps(x) + "\n" for x in [rows[0]] + steps(rows[1:])))
    code, _, err = run(capsys, "replay", str(p), "--impl", REFERENCE)
    assert code == 2 and no_traceback(err) and "field event: the reference machine cannot take" in err, err


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["simulate", "--messages", "2", "-o", "/dev/full"],
                                  ["receipt", "encode", CLEAN, "-o", "/dev/full"],
                                  ["check", CLEAN, "--out", "/dev/full"]])
def test_a_full_disk_is_no_internal_error(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and no_traceback(err) and "internal error" not in err
    assert "no space left" in err.lower()


@pytest.mark.parametrize("argv", [["keys", "gen", "--validators", "99999999999", "--out", "{tmp}/k"],
                                  ["keys", "gen", "--validators", "3", "--sessions", "99999999999", "--out", "{tmp}/k"],
                                  ["simulate", "--messages", "2", "--lifetime", "0.5", "-o", "{tmp}/s.jsonl"],
                                  ["simulate", "--messages", "2", "--lifetime", "1e9", "-o", "{tmp}/s.jsonl"],
                                  ["simulate", "--messages", "2", "--validators", "99999999", "-o", "{tmp}/s.jsonl"]])
def test_values_that_would_run_for_hours_are_usage_errors(capsys, tmp_path, argv):
    code, _, err = run(capsys, *[a.format(tmp=tmp_path) for a in argv])
    assert code == 2 and no_traceback(err) and ("expected" in err or "takes" in err)


def test_a_kit_error_in_the_generator_is_exit_2_not_a_verdict(capsys, tmp_path, monkeypatch):
    from rmkit.conformance.remp.driven import suite
    from rmkit.conformance.remp.driven.generate import Generated

    monkeypatch.setattr(suite, "run_generated", lambda role, *a, **k: Generated(role, 0, 0, 0.0, kit_error="planted"))
    code, out, err = run(capsys, "conform", "--role", "consumer", "--impl", REFERENCE, "--max-examples", "1",
                         "--regressions", str(tmp_path / "regs"))
    assert code == 2 and "kit error" in out and no_traceback(err)


def test_jobs_beyond_any_machine_is_a_usage_error(capsys):
    code, _, err = run(capsys, "check", "--jobs", "100000", CLEAN)
    assert code == 2 and "--jobs" in err


def test_in_process_timeout_holds_off_the_main_thread_too(tmp_path, monkeypatch):
    """Off the main thread no alarm can be used: the calls run on a worker thread, abandoned on timeout."""
    import threading
    import time

    from clock_support import PLANTED_DELAY

    from rmkit.conformance.remp.driven.adapters import ImplementationFailure, InProcessImplementation, _Worker

    mod = _module(tmp_path, monkeypatch, "hang_impl2", "from test_exit_contract import _Hangs as factory\n")
    box = {}

    def drive():
        impl = InProcessImplementation(f"{mod}:factory", "validator", timeout=0.3)
        box["worker"] = type(impl._worker)
        impl.start({"params": {"own_id": "v1"}, "profile": "spec"})
        try:
            impl.step(1, {"type": "Tick", "time": 1})
        except ImplementationFailure as exc:
            box["failure"] = exc

    start = time.monotonic()
    t = threading.Thread(target=drive)
    t.start()
    t.join(PLANTED_DELAY)
    assert box["worker"] is _Worker and box["failure"].kind == "timeout" and time.monotonic() - start < PLANTED_DELAY


def _reader_gone(*argv) -> tuple[int, str]:
    """Run the CLI with a stdout pipe whose reader has gone (``| head`` after its lines, ``| true``)."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "rmkit", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


def test_a_command_that_writes_nothing_on_stdout_runs_with_stdout_closed(tmp_path):
    import os
    import subprocess

    done = subprocess.run([sys.executable, "-m", "rmkit", "keys", "gen", "--validators", "2", "--out", str(tmp_path / "k")],
                          capture_output=True, preexec_fn=lambda: os.close(1), timeout=120)
    assert done.returncode == 0 and (tmp_path / "k" / "validators.yaml").exists(), done.stderr


@pytest.mark.parametrize("protocol", ["remp", "rmb", "corda"])
def test_a_closed_stdin_is_named_not_an_internal_error(protocol):
    import os
    import subprocess

    done = subprocess.run([sys.executable, "-m", "rmkit", "check", "--protocol", protocol, "-"], capture_output=True,
                          preexec_fn=lambda: os.close(0), timeout=120)
    assert done.returncode == 2 and b"standard input is closed" in done.stderr, done.stderr


@pytest.mark.parametrize("argv, code", [
    (["check", str(FIXTURES / "rules" / "spec" / "REMP-REPLAY-001.jsonl")], 1),  # decided before the report: kept
    (["check", CLEAN], 0),
    (["receipt", "verify", "--validators", str(FIXTURES / "rules" / "validators.yaml"), CLEAN], 2),  # cut off: no verdict
    (["explain", "list"], 0),  # no verdict to give
])
def test_a_reader_that_stops_early_cannot_turn_a_verdict_into_a_pass(argv, code):
    got, err = _reader_gone(*argv)
    assert got == code, err
    assert no_traceback(err) and ("no verdict" in err) == (code == 2), err
