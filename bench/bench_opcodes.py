"""Python opcodes the REMP checker executes per log line: a measure of its interpreted work that,
unlike time, does not move with the load of a shared machine.

The bench log (see bench_check.py) is fed to one checker up to ``--skip`` lines (so that messages
are being closed and judged, as in steady state), then the next ``--lines`` are fed with opcode
tracing on. Printed: opcodes per line in all, and per function (``_feed`` per source line with
``--by-line``). Tracing is slow (a few seconds per thousand lines); the counts are exact.

Usage: python bench/bench_opcodes.py [--skip N] [--lines N] [--jobs-share K/N] [--by-line]
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import simulated_log  # noqa: E402 - the same cached log as the checker's benchmark


class _FromSource(importlib.abc.MetaPathFinder):
    """The REMP checker's modules from their .py files even where setup.py compiled them: tracing
    counts the opcodes of Python frames, which a compiled module has none of."""

    def find_spec(self, name, path, target=None):
        if not name.startswith("rmkit.conformance.remp.") or not path:
            return None
        source = Path(path[0]) / (name.rsplit(".", 1)[1] + ".py")
        return importlib.util.spec_from_file_location(name, source) if source.is_file() else None


sys.meta_path.insert(0, _FromSource())

from rmkit.conformance.remp.checker import RempLogChecker  # noqa: E402
from rmkit.logread import iter_line_batches  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip", type=int, default=700_000, help="lines fed untraced first (default 700,000)")
    ap.add_argument("--lines", type=int, default=20_000, help="lines traced (default 20,000)")
    ap.add_argument("--jobs-share", default="0/1", help="the share K/N of a --jobs N run to trace (default 0/1: one process)")
    ap.add_argument("--by-line", action="store_true", help="count _feed's opcodes per source line")
    args = ap.parse_args()
    k, n = (int(x) for x in args.jobs_share.split("/"))

    path = simulated_log(1_000_000)
    lines: list[bytes] = []
    for batch in iter_line_batches(str(path)):
        lines.extend(batch)
        if len(lines) >= args.skip + args.lines:
            break
    if len(lines) < args.skip + args.lines:
        sys.exit(f"{path.name} has {len(lines):,} lines, fewer than --skip + --lines")
    warm, window = lines[:args.skip], lines[args.skip:args.skip + args.lines]

    counts: Counter = Counter()

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            counts[(code.co_name, frame.f_lineno if args.by_line and code.co_name == "_feed" else 0)] += 1
        return tracer

    checker = RempLogChecker("spec")
    checker.begin([str(path)], partition=(k, n) if n > 1 else None)
    checker.feed([(range(1, len(warm) + 1), warm)])
    sys.settrace(tracer)
    try:
        checker.feed([(range(len(warm) + 1, len(warm) + 1 + len(window)), window)])
    finally:
        sys.settrace(None)
    total = sum(counts.values())
    print(f"{path.name}: share {k}/{n}, lines {args.skip + 1:,} to {args.skip + args.lines:,}: "
          f"{total / args.lines:.1f} Python opcodes per line")
    for (name, line), c in counts.most_common(None if args.by_line else 40):
        print(f"{c / args.lines:8.1f}  {name}" + (f" line {line}" if line else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
