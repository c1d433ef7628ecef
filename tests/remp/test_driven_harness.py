"""The harness of REMP driven conformance (`rmkit conform`, `rmkit replay`, the pytest plugin): what
it reports of an implementation that misbehaves, and under which exit code.

The contract: exit 2 (no verdict) only when nothing got past the hello; a crash, a timeout or
malformed output after it is the implementation's failure (exit 1), never the kit's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from rmkit.cli import main
from rmkit.conformance.remp.driven.catalogue import catalogue
from rmkit.reference_impl.remp.adapter import ReferenceAdapter
from remp_coverage_support import seed_coverage

PY = sys.executable
REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
HERE = "test_driven_harness"  # this module, importable by name (pytest puts tests/ on the path)


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def _scenario(tmp_path, index: int = 0) -> str:
    from rmkit.conformance.remp.driven.scenario import write_scenario

    return str(write_scenario(tmp_path / "sc.jsonl", catalogue("spec", ["validator"])[index]))


def _script(tmp_path, body: str) -> str:
    script = tmp_path / "adapter.py"
    script.write_text("import sys, json, os, time\n" + body)
    return f"{PY} {script}"


def _replay(capsys, tmp_path, *impl, timeout: float = 10):
    return run(capsys, "replay", _scenario(tmp_path), *impl, "--timeout", str(timeout))


# -- replay: nothing past the hello is no verdict -------------------------------------------------
class _HelloRaises(ReferenceAdapter):
    def hello(self, params):
        raise RuntimeError("cannot configure")


class _HelloNone(ReferenceAdapter):
    def hello(self, params):
        super().hello(params)
        return None


class _HelloList(ReferenceAdapter):
    def hello(self, params):
        super().hello(params)
        return [1]


@pytest.mark.parametrize("impl", [
    ["--impl-cmd", "true"],  # exits at once
    ["--impl-cmd", f"{PY} -c 'import time; time.sleep(60)'"],  # hangs at the hello
    ["--impl-cmd", f"{PY} -c 'import sys; print(\"garbage\", flush=True); sys.stdin.read()'"],  # garbage at the hello
    ["--impl", f"{HERE}:_HelloRaises"],
])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_replay_of_an_implementation_that_never_gets_past_the_hello_is_no_verdict(capsys, tmp_path, impl, fmt):
    code, out, err = _replay(capsys, tmp_path, *impl, "--format", fmt, timeout=1)  # a slow start fails at the hello too
    assert code == 2, (out, err)
    assert "could not be driven" in err and "no verdict" in err and "Traceback" not in err
    if fmt == "json":
        assert orjson.loads(out)["failure"]["step"] == 0


class _CrashesAtStep2(ReferenceAdapter):
    n = 0

    def step(self, event):
        self.n += 1
        if self.n == 2:
            raise RuntimeError("lost its state")
        return super().step(event)


@pytest.mark.parametrize("impl", [
    ["--impl", f"{HERE}:_CrashesAtStep2"],
    ["--impl-cmd", f"{PY} -c 'from rmkit.reference_impl.remp.adapter import ReferenceAdapter, serve\n"
                   "class A(ReferenceAdapter):\n"
                   "    n = 0\n"
                   "    def step(self, e):\n"
                   "        self.n += 1\n"
                   "        if self.n == 2:\n"
                   "            import os; os._exit(7)\n"
                   "        return super().step(e)\n"
                   "serve(A(\"validator\"))'"],
])
def test_replay_of_an_implementation_that_fails_after_the_hello_is_a_failure(capsys, tmp_path, impl):
    code, out, err = _replay(capsys, tmp_path, *impl)
    assert code == 1, (out, err)
    assert "at step 2" in out and "could not be driven" not in err


def test_a_failing_hello_stops_the_run_at_once_with_one_copy_of_its_error(capsys, tmp_path):
    """It ran every scenario (53 tracebacks for three roles), printed "verdict: FAIL" and then that
    there was no verdict. Now the first role's first hello ends the run, as in the pytest plugin."""
    script = tmp_path / "broken.py"
    script.write_text("import sys\nsys.stdin.readline()\nraise RuntimeError('my adapter is broken')\n")
    code, out, err = run(capsys, "conform", "--impl-cmd", f"{PY} {script} ROLE", "--max-examples", "5",
                         "--regressions", str(tmp_path / "regs"))
    assert code == 2, (out, err)
    assert out.count("RuntimeError: my adapter is broken") == 1 and "as above" not in out, out
    assert "catalogue: 0/1 scenarios passed" in out   # the first scenario: its hello failed, nothing after it
    assert ("verdict: NO VERDICT: the implementation could not be driven as validator (1 scenarios" in out
            and "exit 2)" in out and "the run stopped at a role not driven: fullnode, consumer not tried" in out), out
    assert "verdict: FAIL" not in out and err.count("could not be driven") == 1, err


