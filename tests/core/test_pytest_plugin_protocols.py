"""The pytest plugin drives every protocol's implementations as `rmkit conform` does
(`--rmkit-protocol remp|rmb|corda`): a legal example passes and a faulty one fails, each test with a
node id naming its file, role and scenario (JUnit: the classname), a failure showing the whole
scenario and a reproduce line that, pasted into a shell, fails the same way; an implementation
that cannot start or fails its hello stops the run before any test, with its error once (exit 2).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

PY = sys.executable
BIN = str(Path(PY).parent)  # where `rmkit` is installed: a pasted reproduce line finds it there

REMP_LEGAL = "rmkit.reference_impl.remp.adapter:factory"
REMP_FAULTY = "rmkit.conformance.remp.examples.early_reject:factory"  # refuses at the first reject (CAT-CON-001)
CORDA_LEGAL = "rmkit.conformance.corda.driven.adapters:reference_factory"
CORDA_FAULTY = "rmkit.conformance.corda.driven.examples:AckBeforeCommit"
RMB_SERVE = "serve --twin {twin} --directory {directory} --seed {seed} --redis {redis} --listen {listen} --profile {profile}"
RMB_LEGAL = "{python} -m rmkit.reference_impl.rmb.cli " + RMB_SERVE
RMB_FAULTY = "{python} -m rmkit.conformance.rmb.examples retries-on-4xx " + RMB_SERVE  # retries a 4xx (catalogue-04)
# cannot be driven: prints its usage and exits before any hello (ROLE filled in where the protocol has roles)
NO_HELLO = "sh -c 'echo usage: adapter ROLE >&2; exit 3'"


def _env() -> dict:
    # pytest prints a failure's whole message again in its short summary when it sees a CI variable,
    # reproduce line included; the inner runs print what a user's terminal shows, wherever this runs
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")}
    return {**env, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "HYPOTHESIS_PROFILE": "ci"}


def _seed_remp_coverage(folder: Path) -> None:
    """REMP's measured coverage (which names its tests' rules) where a run in ``folder`` reads it:
    measured once in this process, not again in each run."""
    from rmkit.conformance.remp.driven import coverage as cov

    cache = folder / cov.CACHE_DIR
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{cov.key('spec')}-spec.json").write_bytes(orjson.dumps(cov._measured("spec")))


def _pytest(tmp_path: Path, *args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    (tmp_path / "test_own.py").write_text("def test_own():\n    pass\n")
    return subprocess.run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout, env=_env())


def _reproduce_lines(out: str) -> list:
    return re.findall(r"^reproduce: (.+)$", out, flags=re.M)


def _paste(tmp_path: Path, line: str) -> subprocess.CompletedProcess:
    """The reproduce line as a user pastes it into a shell, in the folder pytest ran in."""
    return subprocess.run(["sh", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=400, env=_env())


def _redis():
    from rmb_support import redis_server_or_skip

    redis_server_or_skip()


# -- a legal and a faulty example per protocol ------------------------------------------------------
def test_remp_legal_passes_and_faulty_fails_with_a_reproduce_line_that_fails_when_pasted(tmp_path):
    _seed_remp_coverage(tmp_path)
    common = ["--rmkit-role", "consumer", "--rmkit-max-examples", "0"]
    ok = _pytest(tmp_path, "--rmkit-impl", REMP_LEGAL, *common, "--junitxml", str(tmp_path / "ok.xml"))
    assert ok.returncode == 0, ok.stdout[-3000:]
    assert "PASSED rmkit/spec/remp/conformance.yaml::consumer::CAT-CON-001" in ok.stdout
    assert "SKIPPED" in ok.stdout  # generated-consumer under --rmkit-max-examples 0
    case = next(c for c in ET.parse(tmp_path / "ok.xml").iter("testcase") if c.get("name") == "CAT-CON-001")
    assert case.get("classname") == "rmkit.spec.remp.conformance.yaml.consumer"

    bad = _pytest(tmp_path, "--rmkit-impl", REMP_FAULTY, *common)
    assert bad.returncode == 1, bad.stdout[-3000:]
    assert "FAILED rmkit/spec/remp/conformance.yaml::consumer::CAT-CON-001" in bad.stdout
    # the whole scenario: every step, the failing one marked with expected and actual
    assert re.search(r"\n        1\. ConsumeReceipt receipt=\{kind=PutIntoQueue", bad.stdout), bad.stdout[-3000:]
    assert re.search(r"\n    >   3\. ConsumeReceipt receipt=\{kind=RejectedByCollator", bad.stdout)
    assert "breaks REMP-CLIENT-002" in bad.stdout
    lines = _reproduce_lines(bad.stdout)
    assert lines == [f"rmkit conform --profile spec --role consumer --catalogue-only --impl {REMP_FAULTY}"], lines
    pasted = _paste(tmp_path, lines[0])
    assert pasted.returncode == 1 and "CAT-CON-001 (consumer, spec): FAIL" in pasted.stdout, pasted.stdout[-2000:] + pasted.stderr


def test_corda_legal_passes_and_faulty_fails_shrunk_saved_and_replayable(tmp_path):
    common = ["--rmkit-protocol", "corda", "--rmkit-role", "receiver", "--rmkit-max-examples", "40"]
    ok = _pytest(tmp_path, "--rmkit-impl", CORDA_LEGAL, *common, "--junitxml", str(tmp_path / "ok.xml"))
    assert ok.returncode == 0, ok.stdout[-3000:]
    assert "PASSED rmkit/conformance/corda/driven/suite.py::receiver::generated-receiver" in ok.stdout
    case = next(c for c in ET.parse(tmp_path / "ok.xml").iter("testcase") if c.get("name") == "generated-receiver")
    assert case.get("classname") == "rmkit.conformance.corda.driven.suite.receiver"

    bad = _pytest(tmp_path, "--rmkit-impl", CORDA_FAULTY, *common)
    assert bad.returncode == 1, bad.stdout[-3000:]
    assert "FAILED rmkit/conformance/corda/driven/suite.py::receiver::generated-receiver" in bad.stdout
    assert re.search(r"shrunk scenario \(\d+ steps\): arrive:", bad.stdout) and "CORDA-ACK-001 (strict)" in bad.stdout
    assert "exchange:\n  1: arrive " in bad.stdout  # the scenario as it was played, step by step
    [line] = _reproduce_lines(bad.stdout)
    saved = next((tmp_path / ".rmkit" / "regressions").rglob("corda-receiver-spec-*.json")).relative_to(tmp_path)
    assert line == f"rmkit replay --protocol corda {saved} --impl {CORDA_FAULTY}", line
    pasted = _paste(tmp_path, line)
    assert pasted.returncode == 1 and "CORDA-ACK-001" in pasted.stdout, pasted.stdout[-2000:] + pasted.stderr
    # the saved failure is a test of its own in the next run, under its file; the legal one never sees it
    again = _pytest(tmp_path, "--rmkit-impl", CORDA_FAULTY, *common[:-1], "0")
    assert f"FAILED {saved.as_posix()}::receiver::{saved.stem}" in again.stdout, again.stdout[-3000:]
    assert str(saved) not in _pytest(tmp_path, "--rmkit-impl", CORDA_LEGAL, *common[:-1], "0", "--collect-only").stdout


@pytest.mark.slow  # a daemon on Redis per scenario, twice (legal and faulty) and the pasted line: tens of seconds
def test_rmb_legal_passes_and_faulty_fails_with_a_reproduce_line_that_fails_when_pasted(tmp_path):
    _redis()
    common = ["--rmkit-protocol", "rmb", "--rmkit-max-examples", "0", "-k", "catalogue-04 or catalogue-01"]
    ok = _pytest(tmp_path, "--rmkit-impl-cmd", RMB_LEGAL, *common, "--junitxml", str(tmp_path / "ok.xml"))
    assert ok.returncode == 0, ok.stdout[-3000:]
    assert "PASSED rmkit/conformance/rmb/driven/scenario.py::daemon::catalogue-04" in ok.stdout
    case = next(c for c in ET.parse(tmp_path / "ok.xml").iter("testcase") if c.get("name") == "catalogue-04")
    assert case.get("classname") == "rmkit.conformance.rmb.driven.scenario.daemon"

    bad = _pytest(tmp_path, "--rmkit-impl-cmd", RMB_FAULTY, *common)
    assert bad.returncode == 1, bad.stdout[-3000:]
    assert "FAILED rmkit/conformance/rmb/driven/scenario.py::daemon::catalogue-04" in bad.stdout
    assert "PASSED rmkit/conformance/rmb/driven/scenario.py::daemon::catalogue-01" in bad.stdout
    assert "RMB-RETRY-003" in bad.stdout and re.search(r'\n    > 1\. \{"act": "send", "dst": \["p2"\]', bad.stdout)
    [line] = _reproduce_lines(bad.stdout)
    assert line == f"rmkit conform --protocol rmb --profile spec --catalogue-only --impl-cmd '{RMB_FAULTY}'", line
    pasted = _paste(tmp_path, line)
    assert pasted.returncode == 1 and "RMB-RETRY-003" in pasted.stdout, pasted.stdout[-2000:] + pasted.stderr


# -- collection: node ids, nothing started ----------------------------------------------------------
@pytest.mark.parametrize("protocol, first, last", [
    ("remp", "rmkit/spec/remp/conformance.yaml::validator::CAT-VAL-001", "rmkit/spec/remp/conformance.yaml::consumer::generated-consumer"),
    ("rmb", "rmkit/conformance/rmb/driven/scenario.py::daemon::catalogue-01", "rmkit/conformance/rmb/driven/scenario.py::daemon::generated-daemon"),
    ("corda", "rmkit/conformance/corda/driven/suite.py::receiver::generated-receiver", "rmkit/conformance/corda/driven/suite.py::bridge::generated-bridge"),
])
def test_collection_names_every_test_and_starts_nothing(tmp_path, protocol, first, last):
    """An implementation that cannot even start is collected fine: collection runs nothing of it."""
    r = _pytest(tmp_path, "--collect-only", "--rmkit-protocol", protocol, "--rmkit-impl-cmd", NO_HELLO, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ids = [line for line in r.stdout.splitlines() if "::" in line]
    assert ids[0] == "test_own.py::test_own" and ids[1] == first and ids[-1] == last, ids[:3] + ids[-2:]
    assert f"{len(ids)} tests collected" in r.stdout and "usage: adapter" not in r.stdout + r.stderr


# -- a failing hello stops the run at once ---------------------------------------------------------
@pytest.mark.parametrize("protocol, role", [("remp", "validator"), ("rmb", "daemon"), ("corda", "receiver")])
def test_an_implementation_that_fails_its_hello_stops_the_run_with_its_error_once(tmp_path, protocol, role):
    if protocol == "rmb":
        _redis()
    r = _pytest(tmp_path, "--rmkit-protocol", protocol, "--rmkit-impl-cmd", NO_HELLO, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out[-3000:]
    assert out.count("could not be driven") == 1 and f"could not be driven as {role}:" in out, out[-3000:]
    assert "no test was run: no conformance verdict" in out and "no tests ran" in r.stdout
    assert "PASSED" not in out and "FAILED" not in out and "Traceback" not in out
    if protocol != "corda":  # corda's process writes to the terminal directly
        assert "usage: adapter" in out


def test_a_failing_hello_stops_the_run_under_xdist_too(tmp_path):
    r = _pytest(tmp_path, "-n", "2", "--rmkit-role", "consumer", "--rmkit-impl-cmd", NO_HELLO, timeout=200)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and out.count("could not be driven as consumer:") == 1, out[-3000:]
    assert "PASSED" not in out and "FAILED" not in out


def test_options_name_the_protocol_and_its_roles(tmp_path):
    r = _pytest(tmp_path, "--rmkit-protocol", "bogus", "--rmkit-impl-cmd", "true", timeout=60)
    assert r.returncode == 4 and "bogus" in r.stderr, r.stderr
    r = _pytest(tmp_path, "--rmkit-protocol", "corda", "--rmkit-role", "consumer", "--rmkit-impl-cmd", "true", timeout=60)
    assert r.returncode == 4 and "expected one of receiver, bridge" in r.stderr, r.stderr
    r = _pytest(tmp_path, "--rmkit-protocol", "rmb", "--rmkit-impl", REMP_LEGAL, timeout=60)
    assert r.returncode == 4 and "--impl-cmd" in r.stderr, r.stderr
