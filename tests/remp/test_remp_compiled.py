"""The REMP log checker's modules that setup.py compiles with Cython (from the same .py files, in
pure Python mode; optional: where no C compiler is found they run as Python) report what the
Python files report: every rule fixture, the planted simulator logs and a log with late receipts,
checked by one process and by the audit's shares (which read the log's clock events), by the
compiled modules here and by the Python files in a subprocess that imports them from source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiled_support import compiled, same_findings_from_source
from late_receipts import FAULTS_LOG, late_log
from rmkit.conformance.remp import checker, clocktrack, handlers, metrics, state

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "remp"
COMPILED = ("checker", "handlers", "state", "metrics", "clocktrack")  # setup.py's Extensions of conformance/remp/*.py
MODULES = (checker, handlers, state, metrics, clocktrack)

# (profile, path, validator set file or None, shares: 0 for one process, else the audit's shares)
FINDINGS = r"""
def FINDINGS(profile, path, validators, shares):
    from rmkit.conformance.remp.checker import RempLogChecker
    from rmkit.conformance.remp.sharded import RempShards
    from rmkit.conformance.remp.shares import partition_share
    from rmkit.protocols.remp.keys import load_validator_set

    valset = load_validator_set(validators) if validators else None
    one = RempLogChecker(profile, validator_set=valset, max_examples=0, jobs=1)
    if not shares:
        report = one.run([path])
    else:  # the audit's way: each share its messages' lines and the whole log's clock events, then the merge
        with open(path, "rb") as f:
            raw = f.read().split(b"\n")
        if raw and raw[-1] == b"":
            raw.pop()
        own = {k: ([], []) for k in range(shares)}
        for lineno, line in enumerate(raw, start=1):
            k = partition_share(line, shares)
            refs, lines = own[lineno % shares if k is None else k]
            refs.append(lineno)
            lines.append(line)
        shards = RempShards(one._kwargs)
        clock = [shards.clock_block(range(1, len(raw) + 1), raw)]  # (one split: the clock pass's block of it)
        report = shards.merge([path], [shards.check_share([path], [batch], clock) for batch in own.values() if batch[0]])
    return [sorted([v.rule, v.subject, v.explanation, sorted(e.line for e in v.evidence)] for v in report.violations),
            dict(report.counts), report.unreadable, report.records, report.subjects, report.metrics["late_receipts"],
            report.metrics["redelivered_receipts"], report.metrics["outcomes"], report.metrics["latency_ms"],
            report.metrics["per_source"], report.verdict]
"""


def _logs(tmp_path: Path) -> list[list]:
    """[profile, path, validator set, shares] of every rule fixture (one process), and of the planted
    simulator logs and a log with late receipts (one process and two and three shares)."""
    rules = FIXTURES / "rules"
    logs = [[entry["profile"], str(rules / entry["file"]), str(rules / entry["validators"]) if entry.get("validators") else None, 0]
            for entry in json.loads((rules / "manifest.json").read_text(encoding="utf-8"))["fixtures"]]
    late, _ = late_log(tmp_path / "late.jsonl", FAULTS_LOG)
    planted = [(entry["profile"], str(FIXTURES / "logs" / entry["file"]))
               for entry in json.loads((FIXTURES / "logs" / "manifest.json").read_text(encoding="utf-8"))["logs"]]
    for profile, path in planted + [("spec", str(late))]:
        logs += [[profile, path, None, shares] for shares in (0, 2, 3)]
    return logs


def test_the_compiled_remp_checker_reports_what_its_python_files_report(tmp_path):
    if not compiled(dict(zip(COMPILED, MODULES))):
        pytest.skip("no module of the REMP checker was compiled here (no C compiler at install): only the Python files run")
    logs = _logs(tmp_path)
    assert len(logs) > 80
    here = same_findings_from_source("rmkit.conformance.remp", COMPILED, FINDINGS, logs, tmp_path)
    assert sum(bool(found[0]) for found in here) > 60  # (the fixtures break rules: the comparison is not of empty reports)
