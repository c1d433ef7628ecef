"""Benchmark of ``rmkit check --protocol corda`` against a bare orjson parse of the same records, in
the same run, on several shapes of log (ratios: the machines here are noisy, absolute times are not
figures).

Shapes (each about ``--records`` events, written once to bench/out, the processed-ids export last):

- short:  many short-lived messages from alice to bob over 1,000 sessions, each sent, received,
          answered NEW, committed and acknowledged; one in twenty redelivered after a crash between
          commit and acknowledgement (DUPLICATE, acknowledged).
- long:   few long-lived messages (``--records`` / 200), all open at once, each with many copies: the
          first answered NEW, the others IN_FLIGHT and discarded while it is processed, then after
          the commit redelivered, answered DUPLICATE and acknowledged.
- peers:  six nodes each sending to the five others, ten sessions per pair, one sender UUID per
          node, the sends of a round interleaved with the receivers' records; one in twenty
          redelivered; every receiving node's export.

Corda's records come as the node writes them (spec/corda/records.yaml); no Kafka envelope carries
them, so there is no Kafka shape here.

Printed per shape and jobs (1 and one per core): the check's best wall time and CPU time against
the parse's (ratio, CPU ratio; target <= 3 at the default jobs), records/s, and the peak memory
summed over the check's processes (RSS and PSS, sampled); then one RESULT line per shape.
``--ten-million`` checks a 10,000,000-record log of the short shape with the default jobs and
reports its peak memory summed over the processes (target <= 300 MB; the check keeps a few facts
per message id until the end, docs/corda-check-streaming.md says why: about 3.5 GB there).

Usage: python bench/bench_corda_check.py [--records N] [--repeat K] [--shapes short,long,peers] [--ten-million]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import bare_parse, timed_check  # noqa: E402 - the same measurement as REMP's bench

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
T0 = 1_767_225_600_000


class _Writer:
    """Writes records with a clock one millisecond per record, and the export rows at the end."""

    def __init__(self, f):
        self.f, self.t, self.rows = f, T0, []
        self.tx: dict[str, int] = {}

    def ev(self, node: str, event: str, mid: str, **kw) -> None:
        self.t += 1
        self.f.write(orjson.dumps({"t": self.t, "node": node, "event": event, "id": mid, **kw}) + b"\n")

    def commit(self, node: str, mid: str, sender: str, seq: int) -> None:
        tx = self.tx[node] = self.tx.get(node, 0) + 1
        self.ev(node, "committed", mid, tx=tx)
        self.rows.append({"node": node, "id": mid, "sender": sender, "seq": seq, "tx": tx, "t": self.t})

    def export(self) -> None:
        for r in self.rows:
            self.f.write(orjson.dumps(r) + b"\n")


def _message(w: _Writer, frm: str, to: str, mid: str, who: dict, delivery: str, redelivered: bool) -> None:
    """One message's life at its receiver, from its send: NEW, commit, ack (a crash between commit and
    ack brings the copy again: DUPLICATE, acknowledged)."""
    w.ev(to, "received", mid, delivery=delivery, **who)
    w.ev(to, "dedup", mid, verdict="NEW")
    w.commit(to, mid, who["sender"], who["seq"])
    if redelivered:
        w.ev(to, "received", mid, delivery=delivery, **who)
        w.ev(to, "dedup", mid, verdict="DUPLICATE")
    w.ev(to, "acked", mid, delivery=delivery)


def write_short(w: _Writer, records: int) -> None:
    for k in range(records * 20 // 104):  # 5.2 events per message (and its row in the export)
        session, mid = f"s{k % 1000}", f"N-f{k % 1000}-{k // 1000 + 1}-0"
        who = {"sender": "6f1c2a80-a1", "seq": k + 1, "session": session}
        w.ev("alice", "sent", mid, **who)
        _message(w, "alice", "bob", mid, who, f"ID:bob-{k}", k % 20 == 7)


def write_long(w: _Writer, records: int, copies: int = 33) -> None:
    """Every message open from the log's start to its end: its records interleaved with all others'."""
    messages = max(1, records // (6 * copies + 6))
    who = [{"sender": "6f1c2a80-a1", "seq": k + 1, "session": f"s{k % 100}"} for k in range(messages)]
    mids = [f"N-f{k % 100}-{k // 100 + 1}-0" for k in range(messages)]
    for k in range(messages):
        w.ev("alice", "sent", mids[k], **who[k])
    for k in range(messages):
        w.ev("bob", "received", mids[k], delivery=f"ID:bob-{k}-0", **who[k])
        w.ev("bob", "dedup", mids[k], verdict="NEW", delivery=f"ID:bob-{k}-0")
    for j in range(1, copies + 1):  # redelivered while the first copy is processed: IN_FLIGHT, not acknowledged
        for k in range(messages):
            d = f"ID:bob-{k}-{j}"
            w.ev("bob", "received", mids[k], delivery=d, **who[k])
            w.ev("bob", "dedup", mids[k], verdict="IN_FLIGHT", delivery=d)
            w.ev("bob", "discarded", mids[k], delivery=d)
    for k in range(messages):
        w.commit("bob", mids[k], who[k]["sender"], who[k]["seq"])
        w.ev("bob", "acked", mids[k], delivery=f"ID:bob-{k}-0")
    for j in range(1, copies + 1):  # the discarded copies come again after the commit: DUPLICATE, acknowledged
        for k in range(messages):
            d = f"ID:bob-{k}-{j}"
            w.ev("bob", "received", mids[k], delivery=d, **who[k])
            w.ev("bob", "dedup", mids[k], verdict="DUPLICATE", delivery=d)
            w.ev("bob", "acked", mids[k], delivery=d)


def write_peers(w: _Writer, records: int, nodes: int = 6, sessions: int = 10) -> None:
    names = [f"node{i}" for i in range(nodes)]
    pairs = [(a, b) for a in names for b in names if a != b]
    seq = {a: 0 for a in names}
    k = 0
    for rnd in range(max(1, records * 20 // (104 * len(pairs)))):
        batch = []
        for a, b in pairs:
            seq[a] += 1
            s = rnd % sessions
            mid = f"N-{a}{b}s{s}-{rnd // sessions + 1}-0"
            who = {"sender": f"uuid-{a}", "seq": seq[a], "session": f"{a}-{b}-{s}"}
            w.ev(a, "sent", mid, **who)
            batch.append((a, b, mid, who, k))
            k += 1
        for a, b, mid, who, n in batch:
            _message(w, a, b, mid, who, f"ID:{b}-{n}", n % 20 == 7)


SHAPES = {"short": write_short, "long": write_long, "peers": write_peers}


def write_log(shape: str, records: int) -> Path:
    path = OUT / f"corda-{shape}-{records}.jsonl"
    if path.exists():
        return path
    OUT.mkdir(exist_ok=True)
    part = path.with_name(path.name + ".part")  # renamed when complete: a broken run leaves no log behind
    with open(part, "wb") as f:
        w = _Writer(f)
        SHAPES[shape](w, records)
        w.export()
    part.rename(path)
    return path


def check_args(path: Path, jobs: int) -> list[str]:
    return ["--protocol", "corda", "--settled", str(path), "--jobs", str(jobs)]


def bench_shape(shape: str, records: int, repeat: int) -> tuple[float, dict]:
    path = write_log(shape, records)
    size_mb = path.stat().st_size / 1e6
    parse, parse_cpu = (min(x) for x in zip(*(bare_parse(path) for _ in range(repeat))))
    rows = []
    for jobs in sorted({1, os.cpu_count() or 1}):
        best = best_cpu = None
        report, peak = None, (0, 0)
        for _ in range(repeat):
            wall, cpu = bare_parse(path)  # keep the baseline fresh: noise hits both alike
            parse, parse_cpu = min(parse, wall), min(parse_cpu, cpu)
            tree: list = []
            wall, _me, _kids, report, cpu = timed_check(check_args(path, jobs), tree=tree)
            best = wall if best is None else min(best, wall)
            best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
            peak = (max(peak[0], tree[0]), max(peak[1], tree[1]))
        rows.append((jobs, best, best_cpu, report, peak))
    print(f"shape {shape}: {path.name}, {size_mb:.0f} MB, {rows[0][3]['receipts']:,} records, "
          f"{rows[0][3]['messages']:,} message ids; parse (orjson) {parse:.2f} s, CPU {parse_cpu:.2f} s")
    for jobs, best, cpu, report, peak in rows:
        print(f"  check {shape} j{jobs}: {best:.2f} s  ratio {best / parse:.2f}  CPU ratio {cpu / parse_cpu:.2f}  "
              f"{report['receipts'] / best:,.0f} records/s  verdict {report['verdict']}  "
              f"memory summed over the processes RSS {peak[0] / 1e6:.0f} MB, PSS {peak[1] / 1e6:.0f} MB")
    from rmkit.conformance.corda.checker import default_jobs as corda_default
    default_jobs = corda_default([str(path)])
    best_default = next(b for j, b, *_ in rows if j == default_jobs)
    peak_default = next(p for j, *_, p in rows if j == default_jobs)
    print(f"RESULT corda {shape} ratio(default jobs={default_jobs}) = {best_default / parse:.2f} (target <= 3); "
          f"peak memory {peak_default[0] / 1e6:.0f} MB")
    return best_default / parse, rows[0][3]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--ten-million", action="store_true")
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores")
    bad = []
    for shape in args.shapes.split(","):
        _, report = bench_shape(shape, args.records, args.repeat)
        if report["verdict"] != "pass":
            bad.append(shape)
    if args.ten_million:
        from rmkit.conformance.corda.checker import default_jobs as corda_default
        big = write_log("short", 10_000_000)
        jobs = corda_default([str(big)])
        tree: list = []
        wall, _me, _kids, report, _cpu = timed_check(check_args(big, jobs), tree=tree)
        print(f"10M records (short shape, jobs {jobs}): {report['receipts']:,} records, {report['messages']:,} message ids, "
              f"memory summed over the processes RSS "
              f"{tree[0] / 1e6:.0f} MB, PSS {tree[1] / 1e6:.0f} MB (target <= 300), {wall:.0f} s wall")
    if bad:
        print(f"the clean logs of {', '.join(bad)} did not pass")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
