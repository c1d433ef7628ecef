"""Driven conformance throughput: generated scenarios per second against the reference adapter
in-process and as a process (the ratio is the process adapter's slowdown, measured in the same
run), and the time to find and shrink each faulty example.

    python bench/bench_conform.py [--examples N]
"""

from __future__ import annotations

import argparse
import sys
import time

from rmkit.conformance.examples import EXAMPLES
from rmkit.conformance.remp.driven.adapters import InProcessImplementation, ProcessImplementation
from rmkit.conformance.remp.driven.generate import run_generated
from rmkit.conformance.remp.driven.names import default_params

REFERENCE = "rmkit.reference_impl.remp.adapter:factory"


def rate(impl, role: str, n: int) -> tuple[float, int, int]:
    t = time.perf_counter()
    g = run_generated(role, "spec", default_params(role, "spec"), impl, max_examples=n, derandomize=True)
    impl.close()
    assert g.failing is None and not g.kit_error, g.message or g.kit_error
    return time.perf_counter() - t, g.examples, g.steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=200)
    args = ap.parse_args()
    print(f"generated scenarios (up to 40 steps each), derandomized, {args.examples} per role")
    for role in ("validator", "fullnode", "consumer"):
        ti, ni, si = rate(InProcessImplementation(REFERENCE, role), role, args.examples)
        tp, np_, sp = rate(ProcessImplementation(f"{sys.executable} -m rmkit.reference_impl.remp.adapter ROLE", role), role,
                           args.examples)
        print(f"  {role:<9} in-process {ni / ti:7.1f} scenarios/s ({si / ti:8.0f} steps/s) | process {np_ / tp:7.1f} scenarios/s "
              f"({sp / tp:8.0f} steps/s) | process / in-process slowdown {tp / ti * ni / np_:4.2f}x")
    print("faulty examples: time to find and shrink (in-process, spec profile)")
    for name, (role, why) in EXAMPLES.items():
        t = time.perf_counter()
        g = run_generated(role, "spec", default_params(role, "spec"), InProcessImplementation(f"rmkit.conformance.examples.{name}:factory", role),
                          max_examples=500, derandomize=True)
        dt = time.perf_counter() - t
        found = f"found after {g.examples} scenarios, shrunk to {len(g.failing.events)} steps" if g.failing else "NOT FOUND"
        print(f"  {name:<22} {dt:6.2f} s  {found}")


if __name__ == "__main__":
    main()
