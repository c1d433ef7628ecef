"""The pieces of ``rmkit tlc`` that are not argument parsing: the model list, progress on
stderr, and the files written to ``--out``. ``rmkit.cli`` stays a thin layer over these."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from rmkit.tlc.manifest import ConfigEntry, Expectation, Manifest, ModelEntry
from rmkit.tlc.result import ProgressUpdate, TlcResult


# what a configuration's "runtime" in tla/manifest.json is: CPU time is what a run costs whatever
# else the machine does, so a figure measured on a shared machine still holds on an idle one
RUNTIME_MEANING = ("the CPU time `rmkit tlc MODEL --config NAME` took, TLC's JVM included, with the config's "
                   "workers: about the wall time on an idle core; a busy machine takes longer")


def _fig(x: int | None) -> str:
    return "?" if x is None else f"{x:,}"


def describe_models(manifest: Manifest) -> str:
    """``rmkit tlc --list``: every model and config with its expected figures."""
    out = []
    for i, m in enumerate(manifest.models):
        default = " (default)" if i == 0 else ""
        out.append(f"{m.name}{default}: {m.path}/{m.spec}" + (f"  [{m.source}]" if m.source else ""))
        for c in m.configs:
            flags = [f"workers {c.workers}", f"runtime {c.runtime} CPU", f"deadlock check {'on' if c.deadlock else 'off'}"]
            if c is m.default_config:
                flags.append("default")
            if c.slow:
                flags.append("slow")
            missing = m.missing_files(c)
            out.append(f"  {c.name:10} {c.module} + {c.cfg}  ({', '.join(flags)})")
            if c.simulate:
                out.append(f"  {'':10} simulated, not searched: {c.simulate['traces']:,} behaviours of depth "
                           f"{c.simulate['depth']} from seed {c.simulate['seed']}; expect {c.result} (no violation)")
            else:
                out.append(f"  {'':10} expect {c.result}: distinct states {_fig(c.distinct_states)}, "
                           f"total states {_fig(c.total_states)}, depth {_fig(c.depth)}")
            if c.finding:
                out.append(f"  {'':10} finding: {c.finding['invariant']} violated ({c.finding['rule']}, profile "
                           f"{c.finding['profile']}): reported, and the run passes")
            if missing:
                out.append(f"  {'':10} missing: {', '.join(missing)}")
        if m.properties:
            names = ", ".join(dict.fromkeys(p.name for p in m.properties))
            out.append(f"  properties with a mutation and a witness ({len(m.properties)} entries; "
                       f"rmkit tlc --mutations {m.name}): {names}")
    out.append(f"runtime: {RUNTIME_MEANING}")
    return "\n".join(out) + "\n"


class Progress:
    """Progress on stderr while TLC runs: a rich status line on a terminal (or ``--progress rich``),
    a plain line per TLC progress report otherwise (``lines``), or nothing (``none``)."""

    def __init__(self, mode: str, label: str):
        if mode == "auto":
            mode = "rich" if sys.stderr.isatty() else "lines"
        self.mode, self.label = mode, label
        self.status = None
        if mode == "rich":
            from rich.console import Console

            self.status = Console(stderr=True).status(f"TLC: {label}: started (TLC reports progress every minute)")

    @staticmethod
    def text(u: ProgressUpdate) -> str:
        parts = [f"{u.states_found:,} states generated"]
        if u.distinct is not None:
            parts.append(f"{u.distinct:,} distinct")
        if u.queue is not None:
            parts.append(f"{u.queue:,} on queue")
        if u.depth is not None:
            parts.append(f"depth {u.depth}")
        if u.rate_per_min:
            parts.append(f"{u.rate_per_min:,} states/min")
        return ", ".join(parts) + f" ({u.elapsed_s:.0f} s)"

    def __call__(self, u: ProgressUpdate) -> None:
        if self.mode == "rich" and self.status is not None:
            self.status.update(f"TLC: {self.label}: {self.text(u)}")
        elif self.mode == "lines":
            print(f"tlc: {self.label}: {self.text(u)}", file=sys.stderr, flush=True)

    def __enter__(self):
        if self.status is not None:
            self.status.start()
        return self

    def __exit__(self, *exc):
        if self.status is not None:
            self.status.stop()
        return False


def result_document(result: TlcResult, model: ModelEntry | None, config: ConfigEntry | None,
                    expectations: list[Expectation]) -> dict[str, Any]:
    """The JSON report: verdict first, then which model/config, the expected figures, the result."""
    d = result.to_dict()
    head = {k: d.pop(k) for k in ("verdict", "kind", "name")}
    return {**head, "model": model.name if model else None, "model_config": config.name if config else None,
            "expected": [asdict(e) for e in expectations], **d}


def dumps(doc: dict[str, Any]) -> str:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"


def write_outputs(out_dir: Path, stem: str, result: TlcResult, doc: dict[str, Any]) -> list[Path]:
    """``--out DIR``: the JSON report, the counterexample(s) when there are any, TLC's raw output."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / f"{stem}.json"]
    written[0].write_text(dumps(doc), encoding="utf-8")
    if result.counterexamples:
        p = out_dir / f"{stem}.trace.json"
        p.write_text(result.counterexamples_json(), encoding="utf-8")
        written.append(p)
    if result.output:
        p = out_dir / f"{stem}.tlc.log"
        p.write_text("\n".join(result.output) + "\n", encoding="utf-8")
        written.append(p)
    return written
