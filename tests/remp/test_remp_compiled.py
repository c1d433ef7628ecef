"""The REMP log checker's modules that setup.py compiles with Cython (from the same .py files, in
pure Python mode; optional: where no C compiler is found they run as Python) report what the
Python files report: every rule fixture, the planted simulator logs and a log with late receipts,
checked by one process and by the audit's shares (which read the log's clock events), by the
compiled modules here and by the Python files in a subprocess that imports them from source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from late_receipts import FAULTS_LOG, late_log
from rmkit.conformance.remp import checker, clocktrack, handlers, metrics, state

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "remp"
COMPILED = ("checker", "handlers", "state", "metrics", "clocktrack")  # setup.py's Extensions of conformance/remp/*.py
MODULES = (checker, handlers, state, metrics, clocktrack)

# run in a subprocess: the compiled modules' names imported from their .py files, then every log checked
PURE_RUN = r"""
import importlib.abc, importlib.util, json, os, sys

PURE = {f"rmkit.conformance.remp.{name}" for name in sys.argv[1].split(",")}


class FromSource(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in PURE:
            return None
        return importlib.util.spec_from_file_location(name, os.path.join(path[0], name.rsplit(".", 1)[1] + ".py"))


sys.meta_path.insert(0, FromSource())
with open(sys.argv[2], encoding="utf-8") as f:
    found = [FINDINGS(*log) for log in json.load(f)]
print(json.dumps([sorted(sys.modules[name].__file__.rsplit("/", 1)[1] for name in PURE)] + found))
"""

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
    built = [name for name, module in zip(COMPILED, MODULES) if not module.__file__.endswith(".py")]
    if not built:
        pytest.skip("no module of the REMP checker was compiled here (no C compiler at install): only the Python files run")
    logs = _logs(tmp_path)
    assert len(logs) > 80
    namespace: dict = {}
    exec(FINDINGS, namespace)
    here = [namespace["FINDINGS"](*log) for log in logs]
    assert sum(bool(found[0]) for found in here) > 60  # (the fixtures break rules: the comparison is not of empty reports)
    listed = tmp_path / "logs.json"
    listed.write_text(json.dumps(logs), encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", FINDINGS + PURE_RUN, ",".join(COMPILED), str(listed)], cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    files, *pure = json.loads(run.stdout)
    assert files == sorted(f"{name}.py" for name in COMPILED)  # (the subprocess ran the Python files)
    assert [json.loads(json.dumps(h)) for h in here] == pure
