"""How many processes `rmkit check --protocol corda` uses by default: one on a machine of two cores
or fewer (every share reads and deals the whole log and holds an interpreter of its own: a second
process there adds a third to the CPU and breaks the exact check's memory bound at ten million
records), else as the core's auto_jobs decides (idle cores, log size)."""

from __future__ import annotations

from rmkit.conformance.corda import checker


def test_one_process_on_two_cores_or_fewer(monkeypatch):
    monkeypatch.setattr(checker, "auto_jobs", lambda inputs: 2)
    for cores in (1, 2):
        monkeypatch.setattr(checker, "usable_cores", lambda cores=cores: cores)
        assert checker.default_jobs(["big.jsonl"]) == 1


def test_more_cores_follow_the_core_default(monkeypatch):
    monkeypatch.setattr(checker, "usable_cores", lambda: 8)
    monkeypatch.setattr(checker, "auto_jobs", lambda inputs: 5)
    assert checker.default_jobs(["big.jsonl"]) == 5


def test_the_checker_asks_for_the_default_when_no_jobs_are_given(monkeypatch, tmp_path):
    log = tmp_path / "r.jsonl"
    log.write_text('{"t":1,"node":"bob","event":"committed","id":"R-1","tx":1}\n')
    asked = []
    monkeypatch.setattr(checker, "default_jobs", lambda inputs: asked.append(inputs) or 1)
    checker.CordaLogChecker(jobs=None).run([str(log)])
    assert asked == [[str(log)]]
