"""The RMB log checker's modules that setup.py compiles with Cython (from the same .py files, in
pure Python mode; optional: where no C compiler is found they run as Python) report what the
Python files report: every rule fixture and planted log, and a log planted with faults, checked
by the compiled modules here and by the Python files in a subprocess that imports them from
source."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiled_support import compiled, same_findings_from_source
from rmkit.conformance.rmb import checker, handlers, logjudge, sigreuse, state

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "rmb"
DIRECTORY = str(FIXTURES / "rules" / "directory.json")
COMPILED = ("checker", "handlers", "logjudge", "sigreuse", "state")  # setup.py's Extensions of conformance/rmb/*.py

FINDINGS = f"DIRECTORY = {DIRECTORY!r}\n" + r"""
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
    if not compiled(dict(zip(COMPILED, (checker, handlers, logjudge, sigreuse, state)))):
        pytest.skip("no module of the RMB checker was compiled here (no C compiler at install): only the Python files run")
    logs = _logs(tmp_path)
    assert len(logs) > 100
    here = same_findings_from_source("rmkit.conformance.rmb", COMPILED, FINDINGS, logs, tmp_path)
    assert any(found for found, *_ in here)  # (the fixtures break rules: the comparison is not of empty reports)
