"""The operator's latency chart: the histogram's log10 bins are of equal width on the chart's log
axis (a constant ratio high / low), cover every counted value once, and hold each value."""

from __future__ import annotations

import math

from rmkit.conformance.remp.metrics import LatencyHistogram


def test_log_bins_have_equal_width_on_a_log_axis_and_count_every_value():
    hist = LatencyHistogram()
    values = [0, 0, 1, 3, 9, 10, 11, 99, 100, 101, 999, 1_000, 1_024, 4_864, 25_000, 99_999, 3_600_000]
    for v in values:
        hist.add(v)
    bins = hist.log_bins()
    assert sum(n for _, _, n in bins) == len(values)
    assert bins[0] == [0, 1, 2]  # below 1 ms
    step = 10 ** 0.1
    for lo, hi, _ in bins[1:]:
        assert math.isclose(hi / lo, step, rel_tol=1e-3), (lo, hi)
        k = math.log10(lo) * 10
        assert math.isclose(k, round(k), abs_tol=1e-3), lo  # edges on the decade grid, 10 bins per decade
    for v in values[2:]:  # each value lies in its bin, up to the histogram's 1.6 % bucket width
        assert any(lo * 0.984 <= v < hi * 1.016 and n for lo, hi, n in bins[1:]), v


def test_a_wide_range_keeps_bins_readable():
    """Linear bins over 10 ms .. 1 h would squeeze the short latencies into one bar: the log bins
    give every decade the same number of bars."""
    hist = LatencyHistogram()
    for e in range(1, 7):
        for _ in range(5):
            hist.add(10 ** e)
    bins = hist.log_bins()
    assert [n for _, _, n in bins] == [5] * 6
