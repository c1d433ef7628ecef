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
