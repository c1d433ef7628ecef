"""Long runs say how far they are on stderr (rmkit.progress), at an interval; the counting is
tested by steps (an interval of 0 prints at every check, one of 1e9 never), not by the clock."""

from __future__ import annotations

from rmkit.progress import Ticker, counted


def test_counted_passes_every_item_through_and_reports_counts_on_stderr(capsys):
    assert list(counted(range(10_000), "rmkit simulate", "receipts written", total=10_000, every=0)) == list(range(10_000))
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert [line.split(": ", 2)[2] for line in lines] == ["4,096 of 10,000 receipts written", "8,192 of 10,000 receipts written"]
    assert all(line.startswith("rmkit simulate: ") for line in lines)


def test_nothing_is_printed_before_the_interval(capsys):
    list(counted(range(10_000), "x", "items", every=1e9))
    t = Ticker("x", every=1e9)
    t.tick("not yet")
    assert capsys.readouterr().err == ""
    t.tick("now", force=True)
    assert capsys.readouterr().err.endswith("now\n")


def test_simulate_reports_its_progress(tmp_path, capsys, monkeypatch):
    from rmkit import progress
    from rmkit.cli import main

    monkeypatch.setattr(progress, "interval", lambda: 0.0)
    assert main(["simulate", "--messages", "300", "--seed", "1", "-o", str(tmp_path / "log.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "rmkit simulate: " in err and "receipts written" in err, err
