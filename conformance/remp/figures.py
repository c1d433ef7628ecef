"""The parts of a REMP report that one process's run and the merge of a run's shares (``--jobs``,
``rmkit audit``) build alike: the latest receipt, latency figures, per-source figures and the order
of violations. One place, so that a report does not depend on how many shares read the log."""

from __future__ import annotations

from rmkit.conformance.remp.metrics import LatencyHistogram
from rmkit.verdict import Violation


def latest_receipt(tops: list) -> int | None:
    """The ref of the log's latest receipt (the first to reach the latest time) from the shares'
    :attr:`RempLogChecker.top_mark`: the only receipt REMP-TIME-001's clock outlier may name."""
    marks = [top for top in tops if top is not None]
    return min(marks, key=lambda top: (-top[0], top[1]))[1] if marks else None


def latency_entry(spec: dict, hist: LatencyHistogram) -> dict:
    """A latency's figures in the report: its endpoints, percentiles, the share within the
    promise, and counts in log10 bins (the operator's chart)."""
    return ({"from": spec["from"], "to": spec["to"]} | hist.summary(tuple(spec["promise"]))
            | {"log10_bins": hist.log_bins(hist.fitting_per_decade())})


def per_source_metrics(shares: list[dict], role_of) -> dict[str, dict]:
    """Per source, summed over the shares of a run: role, messages, receipts, the share of its
    messages it ended rejected / timed out, latency of its first receipt after a message's first."""
    total: dict[str, list] = {}
    for share in shares:
        for src, f in share.items():
            t = total.get(src)
            if t is None:
                total[src] = [f[0], f[1], f[2], f[3], f[4], LatencyHistogram()]
                total[src][5].merge(f[5])
            else:
                for i in range(1, 5):
                    t[i] += f[i]
                t[5].merge(f[5])
    out = {}
    for src, (seen, n, receipts, rejected, timed_out, hist) in sorted(total.items(), key=lambda kv: (-kv[1][1], kv[0])):
        out[src] = {"role": role_of(src, seen), "messages": n, "receipts": receipts,
                    "rejected_share": round(rejected / n, 4), "timed_out_share": round(timed_out / n, 4),
                    "latency_ms": hist.summary()}
    return out


def violation_order(v: Violation):
    """Violations in the order of their first evidence line, then by rule."""
    first = min(((e.file or "", e.line) for e in v.evidence), default=("", 0))
    return first, v.rule
