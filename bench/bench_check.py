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

Shapes of log (``--shape``, all by default; each a simulated log of ``--receipts`` receipts, cached
in bench/out): ``bench``, the simulator's default shard of 7 validators (about 48,000 messages of
about 21 receipts per million); ``short``, 3 validators (about 90,000 messages of about 11 receipts
per million: more messages open and closed per receipt); ``kafka``, the ``bench`` shard written as
a Kafka dump (one envelope per receipt: topic, partition, offset, timestamp, key, value); and
``ever-node``, a Kafka dump of the ever-node profile (validator receipts stamped 0, whose time is
the Kafka record's), checked with ``--profile ever-node``. A ``RESULT[shape]`` line per shape gives
its ratio at the default jobs (the target: at most 3 on every shape).

``--against DIR`` times a second build of the kit in the same run, on the same logs, against the
same baseline: DIR holds its ``rmkit`` package (``pip install --no-deps --target DIR .`` in a
checkout of another commit). Each check of this build is followed by the same check of that one,
and each shape then prints the two builds' figures side by side for every number of jobs: wall
ratio and CPU ratio (the figures to compare a change by: the same parse, the same load on the machine).
Compare two builds installed alike: an editable install (``pip install -e .``) starts about 0.05 s
of CPU slower than one installed into a directory (its import hook), a few percent of a check;
``PYTHONPATH=DIR2`` before the command makes the checks of "this build" run the build in DIR2.

``--ten-million`` checks a 10,000,000-receipt simulated log (written once to bench/out, 5 GB) read
through a pipe (``rmkit check -``: one process) and from the file with the default jobs, and reports
peak memory (target <= 300 MB): the main process's, and summed over all processes of the check
(RSS counts pages forked workers share with their parent once per process; PSS splits them).

Usage: python bench/bench_check.py [--shape NAME ...] [--receipts N] [--repeat K] [--against DIR] [--ten-million]
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


# shape -> (options of rmkit simulate, options of rmkit check, file name stem)
SHAPES = {
    "bench": ([], [], "sim-spec"),
    "short": (["--validators", "3"], [], "sim-spec-v3"),
    "kafka": (["--kafka"], [], "sim-spec-kafka"),
    "ever-node": (["--profile", "ever-node", "--kafka"], ["--profile", "ever-node"], "sim-ever-node-kafka"),
}


def simulated_log(receipts: int, seed: int = 1, shape: str = "bench") -> Path:
    """A cached simulator log of exactly ``receipts`` receipts of the given shape."""
    OUT.mkdir(exist_ok=True)
    options, _, stem = SHAPES[shape]
    path = OUT / f"{stem}-{receipts}-s{seed}.jsonl"
    if not path.exists():
        t = time.perf_counter()
        part = path.with_name(path.name + ".part")  # renamed when complete: a broken run leaves no log behind
        subprocess.run(rmkit() + ["simulate", "--receipts", str(receipts), "--messages", str(receipts),
                                  "--seed", str(seed), *options, "-o", str(part)], check=True)
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


def timed_check(args: list[str], stdin=None, tree: list | None = None,
                against: str | None = None) -> tuple[float, int, int, dict, float]:
    """(wall seconds, peak RSS of the main process, of its largest worker (bytes), JSON report,
    CPU seconds of the check and its workers). With ``tree`` (a list), the peak RSS and PSS summed
    over the check's processes (sampled, so a little below the true peaks) are appended to it.
    ``against``: a directory whose ``rmkit`` package is run instead of the installed one."""
    env = dict(os.environ, PYTHONPATH=against) if against else None
    t, c = time.perf_counter(), _children_cpu()
    # run from bench/out: ``python -c`` puts the working directory first on the path, and a checkout's
    # own rmkit/ there would be imported instead of the build asked for
    proc = subprocess.Popen([sys.executable, "-c", _WRAP, "check", "--format", "json", *args], stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=OUT)
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


def bench_shape(shape: str, receipts: int, repeat: int, against: str | None) -> None:
    """Time the check of one shape's log against the bare parse, best of ``repeat`` each."""
    path = simulated_log(receipts, shape=shape)
    check_options = SHAPES[shape][1]
    size_mb = path.stat().st_size / 1e6
    print(f"shape {shape}: {path.name}, {size_mb:.0f} MB, {os.cpu_count()} cores")
    parse, parse_cpu = (min(x) for x in zip(*(bare_parse(path) for _ in range(repeat))))
    rows = []
    others = {}  # jobs -> (best wall, best CPU) of the build in ``against``
    for jobs in sorted({1, os.cpu_count() or 1}):
        best, best_cpu, rss, report, summed = None, None, (0, 0), None, (0, 0)
        for _ in range(repeat):
            wall, cpu = bare_parse(path)  # keep the baseline fresh: noise hits both alike
            parse, parse_cpu = min(parse, wall), min(parse_cpu, cpu)
            tree: list = []
            wall, me, kids, report, cpu = timed_check([str(path), "--jobs", str(jobs), *check_options], tree=tree)
            best = wall if best is None else min(best, wall)
            best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
            rss = (max(rss[0], me), max(rss[1], kids))
            summed = (max(summed[0], tree[0]), max(summed[1], tree[1]))
            if against:  # the other build, between the same baselines
                wall, _, _, other, cpu = timed_check([str(path), "--jobs", str(jobs), *check_options], against=against)
                was = others.get(jobs, (wall, cpu))
                others[jobs] = (min(was[0], wall), min(was[1], cpu))
                if (other["counts"], other["receipts"], other["messages"]) != (report["counts"], report["receipts"], report["messages"]):
                    print(f"  the build in {against} reports otherwise: {other['counts']} against {report['counts']}")
        rows.append((jobs, best, report, rss, best_cpu, summed))
    print(f"parse (orjson, baseline, best of {len(rows) * repeat + repeat}): {parse:.2f} s, CPU {parse_cpu:.2f} s")
    for jobs, best, report, rss, cpu, summed in rows:
        print(f"check j{jobs}: {best:.2f} s  ratio {best / parse:.2f}  {report['receipts'] / best:,.0f} receipts/s  "
              f"verdict {report['verdict']}  messages {report['messages']:,}  peak RSS {rss[0] / 1e6:.0f} MB"
              + (f" (+ largest worker {rss[1] / 1e6:.0f} MB; all processes RSS {summed[0] / 1e6:.0f} MB, "
                 f"PSS {summed[1] / 1e6:.0f} MB)" if jobs > 1 else "")
              + f"  CPU {cpu:.2f} s (CPU ratio {cpu / parse_cpu:.2f})")
    default_jobs = 1 if size_mb < 32 else (os.cpu_count() or 1)
    best_default = next(b for j, b, *_ in rows if j == default_jobs)
    tag = "" if shape == "bench" else f"[{shape}]"  # (the bench shape keeps the line record_results.py reads)
    print(f"RESULT{tag} ratio(default jobs={default_jobs}) = {best_default / parse:.2f} (target <= 3); "
          f"single process = {rows[0][1] / parse:.2f} (CPU ratio {rows[0][4] / parse_cpu:.2f})")
    for jobs, best, _, _, cpu, _ in rows:
        if jobs in others:
            wall, other_cpu = others[jobs]
            print(f"RESULT{tag} j{jobs}: this build wall ratio {best / parse:.2f}, CPU ratio {cpu / parse_cpu:.2f}; "
                  f"the build in {against} wall ratio {wall / parse:.2f}, CPU ratio {other_cpu / parse_cpu:.2f} "
                  f"(CPU this / that {cpu / other_cpu:.3f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", choices=list(SHAPES),
                    help="a shape of log to bench (repeatable; default: every shape)")
    ap.add_argument("--receipts", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", metavar="DIR", help="also time the rmkit package in DIR, in the same run")
    ap.add_argument("--ten-million", action="store_true")
    args = ap.parse_args()

    for shape in args.shape or list(SHAPES):
        bench_shape(shape, args.receipts, args.repeat, args.against)

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
