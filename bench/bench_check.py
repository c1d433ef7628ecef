"""Benchmark of ``rmkit check`` against a bare orjson parse of the same file, in the same run.

Machines here are noisy (2 shared cores), so every figure is a ratio against a baseline measured
moments before, each the best of ``--repeat`` runs. What is printed:

- parse:      best wall time of ``for line in file: orjson.loads(line)`` (the baseline)
- check jN:   best wall time of the ``rmkit check`` process with N jobs (start-up included)
- ratio:      check / parse (the target is <= 3 with the default jobs)
- receipts/s: receipts divided by the check's wall time
- peak RSS:   the check process's maximum resident set size
- CPU ratio:  CPU seconds of the check (all its processes) / CPU seconds of the parse: steadier
              than wall time when other work shares the cores

``--ten-million`` checks a 10,000,000-receipt simulated log (written once to bench/out, 5 GB) read
through a pipe (``rmkit check -``: one process) and from the file with the default jobs, and reports
peak memory (target <= 300 MB): the main process's, and summed over all processes of the check
(RSS counts pages forked workers share with their parent once per process; PSS splits them).

Usage: python bench/bench_check.py [--receipts N] [--repeat K] [--ten-million]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from treemem import TreeMemory  # noqa: E402 - the benchmarks' one memory sampler

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"


def rmkit() -> list[str]:
    exe = shutil.which("rmkit", path=str(Path(sys.executable).parent)) or shutil.which("rmkit")
    return [exe] if exe else [sys.executable, "-m", "rmkit"]


def simulated_log(receipts: int, seed: int = 1) -> Path:
    """A cached simulator log of exactly ``receipts`` receipts (spec profile)."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"sim-spec-{receipts}-s{seed}.jsonl"
    if not path.exists():
        t = time.perf_counter()
        part = path.with_name(path.name + ".part")  # renamed when complete: a broken run leaves no log behind
        subprocess.run(rmkit() + ["simulate", "--receipts", str(receipts), "--messages", str(receipts),
                                  "--seed", str(seed), "-o", str(part)], check=True)
        part.rename(path)
        print(f"generated {path.name} in {time.perf_counter() - t:.1f} s")
    return path


def bare_parse(path: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of parsing every line with orjson."""
    loads = orjson.loads
    t, c = time.perf_counter(), time.process_time()
    with open(path, "rb") as f:
        for line in f:
            loads(line)
    return time.perf_counter() - t, time.process_time() - c


# Runs the CLI in-process and reports its own peak RSS (and its workers') on stderr.
_WRAP = """
import resource, sys
from rmkit.cli import main
code = main(sys.argv[1:])
me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stderr.write(f"\\nRSS {me} {kids}\\n")
sys.exit(code)
"""


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed_check(args: list[str], stdin=None, tree: list | None = None) -> tuple[float, int, int, dict, float]:
    """(wall seconds, peak RSS of the main process, of its largest worker (bytes), JSON report,
    CPU seconds of the check and its workers). With ``tree`` (a list), the peak RSS and PSS summed
    over the check's processes (sampled, so a little below the true peaks) are appended to it."""
    t, c = time.perf_counter(), _children_cpu()
    proc = subprocess.Popen([sys.executable, "-c", _WRAP, "check", "--format", "json", *args], stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = TreeMemory(proc.pid) if tree is not None else None
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    cpu = _children_cpu() - c
    if sampler is not None:
        sampler.stop()
        tree += [sampler.peak_rss, sampler.peak_pss]
    if proc.returncode not in (0, 1):
        sys.exit(f"rmkit check failed ({proc.returncode}): {err.decode()[-2000:]}")
    me, kids = (int(x) * 1024 for x in err.decode().rsplit("RSS ", 1)[1].split())
    return wall, me, kids, orjson.loads(out), cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--receipts", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ten-million", action="store_true")
    args = ap.parse_args()

    path = simulated_log(args.receipts)
    size_mb = path.stat().st_size / 1e6
    print(f"log: {path.name}, {size_mb:.0f} MB, {os.cpu_count()} cores")
    parse, parse_cpu = (min(x) for x in zip(*(bare_parse(path) for _ in range(args.repeat))))
    rows = []
    for jobs in sorted({1, os.cpu_count() or 1}):
        best, best_cpu, rss, report, summed = None, None, (0, 0), None, (0, 0)
        for _ in range(args.repeat):
            wall, cpu = bare_parse(path)  # keep the baseline fresh: noise hits both alike
            parse, parse_cpu = min(parse, wall), min(parse_cpu, cpu)
            tree: list = []
            wall, me, kids, report, cpu = timed_check([str(path), "--jobs", str(jobs)], tree=tree)
            best = wall if best is None else min(best, wall)
            best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
            rss = (max(rss[0], me), max(rss[1], kids))
            summed = (max(summed[0], tree[0]), max(summed[1], tree[1]))
        rows.append((jobs, best, report, rss, best_cpu, summed))
    print(f"parse (orjson, baseline, best of {len(rows) * args.repeat + args.repeat}): {parse:.2f} s, CPU {parse_cpu:.2f} s")
    for jobs, best, report, rss, cpu, summed in rows:
        print(f"check j{jobs}: {best:.2f} s  ratio {best / parse:.2f}  {report['receipts'] / best:,.0f} receipts/s  "
              f"verdict {report['verdict']}  messages {report['messages']:,}  peak RSS {rss[0] / 1e6:.0f} MB"
              + (f" (+ largest worker {rss[1] / 1e6:.0f} MB; all processes RSS {summed[0] / 1e6:.0f} MB, "
                 f"PSS {summed[1] / 1e6:.0f} MB)" if jobs > 1 else "")
              + f"  CPU {cpu:.2f} s (CPU ratio {cpu / parse_cpu:.2f})")
    default_jobs = 1 if size_mb < 32 else (os.cpu_count() or 1)
    best_default = next(b for j, b, *_ in rows if j == default_jobs)
    print(f"RESULT ratio(default jobs={default_jobs}) = {best_default / parse:.2f} (target <= 3); "
          f"single process = {rows[0][1] / parse:.2f} (CPU ratio {rows[0][4] / parse_cpu:.2f})")

    if args.ten_million:
        # one 10,000,000-receipt log, kept in bench/out: read from a pipe (``-``: one process) and
        # from the file with the default jobs; memory summed over all processes of the check
        big = simulated_log(10_000_000, seed=7)
        for how, jobs in (("through a pipe", 1), ("from the file", os.cpu_count() or 1)):
            tree: list = []
            if jobs == 1:
                with open(big, "rb") as f:
                    wall, rss, kids, report, _ = timed_check(["-"], stdin=f, tree=tree)
            else:
                wall, rss, kids, report, _ = timed_check([str(big), "--jobs", str(jobs)], tree=tree)
            print(f"10M receipts {how} (jobs {jobs}): {report['receipts']:,} receipts, {report['messages']:,} messages, "
                  f"peak open {report['metrics']['peak_open_messages']:,}, peak RSS {rss / 1e6:.0f} MB"
                  + (f" (largest worker {kids / 1e6:.0f} MB)" if jobs > 1 else "")
                  + f", summed over the processes RSS {tree[0] / 1e6:.0f} MB, PSS {tree[1] / 1e6:.0f} MB (target <= 300), "
                  f"{wall:.0f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
