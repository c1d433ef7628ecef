"""Driven conformance throughput: generated scenarios per second against the reference adapter
in-process and as a process (the ratio is the process adapter's slowdown, measured in the same
run); per faulty example and profile the time a derandomized run (catalogue, then generated, as
`rmkit conform --derandomize`) takes to find and shrink it, and the shrunk length; per legal
example and profile the time of a run that must pass.

    python bench/bench_conform.py [--examples N] [--skip-rates]
"""

from __future__ import annotations

import argparse
import sys
import time

from rmkit.conformance.examples import EXAMPLES, LEGAL, profiles_of, role_of
from rmkit.conformance.remp.driven.adapters import InProcessImplementation, ProcessImplementation
from rmkit.conformance.remp.driven.generate import run_generated
from rmkit.conformance.remp.driven.names import default_params
from rmkit.conformance.remp.driven.suite import run_suite

REFERENCE = "rmkit.reference_impl.remp.adapter:factory"


def rate(impl, role: str, n: int) -> tuple[float, int, int]:
    t = time.perf_counter()
    g = run_generated(role, "spec", default_params(role, "spec"), impl, max_examples=n, derandomize=True)
    impl.close()
    assert g.failing is None and not g.kit_error, g.message or g.kit_error
    return time.perf_counter() - t, g.examples, g.steps


def example_run(name: str, profile: str):
    role = role_of(name)
    t = time.perf_counter()
    rep = run_suite(profile, [role], lambda r: InProcessImplementation(f"rmkit.conformance.examples.{name}:factory", r),
                    max_examples=500 if name in EXAMPLES else 100, derandomize=True, regressions=None)
    dt = time.perf_counter() - t
    failed = [r for r in rep.results if r.verdict == "fail"]
    g = rep.generated.get(role)
    shrunk = len(g.failing.events) if g is not None and g.failing is not None else None
    return dt, rep.verdict, [r.scenario.id for r in failed if r.scenario.origin == "catalogue"], shrunk


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--skip-rates", action="store_true")
    args = ap.parse_args()
    if not args.skip_rates:
        print(f"generated scenarios (up to 40 steps each), derandomized, {args.examples} per role")
        for role in ("validator", "fullnode", "consumer"):
            ti, ni, si = rate(InProcessImplementation(REFERENCE, role), role, args.examples)
            tp, np_, sp = rate(ProcessImplementation(f"{sys.executable} -m rmkit.reference_impl.remp.adapter ROLE", role, 60),
                               role, args.examples)
            print(f"  {role:<9} in-process {ni / ti:7.1f} scenarios/s ({si / ti:8.0f} steps/s) | process {np_ / tp:7.1f} scenarios/s "
                  f"({sp / tp:8.0f} steps/s) | process / in-process slowdown {tp / ti * ni / np_:4.2f}x")
    for title, names in (("faulty examples: a derandomized run (catalogue + 500 generated) must fail", EXAMPLES),
                         ("legal examples: a derandomized run (catalogue + 100 generated) must pass", LEGAL)):
        print(title)
        for name in names:
            for profile in profiles_of(name):
                dt, verdict, cat, shrunk = example_run(name, profile)
                found = f"; generated {'shrunk to %d steps' % shrunk if shrunk is not None else 'none failed'}"
                print(f"  {name:<22} {profile:<9} {dt:6.1f} s  {verdict.upper():<4}  catalogue failed: {', '.join(cat) or '-'}{found}")


if __name__ == "__main__":
    main()
