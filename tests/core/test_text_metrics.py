"""The text report's metrics are the checker's own, under their own names, whatever the protocol:
the renderer knows no protocol's metric names."""

from __future__ import annotations

from rmkit.render.text import metric_rows, render_text
from rmkit.verdict import Report


def test_every_metric_that_fits_a_row_is_shown_in_the_checkers_order():
    rows = metric_rows({"records_per_event": {"http-post": 3, "backlog-set": 1200}, "peak_open_requests": 7,
                        "nodes_with_events": ["alice", "bob"], "per_source": {"a": {"records": 3}},
                        "unset": None, "log_time_span_s": 12.5})
    assert rows == [("records per event", "http-post 3, backlog-set 1,200"), ("peak open requests", "7"),
                    ("nodes with events", "alice, bob"), ("log time span s", "12.5")]


def test_the_text_report_shows_a_protocols_own_metric():
    rep = Report(protocol="any", profile="p", inputs=["x.jsonl"], records=1, subjects=1)
    rep.metrics = {"frobs_per_widget": {"blue": 2}}
    assert "frobs per widget" in render_text(rep, width=200) and "blue 2" in render_text(rep, width=200)
