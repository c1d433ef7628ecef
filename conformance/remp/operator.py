"""REMP's operator figures for ``rmkit audit --out`` (operator.json, operator.md, the latency chart):
what the people who run the network ask for, read from the merged report's metrics: latency
percentiles against the documents' promises and the share meeting them, the outcome distribution,
the lost messages, and per source its role, messages, receipts, the share of its messages it ended
rejected or timed out, and its latency."""

from __future__ import annotations

from typing import Any

from rmkit.verdict import Report

LOST = "REMP-LIVE-001"  # a message without a final outcome a horizon after its first receipt


def figures(rep: Report) -> dict[str, Any]:
    m = rep.metrics
    lat = m.get("latency_ms", {})
    lost = [v.subject for v in rep.violations if v.rule == LOST][:1000]
    return {
        "latency_ms": lat,
        # share_within: the fraction (0..1) of the latency's pairs at or below the promise's upper
        # bound (promise_ms[1]); a pair faster than the lower bound counts as within
        "slas": {name: {"promise_ms": v.get("promise_ms"), "share_within": v.get("within_promise"), "count": v.get("count"),
                        "share_within_measures": "pairs at or below promise_ms[1], as a fraction of count"}
                 for name, v in lat.items()},
        "outcomes": m.get("outcomes", {}),
        "lost_messages": {"count": m.get("outcomes", {}).get("lost", 0), "first_ids": lost},
        "per_source": m.get("per_source", {}),
    }


def _ms(v) -> str:
    return "" if v is None else f"{v:,}"


def markdown(op: dict[str, Any]) -> str:
    lines = ["## Promises of the documents", "",
             "Per latency: the pairs of receipts measured (count), percentiles in milliseconds, the promised "
             "range, and the share of pairs at or below the promise's upper bound.", "",
             "| latency | count | p50 (ms) | p90 (ms) | p99 (ms) | promised (ms) | at or below the upper bound |",
             "|---|---|---|---|---|---|---|"]
    for v in op["latency_ms"].values():
        promise = v.get("promise_ms")
        share = v.get("within_promise")
        lines.append(f"| {v.get('from')} → {v.get('to')} | {v.get('count', 0):,} | {_ms(v.get('p50'))} | {_ms(v.get('p90'))} | "
                     f"{_ms(v.get('p99'))} | {f'{promise[0]:,}–{promise[1]:,}' if promise else ''} | "
                     f"{'' if share is None else f'{share:.2%} (≤ {promise[1]:,} ms)'} |")
    lines += ["", "## Outcomes", "", "| outcome | messages |", "|---|---|"]
    lines += [f"| {k} | {n:,} |" for k, n in op["outcomes"].items()]
    lines += ["", f"Lost messages: {op['lost_messages']['count']:,}"]
    if op["per_source"]:
        lines += ["", "## Sources", "",
                  "Per source: the messages it reported on, its receipts, the share of those messages it ended "
                  "rejected or timed out, and the time from a message's first receipt (from any source) to this "
                  "source's first receipt of it (p50 / p90 / p99, ms).", "",
                  "| source | role | messages | receipts | rejected | timed out | p50 (ms) | p90 (ms) | p99 (ms) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        ranked = sorted(op["per_source"].items(), key=lambda kv: -kv[1]["messages"])
        for src, s in ranked[:200]:
            lat = s.get("latency_ms", {})
            lines.append(f"| {src[:16]}… | {s.get('role') or ''} | {s['messages']:,} | {s['receipts']:,} | "
                         f"{s['rejected_share']:.2%} | {s['timed_out_share']:.2%} | {_ms(lat.get('p50'))} | "
                         f"{_ms(lat.get('p90'))} | {_ms(lat.get('p99'))} |")
    return "\n".join(lines) + "\n"
