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
    lost = [v.message_id for v in rep.violations if v.rule == LOST][:1000]
    return {
        "latency_ms": lat,
        "slas": {name: {"promise_ms": v.get("promise_ms"), "share_within": v.get("within_promise"), "count": v.get("count")}
                 for name, v in lat.items()},
        "outcomes": m.get("outcomes", {}),
        "lost_messages": {"count": m.get("outcomes", {}).get("lost", 0), "first_ids": lost},
        "per_source": m.get("per_source", {}),
    }


def _ms(v) -> str:
    return "" if v is None else f"{v:,}"


def markdown(op: dict[str, Any]) -> str:
    lines = ["## Promises of the documents", "",
             "| latency | count | p50 | p90 | p99 | promise (ms) | share within |", "|---|---|---|---|---|---|---|"]
    for v in op["latency_ms"].values():
        lines.append(f"| {v.get('from')} → {v.get('to')} | {v.get('count', 0):,} | {_ms(v.get('p50'))} | {_ms(v.get('p90'))} | "
                     f"{_ms(v.get('p99'))} | {v.get('promise_ms', '')} | {v.get('within_promise', '')} |")
    lines += ["", "## Outcomes", "", "| outcome | messages |", "|---|---|"]
    lines += [f"| {k} | {n:,} |" for k, n in op["outcomes"].items()]
    lines += ["", f"Lost messages: {op['lost_messages']['count']:,}"]
    if op["per_source"]:
        lines += ["", "## Sources", "",
                  "Per source: the messages it reported on, its receipts, the share of those messages it ended "
                  "rejected or timed out, and the time from a message's first receipt to its first receipt "
                  "(p50 / p90 / p99, ms).", "",
                  "| source | role | messages | receipts | rejected | timed out | p50 | p90 | p99 |",
                  "|---|---|---|---|---|---|---|---|---|"]
        ranked = sorted(op["per_source"].items(), key=lambda kv: -kv[1]["messages"])
        for src, s in ranked[:200]:
            lat = s.get("latency_ms", {})
            lines.append(f"| {src[:16]}… | {s.get('role') or ''} | {s['messages']:,} | {s['receipts']:,} | "
                         f"{s['rejected_share']:.2%} | {s['timed_out_share']:.2%} | {_ms(lat.get('p50'))} | "
                         f"{_ms(lat.get('p90'))} | {_ms(lat.get('p99'))} |")
    return "\n".join(lines) + "\n"
