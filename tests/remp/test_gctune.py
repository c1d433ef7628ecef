"""rmkit.gctune: the collector is paused inside and comes back as it was after (nested uses share
one pause; an exception inside still restores it; a collector already off stays off)."""

import gc

import pytest

from rmkit.gctune import paused_collections


def test_paused_inside_and_restored_after():
    assert gc.isenabled()
    with paused_collections():
        assert not gc.isenabled()
        with paused_collections():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer use still holds the pause
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with paused_collections():
            raise ValueError("inside")
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off():
    gc.disable()
    try:
        with paused_collections():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_checking_a_log_leaves_almost_no_cyclic_garbage(tmp_path):
    """Why pausing is safe: a check frees its garbage by reference counting. A change that makes
    per-receipt reference cycles (which would then pile up while the collector is paused) fails here.
    The check runs in a fresh interpreter: threads that earlier tests left running in this one
    (servers, a Spark gateway) make cyclic garbage of their own, which the count would take in."""
    import subprocess
    import sys

    log = tmp_path / "sim.jsonl"
    subprocess.run([sys.executable, "-m", "rmkit", "simulate", "--receipts", "20000", "--messages", "20000",
                    "--seed", "3", "-o", str(log)], check=True, capture_output=True)
    probe = (
        "import gc, sys\n"
        "from rmkit.conformance.remp.checker import RempLogChecker\n"
        "RempLogChecker(jobs=1).model.typed_decoder()\n"  # (the spec and decoder load before the count)
        "gc.collect()\n"
        "gc.disable()\n"
        "report = RempLogChecker(jobs=1).run([sys.argv[1]])\n"
        "print(report.records, gc.collect())\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(log)], check=True, capture_output=True, text=True).stdout
    receipts, cyclic = map(int, out.split())
    assert receipts == 20000
    assert cyclic < 500, f"a check of 20,000 receipts left {cyclic} objects in reference cycles"
