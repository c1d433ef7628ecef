"""Standalone HTML reports: one page a person opens from a CI artefact or a mail, no network, no
script. Every page reads top down in the order a reader needs it: the verdict and the rules that
failed, then the evidence (each violation or failing scenario with what to do or the command that
reproduces it), then the per-rule matrix, then figures.

:func:`page` is the frame every command's report shares; :func:`render_html` is the report of
``rmkit check`` and ``rmkit audit`` (a :class:`rmkit.verdict.Report`). The conform reports build
their sections with the same helpers (each protocol's driven report)."""

from __future__ import annotations

import html
import time

from rmkit.rules import NON_STRICT, OFF, STRICT
from rmkit.verdict import FAIL, GENERIC_NOUNS, NON_STRICT as V_NON_STRICT, PASS, Nouns, Report

e = html.escape

COLOURS = {PASS: "#2e7d32", FAIL: "#c62828", V_NON_STRICT: "#b26a00", "no verdict": "#6d4c41",
           "not covered": "#757575", "not reached": "#8d6e63", "not checked": "#757575", "off": "#9e9e9e"}

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#212121}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}pre,code.reproduce{background:#f5f5f5;padding:6px;overflow-x:auto;display:block;white-space:pre-wrap}
.verdict{font-size:1.4em;font-weight:bold}.status{color:#fff;font-weight:bold}.dim{color:#757575}
section{margin-top:1.5em}h2{border-bottom:1px solid #ddd}"""


def status_cell(status: str) -> str:
    return f"<td class='status' style='background:{COLOURS.get(status, '#616161')}'>{e(status)}</td>"


def table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    """``rows`` hold HTML already (cells of escaped text, or :func:`status_cell`)."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table class='{cls}'><tr>{head}</tr>\n{body}</table>"


def page(title: str, verdict: str, facts: list[tuple[str, str]], sections: list[tuple[str, str, str]]) -> str:
    """A whole page: the title, the verdict (``data-verdict`` on the body, for machines), the facts
    of the run (name, escaped HTML), then each section (id, heading, HTML)."""
    colour = COLOURS.get(verdict, "#616161")
    rows = "".join(f"<tr><th>{e(k)}</th><td>{v}</td></tr>" for k, v in facts)
    parts = "\n".join(f"<section id='{e(sid)}'><h2>{e(head)}</h2>\n{body}</section>" for sid, head, body in sections)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}: {e(verdict.upper())}</title>
<style>{STYLE}</style></head>
<body data-verdict="{e(verdict)}">
<h1>{e(title)}</h1>
<p class="verdict" id="verdict">Verdict: <span style="color:{colour}">{e(verdict.upper())}</span></p>
<table class="facts">{rows}<tr><th>written</th><td>{e(time.strftime('%Y-%m-%d %H:%M:%S %Z'))}</td></tr></table>
{parts}
</body></html>
"""


def render_html(report: Report, rules=None, title: str = "rmkit check", per_rule: int = 20, chart_svg: str | None = None,
                nouns: Nouns = GENERIC_NOUNS, **_) -> str:
    """The report of a log check as a page: verdict and why; the failing rules; each violation with
    its evidence (file:line, kind, source) in log order and what to do, at most ``per_rule`` per rule
    (the rest counted); unreadable lines; every rule's row (the matrix); the metrics, the latency
    chart (``chart_svg``, the audit's) embedded; ``nouns``: the protocol's words for records and
    subjects."""
    def rule_title(rid):
        return rules[rid].title if rules is not None and rid in rules else ""

    order = {name: i for i, name in enumerate(report.inputs)}
    failing = [rid for rid, mode in report.rules.items() if report.counts.get(rid, 0) and mode != OFF]
    sections = []
    if failing:
        rows = [[f"<a href='#{e(rid)}'><code>{e(rid)}</code></a>", e(report.rules[rid]),
                 f"{report.counts[rid]:,}", e(rule_title(rid))]
                for rid in sorted(failing, key=lambda r: (report.rules[r] != STRICT, -report.counts[r]))]
        sections.append(("failing", "Rules broken", table(["rule", "mode", "violations", "title"], rows, "failing")))
    if report.violations:
        by_rule: dict[str, list] = {}
        for v in report.violations:
            by_rule.setdefault(v.rule, []).append(v)
        blocks = []
        for rid, vs in by_rule.items():
            advice = rules[rid].advice if rules is not None and rid in rules else ""
            items = []
            for v in vs[:per_rule]:
                ev = sorted(v.evidence, key=lambda x: (order.get(x.file, len(order)), x.file or "", x.line))
                lines = "".join(f"<li><code>{e(f'{x.file}:{x.line}')}</code> {e(x.kind or '')}"
                                f"{(' from <code>' + e(x.source[:16]) + '</code>') if x.source else ''}</li>" for x in ev)
                items.append(f"<li class='violation'>{e(nouns.subject)} <code>{e((v.subject or '-')[:16])}</code>: "
                             f"{e(v.explanation)}<ul>{lines}</ul></li>")
            more = report.counts.get(rid, len(vs)) - min(len(vs), per_rule)
            blocks.append(f"<h3 id='{e(rid)}'>{e(rid)} <span class='dim'>[{e(vs[0].severity)}, {e(vs[0].mode)}] "
                          f"{e(rule_title(rid))}</span></h3>"
                          + (f"<p><i>What to do:</i> {e(advice)}</p>" if advice else "")
                          + f"<ol>{''.join(items)}</ol>"
                          + (f"<p class='dim'>… {more:,} more (<code>--format json</code> lists them)</p>" if more > 0 else ""))
        sections.append(("evidence", "Violations and their evidence", "\n".join(blocks)))
    if report.input_problems:
        rows = [[f"<code>{e(f'{p.file}:{p.line}')}</code>", e(p.field or ""), e(p.error)] for p in report.input_problems[:per_rule]]
        more = report.unreadable - len(rows)
        sections.append(("unreadable", f"Unreadable lines ({report.unreadable:,})", table(["where", "field", "error"], rows)
                         + (f"<p class='dim'>… {more:,} more</p>" if more > 0 else "")))
    matrix = []
    for rid, mode in report.rules.items():
        n = report.counts.get(rid, 0)
        if mode == OFF:
            status = "off"
        elif rid in report.not_checked:
            status = "not checked"
        elif n and mode == STRICT:
            status = FAIL
        elif n and mode == NON_STRICT:
            status = V_NON_STRICT
        else:
            status = PASS
        why = report.not_checked.get(rid, "")
        if rid in report.not_judged:
            why = f"not judged for {report.not_judged[rid]['messages']:,} {nouns.subject}(s): {report.not_judged[rid]['why']}"
        matrix.append([f"<code>{e(rid)}</code>", e(rule_title(rid)), e(mode), status_cell(status), f"{n:,}", e(why)])
    sections.append(("rules", "Every rule", table(["rule", "title", "mode", "status", "violations", "note"], matrix, "matrix")))
    m = report.metrics or {}
    fig = []
    for lat in (m.get("latency_ms") or {}).values():
        if lat.get("count"):
            lo, hi = (lat.get("promise_ms") or [None, None])[:2]
            share = lat.get("within_promise")
            fig.append([e(f"{lat['from']} → {lat['to']}"), f"{lat['count']:,}", str(lat["p50"]), str(lat["p90"]), str(lat["p99"]),
                        e(f"{lo}–{hi}" if hi else ""), "" if share is None else f"{share:.2%} (≤ {hi} ms)"])
    if fig:
        body = table(["latency", "n", "p50 (ms)", "p90 (ms)", "p99 (ms)", "promised (ms)", "at or below the upper bound"], fig)
        if chart_svg:
            body += f"<figure>{chart_svg}</figure>"
        sections.append(("figures", "Latencies", body))
    why = "; ".join(report.reasons) or "every checked rule held"
    facts = [("why", e(why)), ("protocol / profile", e(f"{report.protocol} / {report.profile}")),
             ("inputs", e(", ".join(report.inputs))), (f"{nouns.records} read", f"{report.records:,}"),
             (nouns.subjects, f"{report.subjects:,}"), ("unreadable lines", f"{report.unreadable:,}")]
    return page(title, report.verdict, facts, sections)
