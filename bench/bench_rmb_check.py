"""Benchmark of ``rmkit check --protocol rmb`` against a bare orjson parse of the same log, in the
same run, on several shapes of log (the machine is noisy: every figure is the best of ``--repeat``,
read as a ratio to a parse timed moments before; memory is the peak RSS summed over the check's
processes, sampled from /proc).

The shapes (every one a clean log of whole requests as the reference daemons log them, in the spec
profile, signed with the kit's test keys by the per-rule fixtures' builder):

- ``short``: many short-lived requests (one destination, answered within a second; a new one
  every 50 ms), the checker's common case;
- ``long``: requests that live long (TTL 900 s, answered 300 s after they were sent): about
  6,000 open at once, so memory shows what an open request costs;
- ``fanout``: one request to 16 destinations, each posted, accepted and answered (150 lines per
  request).

RMB logs have no envelope (rmkit-rmb-log/1 is one record a line, Kafka or not), so there is no
Kafka shape. Printed per shape: the parse's wall and CPU time, the check's at the default jobs and
with ``--jobs 1`` / ``--jobs 2``: wall time and its ratio to the parse's (the target: at most 3 at
the default jobs), CPU time (the check's processes summed) and its ratio to the parse's (what the
check costs the machine, steadier than wall time when other work shares the cores), peak memory,
and what an open request costs: the peak memory less that of a check of a one-line log (the
interpreter and the spec), over the most requests open at once. ``RESULT`` lines carry the figures
``bench/record_results.py`` writes down: per shape the wall ratio at the default jobs, its memory,
and the CPU ratio beside them.

``--against DIR`` times a second build of the kit in the same run, on the same logs, against the
same baseline: DIR holds its ``rmkit`` package (``pip install --no-deps --target DIR .`` in a
checkout of another commit). Each shape then prints both builds' ratios side by side.

``--ten-million`` checks a 10,000,000-line log of each shape (written once to bench/out, about 5 GB
each) with two jobs (the default on two idle cores, and the most memory) instead of timing the
1,000,000-line logs, and prints its peak memory summed over the check's processes (RSS, and PSS,
which splits the pages forked workers share; target <= 300 MB). Memory follows the requests open,
not the log's length (a request is judged and forgotten once its horizon has passed).

``--split [N]`` prints where one process's CPU time goes on the first N lines of each shape (the
typed reading, the share without its rules, the whole share, each handler of the rules alone), per
line and as a multiple of the bare parse: the figures docs/rmb-check.md's "Where the time goes" gives.

Usage: python bench/bench_rmb_check.py [--records N] [--repeat K] [--shapes short,long,fanout] [--against DIR]
       python bench/bench_rmb_check.py --ten-million [--shapes long]
       python bench/bench_rmb_check.py --split [N] [--shapes short]
"""

from __future__ import annotations

import argparse
import heapq
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from treemem import TreeMemory  # noqa: E402 - the benchmarks' one memory sampler

REPO = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out"
SHAPES = ("short", "long", "fanout")
FANOUT = tuple(range(2, 18))  # the destinations of a fan-out request


