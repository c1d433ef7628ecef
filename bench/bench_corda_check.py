"""Benchmark of ``rmkit check --protocol corda`` against a bare orjson parse of the same records, in
the same run, on several shapes of log (ratios: the machines here are noisy, absolute times are not
figures).

Shapes (each about ``--records`` events, written once to bench/out as an events file and the
processed-ids export beside it, in insertion order, as a node gives them):

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

Printed per shape, mode and jobs (1 and one per core): the check's best wall time and CPU time
against the parse's (ratio, CPU ratio; target <= 3 at the default jobs), records/s, and the peak
memory summed over the check's processes (RSS and PSS, sampled); then one RESULT line per shape and
mode. The modes: exact (no bound: what the documents allow, everything kept to the end) and
bounded (``--horizon``, a deployment's declared bound, ``--bound`` seconds: messages judged and
forgotten as the clock passes them; docs/corda-check-streaming.md). ``--ten-million`` checks a
10,000,000-record log of the short shape with the default jobs in the bounded mode, and in the
exact mode unless ``--no-exact-ten-million``, and reports peak memory summed over the processes
(target <= 300 MB), on a ``RESULT corda 10M`` line per mode; without it the exact mode's memory at
ten million is extrapolated from the shapes' memory per message id.

``--against DIR`` times a second build of the kit in the same run, on the same logs, against the
same baseline, at the default jobs: DIR holds its ``rmkit`` package (``pip install --no-deps
--target DIR .`` in a checkout of another commit); each shape and mode then prints the two builds'
wall and CPU ratios and memory side by side (``AGAINST`` lines), and their findings must agree.

Usage: python bench/bench_corda_check.py [--records N] [--repeat K] [--shapes short,long,peers] [--bound S]
                                        [--modes exact,bounded] [--ten-million [--no-exact-ten-million]]
                                        [--against DIR]
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

    def export(self, f) -> None:
        for r in self.rows:  # (in insertion order: the table's natural order)
            f.write(orjson.dumps(r) + b"\n")


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


def write_log(shape: str, records: int) -> list[Path]:
    """The shape's events file and its export, written once."""
    events = OUT / f"corda-{shape}-{records}.events.jsonl"
    export = OUT / f"corda-{shape}-{records}.processed.jsonl"
    if events.exists() and export.exists():
        return [events, export]
    OUT.mkdir(exist_ok=True)
    parts = [p.with_name(p.name + ".part") for p in (events, export)]  # renamed when complete
    with open(parts[0], "wb") as f:
        w = _Writer(f)
        SHAPES[shape](w, records)
    with open(parts[1], "wb") as f:
        w.export(f)
    for part, path in zip(parts, (events, export)):
        part.rename(path)
    return [events, export]


def check_args(paths: list[Path], jobs: int, bound: float | None) -> list[str]:
    return ["--protocol", "corda", "--settled", *map(str, paths), "--jobs", str(jobs),
            *(["--horizon", str(bound)] if bound else [])]


def parse_both(paths: list[Path]) -> tuple[float, float]:
    got = [bare_parse(p) for p in paths]
    return sum(g[0] for g in got), sum(g[1] for g in got)


