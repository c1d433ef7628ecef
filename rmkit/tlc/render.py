"""Human report of a TLC run: a summary table, then the counterexample state by state (only the
variables that changed, after a full first state) or the error with where and what to do.

Kept apart from :mod:`rmkit.tlc.result` as :mod:`rmkit.render.text` is from :mod:`rmkit.verdict`:
the result holds facts, this decides how they read.
"""

from __future__ import annotations

import io
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rmkit.tlc.manifest import Expectation
from rmkit.tlc.result import BACK_TO, ERROR, PASS, SIMULATE, STUTTERING, VIOLATION, Counterexample, TlcResult, TraceState
from rmkit.tlc.values import TlaRecord, format_value, pretty_value

_VERDICT_STYLE = {PASS: "bold green", VIOLATION: "bold red", ERROR: "bold yellow"}


def _n(x: int | None) -> str:
    return "?" if x is None else f"{x:,}"


def _where(module: str | None, line: int | None, column: int | None = None) -> str | None:
    if module is None and line is None:
        return None
    at = f"{module}.tla" if module else "?"
    return at + (f":{line}" if line is not None else "") + (f":{column}" if column is not None and line is not None else "")


def _action(s: TraceState) -> str:
    where = _where(s.module, s.line)
    return f"<{s.action}>" + (f"  {where}" if where else "")


_MISSING = object()


def changed_lines(prev: dict[str, Any] | None, cur: dict[str, Any], width: int) -> tuple[list[str], list[str]]:
    """Lines ``/\\ var = value`` for what changed since ``prev`` (everything when ``prev`` is None),
    and the names of the unchanged variables. A function or record that changed in a few
    entries of the same domain is shown entry by entry, as ``var[key] = value``."""
    lines, same = [], []
    for var, val in cur.items():
        old = None if prev is None else prev.get(var, _MISSING)
        if prev is not None and old is not _MISSING and format_value(old) == format_value(val):
            same.append(var)
            continue
        if (prev is not None and isinstance(old, dict) and isinstance(val, dict) and old.keys() == val.keys()
                and type(old) is type(val) and len(val) > 1):
            diff = [k for k in val if format_value(old[k]) != format_value(val[k])]
            if len(diff) < len(val):
                for k in diff:
                    ref = f"{var}.{k}" if isinstance(val, TlaRecord) else f"{var}[{format_value(k)}]"
                    lines.append(f"/\\ {ref} = " + pretty_value(val[k], width, 6 + len(ref) + 3))
                continue
        lines.append(f"/\\ {var} = " + pretty_value(val, width, 6 + len(var) + 3))
    return lines, same


def render_trace(con: Console, ce: Counterexample, width: int) -> None:
    prev: dict[str, Any] | None = None
    for s in ce.trace:
        if s.marker == STUTTERING:
            con.print(f"  [bold]{s.index}[/]  [italic]stuttering[/]: from here the behaviour never changes again")
            continue
        if s.marker == BACK_TO:
            con.print(f"  [bold]→[/]  back to state {s.back_to if s.back_to is not None else '?'} by "
                      f"{escape(_action(s))}: the behaviour loops forever")
            continue
        con.print(f"  [bold]state {s.index}[/]  [cyan]{escape(_action(s))}[/]")
        lines, same = changed_lines(prev, s.values, width - 6)
        for ln in lines:
            con.print("    " + escape(ln).replace("\n", "\n    "))
        if same and prev is not None:
            con.print(f"    [dim]unchanged: {escape(', '.join(same))}[/]")
        if not lines and not same:
            con.print("    [dim](no variables)[/]")
        prev = s.values


