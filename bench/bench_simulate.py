"""Benchmark of ``rmkit simulate``: one process against ``--jobs 2``, in the same run.

Machines here are noisy (2 shared cores), so the figures that matter are the ratios, each run
timed moments after the one it is compared with, best of ``--repeat``. What is printed:

- file:        ``rmkit simulate -o FILE`` (the single-file form, one process)
- dir j1:      ``-o DIR --files F --jobs 1`` (the multi-file form in one process)
- dir j2:      ``-o DIR --files F --jobs 2``
- receipts/s:  receipts written divided by the wall time (process start-up included)
- speed-up:    j1 time / j2 time
- with --violations RATE, the multi-file runs also plant violations (and prove each one)

Usage: python bench/bench_simulate.py [--messages N] [--files F] [--repeat K] [--violations RATE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rmkit.cli", *argv], check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def _best(argv: list[str], repeat: int, clean: Path) -> float:
    best = float("inf")
    for _ in range(repeat):
        shutil.rmtree(clean, ignore_errors=True)
        best = min(best, _run(argv))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=40_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--violations", type=float)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rmkit-bench-sim-") as tmp:
        tmp = Path(tmp)
        common = ["simulate", "--seed", "1", "--messages", str(args.messages)]
        extra = ["--files", str(args.files)] + (["--violations", str(args.violations)] if args.violations else [])
        single = tmp / "one.jsonl"
        t_file = _best(common + ["-o", str(single)], args.repeat, single)
        n_file = sum(1 for _ in open(single, "rb"))
        t_j1 = _best(common + extra + ["--jobs", "1", "-o", str(tmp / "d1")], args.repeat, tmp / "d1")
        t_j2 = _best(common + extra + ["--jobs", "2", "-o", str(tmp / "d2")], args.repeat, tmp / "d2")
        manifest = json.loads((tmp / "d2" / "manifest.json").read_text())
        n_dir = sum(f["receipts"] for f in manifest["files"])
        print(f"messages {args.messages:,}, files {args.files}, violations {args.violations or 0}")
        print(f"file    {t_file:7.2f} s  {n_file / t_file:>10,.0f} receipts/s  ({n_file:,} receipts)")
        print(f"dir j1  {t_j1:7.2f} s  {n_dir / t_j1:>10,.0f} receipts/s  ({n_dir:,} receipts)")
        print(f"dir j2  {t_j2:7.2f} s  {n_dir / t_j2:>10,.0f} receipts/s")
        print(f"speed-up j2/j1 {t_j1 / t_j2:.2f}x; dir j1 / file {t_j1 / t_file * n_file / n_dir:.2f} (time per receipt)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
