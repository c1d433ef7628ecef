"""Human report: the summary table first, then one row per rule, then the violations with their
evidence (file:line, kind, source), then the metrics the documents promise."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rmkit.rules import NON_STRICT, OFF, STRICT
from rmkit.verdict import FAIL, GENERIC_NOUNS, NON_STRICT as V_NON_STRICT, PASS, Nouns, Report

_VERDICT_STYLE = {PASS: "bold green", FAIL: "bold red", V_NON_STRICT: "bold yellow"}


def _short(x: str | None, n: int = 16) -> str:
    if not x:
        return "-"
    return x if len(x) <= n else x[:n] + "…"


def render_text(report: Report, rules=None, color: bool = False, per_rule: int = 5, width: int = 110,
                title: str = "rmkit check", all_rules: bool = False, nouns: Nouns = GENERIC_NOUNS, **_) -> str:
    """``all_rules``: a row for every rule; else only those with something to say (violations,
    not checked, not judged), the others counted in one line. ``nouns``: the protocol's words for
    records and subjects."""
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=color, no_color=not color, highlight=False)
    summary = Table(title=title, box=box.SIMPLE_HEAVY, show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("verdict", f"[{_VERDICT_STYLE.get(report.verdict, '')}]{report.verdict.upper()}[/]")
    held = "every checked rule held" if report.not_checked else "every active rule held"
    summary.add_row("why", escape("; ".join(report.reasons) or held))
    summary.add_row("protocol / profile", f"{report.protocol} / {report.profile}")
    summary.add_row("inputs", escape(", ".join(report.inputs)))
    summary.add_row(f"{nouns.records} read", f"{report.records:,}")
    summary.add_row(nouns.subjects, f"{report.subjects:,}")
    summary.add_row("unreadable lines", f"{report.unreadable:,}")
    total = sum(report.counts.values())
    summary.add_row("violations", f"{total:,} ({sum(report.strict_counts.values()):,} strict)")
    if report.not_checked:
        whys = sorted(set(report.not_checked.values()))
        summary.add_row("not checked", escape(f"{', '.join(report.not_checked)}: {'; '.join(whys)}"))
    for rule_id, nj in report.not_judged.items():
        summary.add_row("not judged", escape(f"{rule_id} for {nj['messages']:,} {nouns.subject}(s): {nj['why']}"))
    con.print(summary)

    table = Table(title="rules", box=box.SIMPLE)
    for col in ("rule", "severity", "mode", "violations", "title"):
        table.add_column(col, justify="right" if col == "violations" else "left")
    quiet = 0  # rules that held with nothing to say about them: counted, listed with --all-rules
    for rule_id, mode in report.rules.items():
        n = report.counts.get(rule_id, 0)
        unchecked = mode != OFF and rule_id in report.not_checked
        if not all_rules and not n and not unchecked and rule_id not in report.not_judged:
            quiet += 1
            continue
        rule = rules[rule_id] if rules is not None and rule_id in rules else None
        style = "red" if n and mode == STRICT else "yellow" if n and mode == NON_STRICT else "dim" if mode == OFF else ""
        shown = "not checked" if unchecked else f"{n:,}" if mode != OFF else "-"
        if mode != OFF and rule_id in report.not_judged:
            shown += f" ({report.not_judged[rule_id]['messages']:,} not judged)"
        table.add_row(rule_id, rule.severity if rule else "", mode, shown,
                      rule.title if rule else "", style="dim" if unchecked else style)
    if table.row_count:
        con.print(table)
    if quiet:
        con.print(f"{quiet} of {len(report.rules)} rules not listed: no violation, or switched off in this profile "
                  "(--all-rules lists every rule)")

    order = {name: i for i, name in enumerate(report.inputs)}
    shown: dict[str, int] = {}
    if report.violations:
        con.print("[bold]violations[/] (first %d per rule; `--format json` lists up to %s)" % (per_rule, report.shown_per_rule or "all"))
    for v in report.violations:
        shown[v.rule] = shown.get(v.rule, 0) + 1
        if shown[v.rule] > per_rule:
            continue
        con.print(f"  [bold]{v.rule}[/] {escape(f'[{v.severity}, {v.mode}]')} {nouns.subject} {_short(v.subject)}: {escape(v.explanation)}")
        for e in sorted(v.evidence, key=lambda e: (order.get(e.file, len(order)), e.file, e.line)):  # log order
            con.print(escape(f"      at {e.file}:{e.line}  {e.kind or ''}  {('from ' + _short(e.source)) if e.source else ''}".rstrip()))
        if shown[v.rule] == 1 and rules is not None and v.rule in rules:
            con.print(f"      [italic]what to do:[/] {escape(rules[v.rule].advice)}")
        if shown[v.rule] == per_rule and report.counts.get(v.rule, 0) > per_rule:
            con.print(f"    ... {report.counts[v.rule] - per_rule:,} more {v.rule} violation(s) "
                      "(`--format json` lists them)")
    if report.input_problems:
        con.print(f"[bold]unreadable lines[/] ({report.unreadable:,}; first {min(per_rule, len(report.input_problems))} shown)")
        for p in report.input_problems[:per_rule]:
            con.print(escape(f"  {p.file}:{p.line}{(' field ' + p.field) if p.field else ''}: {p.error}"))
        if report.unreadable > per_rule:
            con.print(f"  ... {report.unreadable - per_rule:,} more (`--format json` lists them)")

    rows = metric_rows(report.metrics)
    if rows:
        met = Table(title="metrics", box=box.SIMPLE, show_header=False)
        met.add_column(style="bold")
        met.add_column()
        for name, value in rows:
            met.add_row(escape(name), escape(value))
        con.print(met)
    return buf.getvalue()


LATENCIES = "latency_ms"  # the metric of latencies against the documents' promises (rmkit.protocol.ChecksLogs.operator_figures)


def metric_rows(metrics: dict) -> list[tuple[str, str]]:
    """The metrics a checker reported, one row each under its JSON name (underscores as spaces), in
    the checker's order: a number or a text; a list; a map of counts (``kind 12, other 3``); each
    latency of ``latency_ms`` against its promise. A map of maps (per source, say) is too wide for
    a row: the JSON report has it. Whatever the protocol, the rows are its own names."""
    rows = []
    for key, value in metrics.items():
        if value is None or value == {} or value == []:
            continue
        if key == LATENCIES and isinstance(value, dict):
            rows += [_latency_row(lat) for lat in value.values()]
        elif isinstance(value, dict):
            if not any(isinstance(v, (dict, list)) for v in value.values()):
                rows.append((key.replace("_", " "), ", ".join(f"{k} {_number(v)}" for k, v in value.items())))
        elif isinstance(value, list):
            rows.append((key.replace("_", " "), ", ".join(str(v) for v in value)))
        else:
            rows.append((key.replace("_", " "), _number(value)))
    return rows


def _number(value) -> str:
    return f"{value:,}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _latency_row(lat: dict) -> tuple[str, str]:
    name = f"{lat['from']} → {lat['to']}"
    if not lat.get("count"):
        return name, "no pairs in the log"
    return name, (f"n={lat['count']:,} p50={lat['p50']} ms p90={lat['p90']} ms p99={lat['p99']} ms max={lat['max']} ms; "
                  f"at or below {lat['promise_ms'][1]} ms (the promise's upper bound; promised "
                  f"{lat['promise_ms'][0]}–{lat['promise_ms'][1]} ms): {lat['within_promise']:.1%} of pairs")