def render_result(result: TlcResult, *, title: str = "rmkit tlc", subject: str | None = None,
                  expectations: list[Expectation] | None = None, color: bool = False, width: int = 110,
                  max_traces: int = 3, checked=None, finding: dict | None = None, **_) -> str:
    """``checked``: the cfg's names (:class:`.cfgfile.CfgNames`), listed as what was checked;
    ``finding``: the violation the manifest expects of this config, named in the verdict line when
    it is the one found (the run then passes)."""
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=color, no_color=not color, highlight=False)
    summary = Table(title=title, box=box.SIMPLE_HEAVY, show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    head = result.verdict.upper()
    if result.verdict == VIOLATION:
        head += f" ({result.kind}{' ' + result.name if result.name else ''})"
    elif result.verdict == ERROR and result.error is not None:
        head += f" ({result.error.kind})"
    expected = (finding is not None and result.verdict == VIOLATION and bool(result.counterexamples)
                and result.counterexamples[0].name == finding.get("invariant"))
    if expected:
        summary.add_row("verdict", f"[bold green]EXPECTED FINDING[/]: {escape(head)}, {escape(finding.get('rule', ''))} "
                                   "as tla/manifest.json expects (not a failure: exit 0)")
    else:
        summary.add_row("verdict", f"[{_VERDICT_STYLE.get(result.verdict, '')}]{escape(head)}[/]")
    if subject:
        summary.add_row("model", escape(subject))
    summary.add_row("module / cfg", escape(f"{result.module} / {result.config}"))
    if checked is not None:
        summary.add_row("invariants", escape(", ".join(checked.invariants) or "none"))
        summary.add_row("properties", escape(", ".join(checked.properties) or "none"))
    if result.mode == SIMULATE:
        summary.add_row("mode", f"simulation (seed {result.seed if result.seed is not None else '?'})")
        summary.add_row("states", f"{_n(result.total_states)} generated" if result.total_states is not None
                        else "not reported (TLC 2.15 reports a simulation's states once a minute)")
        if result.verdict == PASS:
            summary.add_row("note", "no violation in the behaviours simulated; a simulation is not exhaustive")
    elif (result.distinct_states, result.total_states, result.depth) != (None, None, None):
        summary.add_row("states", f"{_n(result.distinct_states)} distinct, {_n(result.total_states)} generated, "
                                  f"depth {_n(result.depth)}")
    if result.stopped:
        why = {"timeout": "the time limit was reached", "max-traces": "enough counterexamples were collected"}
        summary.add_row("stopped", f"by rmkit: {why.get(result.stopped, result.stopped)}")
    if result.seconds is not None:
        summary.add_row("time", f"{result.seconds:.1f} s")
    if result.tlc_version:
        summary.add_row("TLC", escape(result.tlc_version))
    for e in expectations or []:
        mark = "[green]matches[/]" if e.match else "[yellow]MISMATCH[/]"
        summary.add_row(f"expected {e.figure}", f"{escape(str(e.expected))}: {mark}"
                        + ("" if e.match else f" (found {escape(str(e.found))})"))
    for w in result.warnings:
        summary.add_row("warning", escape(w))
    con.print(summary)

    if result.verdict == ERROR and result.error is not None:
        err = result.error
        con.print(f"[bold]error[/] ({escape(err.kind)}): " + escape(err.message).replace("\n", "\n  "))
        where = _where(err.module, err.line, err.column)
        if where:
            con.print(f"  at {escape(where)}")
        if err.advice:
            con.print(f"  [italic]what to do:[/] {escape(err.advice)}")
        for d in err.details[:10]:
            con.print("  " + escape(d).replace("\n", "\n  "))
        if err.trace:
            con.print("[bold]behaviour up to the error[/]")
            render_trace(con, Counterexample("error", None, err.message, err.trace), width)
        if err.output_tail and err.kind in ("tlc", "timeout", "out-of-memory"):
            con.print("[bold]TLC output (last lines)[/]")
            for ln in err.output_tail:
                con.print("  " + escape(ln))
    n = len(result.counterexamples)
    for i, ce in enumerate(result.counterexamples[:max_traces], 1):
        label = f"{ce.kind}{' ' + ce.name if ce.name else ''}"
        con.print(f"[bold]counterexample {i} of {n}[/]: [red]{escape(label)}[/] — {escape(ce.message.splitlines()[0] if ce.message else '')}")
        rest = ce.message.splitlines()[1:]
        for ln in rest:
            con.print("  " + escape(ln))
        where = _where(ce.module, ce.line)
        if where:
            con.print(f"  at {escape(where)}")
        if not ce.trace:
            con.print("  [dim](TLC printed no trace for this violation)[/]")
        render_trace(con, ce, width)
    if n > max_traces:
        con.print(f"[dim]… {n - max_traces} more counterexample(s); `--format json` or --out DIR lists all[/]")
    return buf.getvalue()
