"""The minimal implementations in the implementers' documents run as written: each code block of
spec/remp/adapter.md's "Minimal implementations" (and spec/rmb/daemon.md's minimal daemon) is
started by `rmkit conform` with a small scenario budget, and gets the verdict the sentence above
it states: it passes, or it fails exactly the rules named there."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from rmkit.cli import main

REPO = Path(__file__).resolve().parents[2]
ROLE_OF = {"consumer": "consumer", "full node": "fullnode", "validator": "validator"}
BLOCK = re.compile(r"\*\*Minimal ([a-z ]+)\*\* \((passes|fails ([A-Z0-9,\s-]+?) in the catalogue)[^`]*?```python\n(.*?)```",
                   re.S)


def minimal_blocks(doc: str) -> list:
    """(what, expected failing rules or None for a pass, code) of every minimal implementation in ``doc``."""
    out = []
    for what, verdict, rules, code in BLOCK.findall((REPO / doc).read_text()):
        out.append((what, None if verdict == "passes" else sorted(r.strip() for r in rules.split(",")), code))
    return out


REMP = minimal_blocks("spec/remp/adapter.md")
RMB = minimal_blocks("spec/rmb/daemon.md")


def test_the_remp_document_has_a_minimal_implementation_per_role():
    assert sorted(what for what, _, _ in REMP) == ["consumer", "full node", "validator"]
    assert all(len(code.splitlines()) <= 55 for _, _, code in REMP)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    from rmkit.conformance.remp.driven import coverage

    monkeypatch.setattr(coverage, "CACHE_DIR", Path.cwd() / coverage.CACHE_DIR)  # measured once, not per run
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("what, fails, code", REMP, ids=[w for w, _, _ in REMP])
def test_a_remp_minimal_implementation_gets_the_verdict_its_document_states(workdir, capsys, what, fails, code):
    script = workdir / "impl.py"
    script.write_text(code)
    budget = ["--catalogue-only"] if fails else ["--max-examples", "50", "--derandomize"]
    code_ = main(["conform", "--role", ROLE_OF[what], "--impl-cmd", f"{sys.executable} {script}", *budget,
                  "--format", "json", "--regressions", str(workdir / "regs")])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert not doc["not_driven"], doc["not_driven"]  # it started and was judged
    failed = sorted(r["id"] for r in doc["rules"] if r["status"] == "fail")
    if fails is None:
        assert code_ == 0 and doc["verdict"] == "pass", (failed, err[-2000:])
    else:
        assert code_ == 1 and failed == fails, (failed, err[-2000:])


@pytest.mark.slow  # a Redis and daemon per scenario of the catalogue: tens of seconds
def test_the_rmb_document_has_a_minimal_daemon_that_starts_and_is_judged(tmp_path, capsys):
    from rmb_support import redis_server_or_skip

    redis_server_or_skip()
    [(what, fails, code)] = RMB
    script = tmp_path / "daemon.py"
    script.write_text(code)
    assert what == "daemon" and len(code.splitlines()) <= 55
    code_ = main(["conform", "--protocol", "rmb", "--catalogue-only", "--format", "json", "--regressions", str(tmp_path / "regs"),
                  "--impl-cmd", f"{{python}} {script} twin={{twin}} redis={{redis}} listen={{listen}}"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    failed = sorted(row["id"] for row in doc["rules"] if row["status"] == "fail")
    assert code_ == 1 and failed == fails, (failed, err[-2000:])
    assert not any(s["extras"]["crashed"] for s in doc["scenarios"])  # it ran to the end: judged, not broken down
