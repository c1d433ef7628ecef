"""The RMB check benchmark's figures reach bench/RESULTS.md: what bench_rmb_check.py prints for a
shape is what bench/record_results.py reads (its ratio to the parse and its memory)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_shapes_ratio_and_memory_are_recorded():
    bench, record = _load("bench_rmb_check"), _load("record_results")
    out = "\n".join(bench.result_line(shape, ratio, mb)
                    for shape, ratio, mb in (("short", 7.25, 71.6), ("long", 8.5, 250.2), ("fanout", 6.0, 74)))
    got = record.figures(out)
    assert {k: v for k, v in got.items() if k.startswith("rmb check")} == {
        "rmb check short / parse": "7.25", "rmb check long / parse": "8.50", "rmb check fanout / parse": "6.00",
        "rmb check short MB": "72", "rmb check long MB": "250", "rmb check fanout MB": "74"}


def test_split_of_no_line_is_a_usage_error(capsys):
    """``--split 0`` asks for the split of no line: refused as a usage error (exit 2), not taken
    as an absent --split (which would start the whole timed bench)."""
    import pytest

    bench = _load("bench_rmb_check")
    with pytest.raises(SystemExit) as exc:
        bench.main(["--split", "0", "--shapes", "short"])
    assert exc.value.code == 2 and "--split" in capsys.readouterr().err
