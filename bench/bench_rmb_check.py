"""Benchmark of ``rmkit check --protocol rmb`` against a bare orjson parse of the same log, in the
same run, on several shapes of log (the machine is noisy: CPU time, best of ``--repeat``, read as
a ratio; memory is the peak RSS summed over the check's processes, sampled from /proc).

The shapes (every one a clean log of whole requests as the reference daemons log them, in the spec
profile, signed with the kit's test keys by the per-rule fixtures' builder):

- ``short``: many short-lived requests (one destination, answered within a second; a new one
  every 50 ms), the checker's common case;
- ``long``: requests that live long (TTL 900 s, answered 300 s after they were sent): about
  6,000 open at once, so memory shows what an open request costs;
- ``fanout``: one request to 16 destinations, each posted, accepted and answered (150 lines per
  request).

RMB logs have no envelope (rmkit-rmb-log/1 is one record a line, Kafka or not), so there is no
Kafka shape. Printed per shape: the parse's CPU time, the check's at the default jobs and with
``--jobs 1`` / ``--jobs 2``, their ratios, wall times and peak memory, and what an open request
costs: the peak memory less that of a check of a one-line log (the interpreter and the spec),
over the most requests open at once. Memory follows the requests open, not the log's length (a
request is judged and forgotten once its horizon has passed), so a longer log of the same shape
needs about as much: ``RESULT`` lines carry the figures ``bench/record_results.py`` writes down.

Usage: python bench/bench_rmb_check.py [--records N] [--repeat K] [--shapes short,long,fanout]
"""

from __future__ import annotations

import argparse
import importlib.util
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


def _request(mk, f, shape: str, i: int) -> int:
    uid = f"{i:08x}-0000-4000-8000-000000000000"
    log = mk.Log("spec")
    if shape == "short":
        log.exchange(uid, t=i * 0.05)
    elif shape == "fanout":
        log.exchange(uid, t=i * 0.5, dst=FANOUT)
    else:  # long: TTL 900 s, the answer 300 s after the request
        t = i * 0.05
        req = log.request(uid, t=t, exp=900)
        log.sent(req, t)
        s = log.copy(req, 2, t + 0.03)
        log.accepted(s, t + 0.035)
        log.post(s, t + 0.04, log.b["accepted"]["status"])
        log.answer(req, 2, t + 300)
    f.write(log.text())
    return len(log.lines)


def shape_log(shape: str, records: int) -> tuple[Path, Path]:
    """(log, directory) of about ``records`` lines of ``shape``, cached in bench/out. A long-lived
    shape's lines are written in time order (its answers come long after their requests)."""
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
        n = i = 0
        with open(part, "w", encoding="utf-8") as f:
            while n < records:
                n += _request(mk, f, shape, i)
                i += 1
        if shape == "long":  # in time order, as a daemon writes it
            lines = part.read_bytes().splitlines(keepends=True)
            lines.sort(key=lambda line: orjson.loads(line)["time"])
            part.write_bytes(b"".join(lines))
        part.rename(path)
        print(f"generated {path.name} ({n:,} lines, {i:,} requests) in {time.perf_counter() - started:.0f} s")
    return path, directory


def bare_parse(path: Path) -> float:
    """CPU seconds of parsing every line with orjson."""
    loads = orjson.loads
    c = time.process_time()
    with open(path, "rb") as f:
        for line in f:
            loads(line)
    return time.process_time() - c


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed_check(path: Path, jobs: int | None, directory: Path | None = None) -> tuple[float, int, dict, float]:
    """(CPU seconds of the check and its workers, peak RSS summed over its processes, JSON report,
    wall seconds)."""
    args = [sys.executable, "-m", "rmkit", "check", "--protocol", "rmb", "--format", "json", str(path)]
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    if directory is not None:
        args += ["--directory", str(directory)]
    c = _children_cpu()
    wall = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = TreeMemory(proc.pid, every=0.1)
    out, err = proc.communicate()
    sampler.stop()
    wall = time.perf_counter() - wall
    cpu = _children_cpu() - c
    if proc.returncode not in (0, 1):
        sys.exit(f"rmkit check failed ({proc.returncode}): {err.decode()[-2000:]}")
    return cpu, sampler.peak_rss, orjson.loads(out), wall


def result_line(shape: str, ratio: float, mb: float) -> str:
    """The figures of one shape that bench/record_results.py reads."""
    return f"RESULT rmb {shape} ratio(default jobs) = {ratio:.2f}; memory {mb:.0f} MB"


def base_memory(log: Path) -> int:
    """Peak RSS of a one-process check of the first line of ``log``: what no open request costs."""
    one = OUT / "rmb-one-line.jsonl"
    with open(log, "rb") as f:
        one.write_bytes(f.readline())
    return timed_check(one, 1)[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=1_000_000, help="lines per shape's log (default 1,000,000)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--directory", action="store_true", help="also check with --directory (every signature verified)")
    args = p.parse_args(argv)
    worst = 0.0
    print(f"{os.cpu_count()} cores; CPU time (the check's processes summed), best of {args.repeat}")
    base = None
    for shape in args.shapes.split(","):
        log, directory = shape_log(shape, args.records)
        if base is None:
            base = base_memory(log)
            print(f"a check of one line: memory {base / 1e6:.0f} MB (RSS)")
        parse = min(bare_parse(log) for _ in range(args.repeat))
        rows = [("default jobs", None, None), ("--jobs 1", 1, None), ("--jobs 2", 2, None)]
        if args.directory:
            rows.append(("--directory", None, directory))
        print(f"{shape}: {log.stat().st_size / 1e6:.0f} MB, parse {parse:.2f} s CPU")
        default_jobs = None
        for name, jobs, d in rows:
            if jobs is not None and jobs == default_jobs and d is None:
                print(f"  {name:13} (the default ran with {jobs} job(s): above)")
                continue
            best = peak = wall = None
            for _ in range(args.repeat):
                parse = min(parse, bare_parse(log))  # the baseline kept fresh: noise hits both alike
                cpu, rss, report, took = timed_check(log, jobs, d)
                best = cpu if best is None else min(best, cpu)
                wall = took if wall is None else min(wall, took)
                peak = rss if peak is None else max(peak, rss)
            if report["verdict"] != "pass":
                sys.exit(f"{shape}: the clean log was judged {report['verdict']}: {report['counts']}")
            m = report["metrics"]
            n_jobs, open_peak = m.get("jobs") or 1, m.get("peak_open_requests") or 0
            per_open = (peak - n_jobs * base) / open_peak / 1e3 if open_peak else 0.0
            print(f"  {name:13} CPU {best:7.2f} s  ratio {best / parse:5.2f}  wall {wall:6.2f} s  "
                  f"{report['receipts'] / best:9,.0f} records/s  jobs {n_jobs}  peak open {open_peak}  "
                  f"memory {peak / 1e6:5.0f} MB (RSS summed), {per_open:4.1f} KB per open request")
            if jobs is None and d is None:
                default_jobs = m.get("jobs")
                worst = max(worst, best / parse)
                print(result_line(shape, best / parse, peak / 1e6))
    print(f"RESULT rmb worst ratio(default jobs) = {worst:.2f} (target <= 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
