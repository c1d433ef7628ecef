"""How many processes `rmkit check --protocol rmb` uses by default: as the core's auto_jobs decides
(idle cores, log size): two shares win on two idle cores, one process on a busy machine."""

from __future__ import annotations

from pathlib import Path

from rmkit.conformance.rmb import checker

CLEAN = Path(__file__).resolve().parents[2] / "fixtures" / "rmb" / "rules" / "spec" / "clean-request-reply.jsonl"


def test_the_default_is_the_core_default(monkeypatch):
    for n in (1, 2, 5):
        monkeypatch.setattr(checker, "auto_jobs", lambda inputs, n=n: n)
        assert checker.default_jobs(["big.jsonl"]) == n


def test_the_checker_asks_for_the_default_when_no_jobs_are_given(monkeypatch):
    asked = []
    monkeypatch.setattr(checker, "default_jobs", lambda inputs: asked.append(inputs) or 1)
    report = checker.RmbLogChecker(checker.RmbShards("spec"), jobs=None).run([str(CLEAN)])
    assert asked == [[str(CLEAN)]] and report.records > 0 and report.metrics["jobs"] == 1
