"""Where ``rmkit check``'s time goes, against the floors beneath it, in one run.

``make bench`` asks for check / parse <= 3 with the default jobs. This benchmark shows how far each
layer under the checker already takes, so that the distance to the target can be read from one
run instead of argued: every figure is a ratio to an orjson parse of the same log timed in the
same round, and rounds alternate the measures (a shared machine's speed drifts by a quarter over
minutes, which would otherwise land on one measure and not another).

Each round measures, on the 1,000,000-receipt bench log (bench_check.py):

- parse:       ``orjson.loads`` of every line, one process (the target's baseline)
- read+split:  reading the log in 1 MB chunks and splitting it into lines (rmkit.logread), nothing parsed
- read+decode: the same, and the checker's typed decoder (msgspec, protocols/remp/records.py) on
               every line: what any check must pay before its first rule
- check j1:    the ``rmkit check`` process, one process
- check jN:    the same with N jobs (N: the cores; the default for a log this size)
- free split:  the log's N shares (by partition_share, as --jobs deals them) written out beforehand
               as N files, each checked by its own one-process ``rmkit check``, all at once: the
               wall time of the slowest. What --jobs N would take if dealing lines cost nothing.

Printed: the median over the rounds of each measure's wall time and of its ratio to the round's
parse. The checks' start-up (about 0.3 s) is included, as in bench_check.py.

Usage: python bench/bench_floor.py [--rounds K]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import bare_parse, rmkit, simulated_log  # noqa: E402 - the same log and baseline

from rmkit.conformance.remp.checker import PIECE, RempLogChecker  # noqa: E402
from rmkit.conformance.remp.shares import split_lines  # noqa: E402
from rmkit.logread import iter_line_batches, numbered_batches  # noqa: E402


def read_split(path: Path) -> float:
    t = time.perf_counter()
    for _ in iter_line_batches(str(path), chunk_bytes=1 << 20):
        pass
    return time.perf_counter() - t


def typed_decode(path: Path) -> float:
    """Reading and typing every line as the checker does: a piece of its batch at a time."""
    decoder = RempLogChecker("spec").model.typed_decoder()
    t = time.perf_counter()
    for batch in iter_line_batches(str(path), chunk_bytes=1 << 20):
        for i in range(0, len(batch), PIECE):
            decoder.decode_lines(batch[i:i + PIECE])
    return time.perf_counter() - t


def share_files(path: Path, n: int) -> list[Path]:
    """The log's n shares as files (kept beside the log), each in log order."""
    out = [path.with_name(f"{path.stem}.share{k}of{n}.jsonl") for k in range(n)]
    if not all(p.exists() for p in out):
        parts = [p.with_name(p.name + ".part") for p in out]
        files = [open(p, "wb") for p in parts]
        try:
            for refs, batch in numbered_batches(0, str(path), chunk_bytes=1 << 20):
                for f, (_, own) in zip(files, split_lines(refs, batch, n)):
                    if own:
                        f.write(b"\n".join(own) + b"\n")
        finally:
            for f in files:
                f.close()
        for part, p in zip(parts, out):
            part.rename(p)
    return out


def check(paths: list[Path], jobs: int) -> float:
    """Wall seconds of ``rmkit check --jobs J`` on each path, all started at once: the slowest."""
    t = time.perf_counter()
    procs = [subprocess.Popen(rmkit() + ["check", "--jobs", str(jobs), "--format", "json", "--out", os.devnull, str(p)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for p in paths]
    for p in procs:
        _, err = p.communicate()
        if p.returncode not in (0, 1):
            sys.exit(f"rmkit check failed ({p.returncode}): {err.decode()[-2000:]}")
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    n = os.cpu_count() or 1
    path = simulated_log(1_000_000)
    shares = share_files(path, n)
    measures = {
        "read+split": lambda: read_split(path),
        "read+decode": lambda: typed_decode(path),
        "check j1": lambda: check([path], 1),
        f"check j{n}": lambda: check([path], n),
        f"free split ({n} files)": lambda: check(shares, 1),
    }
    walls: dict[str, list[float]] = {"parse": [], **{k: [] for k in measures}}
    ratios: dict[str, list[float]] = {k: [] for k in walls}
    print(f"log: {path.name}, {path.stat().st_size / 1e6:.0f} MB, {n} cores, {args.rounds} rounds")
    for r in range(args.rounds):
        names = list(measures) if r % 2 == 0 else list(reversed(measures))
        parse = bare_parse(path)[0]
        walls["parse"].append(parse)
        ratios["parse"].append(1.0)
        for name in names:
            wall = measures[name]()
            walls[name].append(wall)
            ratios[name].append(wall / parse)
        print(f"round {r + 1}: parse {parse:.2f} s; " + ", ".join(f"{k} {walls[k][-1]:.2f} s" for k in measures), flush=True)
    print(f"{'':24}{'median wall':>12}{'median ratio':>14}")
    for name in walls:
        print(f"{name:24}{statistics.median(walls[name]):>10.2f} s{statistics.median(ratios[name]):>14.2f}")
    print(orjson.dumps({k: round(statistics.median(v), 3) for k, v in ratios.items()}).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
