"""Benchmark of ``rmkit check --protocol rmb`` against a bare orjson parse of the same log, in the
same run (the machine is noisy: every figure is the best of ``--repeat`` runs, read as a ratio).

The log: ``--exchanges`` whole requests as the reference daemons log them (sent, posted, accepted,
answered, routed; every third one to two twins), signed with the kit's test keys, built with the
per-rule fixtures' builder. Printed: parse time, check time without and with ``--directory``
(every posted message's signature verified), with ``--jobs 2``, records/s and the ratios.

Usage: python bench/bench_rmb_check.py [--exchanges N] [--repeat K]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import orjson

from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards

REPO = Path(__file__).resolve().parent.parent


def builder():
    spec = importlib.util.spec_from_file_location("mk_rmb", REPO / "fixtures" / "rmb" / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    return mk


def build(path: Path, exchanges: int) -> int:
    mk = builder()
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for i in range(exchanges):
            log = mk.Log("spec")
            log.exchange(f"{i:08x}-0000-4000-8000-000000000000", t=i * 0.05, dst=(2, 3) if i % 3 == 0 else (2,))
            f.write(log.text())
            n += len(log.lines)
    (path.parent / "directory.json").write_text(orjson.dumps(mk.directory().to_data()).decode(), encoding="utf-8")
    return n


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exchanges", type=int, default=5000)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rmb-bench-") as tmp:
        log = Path(tmp) / "log.jsonl"
        records = build(log, args.exchanges)
        directory = str(Path(tmp) / "directory.json")

        def parse():
            with open(log, "rb") as f:
                for line in f:
                    orjson.loads(line)

        def check(directory=None, jobs=1):
            rep = RmbLogChecker(RmbShards("spec", directory), jobs=jobs).run([str(log)])
            assert rep.verdict == "pass" and rep.records == records, (rep.verdict, rep.counts)

        base = best(parse, args.repeat)
        rows = [("parse", base)]
        rows.append(("check", best(check, args.repeat)))
        rows.append(("check --directory", best(lambda: check(directory), args.repeat)))
        rows.append(("check --jobs 2", best(lambda: check(None, 2), args.repeat)))
        print(f"{records:,} records ({args.exchanges:,} exchanges, {log.stat().st_size / 1e6:.1f} MB)")
        for name, t in rows:
            print(f"{name:20} {t:8.2f} s   {records / t:10,.0f} records/s   ratio {t / base:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