def bench_shape(shape: str, records: int, repeat: int, modes: list[tuple[str, float | None]],
                against: str | None = None) -> dict:
    paths = write_log(shape, records)
    size_mb = sum(p.stat().st_size for p in paths) / 1e6
    parse, parse_cpu = (min(x) for x in zip(*(parse_both(paths) for _ in range(repeat))))
    from rmkit.conformance.corda.checker import default_jobs as corda_default
    default_jobs = corda_default([str(p) for p in paths])
    rows = []
    others = {}  # mode -> (best wall, best CPU, peak RSS) of the other build at the default jobs
    for mode, bound in modes:
        for jobs in sorted({1, os.cpu_count() or 1}):
            best = best_cpu = None
            report, peak = None, (0, 0)
            for _ in range(repeat):
                wall, cpu = parse_both(paths)  # keep the baseline fresh: noise hits both alike
                parse, parse_cpu = min(parse, wall), min(parse_cpu, cpu)
                tree: list = []
                wall, _me, _kids, report, cpu = timed_check(check_args(paths, jobs, bound), tree=tree)
                best = wall if best is None else min(best, wall)
                best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
                peak = (max(peak[0], tree[0]), max(peak[1], tree[1]))
                if against and jobs == default_jobs:  # the other build, between the same baselines
                    tree = []
                    wall, _me, _kids, other, cpu = timed_check(check_args(paths, jobs, bound), tree=tree, against=against)
                    if (other["counts"], other["receipts"], other["messages"]) != \
                            (report["counts"], report["receipts"], report["messages"]):
                        sys.exit(f"the build in {against} finds otherwise on {shape} ({mode})")
                    was = others.get(mode, (wall, cpu, 0))
                    others[mode] = (min(was[0], wall), min(was[1], cpu), max(was[2], tree[0]))
            rows.append((mode, jobs, best, best_cpu, report, peak))
    first = rows[0][4]
    print(f"shape {shape}: {size_mb:.0f} MB, {first['receipts']:,} records, {first['messages']:,} message ids; "
          f"parse (orjson) {parse:.2f} s, CPU {parse_cpu:.2f} s")
    out = {"ids": first["messages"], "records": first["receipts"]}
    for mode, jobs, best, cpu, report, peak in rows:
        open_ = report.get("metrics", {}).get("peak_open")
        print(f"  check {shape} {mode} j{jobs}: {best:.2f} s  ratio {best / parse:.2f}  CPU ratio {cpu / parse_cpu:.2f}  "
              f"{report['receipts'] / best:,.0f} records/s  verdict {report['verdict']}  "
              f"memory summed over the processes RSS {peak[0] / 1e6:.0f} MB, PSS {peak[1] / 1e6:.0f} MB"
              + (f"  peak open subjects {open_:,}" if open_ is not None else ""))
        if report["verdict"] != "pass":
            out["bad"] = True
    for mode, bound in modes:
        best, cpu, peak = next((b, c, p) for m, j, b, c, _r, p in rows if m == mode and j == default_jobs)
        name = f"{shape} bounded" if bound else shape  # (the exact mode's line as bench/record_results.py reads it)
        print(f"RESULT corda {name} ratio(default jobs={default_jobs}) = {best / parse:.2f} (target <= 3); "
              f"CPU ratio {cpu / parse_cpu:.2f}; peak memory {peak[0] / 1e6:.0f} MB" + (f"; bound {bound:g} s" if bound else ""))
        out[mode] = peak[0]
        if mode in others:
            o_wall, o_cpu, o_rss = others[mode]
            print(f"AGAINST corda {name} (default jobs={default_jobs}): this build ratio {best / parse:.2f}, CPU ratio "
                  f"{cpu / parse_cpu:.2f}, {peak[0] / 1e6:.0f} MB; {against}: ratio {o_wall / parse:.2f}, CPU ratio "
                  f"{o_cpu / parse_cpu:.2f}, {o_rss / 1e6:.0f} MB")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--bound", type=float, default=60.0, help="the bounded mode's --horizon, seconds (default 60)")
    ap.add_argument("--modes", default="exact,bounded")
    ap.add_argument("--ten-million", action="store_true")
    ap.add_argument("--no-exact-ten-million", action="store_true", help="at ten million, the bounded mode only")
    ap.add_argument("--against", metavar="DIR", help="also time the rmkit package in DIR (another build), same run")
    args = ap.parse_args()
    modes = [(m, args.bound if m == "bounded" else None) for m in args.modes.split(",")]
    print(f"{os.cpu_count()} cores")
    bad, per_id = [], []
    for shape in args.shapes.split(","):
        got = bench_shape(shape, args.records, args.repeat, modes, args.against)
        if got.get("bad"):
            bad.append(shape)
        if shape == "short" and "exact" in got:
            per_id.append(got["exact"] / got["ids"])
    if args.ten_million:
        from rmkit.conformance.corda.checker import default_jobs as corda_default
        big = write_log("short", 10_000_000)
        jobs = corda_default([str(p) for p in big])
        for mode, bound in modes:
            if mode == "exact" and args.no_exact_ten_million:
                if per_id:
                    ids = 10_000_000 * 20 // 104
                    print(f"10M records (short shape) exact: not run; about {per_id[0] * ids / 1e6:,.0f} MB "
                          f"extrapolated from the short shape's memory per message id")
                continue
            tree: list = []
            wall, _me, _kids, report, _cpu = timed_check(check_args(big, jobs, bound), tree=tree)
            print(f"10M records (short shape, {mode}, jobs {jobs}): {report['receipts']:,} records, {report['messages']:,} "
                  f"message ids, memory summed over the processes RSS {tree[0] / 1e6:.0f} MB, PSS {tree[1] / 1e6:.0f} MB "
                  f"(target <= 300), {wall:.0f} s wall, verdict {report['verdict']}")
            print(f"RESULT corda 10M short {mode} memory(default jobs={jobs}) = {tree[0] / 1e6:.0f} MB (target <= 300)")
    if bad:
        print(f"the clean logs of {', '.join(bad)} did not pass")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
