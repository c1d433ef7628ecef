"""What ``rmkit audit --out DIR`` writes.

* ``summary.json``: the report in the shape of ``rmkit check --format json`` (verdict, counts per
  rule, metrics, up to --max-examples violations per rule);
* ``violations/`` (Parquet) and ``violations.jsonl``: EVERY violation, with file and line of each
  receipt it rests on;
* ``quarantine/`` (Parquet) and ``quarantine.jsonl``: every record that could not be read;
* ``operator.json`` and ``operator.md``: per-source receipts, rejects, ignores and timeouts; the
  latency percentiles of PutIntoQueue and Finalized after SentToValidators against the documents'
  promises (100–200 ms acknowledgement, 5–25 s to Finalized) with the share meeting them; the
  outcome distribution; the lost messages;
* ``latency.png``/``.svg`` and ``outcomes.png``/``.svg``: the latency distribution and the
  outcomes over time (matplotlib, no display needed).
"""

from __future__ import annotations

import json
import os
from typing import Any

from rmkit.render.jsonout import render_json

CATEGORY_CASE = ("rejected", "ignored", "timeout")


def write_outputs(res, out: str, profile: str) -> None:
    from rmkit.conformance.remp.model import model_for

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        f.write(render_json(res.report))
    for name, df in (("violations", res.violations.drop("lg")), ("quarantine", res.quarantine.drop("lg", "fidx"))):
        df.write.mode("overwrite").parquet(os.path.join(out, name))
        _write_jsonl(df, os.path.join(out, name + ".jsonl"))
    model = model_for(profile)
    op = operator_report(res, model)
    with open(os.path.join(out, "operator.json"), "w", encoding="utf-8") as f:
        json.dump(op, f, indent=2)
    with open(os.path.join(out, "operator.md"), "w", encoding="utf-8") as f:
        f.write(operator_markdown(op))
    charts(res, model, out)


def _write_jsonl(df, path: str) -> None:
    """Every row as one JSON line, written by the driver from a local iterator (no collect of
    the whole table at once)."""
    from pyspark.sql import functions as F

    with open(path, "w", encoding="utf-8") as f:
        for row in df.select(F.to_json(F.struct(*df.columns)).alias("j")).toLocalIterator():
            f.write(row.j + "\n")


def operator_report(res, model) -> dict[str, Any]:
    """Figures for the people who run the network, not for the conformance verdict."""
    from pyspark.sql import functions as F

    cat = F.create_map(*[x for k, ki in model.kinds.items() for x in (F.lit(k), F.lit(ki.category))])
    rc = res.receipts.where(F.col("kbit").isNotNull() & F.col("src").isNotNull())
    per_src = rc.groupBy("src").agg(
        F.count(F.lit(1)).alias("receipts"),
        *[F.sum((cat[F.col("kind")] == c).cast("int")).alias(c + "s") for c in CATEGORY_CASE],
        F.first("single_role", ignorenulls=True).alias("role")).orderBy(F.desc("receipts")).collect()
    m = res.report.metrics
    lat = m.get("latency_ms", {})
    lost = res.lives.where(F.col("lost")).select("mid").limit(1000).collect()
    n_lost = res.lives.where(F.col("lost")).count()
    return {
        "verdict": res.report.verdict,
        "receipts": res.report.receipts,
        "messages": res.report.messages,
        "per_source": [r.asDict() for r in per_src],
        "latency_ms": lat,
        "slas": {name: {"promise_ms": v.get("promise_ms"), "share_within": v.get("within_promise"), "count": v.get("count")}
                 for name, v in lat.items()},
        "outcomes": m.get("outcomes", {}),
        "lost_messages": {"count": n_lost, "first_ids": [r.mid for r in lost]},
    }


def operator_markdown(op: dict[str, Any]) -> str:
    lines = [f"# Receipt log audit: {op['verdict']}", "",
             f"{op['receipts']:,} receipts, {op['messages']:,} messages.", "", "## Promises of the documents", "",
             "| latency | count | p50 | p90 | p99 | promise (ms) | share within |", "|---|---|---|---|---|---|---|"]
    for name, v in op["latency_ms"].items():
        lines.append(f"| {v.get('from')} → {v.get('to')} | {v.get('count', 0):,} | {v.get('p50', '')} | {v.get('p90', '')} | "
                     f"{v.get('p99', '')} | {v.get('promise_ms', '')} | {v.get('within_promise', '')} |")
    lines += ["", "## Outcomes", "", "| outcome | messages |", "|---|---|"]
    lines += [f"| {k} | {n:,} |" for k, n in op["outcomes"].items()]
    lines += ["", f"Lost messages: {op['lost_messages']['count']:,}", "", "## Sources", "",
              "| source | role | receipts | rejects | ignores | timeouts |", "|---|---|---|---|---|---|"]
    for s in op["per_source"][:200]:
        lines.append(f"| {s['src'][:16]}… | {s.get('role') or ''} | {s['receipts']:,} | {s['rejecteds']:,} | {s['ignoreds']:,} | {s['timeouts']:,} |")
    return "\n".join(lines) + "\n"


def charts(res, model, out: str) -> None:
    """latency.png/svg: distribution of both latencies (log scale) with the promised bounds;
    outcomes.png/svg: messages per minute of first receipt, by outcome."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pyspark.sql import functions as F

    fig, axes = plt.subplots(1, len(model.latency), figsize=(6 * len(model.latency), 4))
    axes = axes if hasattr(axes, "__len__") else [axes]
    for ax, (name, spec) in zip(axes, model.latency.items()):
        # a 10 ms-bucketed histogram, computed by Spark
        rows = res.lives.where(F.col(name).isNotNull()).groupBy((F.floor(F.greatest(F.col(name), F.lit(0)) / 10) * 10).alias("b")).count().orderBy("b").collect()
        if rows:
            ax.bar([r.b for r in rows], [r["count"] for r in rows], width=10, color="#4472c4")
            ax.set_xscale("symlog")
        for bound in spec["promise"]:
            ax.axvline(bound, color="#c00000", linestyle="--", linewidth=1)
        ax.set_title(f"{spec['from']} → {spec['to']} (promise {spec['promise'][0]}–{spec['promise'][1]} ms)")
        ax.set_xlabel("ms")
        ax.set_ylabel("messages")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"latency.{ext}"))
    plt.close(fig)
    o = (F.when(F.col("final"), F.col("outcome")).when(F.col("not_judged"), F.lit("not judged")).otherwise(F.lit("lost")))
    rows = res.lives.where(F.col("ft").isNotNull()).groupBy((F.floor(F.col("ft.t") / 60000) * 60).alias("minute"), o.alias("o")).count().collect()
    fig, ax = plt.subplots(figsize=(10, 4))
    series: dict[str, dict[int, int]] = {}
    for r in rows:
        series.setdefault(r.o, {})[r.minute] = r["count"]
    minutes = sorted({r.minute for r in rows})
    bottom = [0] * len(minutes)
    for name, pts in sorted(series.items()):
        vals = [pts.get(mi, 0) for mi in minutes]
        ax.bar([mi - (minutes[0] if minutes else 0) for mi in minutes], vals, bottom=bottom, width=55, label=name)
        bottom = [a + b for a, b in zip(bottom, vals)]
    ax.set_xlabel("seconds since the log's first minute")
    ax.set_ylabel("messages (by first receipt)")
    ax.set_title("Outcomes over time")
    if series:
        ax.legend()
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"outcomes.{ext}"))
    plt.close(fig)
