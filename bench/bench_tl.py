"""Microseconds per :func:`rmkit.protocols.remp.tlreceipt.signed_bytes` call (the bytes a
receipt's signature covers), on simulated receipts of both profiles, against the reference path
(``receipt_to_tl`` + the generic TL codec) that the compiled per-kind functions must agree with.

Machines here are noisy: each figure is the best of ``--repeat`` passes over the same receipts.

Usage: python bench/bench_tl.py [--receipts N] [--repeat K]
"""

from __future__ import annotations

import argparse
import itertools
import time

from rmkit.protocols.remp.tlreceipt import receipt_to_tl, signed_bytes, tl_schema
from rmkit.reference_impl.remp import simulate
from rmkit.tl import serialize


def best_us(fn, items, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for x in items:
            fn(x)
        best = min(best, time.perf_counter() - t0)
    return best / len(items) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--receipts", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    schema = tl_schema()
    for profile in ("spec", "ever-node"):
        receipts = list(itertools.islice(simulate(seed=3, profile=profile, messages=args.receipts), args.receipts))
        assert all(signed_bytes(r) == serialize(schema, receipt_to_tl(r)) for r in receipts[:2000])
        fast = best_us(signed_bytes, receipts, args.repeat)
        ref = best_us(lambda r: serialize(schema, receipt_to_tl(r)), receipts[:5000], max(1, args.repeat // 5))
        print(f"{profile:9} {len(receipts):7} receipts: signed_bytes {fast:.2f} us/receipt, reference path {ref:.1f} us/receipt")


if __name__ == "__main__":
    main()
