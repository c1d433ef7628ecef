"""bench/RESULTS.md is written by `make bench`, one dated row per run, from the ratios the benches
printed; a run that printed none adds no row."""

from __future__ import annotations

import datetime
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("record_results", REPO / "bench" / "record_results.py")
record_results = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(record_results)


RUN = """log: bench.jsonl, 504 MB, 2 cores
check j1: 4.80 s  ratio 4.80  208,333 receipts/s  verdict pass  peak RSS 154 MB  CPU 4.80 s (CPU ratio 4.80)
check j2: 2.70 s  ratio 2.70  370,370 receipts/s  verdict pass  peak RSS 32 MB  CPU 5.10 s (CPU ratio 5.10)
RESULT ratio(default jobs=2) = 2.70 (target <= 3); a line
{"parse":1.0,"read+split":0.481,"check j1":4.63,"free split (2 files)":2.41}
RESULT verify ratio = 0.97 of the bare loop's rate
audit: 62.8 s  audit/floor 2.66 (target <= 3)  audit/floor with the records moved 1.66  audit/bare read 3.10
"""


def test_a_run_gives_the_ratios_its_benches_printed():
    assert record_results.figures(RUN) == {
        "check j1 / parse": "4.80", "check j2 / parse": "2.70", "check default jobs / parse": "2.70",
        "verify rate / bare libsodium": "0.97", "audit / Spark floor": "2.66", "audit / floor with records moved": "1.66",
        "floor: read+split / parse": "0.48", "floor: check j1 / parse": "4.63", "floor: free split (2 files) / parse": "2.41"}


def test_a_row_is_appended_at_the_end_of_the_table_dated():
    text = (REPO / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    row = record_results.row({"check j2 / parse": "2.70"}, datetime.datetime(2026, 12, 6, 4, 0))
    assert row.startswith("| 2026-12-06 04:00 | ") and row.endswith("| make bench | check j2 / parse 2.70 |")
    new = record_results.append(text, row)
    table = [line for line in new.splitlines() if line.startswith("|")]
    assert table[0] == record_results.TABLE_HEAD and table[-1] == row and len(table) == len(
        [line for line in text.splitlines() if line.startswith("|")]) + 1


def test_a_run_that_printed_no_figure_appends_nothing(tmp_path, monkeypatch):
    results = tmp_path / "RESULTS.md"
    results.write_text(f"{record_results.TABLE_HEAD}\n| --- | --- | --- | --- | --- |\n")
    monkeypatch.setattr(record_results, "RESULTS", results)
    out = tmp_path / "run.txt"
    out.write_text("Traceback (most recent call last):\n")
    assert record_results.main([str(out)]) == 2
    assert record_results.main([str(tmp_path / "missing.txt")]) == 2
    out.write_text(RUN)
    assert record_results.main([str(out)]) == 0
    assert results.read_text().splitlines()[-1].endswith("check j1 / parse 4.80; check j2 / parse 2.70; "
                                                         "check default jobs / parse 2.70; verify rate / bare libsodium 0.97; "
                                                         "audit / Spark floor 2.66; audit / floor with records moved 1.66; "
                                                         "floor: read+split / parse 0.48; floor: check j1 / parse 4.63; "
                                                         "floor: free split (2 files) / parse 2.41 |")


def test_make_bench_writes_the_row():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    bench = makefile[makefile.index("\nbench:"):].split("\n\n")[0]
    assert "bench/record_results.py $(BENCH_LOG)" in bench.splitlines()[-1]
    assert all("$(call bench_run," in line for line in bench.splitlines() if "bench/bench_" in line)
