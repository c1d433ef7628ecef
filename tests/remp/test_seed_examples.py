"""The seed document's own example receipts: each well formed, together not a flow."""

import orjson

from conftest import FIXTURES
from rmkit.conformance.remp.checker import RempLogChecker

EXAMPLES = FIXTURES / "seed" / "examples.jsonl"
WELL_FORMED = {"REMP-INPUT-001", "REMP-INPUT-002", "REMP-SCHEMA-001", "REMP-KIND-001", "REMP-KIND-002", "REMP-TIME-001",
               "REMP-TIME-002", "REMP-SIG-001"}


def test_each_example_receipt_is_well_formed_in_the_spec_profile(tmp_path):
    lines = EXAMPLES.read_bytes().splitlines()
    assert [orjson.loads(x)["kind"] for x in lines] == [
        "SentToValidators", "RejectedByFullnode", "PutIntoQueue", "RejectedByCollator",
        "IncludedIntoBlock", "IncludedIntoAcceptedBlock", "Finalized"]
    for i, line in enumerate(lines):
        one = tmp_path / f"{i}.jsonl"
        one.write_bytes(line + b"\n")
        report = RempLogChecker("spec").run([str(one)])
        assert not WELL_FORMED & set(report.counts), (i, report.counts)


def test_as_a_log_the_examples_break_the_flow_rules():
    report = RempLogChecker("spec").run([str(EXAMPLES)])
    assert report.counts == {"REMP-ROLE-001": 4, "REMP-SEQ-001": 1, "REMP-SRC-002": 1, "REMP-OUTCOME-002": 1}
    assert not WELL_FORMED & set(report.counts)
