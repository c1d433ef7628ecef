"""The operator's figures say what they measure: a planted set of latencies whose shares are known
by construction, rendered by the text report and operator.md."""

from __future__ import annotations

from types import SimpleNamespace

from rmkit.conformance.remp.metrics import LatencyHistogram
from rmkit.conformance.remp.checker import latency_entry
from rmkit.conformance.remp.operator import figures, markdown

PROMISE = {"from": "SentToValidators", "to": "Finalized", "promise": [100, 200]}
PLANTED = [10, 50, 150, 190, 250]  # at or below the upper bound 200: 4 of 5 (two faster than the lower bound)


def _entry():
    hist = LatencyHistogram()
    for v in PLANTED:
        hist.add(v)
    return latency_entry(PROMISE, hist)


def test_the_share_is_labelled_as_the_share_at_or_below_the_upper_bound():
    entry = _entry()
    assert entry["within_promise"] == 0.8 and entry["count"] == 5
    rep = SimpleNamespace(metrics={"latency_ms": {"fin": entry}, "outcomes": {"finalized": 5}, "per_source": {}},
                          violations=[])
    md = markdown(figures(rep))
    assert "| latency | count | p50 (ms) | p90 (ms) | p99 (ms) | promised (ms) | at or below the upper bound |" in md
    row = next(line for line in md.splitlines() if line.startswith("| SentToValidators"))
    assert row.endswith("| 100–200 | 80.00% (≤ 200 ms) |"), row
    assert "0.8" not in row  # one unit: the share is a percentage, as everywhere else in the file
    assert "time from a message's first receipt (from any source) to this source's first receipt" in md or \
        "## Sources" not in md


def test_the_text_report_says_what_the_share_measures():
    from rmkit.render.text import render_text
    from rmkit.verdict import Report

    rep = Report(protocol="remp", profile="spec", inputs=["planted.jsonl"], records=5, subjects=5)
    rep.metrics = {"latency_ms": {"fin": _entry()}}
    text = render_text(rep, width=200)
    assert "at or below 200 ms (the promise's upper bound; promised 100–200 ms): 80.0% of pairs" in text, text


def test_chart_bins_fit_a_narrow_range():
    """Latencies over 20..60 ms drew three bars at 10 a decade."""
    hist = LatencyHistogram()
    for v in range(20, 61):
        hist.add(v)
    bins = hist.log_bins(hist.fitting_per_decade())
    assert len([b for b in bins if b[2]]) >= 12, bins
    wide = LatencyHistogram()
    for v in (1, 10, 100, 1000, 10_000, 100_000, 1_000_000):
        wide.add(v)
    assert wide.fitting_per_decade() == 10
