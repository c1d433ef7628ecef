"""Benchmark of ``rmkit check --protocol corda`` against a bare orjson parse of the same records, in
the same run (ratios: the machines here are noisy, absolute times are not figures).

The log: ``--messages`` messages from alice to bob over 1,000 sessions, each sent, received,
answered NEW, committed and acknowledged, one in twenty redelivered after a crash between commit and
acknowledgement (DUPLICATE, acknowledged), then bob's processed-ids export: about 5.2 records per
message. Printed: parse and check wall times (best of ``--repeat``), their ratio, records/s, and the
check's peak RSS (the checker keeps a small state per message id until the end of its share).

Usage: python bench/bench_corda_check.py [--messages N] [--repeat K] [--jobs J]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"


def write_log(messages: int) -> Path:
    path = OUT / f"corda-records-{messages}.jsonl"
    if path.exists():
        return path
    OUT.mkdir(exist_ok=True)
    t, tx, rows = 1_767_225_600_000, 0, []
    with open(path, "wb") as f:
        def ev(node, event, mid, **kw):
            nonlocal t
            t += 1
            f.write(orjson.dumps({"t": t, "node": node, "event": event, "id": mid, **kw}) + b"\n")

        for k in range(messages):
            session, mid = f"s{k % 1000}", f"N-f{k % 1000}-{k // 1000 + 1}-0"
            who = {"sender": "6f1c2a80-a1", "seq": k + 1, "session": session}
            ev("alice", "sent", mid, **who)
            d = f"ID:bob-{k}"
            ev("bob", "received", mid, delivery=d, **who)
            ev("bob", "dedup", mid, verdict="NEW")
            tx += 1
            ev("bob", "committed", mid, tx=tx)
            rows.append({"node": "bob", "id": mid, "sender": who["sender"], "seq": k + 1, "tx": tx, "t": t})
            if k % 20 == 7:  # a crash between commit and ack: the copy comes again
                ev("bob", "received", mid, delivery=d, **who)
                ev("bob", "dedup", mid, verdict="DUPLICATE")
            ev("bob", "acked", mid, delivery=d)
        for r in rows:
            f.write(orjson.dumps(r) + b"\n")
    return path


def parse(path: Path) -> float:
    started = time.perf_counter()
    loads = orjson.loads
    with open(path, "rb") as f:
        for line in f:
            loads(line)
    return time.perf_counter() - started


def check(path: Path, jobs: int) -> tuple[float, int, int]:
    exe = shutil.which("rmkit", path=str(Path(sys.executable).parent)) or "rmkit"
    started = time.perf_counter()
    proc = subprocess.run([exe, "check", "--protocol", "corda", "--settled", "--jobs", str(jobs), "--format", "json",
                           "--out", str(OUT / "corda-report.json"), str(path)], capture_output=True)
    elapsed = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    return elapsed, proc.returncode, rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    path = write_log(args.messages)
    records = sum(1 for _ in open(path, "rb"))
    base = min(parse(path) for _ in range(args.repeat))
    runs = [check(path, args.jobs) for _ in range(args.repeat)]
    best = min(r[0] for r in runs)
    codes = {r[1] for r in runs}
    print(f"records {records:,} ({path.stat().st_size / 1e6:.0f} MB), messages {args.messages:,}")
    print(f"parse  {base:.2f} s")
    print(f"check  {best:.2f} s (jobs {args.jobs}, exit {sorted(codes)}) ratio {best / base:.1f}, "
          f"{records / best:,.0f} records/s, peak RSS {max(r[2] for r in runs)} MB")
    return 0 if codes == {0} else 1


if __name__ == "__main__":
    sys.exit(main())
