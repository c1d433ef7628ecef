"""REMP's and Corda's `rmkit conform` keep saved failures per implementation command, as RMB's does:
a failure saved for one implementation is replayed against it in the next run and never against
another one; a folder named with --regressions is used as it is; Hypothesis's own files stay out of
the working directory."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from rmkit.cli import main
from rmkit.cli_options import DEFAULT_REGRESSIONS

REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
# the same Python implementation, named through a module that re-exports it: another --impl as written
SAME_CODE_OTHER_NAME = "rmkit.reference_impl.remp.adapter:ReferenceAdapter"


def _folder_of(implementation: str) -> Path:
    return DEFAULT_REGRESSIONS / f"impl-{hashlib.sha256(implementation.encode()).hexdigest()[:12]}"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh working directory, REMP's measured coverage read from the checkout's cache (measuring
    it again costs about 20 s and is not what these tests are about)."""
    from rmkit.conformance.remp.driven import coverage

    monkeypatch.setattr(coverage, "CACHE_DIR", Path.cwd() / coverage.CACHE_DIR)
    monkeypatch.delenv("RMKIT_REGRESSIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _plant_remp(folder: Path, sid: str) -> None:
    """A saved REMP scenario (a catalogue scenario under an id of its own), as a failure saved earlier."""
    from rmkit.conformance.remp.driven.catalogue import catalogue
    from rmkit.conformance.remp.driven.scenario import write_scenario

    sc = catalogue("spec", ["consumer"])[0]
    sc.id = sid
    write_scenario(folder / f"consumer-spec-{sid.lower()}.jsonl", sc)


def _remp_ids(capsys, impl: str, *extra: str) -> set:
    assert main(["conform", "--role", "consumer", "--impl", impl, "--catalogue-only", "--format", "json", *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    return {s["id"] for s in doc["scenarios"]}


def test_remp_replays_a_saved_failure_against_its_own_implementation_only(workdir, capsys):
    _plant_remp(workdir / _folder_of(REFERENCE), "PLANTED-A")
    _plant_remp(workdir / _folder_of(SAME_CODE_OTHER_NAME), "PLANTED-B")
    _plant_remp(workdir / DEFAULT_REGRESSIONS, "PLANTED-SHARED")  # the old shared folder: read by nobody now
    mine = _remp_ids(capsys, REFERENCE)
    assert "PLANTED-A" in mine and "PLANTED-B" not in mine and "PLANTED-SHARED" not in mine, mine
    other = _remp_ids(capsys, SAME_CODE_OTHER_NAME)
    assert "PLANTED-B" in other and "PLANTED-A" not in other, other
    # a folder the user names is theirs: used as it is, whatever the implementation
    named = _remp_ids(capsys, SAME_CODE_OTHER_NAME, "--regressions", str(workdir / _folder_of(REFERENCE)))
    assert "PLANTED-A" in named and "PLANTED-B" not in named, named
    assert not (workdir / ".hypothesis").exists()


def test_corda_saves_a_failure_for_its_implementation_and_replays_it_to_it_alone(workdir, capsys):
    ref = f"{sys.executable} -m rmkit.conformance.corda.driven.adapters ROLE"
    bad = f"{sys.executable} -m rmkit.conformance.corda.driven.examples ack_before_commit ROLE"
    args = ["conform", "--protocol", "corda", "--profile", "corda-os", "--role", "receiver", "--derandomize"]
    assert main([*args, "--impl-cmd", bad, "--max-examples", "100"]) == 1
    capsys.readouterr()
    saved = sorted((workdir / DEFAULT_REGRESSIONS).rglob("corda-*.json"))
    assert [p.parent for p in saved] == [workdir / _folder_of(bad)], saved
    assert main([*args, "--impl-cmd", bad, "--max-examples", "0"]) == 1  # replayed to its own implementation
    assert "saved scenario" in capsys.readouterr().out
    # the legal implementation never reads the faulty one's folder: a file there it could not read
    # (exit 2 where it is read) leaves its run of the named scenarios alone a pass
    (saved[0].parent / "corda-unreadable.json").write_text("{", encoding="utf-8")
    assert main([*args, "--impl-cmd", bad, "--max-examples", "0"]) == 2
    assert main([*args, "--impl-cmd", ref, "--max-examples", "0"]) == 0
    assert not (workdir / ".hypothesis").exists()
