"""Append one dated row to bench/RESULTS.md from the output of a `make bench` run.

Why: the benchmarks print ratios against a baseline measured in the same run (the machine's speed
drifts, so only same-run ratios compare). Written down by hand they turned the README into a
measurement diary; here every run adds one row, with the date, the commit and the machine, and the
documents link to the table instead of quoting it.

    python bench/record_results.py bench/out/last-run.txt     # append a row (make bench does this)
    python bench/record_results.py --print bench/out/last-run.txt   # show the row, append nothing

A figure is taken from the lines the benches print for it (below, one pattern per figure); a
figure a run did not print is left out of its row (make bench stops at a failed bench, before any
row is written), and a run that printed none appends nothing (exit 2), so a row never claims a
measurement that was not made.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
TABLE_HEAD = "| date (UTC) | commit | machine | bench | figures |"

# name -> pattern whose group "v" is the figure (the first match in the run's output wins)
FIGURES = {
    # bench_check.py: best check time / best orjson parse of the same log, per jobs
    "check j1 / parse": r"^check j1: .*? ratio (?P<v>[\d.]+)",
    "check j2 / parse": r"^check j2: .*? ratio (?P<v>[\d.]+)",
    "check default jobs / parse": r"^RESULT ratio\(default jobs=\d+\) = (?P<v>[\d.]+)",
    # ... and on the other shapes of log (bench_check.py --shape)
    "check default jobs / parse, short messages": r"^RESULT\[short\] ratio\(default jobs=\d+\) = (?P<v>[\d.]+)",
    "check default jobs / parse, Kafka dump": r"^RESULT\[kafka\] ratio\(default jobs=\d+\) = (?P<v>[\d.]+)",
    "check default jobs / parse, ever-node dump": r"^RESULT\[ever-node\] ratio\(default jobs=\d+\) = (?P<v>[\d.]+)",
    # bench_rmb_check.py: best wall time of the check at the default jobs / best orjson parse, per log shape
    "rmb check short / parse": r"^RESULT rmb short ratio\(default jobs\) = (?P<v>[\d.]+)",
    "rmb check long / parse": r"^RESULT rmb long ratio\(default jobs\) = (?P<v>[\d.]+)",
    "rmb check fanout / parse": r"^RESULT rmb fanout ratio\(default jobs\) = (?P<v>[\d.]+)",
    "rmb check short MB": r"^RESULT rmb short ratio\(default jobs\) = [\d.]+; memory (?P<v>\d+) MB",
    "rmb check long MB": r"^RESULT rmb long ratio\(default jobs\) = [\d.]+; memory (?P<v>\d+) MB",
    "rmb check fanout MB": r"^RESULT rmb fanout ratio\(default jobs\) = [\d.]+; memory (?P<v>\d+) MB",
    # bench_corda_check.py: per shape of log, best check time at the default jobs / best orjson parse
    "corda check short / parse": r"^RESULT corda short ratio\(default jobs=\d+\) = (?P<v>[\d.]+)",
    "corda check long / parse": r"^RESULT corda long ratio\(default jobs=\d+\) = (?P<v>[\d.]+)",
    "corda check peers / parse": r"^RESULT corda peers ratio\(default jobs=\d+\) = (?P<v>[\d.]+)",
    # ... and its memory at ten million records (bench_corda_check.py --ten-million, run by hand)
    "corda check 10M exact MB": r"^RESULT corda 10M short exact memory\(default jobs=\d+\) = (?P<v>\d+) MB",
    # bench_sign.py
    "verify rate / bare libsodium": r"^RESULT verify ratio = (?P<v>[\d.]+)",
    "check j1 with / without --validators": r"^RESULT check j1 ratio with/without --validators = (?P<v>[\d.]+)",
    "check j2 with / without --validators": r"^RESULT check j2 ratio with/without --validators = (?P<v>[\d.]+)",
    # bench_audit.py
    "audit / Spark floor": r"audit/floor (?P<v>[\d.]+) \(target",
    "audit / floor with records moved": r"audit/floor with the records moved (?P<v>[\d.]+)",
    # bench_tla.py
    "trace validation / streaming check": r"^trace validation / streaming check: median ratio (?P<v>[\d,.]+)",
    # bench_simulate.py
    "simulate speed-up j2 / j1": r"^speed-up j2/j1 (?P<v>[\d.]+)x",
}
# bench_floor.py prints its median ratios as one JSON object on a line of its own
FLOOR = re.compile(r'^\{"parse": ?1\.0, ?.*\}$')


def figures(output: str) -> dict[str, str]:
    found = {}
    for name, pattern in FIGURES.items():
        m = re.search(pattern, output, re.M)
        if m:
            found[name] = m.group("v").replace(",", "")
    for line in output.splitlines():
        if FLOOR.match(line.strip()):
            try:
                floor = json.loads(line)
            except ValueError:
                continue
            found.update({f"floor: {k} / parse": f"{v:.2f}" for k, v in floor.items()
                          if k != "parse" and isinstance(v, (int, float))})
            break
    return found


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS.parent, capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or "-"
    except (OSError, subprocess.SubprocessError):
        return "-"


def row(found: dict[str, str], when: datetime.datetime | None = None) -> str:
    when = when or datetime.datetime.now(datetime.timezone.utc)
    machine = f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    cells = "; ".join(f"{name} {value}" for name, value in found.items())
    return f"| {when:%Y-%m-%d %H:%M} | {_commit()} | {machine} | make bench | {cells} |"


def append(text: str, line: str) -> str:
    """``text`` (RESULTS.md) with ``line`` added as the last row of its table."""
    lines = text.splitlines()
    start = lines.index(TABLE_HEAD)
    end = start + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[:end] + [line] + lines[end:]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="the benches' output (what make bench printed)")
    ap.add_argument("--print", action="store_true", help="print the row, append nothing")
    args = ap.parse_args(argv)
    try:
        found = figures(Path(args.output).read_text(encoding="utf-8", errors="replace"))
    except OSError as e:
        print(f"record_results: {args.output}: {e.strerror}", file=sys.stderr)
        return 2
    if not found:
        print(f"record_results: {args.output}: no benchmark figure found; nothing appended", file=sys.stderr)
        return 2
    line = row(found)
    if args.print:
        print(line)
        return 0
    RESULTS.write_text(append(RESULTS.read_text(encoding="utf-8"), line), encoding="utf-8")
    print(f"bench/RESULTS.md: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