def test_conform_prints_the_real_command_that_reproduces_each_failure(capsys, tmp_path):
    impl = f"{PY} -m rmkit.conformance.remp.examples no_replay_protection ROLE"
    code, out, err = run(capsys, "conform", "--role", "validator", "--impl-cmd", impl, "--max-examples", "30",
                         "--derandomize", "--timeout", "7", "--regressions", str(tmp_path / "regs"))
    assert code == 1, (out, err)
    saved = next((tmp_path / "regs").glob("*.jsonl"))
    quoted = "'" + impl + "'"
    assert f"reproduce: rmkit replay {saved} --impl-cmd {quoted} --timeout 7" in out, out[-3000:]
    assert f"reproduce: rmkit conform --role validator --profile spec --max-examples 0 --impl-cmd {quoted} --timeout 7" in out
    assert "..." not in out.split("failures:")[1].replace("...]", "")
    junit = run(capsys, "conform", "--role", "validator", "--impl-cmd", impl, "--max-examples", "0", "--format", "junit",
                "--regressions", str(tmp_path / "regs"))[1]
    assert f"reproduce: rmkit replay {saved} --impl-cmd {quoted.replace(chr(39), '&apos;')}" in junit or \
        f"reproduce: rmkit replay {saved} --impl-cmd {quoted}" in junit, junit[-2000:]
    code, out, err = run(capsys, "replay", str(saved), "--impl-cmd", impl)
    assert code == 1 and re.search(r"\n    >\s+\d+\. ShardBlockAccepted block=#\d+ msg_ids=\[\w{8}\]", out), out


# -- the in-process hello must answer ready, as the process's does ---------------------------------
@pytest.mark.parametrize("impl", ["_HelloNone", "_HelloList"])
def test_an_in_process_hello_that_does_not_answer_ready_is_the_hellos_failure(capsys, tmp_path, impl):
    code, out, err = _replay(capsys, tmp_path, "--impl", f"{HERE}:{impl}")
    assert code == 2 and "wrong-answer at step 0" in out and '{"type": "ready"}' in out, (out, err)
    code, out, err = run(capsys, "conform", "--role", "validator", "--impl", f"{HERE}:{impl}", "--catalogue-only",
                         "--regressions", str(tmp_path / "regs"))
    assert code == 2 and "could not be driven as validator" in err, (out, err)


def test_the_reference_in_process_passes_its_hello(capsys, tmp_path):
    code, out, err = _replay(capsys, tmp_path, "--impl", REFERENCE)
    assert code == 0, (out, err)


# -- the in-process size limit holds for any answer -------------------------------------------------
class _OneHugeReceipt(ReferenceAdapter):
    """One output, its receipt's error text 5 MiB long: an answer over the size limit."""

    def step(self, event):
        out = super().step(event)
        for o in out:
            if o["type"] == "Receipt":
                o["receipt"]["error"] = "x" * (5 << 20)
        return out


def test_an_in_process_answer_of_few_outputs_over_the_size_limit_is_oversized(capsys, tmp_path):
    code, out, err = _replay(capsys, tmp_path, "--impl", f"{HERE}:_OneHugeReceipt")
    assert code == 1 and "oversized at step 2" in out, (out, err)  # its first receipt


# -- an out-of-range integer is the implementation's malformed output, not the kit's error ---------
def _rewriting(change):
    class Rewrites(ReferenceAdapter):
        def step(self, event):
            out = super().step(event)
            for o in out:
                change(o)
            return out
    return Rewrites


def _receipt_time(o):
    if o["type"] == "Receipt":
        o["receipt"]["time"] = 10 ** 30


def _sent_to(o):
    if o["type"] == "Receipt":
        o["receipt"]["sent_to"] = -(2 ** 70)


def _shard(o):
    if o["type"] == "Receipt" and o["receipt"].get("block"):
        o["receipt"]["block"]["shard"] = 2 ** 64


def _object(o):
    if o["type"] == "Receipt":
        o["receipt"]["extra"] = object()  # not a field: no decoding looks at it, yet it is no JSON


_BigTime, _BigSentTo, _BigShard, _NotJson = (_rewriting(f) for f in (_receipt_time, _sent_to, _shard, _object))


