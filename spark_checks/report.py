"""What ``rmkit audit --out DIR`` writes, from the merged report of the protocol's checker.

* ``summary.json``: the report in the shape of ``rmkit check --format json`` (verdict, counts per
  rule, metrics, up to --max-examples violations per rule);
* ``violations/`` (Parquet) and ``violations.jsonl``: EVERY violation, with file and line of each
  record it rests on;
* ``quarantine/`` (Parquet) and ``quarantine.jsonl``: every record that could not be read;
* ``operator.json`` and ``operator.md``: the figures the people who run the network ask for, from
  the checker's metrics: latency percentiles against the documents' promises and the share meeting
  them, the outcome distribution, and per source its role, messages, receipts, the share of
  messages it ended rejected or timed out, and its latency;
* ``latency.png``/``.svg``: each latency's distribution on a log axis with bins of equal width on
  that axis, the promised bounds marked (matplotlib, no display needed).
"""

from __future__ import annotations

import json
import os
from typing import Any

import orjson

from rmkit.render.jsonout import render_json
from rmkit.verdict import Report

VIOLATION_SCHEMA = ("rule string, mode string, severity string, message_id string, explanation string, "
                    "evidence array<struct<file: string, line: bigint, kind: string, source_id: string>>")
QUARANTINE_SCHEMA = "file string, line bigint, error string, field string"


def write_outputs(spark, res, out: str) -> None:
    rep: Report = res.report
    os.makedirs(out, exist_ok=True)
    violations = [{"rule": v.rule, "mode": v.mode, "severity": v.severity, "message_id": v.message_id,
                   "explanation": v.explanation,
                   "evidence": [{"file": e.file, "line": e.line, "kind": e.kind, "source_id": e.source_id} for e in v.evidence]}
                  for v in rep.violations]
    quarantine = [{"file": p.file, "line": p.line, "error": p.error, "field": p.field} for p in rep.input_problems]
    for name, rows, schema in (("violations", violations, VIOLATION_SCHEMA), ("quarantine", quarantine, QUARANTINE_SCHEMA)):
        with open(os.path.join(out, name + ".jsonl"), "wb") as f:
            for row in rows:
                f.write(orjson.dumps(row) + b"\n")
        spark.createDataFrame(rows, schema).coalesce(1).write.mode("overwrite").parquet(os.path.join(out, name))
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        f.write(render_json(rep))
    op = operator_report(rep)
    with open(os.path.join(out, "operator.json"), "w", encoding="utf-8") as f:
        json.dump(op, f, indent=2)
    with open(os.path.join(out, "operator.md"), "w", encoding="utf-8") as f:
        f.write(operator_markdown(op))
    latency_chart(op, out)


def operator_report(rep: Report) -> dict[str, Any]:
    """Figures for the people who run the network, not for the conformance verdict."""
    m = rep.metrics
    lat = m.get("latency_ms", {})
    lost = [v.message_id for v in rep.violations if v.rule.endswith("LIVE-001")][:1000]
    return {
        "verdict": rep.verdict,
        "receipts": rep.receipts,
        "messages": rep.messages,
        "latency_ms": lat,
        "slas": {name: {"promise_ms": v.get("promise_ms"), "share_within": v.get("within_promise"), "count": v.get("count")}
                 for name, v in lat.items()},
        "outcomes": m.get("outcomes", {}),
        "lost_messages": {"count": m.get("outcomes", {}).get("lost", 0), "first_ids": lost},
        "per_source": m.get("per_source", {}),
    }


def _ms(v) -> str:
    return "" if v is None else f"{v:,}"


def operator_markdown(op: dict[str, Any]) -> str:
    lines = [f"# Receipt log audit: {op['verdict']}", "",
             f"{op['receipts']:,} receipts, {op['messages']:,} messages.", "", "## Promises of the documents", "",
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


def latency_chart(op: dict[str, Any], out: str) -> None:
    """latency.png/svg: each latency on a log axis, as bars of equal width on that axis (the
    histogram's log10 bins), with the promised bounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lat = op["latency_ms"]
    fig, axes = plt.subplots(1, max(1, len(lat)), figsize=(6 * max(1, len(lat)), 4))
    axes = axes if hasattr(axes, "__len__") else [axes]
    for ax, (name, spec) in zip(axes, lat.items()):
        bins = spec.get("log10_bins") or []
        if bins:
            edges = [max(lo, 0.5) for lo, _, _ in bins]
            ax.bar(edges, [n for _, _, n in bins], width=[hi - max(lo, 0.5) for lo, hi, _ in bins], align="edge",
                   color="#4472c4", edgecolor="white", linewidth=0.5)
            ax.set_xscale("log")
        for bound in spec.get("promise_ms") or []:
            ax.axvline(bound, color="#c00000", linestyle="--", linewidth=1)
        promise = spec.get("promise_ms")
        ax.set_title(f"{spec.get('from')} → {spec.get('to')}" + (f" (promise {promise[0]}–{promise[1]} ms)" if promise else ""))
        ax.set_xlabel("ms (log scale)")
        ax.set_ylabel("messages")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"latency.{ext}"))
    plt.close(fig)
