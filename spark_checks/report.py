"""What ``rmkit audit --out DIR`` writes, from the merged report of the protocol's checker.

* ``summary.json``: the report in the shape of ``rmkit check --format json`` (verdict, counts per
  rule, metrics, up to --max-examples violations per rule);
* ``violations/`` (Parquet) and ``violations.jsonl``: EVERY violation, with file and line of each
  record it rests on;
* ``quarantine/`` (Parquet) and ``quarantine.jsonl``: every record that could not be read;
* ``operator.json`` and ``operator.md``: the verdict, the counts per rule, and the figures the
  people who run the network ask for as the protocol gives them
  (:meth:`rmkit.protocol.Protocol.operator_figures`; REMP: latency percentiles against the
  documents' promises, outcomes, lost messages, per source figures); a protocol that gives none
  gets the verdict and counts only, and says so;
* ``report.html``: the page of ``rmkit check --html`` (verdict, rules broken, each violation's
  evidence, every rule), the latency chart embedded;
* ``latency.png``/``.svg`` when the figures hold latencies: each latency's distribution on a log
  axis with bins of equal width on that axis, the promised bounds marked (matplotlib, no display
  needed; its absence is found before the job runs).
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


def needs_charts(proto) -> bool:
    """Whether --out draws charts for this protocol (its operator figures hold latencies)."""
    return bool(getattr(proto, "operator_charts", False))


def charts_unavailable(proto) -> str | None:
    """Why the charts --out needs cannot be drawn (matplotlib missing), checked before the job
    runs; None when they can, or when the protocol draws none."""
    if not needs_charts(proto):
        return None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return ("--out draws the operator's latency chart with matplotlib: install the `spark` extra "
                "(pip install 'rmkit[spark]'), found no module named matplotlib")
    return None


def write_outputs(spark, res, out: str, proto) -> None:
    rep: Report = res.report
    os.makedirs(out, exist_ok=True)
    violations = [{"rule": v.rule, "mode": v.mode, "severity": v.severity, "message_id": v.subject,
                   "explanation": v.explanation,
                   "evidence": [{"file": e.file, "line": e.line, "kind": e.kind, "source_id": e.source} for e in v.evidence]}
                  for v in rep.violations]
    quarantine = [{"file": p.file, "line": p.line, "error": p.error, "field": p.field} for p in rep.input_problems]
    for name, rows, schema in (("violations", violations, VIOLATION_SCHEMA), ("quarantine", quarantine, QUARANTINE_SCHEMA)):
        with open(os.path.join(out, name + ".jsonl"), "wb") as f:
            for row in rows:
                f.write(orjson.dumps(row) + b"\n")
        spark.createDataFrame(rows, schema).coalesce(1).write.mode("overwrite").parquet(os.path.join(out, name))
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        f.write(render_json(rep))
    op = operator_report(rep, proto)
    with open(os.path.join(out, "operator.json"), "w", encoding="utf-8") as f:
        json.dump(op, f, indent=2)
    with open(os.path.join(out, "operator.md"), "w", encoding="utf-8") as f:
        f.write(operator_markdown(op, proto))
    chart = None
    if needs_charts(proto) and op["operator_figures"]:
        latency_chart(op.get("latency_ms") or {}, out, inputs=rep.inputs)
        with open(os.path.join(out, "latency.svg"), encoding="utf-8") as f:
            chart = f.read()
            chart = chart[chart.find("<svg"):]  # embedded in the page: without its XML prologue
    from rmkit.render.html import render_html

    with open(os.path.join(out, "report.html"), "w", encoding="utf-8") as f:
        f.write(render_html(rep, rules=proto.rules(), title=f"rmkit audit ({rep.protocol})", chart_svg=chart,
                            nouns=proto.nouns))


def operator_report(rep: Report, proto) -> dict[str, Any]:
    """What operator.json holds: the verdict and counts, then the protocol's own operator figures
    (:meth:`rmkit.protocol.Protocol.operator_figures`), whose presence ``operator_figures`` states."""
    figures = proto.operator_figures(rep)
    return {
        "verdict": rep.verdict,
        "protocol": rep.protocol,
        "profile": rep.profile,
        "receipts": rep.records,
        "messages": rep.subjects,
        "unreadable": rep.unreadable,
        "counts": dict(rep.counts),
        "operator_figures": figures is not None,
    } | (figures or {})


def operator_markdown(op: dict[str, Any], proto) -> str:
    """operator.md: the verdict, the counts per rule found, then the protocol's sections (or a line
    saying it gives none)."""
    rules = proto.rules()
    lines = [f"# {op['protocol']} log audit: {op['verdict']}", "",
             f"{op['receipts']:,} {proto.nouns.records}, {op['messages']:,} {proto.nouns.subjects}, "
             f"{op['unreadable']:,} unreadable lines.", ""]
    found = {rule: n for rule, n in op["counts"].items() if n}
    if found:
        lines += ["## Findings per rule", "", "| rule | count | title |", "|---|---|---|"]
        for rule, n in sorted(found.items()):
            title = rules[rule].title if rule in rules else ""
            lines.append(f"| {rule} | {n:,} | {title} |")
    else:
        lines.append("No rule was broken.")
    lines.append("")
    if not op["operator_figures"]:
        lines.append(f"The {op['protocol']} protocol gives no operator figures: the verdict and the counts per rule above "
                     "are the whole report (summary.json and violations.jsonl hold every finding).")
        return "\n".join(lines) + "\n"
    return "\n".join(lines) + "\n" + proto.operator_markdown(op)


def latency_chart(lat: dict[str, Any], out: str, inputs=(), when: str | None = None) -> None:
    """latency.png/svg: each latency on a log axis, as bars of equal width on that axis (the
    histogram's log10 bins, as many a decade as fit its range), with the promised bounds; each panel
    says how many pairs it shows, the figure which log it was read from and when."""
    import time

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
        ax.set_title(f"{spec.get('from')} → {spec.get('to')}, n={spec.get('count', 0):,}"
                     + (f"\npromised {promise[0]}–{promise[1]} ms (dashed)" if promise else ""), fontsize=10)
        ax.set_xlabel("ms (log scale)")
        ax.set_ylabel("pairs of receipts")
    names = [os.path.basename(str(i)) for i in inputs]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    fig.suptitle(f"{shown or 'log'} · audited {when or time.strftime('%Y-%m-%d %H:%M')}", fontsize=9)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"latency.{ext}"))
    plt.close(fig)
