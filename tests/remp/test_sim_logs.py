"""The committed simulator logs: each gives exactly the violation counts its manifest records (derived
from the injection plan and the simulator's own plan, never from a check), and the script that made
them makes them again byte for byte."""

import importlib.util
import json

import pytest

from conftest import FIXTURES
from rmkit.conformance.remp.checker import RempLogChecker

LOGS = FIXTURES / "logs"
MANIFEST = json.loads((LOGS / "manifest.json").read_text(encoding="utf-8"))["logs"]


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_log_gives_its_recorded_counts(entry):
    report = RempLogChecker(entry["profile"], lifetime_s=entry["lifetime"]).run([str(LOGS / entry["file"])])
    assert dict(sorted(report.counts.items())) == entry["expect"]
    assert report.verdict == entry["verdict"]
    assert (report.records, report.subjects) == (entry["receipts"], entry["messages"])
    assert set(entry["injected"]) <= set(report.counts)
    if not entry["injected"]:
        assert report.verdict in ("pass", "non-strict")
        # the messages lost, exactly those the simulator's plan loses by design
        assert {v.subject for v in report.violations if v.rule == "REMP-LIVE-001"} == set(entry["lost_by_design"])


def test_clean_spec_log_covers_the_legal_surprises():
    lines = [json.loads(x) for x in (LOGS / "sim-spec-clean.jsonl").read_text().splitlines()]
    kinds_by_msg = {}
    for r in lines:
        kinds_by_msg.setdefault(r["message_id"], []).append(r["kind"])
    rejected_then_finalized = [m for m, ks in kinds_by_msg.items() if "RejectedByCollator" in ks and "Finalized" in ks]
    assert rejected_then_finalized, "no message is rejected by one validator and finalized through another"
    ignored_then_finalized = [m for m, ks in kinds_by_msg.items() if "Finalized" in ks
                              and any(k.startswith("Ignored") for k in ks[: ks.index("Finalized")])]
    assert ignored_then_finalized, "no message is ignored, collated again and finalized"


def test_logs_are_reproducible(tmp_path):
    spec = importlib.util.spec_from_file_location("mksim", FIXTURES / "make_sim_logs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    built = mod.build(tmp_path)
    assert built == {"logs": MANIFEST}
    for entry in MANIFEST:
        assert (tmp_path / entry["file"]).read_bytes() == (LOGS / entry["file"]).read_bytes(), entry["file"]
