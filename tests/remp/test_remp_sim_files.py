"""What `rmkit simulate` writes and what its manifest says about it: the same bytes on every run,
and a manifest whose every name points at something real."""

import gzip

import pytest

from rmkit.conformance.remp import faults
from rmkit.reference_impl.remp import dump


def test_every_planter_is_named_in_the_manifest_as_itself():
    """The manifest's `injector` names the function in faults.py that made the plant; a name
    shared by two planters (or naming another function) sends the reader to the wrong code."""
    for rule, planter in faults.PLANTERS.items():
        assert getattr(faults, planter.__name__, None) is planter, (rule, planter.__name__)


RECEIPTS = [{"kind": "Timeout", "message_id": "ab" * 32, "timestamp": 1_700_000_000_000 + i,
             "source_id": "cd" * 32, "signature": "ef" * 64} for i in range(3)]


def test_a_gzip_log_has_the_same_bytes_on_every_run(tmp_path, monkeypatch):
    """Two runs at other times, in other processes, give the same .gz bytes (the log is
    reproducible from the seed): no time and no temporary file name in the gzip header."""
    out = tmp_path / "sim.jsonl.gz"
    written = []
    for now, pid in ((1_700_000_000.0, 4242), (1_800_000_000.0, 777)):
        monkeypatch.setattr(dump.os, "getpid", lambda pid=pid: pid)
        monkeypatch.setattr(gzip.time, "time", lambda now=now: now)
        dump.write_jsonl(str(out), RECEIPTS)
        written.append(out.read_bytes())
    assert written[0] == written[1]
    assert gzip.decompress(written[0]).count(b"\n") == len(RECEIPTS)


@pytest.mark.parametrize("writer", ["jsonl", "kafka"])
def test_a_gzip_header_names_no_temporary_file(tmp_path, writer):
    out = tmp_path / "sim.jsonl.gz"
    if writer == "jsonl":
        dump.write_jsonl(str(out), RECEIPTS)
    else:
        dump.write_kafka_dump(str(out), [(r["timestamp"], r) for r in RECEIPTS])
    assert b"partial" not in out.read_bytes()[:64]


def _plant(tmp_path, profile, kafka, seed):
    from test_simulate_scale import build, findings

    from rmkit.conformance.remp.bulk_sim import expected_findings

    manifest, out = build(tmp_path, name=f"{profile}-{seed}", profile=profile, kafka=kafka, seed=seed, messages=2000,
                          files=1, violations=0.05)
    return manifest, findings(manifest, out), expected_findings(manifest)


@pytest.mark.parametrize("profile,kafka,seed,rules", [
    ("spec", False, 1, {"REMP-BLOCK-001", "REMP-REPLAY-004"}),
    ("spec", True, 2, {"REMP-BLOCK-001", "REMP-REPLAY-004"}),
    ("ever-node", True, 3, {"REMP-BLOCK-001"}),
])
def test_block_and_early_replay_rules_are_planted_and_found_exactly(tmp_path, profile, kafka, seed, rules):
    """A second validator claiming one block candidate (REMP-BLOCK-001) and a second accepted
    block before Finalized (REMP-REPLAY-004, with the REMP-REPLAY-005 its collation makes) are
    planted like every other rule, and a check finds exactly what the manifest says."""
    manifest, got, expected = _plant(tmp_path, profile, kafka, seed)
    aimed = {v["rule"] for v in manifest["violations"] if v["aimed"]}
    assert rules <= aimed, rules - aimed
    assert rules <= set(manifest["rules"]["planted"])
    assert got == expected


def test_violations_help_claims_no_rule_it_cannot_plant():
    """`--violations` plants the rules that have an injector; the help and the documents
    (docs/simulate.md) say so instead
    of promising every rule the profile checks."""
    import argparse
    from pathlib import Path

    from rmkit.conformance.remp.planting import plantable_rules
    from rmkit.conformance.remp.simulate_cli import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser.add_argument_group())
    help_text = next(a.help for a in parser._actions if "--violations" in a.option_strings)
    from docs_support import documents_text

    readme = documents_text()
    lacking = {r for p in ("spec", "ever-node") for r, why in plantable_rules(p, True, True)[1].items() if why.startswith("no injector")}
    if lacking:
        assert "every rule" not in help_text, help_text
        assert "rotating over every rule" not in readme
        assert "not_planted" in help_text



def test_a_redelivered_copy_does_not_move_a_validator_back():
    """The checker reads a receipt repeated byte for byte (Kafka's at-least-once delivery, the
    node's paced resends) once; a planter that took the copy for the validator's latest step saw
    it back at `duplicate` after its IncludedIntoAcceptedBlock, and planted a RejectedByCollator
    right after the accepted block: an undeclared REMP-SEQ-001 beside its REMP-OUTCOME-001."""
    from types import SimpleNamespace

    from rmkit.protocols.remp.model import model_for

    v, mid = "ab" * 32, "cd" * 32
    block = {"block_id": "ee" * 32, "block_file_hash": "ff" * 32, "block_seqno": 5, "shard": "a000000000000000", "wc": 0}

    def receipt(kind, t, **more):
        return {"kind": kind, "message_id": mid, "timestamp": t, "source_id": v, "signature": "", **more}

    dup = receipt("Duplicate", 3, **block)
    stream = [(1, receipt("PutIntoQueue", 1)), (3, dup), (5, receipt("IncludedIntoAcceptedBlock", 5, **block)), (7, dict(dup))]
    ctx = SimpleNamespace(stream=stream, model=model_for("spec"), role_of=lambda src: faults.VALIDATOR_ROLE)
    position, last = faults._positions(ctx, range(len(stream)))[v]
    assert (position, last) == ("shard", 2)