@pytest.mark.parametrize("impl, says", [
    ("_BigTime", "receipt.time: expected an integer of at most 64 bits"),
    ("_BigSentTo", "receipt.sent_to: expected an integer of at most 64 bits"),
    ("_NotJson", "not JSON"),
])
def test_an_in_process_value_json_cannot_carry_is_malformed(capsys, tmp_path, impl, says):
    code, out, err = _replay(capsys, tmp_path, "--impl", f"{HERE}:{impl}")
    assert code == 1 and "malformed at step" in out and says in out, (out, err)
    assert "internal error" not in err


def test_a_block_with_an_out_of_range_shard_is_malformed(capsys, tmp_path):
    # CAT-VAL-003 reports blocks in its receipts
    from rmkit.conformance.remp.driven.scenario import write_scenario

    sc = next(s for s in catalogue("spec", ["validator"]) if s.id == "CAT-VAL-003")
    path = write_scenario(tmp_path / "blk.jsonl", sc)
    code, out, err = run(capsys, "replay", str(path), "--impl", f"{HERE}:_BigShard")
    assert code == 1 and "block.shard: expected an integer of at most 64 bits" in out, (out, err)


def test_the_codec_takes_the_64_bit_range_and_nothing_beyond():
    from rmkit.protocols.remp.adapterwire import WireError, from_json

    def tick(t):
        return from_json({"type": "Tick", "time": t}, part="events")

    for ok in (0, -(2 ** 63), 2 ** 64 - 1):
        assert tick(ok).time == ok
    for bad in (2 ** 64, -(2 ** 63) - 1, 10 ** 30):
        with pytest.raises(WireError, match=r"Tick\.time: expected an integer of at most 64 bits"):
            tick(bad)


# -- a process that exits at once: what it printed is quoted -----------------------------------------
def test_a_process_that_printed_and_exited_before_the_hello_is_quoted():
    """The hello cannot be written (the process is gone): the report still shows what it printed."""
    from rmkit.conformance.remp.driven.adapters import ImplementationFailure, ProcessImplementation, hello_message

    impl = ProcessImplementation("sh -c 'echo usage: adapter ROLE'", "validator", 2.0)
    impl._spawn()
    impl.proc.wait()
    with pytest.raises(ImplementationFailure) as failure:
        impl._send(hello_message("validator", "spec", {}), 0)
    assert failure.value.kind == "crash" and b"usage: adapter validator" in failure.value.received
    assert "closed its input" in str(failure.value) and "usage: adapter validator" in str(failure.value)


def test_a_process_that_prints_and_exits_is_reported_with_what_it_printed(capsys, tmp_path):
    code, out, err = _replay(capsys, tmp_path, "--impl-cmd", "sh -c 'echo usage: adapter ROLE'")
    assert code == 2 and "at step 0" in out and "usage: adapter validator" in out, (out, err)


# -- the pytest plugin ------------------------------------------------------------------------------
def _pytest(tmp_path, *args, timeout: float = 300) -> subprocess.CompletedProcess:
    (tmp_path / "test_nothing.py").write_text("def test_own():\n    pass\n")
    seed_coverage(tmp_path)
    return subprocess.run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_plugin_an_implementation_it_cannot_drive_is_no_verdict_with_or_without_xdist(tmp_path, workers):
    r = _pytest(tmp_path, "--rmkit-role", "consumer", "--rmkit-impl-cmd", "true", *workers)
    assert r.returncode == 2, (r.stdout + r.stderr)[-3000:]
    assert "could not be driven as consumer" in r.stdout


@pytest.mark.parametrize("impl, code", [(REFERENCE, 0), ("rmkit.conformance.remp.examples.early_reject:factory", 1)])
def test_plugin_under_xdist_an_implementation_driven_keeps_its_verdict(tmp_path, impl, code):
    r = _pytest(tmp_path, "--rmkit-role", "consumer", "--rmkit-impl", impl, "--rmkit-max-examples", "0", "-n", "2")
    assert r.returncode == code, (r.stdout + r.stderr)[-3000:]
    assert "could not be driven" not in r.stdout


def test_plugin_says_a_file_that_is_not_executable_is_not_executable(tmp_path):
    script = tmp_path / "adapter.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    r = _pytest(tmp_path, "--rmkit-impl-cmd", f"{script} ROLE", "--rmkit-role", "consumer")
    assert r.returncode == 4 and "not executable" in r.stderr and "no such executable" not in r.stderr, r.stderr