def builder():
    spec = importlib.util.spec_from_file_location("mk_rmb", REPO / "fixtures" / "rmb" / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    from rmkit.protocols.rmb.signing import keypair
    from rmkit.reference_impl.rmb.cluster import demo_seed

    # the fan-out's destinations: more twins than the fixtures' three, keyed alike
    mk.TWINS = tuple(range(1, max(FANOUT) + 1))
    for t in mk.TWINS:
        mk.KEYS.setdefault(t, keypair(demo_seed(t), "ed25519"))
        mk.ADDR.setdefault(t, f"127.0.0.1:{7000 + t}")
    return mk


def _request(mk, shape: str, i: int) -> tuple[float, list]:
    """(the request's time, its lines: (time, text) in the order the builder wrote them)."""
    uid = f"{i:08x}-0000-4000-8000-000000000000"
    log = mk.Log("spec")
    if shape == "short":
        t = i * 0.05
        log.exchange(uid, t=t)
    elif shape == "fanout":
        t = i * 0.5
        log.exchange(uid, t=t, dst=FANOUT)
    else:  # long: TTL 900 s, the answer 300 s after the request
        t = i * 0.05
        req = log.request(uid, t=t, exp=900)
        log.sent(req, t)
        s = log.copy(req, 2, t + 0.03)
        log.accepted(s, t + 0.035)
        log.post(s, t + 0.04, log.b["accepted"]["status"])
        log.answer(req, 2, t + 300)
    return t, [(x["time"], json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n") for x in log.lines]


def shape_log(shape: str, records: int) -> tuple[Path, Path]:
    """(log, directory) of about ``records`` lines of ``shape``, cached in bench/out. A long-lived
    shape's lines are written in time order (its answers come long after their requests; lines of
    one time in the order they were built), held back in a heap until no later request can come
    before them: memory follows the requests open, as the check's does."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"rmb-{shape}-{records}.jsonl"
    directory = OUT / "rmb-directory.json"
    mk = None
    if not path.exists() or not directory.exists():
        mk = builder()
        directory.write_text(orjson.dumps(mk.directory().to_data()).decode(), encoding="utf-8")
    if not path.exists():
        started = time.perf_counter()
        part = path.with_name(path.name + ".part")
        n = i = seq = 0
        held: list = []  # (time, order built, text) of the long shape's lines not yet written
        with open(part, "w", encoding="utf-8") as f:
            while n < records:
                t, lines = _request(mk, shape, i)
                n += len(lines)
                i += 1
                if shape != "long":
                    f.writelines(text for _, text in lines)
                    continue
                for when, text in lines:
                    seq += 1
                    heapq.heappush(held, (when, seq, text))
                upto = round(mk.T0 + _request_time(shape, i), 6)  # no later request has a line before it (Log.rec's time)
                while held and held[0][0] < upto:
                    f.write(heapq.heappop(held)[2])
            while held:
                f.write(heapq.heappop(held)[2])
        part.rename(path)
        print(f"generated {path.name} ({n:,} lines, {i:,} requests) in {time.perf_counter() - started:.0f} s")
    return path, directory


def _request_time(shape: str, i: int) -> float:
    """The log time (from the builder's start) of request ``i``: its earliest line's."""
    return i * (0.5 if shape == "fanout" else 0.05)


def bare_parse(path: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of parsing every line with orjson."""
    loads = orjson.loads
    t, c = time.perf_counter(), time.process_time()
    with open(path, "rb") as f:
        for line in f:
            loads(line)
    return time.perf_counter() - t, time.process_time() - c


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Run:
    """One check: its CPU seconds (its processes summed), wall seconds, peak RSS and PSS summed over
    its processes, and its JSON report."""

    def __init__(self, cpu: float, wall: float, rss: int, pss: int, report: dict):
        self.cpu, self.wall, self.rss, self.pss, self.report = cpu, wall, rss, pss, report


def timed_check(path: Path, jobs: int | None, directory: Path | None = None, against: str | None = None) -> Run:
    """One check of ``path`` (``against``: a directory whose ``rmkit`` package is run instead of
    the installed one)."""
    args = [sys.executable, "-m", "rmkit", "check", "--protocol", "rmb", "--format", "json", str(path)]
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    if directory is not None:
        args += ["--directory", str(directory)]
    env = dict(os.environ, PYTHONPATH=against) if against else None
    c = _children_cpu()
    wall = time.perf_counter()
    # run from bench/out: ``python -m`` puts the working directory first on the path, and a
    # checkout's own rmkit/ there would be imported instead of the build asked for
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=OUT)
    sampler = TreeMemory(proc.pid, every=0.1)
    out, err = proc.communicate()
    sampler.stop()
    wall = time.perf_counter() - wall
    cpu = _children_cpu() - c
    if proc.returncode not in (0, 1):
        sys.exit(f"rmkit check failed ({proc.returncode}): {err.decode()[-2000:]}")
    return Run(cpu, wall, sampler.peak_rss, sampler.peak_pss, orjson.loads(out))


def result_line(shape: str, ratio: float, mb: float, cpu_ratio: float | None = None, jobs: int | None = None) -> str:
    """The figures of one shape that bench/record_results.py reads: the wall ratio at the default
    jobs and the peak memory (RSS summed over the processes); the CPU ratio beside them."""
    line = f"RESULT rmb {shape} ratio(default jobs) = {ratio:.2f}; memory {mb:.0f} MB"
    if cpu_ratio is not None:
        line += f"; CPU ratio {cpu_ratio:.2f}"
    if jobs is not None:
        line += f" (jobs {jobs}; target: ratio <= 3)"
    return line


def base_memory(log: Path) -> int:
    """Peak RSS of a one-process check of the first line of ``log``: what no open request costs."""
    one = OUT / "rmb-one-line.jsonl"
    with open(log, "rb") as f:
        one.write_bytes(f.readline())
    return timed_check(one, 1).rss


def bench_shape(shape: str, records: int, repeat: int, base: int, directory_too: bool, against: str | None) -> float:
    """Time the checks of one shape's log against the bare parse; the wall ratio at the default jobs."""
    log, directory = shape_log(shape, records)
    parse, parse_cpu = (min(x) for x in zip(*(bare_parse(log) for _ in range(repeat))))
    rows = [("default jobs", None, None), ("--jobs 1", 1, None), ("--jobs 2", 2, None)]
    if directory_too:
        rows.append(("--directory", None, directory))
    print(f"{shape}: {log.stat().st_size / 1e6:.0f} MB")
    results = []
    default_jobs = None
    for name, jobs, d in rows:
        if jobs is not None and jobs == default_jobs and d is None:
            results.append((name, None, None))
            continue
        best: dict = {}
        for _ in range(repeat):
            wall, cpu = bare_parse(log)  # the baseline kept fresh: noise hits both alike
            parse, parse_cpu = min(parse, wall), min(parse_cpu, cpu)
            for build in ((None, against) if against and d is None else (None,)):
                run = timed_check(log, jobs, d, build)
                got = best.get(build)
                if got is None:
                    best[build] = got = [run.cpu, run.wall, run.rss, run.pss, run.report]
                else:
                    got[0], got[1] = min(got[0], run.cpu), min(got[1], run.wall)
                    got[2], got[3] = max(got[2], run.rss), max(got[3], run.pss)
                if run.report["verdict"] != "pass":
                    sys.exit(f"{shape}: the clean log was judged {run.report['verdict']} by "
                             f"{build or 'this build'}: {run.report['counts']}")
        results.append((name, jobs, best))
        if jobs is None and d is None:
            default_jobs = best[None][4]["metrics"].get("jobs") or 1
    print(f"  parse (orjson, best of {repeat * (len(rows) + 1)}): wall {parse:.2f} s, CPU {parse_cpu:.2f} s")
    ratio = 0.0
    for name, jobs, best in results:
        if best is None:
            print(f"  {name:13} (the default ran with {default_jobs} job(s): above)")
            continue
        for build, (cpu, wall, rss, pss, report) in best.items():
            m = report["metrics"]
            n_jobs, open_peak = m.get("jobs") or 1, m.get("peak_open_requests") or 0
            per_open = (rss - n_jobs * base) / open_peak / 1e3 if open_peak else 0.0
            print(f"  {name:13} wall {wall:6.2f} s ratio {wall / parse:5.2f}  CPU {cpu:6.2f} s ratio {cpu / parse_cpu:5.2f}  "
                  f"{report['receipts'] / cpu:9,.0f} records/CPU s  jobs {n_jobs}  peak open {open_peak}  "
                  f"memory {rss / 1e6:4.0f} MB RSS, {pss / 1e6:4.0f} MB PSS (summed), {per_open:4.1f} KB per open request"
                  + (f"  [build in {build}]" if build else ""))
        if jobs is None and name == "default jobs":
            cpu, wall, rss, _, report = best[None]
            ratio = wall / parse
            print(result_line(shape, ratio, rss / 1e6, cpu / parse_cpu, default_jobs))
            if against is not None and against in best:
                o_cpu, o_wall = best[against][0], best[against][1]
                print(f"RESULT rmb {shape} this build / the build in {against}: wall ratio {wall / parse:.2f} / "
                      f"{o_wall / parse:.2f}, CPU ratio {cpu / parse_cpu:.2f} / {o_cpu / parse_cpu:.2f}")
            for build, got in best.items():
                if build is not None and got[4]["counts"] != report["counts"]:
                    print(f"  the build in {build} reports otherwise: {got[4]['counts']} against {report['counts']}")
    return ratio


def ten_million(shapes: list[str], base: int) -> None:
    """Peak memory of a check of 10,000,000 lines of each shape with two jobs."""
    for shape in shapes:
        log, _ = shape_log(shape, 10_000_000)
        run = timed_check(log, 2)
        m = run.report["metrics"]
        print(f"10M {shape}: {run.report['receipts']:,} records, jobs {m.get('jobs') or 1}, peak open "
              f"{m.get('peak_open_requests'):,}, memory summed over the processes {run.rss / 1e6:.0f} MB RSS, "
              f"{run.pss / 1e6:.0f} MB PSS (target <= 300; a one-line check {base / 1e6:.0f} MB a process), "
              f"wall {run.wall:.0f} s, CPU {run.cpu:.0f} s")
        print(f"RESULT rmb 10M {shape} memory = {run.rss / 1e6:.0f} MB (RSS summed over {m.get('jobs') or 1} jobs; "
              f"target <= 300)")


def split(shape: str, records: int, lines_n: int, repeat: int) -> None:
    """Where one process's CPU time goes, on the first ``lines_n`` lines of ``shape``'s log held in
    memory (the installed build, in this process; best of ``repeat``), per line and as a multiple of
    the bare parse: the typed reading alone; one share with no rule (the reading loop, the streaming
    engine, the signature index, each request's group built); the whole share; and each handler of
    the requests' rules alone on the requests' groups (a handler alone also pays for what the
    handlers share: each distinct message's schema check, fingerprint and signature verdict)."""
    from rmkit.conformance.rmb import handlers
    from rmkit.conformance.rmb.checker import RmbShards, _typed_reading
    from rmkit.conformance.rmb.logjudge import Group
    from rmkit.conformance.rmb.typedread import typed_records

    log, _ = shape_log(shape, records)
    with open(log, "rb") as f:
        lines = [line for _, line in zip(range(lines_n), f)]
    n = len(lines)
    refs = list(range(1, n + 1))
    batches = [(refs[i:i + 4096], lines[i:i + 4096]) for i in range(0, n, 4096)]
    shards = RmbShards()
    ctx = shards.ctx()
    read = _typed_reading(typed_records())
    groups: dict = {}
    for ref, line in zip(refs, lines):
        rec = read(line, ref)
        if rec is not None and rec.uid:
            groups.setdefault(rec.uid, []).append(rec)

    def best(fn) -> float:
        fn()  # (warm: every cache the check fills once)
        times = []
        for _ in range(repeat):
            c = time.process_time()
            fn()
            times.append(time.process_time() - c)
        return min(times) / n * 1e6

    def each(fn, *columns) -> None:  # (each result dropped at once, as a check drops what it has read)
        for args in zip(*columns):
            fn(*args)

    parse = best(lambda: each(orjson.loads, lines))
    rows = [("typed reading", best(lambda: each(read, lines, refs)))]
    judges = list(handlers.JUDGES)
    try:
        handlers.JUDGES[:] = []
        rows.append(("share, no rule", best(lambda: shards.check_share(["log"], batches))))
    finally:
        handlers.JUDGES[:] = judges
    rows.append(("share, whole", best(lambda: shards.check_share(["log"], batches))))
    for h in judges:
        rows.append((f"  {h.__name__} alone", best(lambda: each(lambda recs: Group(ctx, recs).judge([h]), groups.values()))))
    rows.append(("  every handler", best(lambda: each(lambda recs: Group(ctx, recs).judge(judges), groups.values()))))
    print(f"{shape}: CPU of one process on {n:,} lines ({len(groups):,} requests) in memory, best of {repeat}: "
          f"parse {parse:.2f} us a line")
    for name, us in rows:
        print(f"  {name:24} {us:6.2f} us a line  {us / parse:5.2f} x the parse")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=1_000_000, help="lines per shape's log (default 1,000,000)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--directory", action="store_true", help="also check with --directory (every signature verified)")
    p.add_argument("--against", metavar="DIR", help="also time the rmkit package in DIR, in the same run")
    p.add_argument("--ten-million", action="store_true",
                   help="measure the memory of 10,000,000-line logs (instead of the ratios of --records)")
    p.add_argument("--split", type=int, metavar="N", nargs="?", const=100_000,
                   help="where one process's CPU time goes on the first N lines (default 100,000) of each shape, "
                        "in this process (instead of timing whole checks)")
    args = p.parse_args(argv)
    shapes = args.shapes.split(",")
    if args.split is not None:  # (--split 0 is a usage error, not a whole bench)
        if args.split < 1:
            p.error(f"--split N: expected at least one line, found {args.split}")
        for shape in shapes:
            split(shape, args.records, args.split, max(args.repeat, 3))
        return 0
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; best of {args.repeat}; CPU time: the check's "
          f"processes summed")
    base = base_memory(shape_log(shapes[0], 10_000_000 if args.ten_million else args.records)[0])
    print(f"a check of one line: memory {base / 1e6:.0f} MB (RSS)")
    if args.ten_million:
        ten_million(shapes, base)
        return 0
    worst = max(bench_shape(shape, args.records, args.repeat, base, args.directory, args.against) for shape in shapes)
    print(f"RESULT rmb worst ratio(default jobs) = {worst:.2f} (target <= 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
