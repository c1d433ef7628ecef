"""How many processes `rmkit check --protocol corda` uses by default: as the core's auto_jobs
decides (one per idle core, log size), as RMB's checker; and a run of N shares takes N processes,
the parent checking share 0 (each process holds an interpreter: a third one would break the exact
check's memory bound at ten million records with two shares)."""

from __future__ import annotations

from rmkit import processes
from rmkit.conformance.corda import checker


def test_the_default_follows_the_core_default(monkeypatch):
    for n in (1, 2, 5):
        monkeypatch.setattr(checker, "auto_jobs", lambda inputs, n=n: n)
        assert checker.default_jobs(["big.jsonl"]) == n


def test_the_checker_asks_for_the_default_when_no_jobs_are_given(monkeypatch, tmp_path):
    log = tmp_path / "r.jsonl"
    log.write_text('{"t":1,"node":"bob","event":"committed","id":"R-1","tx":1}\n')
    asked = []
    monkeypatch.setattr(checker, "default_jobs", lambda inputs: asked.append(inputs) or 1)
    checker.CordaLogChecker(jobs=None).run([str(log)])
    assert asked == [[str(log)]]


def test_the_parent_checks_share_zero(monkeypatch, tmp_path):
    log = tmp_path / "r.jsonl"
    log.write_text("".join(f'{{"t":{i},"node":"bob","event":"committed","id":"R-{i}","tx":{i}}}\n' for i in range(1, 40)))
    started, real = [], processes.start_processes
    monkeypatch.setattr(processes, "start_processes", lambda target, args: started.append(args) or real(target, args))
    one = checker.CordaLogChecker(jobs=1).run([str(log)])
    three = checker.CordaLogChecker(jobs=3).run([str(log)])
    assert [[a[1][2] for a in args] for args in started] == [[1, 2]]  # (shares 1 and 2 in processes)
    assert three.metrics["shares"] == 3 and (three.records, three.unreadable) == (one.records, one.unreadable)
    assert [(p.line, p.error) for p in three.input_problems] == [(p.line, p.error) for p in one.input_problems]
    assert len(one.input_problems) == 39


def test_a_share_does_not_load_numpy():
    """numpy (about 15 MB of a process's memory) is the merge's alone: a share's process, forked
    before the merge, does not load it (nor does the parent before it forks)."""
    import subprocess
    import sys
    from pathlib import Path

    log = Path(__file__).resolve().parents[2] / "fixtures" / "corda" / "rules" / "corda-ent-fastpath" / "CORDA-ACK-002.jsonl"
    code = ("import sys\n"
            "from rmkit.conformance.corda.checker import CordaLogChecker\n"
            "from rmkit.conformance.corda.parallel import _check_share\n"
            f"share = _check_share(CordaLogChecker(settled=True), [{str(log)!r}], 0, 1)\n"
            "assert share.records > 0\n"
            "print('numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
