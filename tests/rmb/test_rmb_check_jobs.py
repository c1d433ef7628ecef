"""How many processes `rmkit check --protocol rmb` uses by default: one on a machine of two cores
or fewer (every share reads and keys the whole log, so a second process there only wins while both
cores are idle), else as the core's auto_jobs decides (idle cores, log size)."""

from __future__ import annotations

from pathlib import Path

from rmkit.conformance.rmb import checker

CLEAN = Path(__file__).resolve().parents[2] / "fixtures" / "rmb" / "rules" / "spec" / "clean-request-reply.jsonl"


def test_one_process_on_two_cores_or_fewer(monkeypatch):
    monkeypatch.setattr(checker, "auto_jobs", lambda inputs: 2)
    for cores in (1, 2):
        monkeypatch.setattr(checker, "usable_cores", lambda cores=cores: cores)
        assert checker.default_jobs(["big.jsonl"]) == 1


def test_more_cores_follow_the_core_default(monkeypatch):
    monkeypatch.setattr(checker, "usable_cores", lambda: 8)
    monkeypatch.setattr(checker, "auto_jobs", lambda inputs: 5)
    assert checker.default_jobs(["big.jsonl"]) == 5


def test_the_checker_asks_for_the_default_when_no_jobs_are_given(monkeypatch):
    asked = []
    monkeypatch.setattr(checker, "default_jobs", lambda inputs: asked.append(inputs) or 1)
    report = checker.RmbLogChecker(checker.RmbShards("spec"), jobs=None).run([str(CLEAN)])
    assert asked == [[str(CLEAN)]] and report.records > 0 and report.metrics["jobs"] == 1