@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_plugin_gives_each_catalogue_test_a_node_id_and_the_rules_it_was_measured_to_catch(tmp_path, profile):
    """A test's node id is FILE::ROLE::SCENARIO (JUnit: classname and name); the rules whose mutant
    its scenario catches (coverage's measure, not the rules the catalogue declares) are a property
    of the test, found when it runs; a scenario that catches none says so. Collection alone says
    how many tests there are."""
    import xml.etree.ElementTree as ET

    from rmkit.conformance.remp.driven.coverage import coverage

    seed_coverage(tmp_path, profile)
    collected = _pytest(tmp_path, "--collect-only", "--rmkit-impl", REFERENCE, "--rmkit-profile", profile)
    scenarios = catalogue(profile, ["validator", "fullnode", "consumer"])
    ids = set(re.findall(r"rmkit/spec/remp/conformance\.yaml::(?:validator|fullnode|consumer)::(CAT-[A-Z]+-\d+)",
                         collected.stdout))
    assert ids == {sc.id for sc in scenarios}, collected.stdout[-2000:]
    assert f"{len(scenarios) + 3 + 1} tests collected" in collected.stdout, collected.stdout[-500:]  # + generated, test_own
    r = _pytest(tmp_path, "--rmkit-impl", REFERENCE, "--rmkit-profile", profile, "--rmkit-max-examples", "0",
                "--junitxml", str(tmp_path / "j.xml"))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "j.xml").iter("testcase")}
    measured = coverage(profile)
    for sc in scenarios:
        case = cases[sc.id]
        assert case.get("classname") == f"rmkit.spec.remp.conformance.yaml.{sc.role}"
        rules = {p.get("name"): p.get("value") for p in case.iter("property")}["rmkit-rules"]
        mine = {rule for rule, ids in measured.items() if sc.id in ids}
        assert (set(rules.split(",")) == mine) if mine else rules == "no-rule-measured", (sc.id, rules)


def test_junit_names_a_catalogue_scenario_by_the_rules_it_was_measured_to_catch():
    from rmkit.conformance.remp.driven.coverage import coverage
    from rmkit.conformance.remp.driven.report import render_junit
    from rmkit.conformance.remp.driven.suite import run_suite
    from rmkit.conformance.remp.driven.adapters import InProcessImplementation

    rep = run_suite("spec", ["consumer"], lambda role: InProcessImplementation(REFERENCE, role), catalogue_only=True,
                    regressions=None)
    xml = render_junit(rep)
    measured = coverage("spec")
    for r in rep.results:
        mine = sorted(rule for rule, ids in measured.items() if r.scenario.id in ids)
        shown = re.search(rf'name="{r.scenario.id} \[([^\]]*)\]"', xml).group(1).split()
        assert sorted(shown) == (mine or ["no-rule-measured"]), (r.scenario.id, shown)


# -- the coverage key: every source a mutant is made of ---------------------------------------------
def test_the_coverage_key_covers_the_faulty_examples_the_mutants_are_made_of():
    import rmkit.conformance.remp.examples as examples
    from rmkit.conformance.remp.driven.coverage import key_files

    files = set(key_files())
    folder = Path(examples.__file__).parent.resolve()
    assert {folder / "_base.py", folder / "no_replay_protection.py", folder / "newest_first.py"} <= files


def test_an_edit_of_a_mutants_source_measures_coverage_again(tmp_path, monkeypatch):
    """A mutant built on a package of its own: editing any file of that package changes the key."""
    import importlib

    from rmkit.conformance.remp.driven import coverage as cov

    pkg = tmp_path / "variant_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("BOUND = 1\n")
    (pkg / "variant.py").write_text("from rmkit.conformance.remp.examples._base import VariantAdapter\n\n\n"
                                    "class Adapter(VariantAdapter):\n    faulty_role = 'validator'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    variant = importlib.import_module("variant_pkg.variant")
    monkeypatch.setitem(cov.mutants.MUTANTS, "REMP-VALID-001", ("validator", variant.Adapter, ("spec",)))
    before = cov.key("spec")
    (pkg / "helper.py").write_text("BOUND = 2\n")
    assert cov.key("spec") != before


def test_the_documents_plugin_example_names_a_test_as_the_plugin_does():
    from docs_support import documents_text
    from rmkit.conformance.remp.driven.coverage import rules_measured_by

    examples = re.findall(r"`rmkit\[(CAT-[A-Z]+-\d+):([A-Z0-9,-]+)\]`", documents_text())  # docs/conform.md
    assert examples
    by_id = {sc.id: sc for sc in catalogue("spec", ["validator", "fullnode", "consumer"])}
    for sid, rules in examples:
        assert rules.split(",") == rules_measured_by(by_id[sid], "spec"), (sid, rules)
