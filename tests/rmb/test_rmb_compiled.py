"""The RMB log checker's modules that setup.py compiles with Cython (from the same .py files, in
pure Python mode; optional: where no C compiler is found they run as Python) report what the
Python files report: every rule fixture and planted log, and a log planted with faults, checked
by the compiled modules here and by the Python files in a subprocess that imports them from
source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rmkit.conformance.rmb import checker, handlers, logjudge, state

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "rmb"
DIRECTORY = str(FIXTURES / "rules" / "directory.json")
COMPILED = ("checker", "handlers", "logjudge", "state")  # setup.py's Extensions of conformance/rmb/*.py

# run in a subprocess: the compiled modules' names imported from their .py files, then every log checked
PURE_RUN = r"""
import importlib.abc, importlib.util, json, os, sys

PURE = {f"rmkit.conformance.rmb.{name}" for name in sys.argv[1].split(",")}


class FromSource(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in PURE:
            return None
        return importlib.util.spec_from_file_location(name, os.path.join(path[0], name.rsplit(".", 1)[1] + ".py"))


sys.meta_path.insert(0, FromSource())
with open(sys.argv[2], encoding="utf-8") as f:
    found = [FINDINGS(profile, path) for profile, path in json.load(f)]
print(json.dumps([sorted(sys.modules[name].__file__.rsplit("/", 1)[1] for name in PURE)] + found))
"""

FINDINGS = r"""
def FINDINGS(profile, path, jobs=1):
    import os
    from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards

    own = os.path.join(os.path.dirname(path), "directory.json")  # (a folder of logs with its own twins)
    report = RmbLogChecker(RmbShards(profile, own if os.path.exists(own) else DIRECTORY, max_examples=0), jobs=jobs).run([path])
    return [sorted([v.rule, v.explanation, sorted(e.line for e in v.evidence)] for v in report.violations),
            dict(report.counts), report.unreadable, report.records, report.metrics["late_records"],
            report.metrics["peak_open_requests"]]
"""


def _logs(tmp_path: Path) -> list[tuple[str, str]]:
    """(profile, path) of every rule fixture and planted log, and of a log planted with faults."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rmb_jobs_parity", Path(__file__).with_name("test_rmb_jobs_parity.py"))
    parity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parity)  # (its planted log with faults)
    logs = [(p.parent.name, str(p)) for folder in ("rules", "logs") for p in sorted((FIXTURES / folder).glob("*/*.jsonl"))]
    faulty = tmp_path / "faulty.jsonl"
    parity._faulty_log(faulty, 7)
    return logs + [("spec", str(faulty))]


def test_the_compiled_rmb_checker_reports_what_its_python_files_report(tmp_path):
    built = [name for name, module in zip(COMPILED, (checker, handlers, logjudge, state)) if not module.__file__.endswith(".py")]
    if not built:
        pytest.skip("no module of the RMB checker was compiled here (no C compiler at install): only the Python files run")
    logs = _logs(tmp_path)
    assert len(logs) > 100
    namespace = {"DIRECTORY": DIRECTORY}
    exec(FINDINGS, namespace)
    here = [namespace["FINDINGS"](profile, path) for profile, path in logs]
    assert any(found for found, *_ in here)  # (the fixtures break rules: the comparison is not of empty reports)
    code = f"DIRECTORY = {DIRECTORY!r}\n" + FINDINGS + PURE_RUN
    listed = tmp_path / "logs.json"
    listed.write_text(json.dumps(logs), encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", code, ",".join(COMPILED), str(listed)], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    files, *pure = json.loads(run.stdout)
    assert files == sorted(f"{name}.py" for name in COMPILED)  # (the subprocess ran the Python files)
    assert [json.loads(json.dumps(h)) for h in here] == pure
