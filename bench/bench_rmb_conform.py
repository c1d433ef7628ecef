"""Benchmark of ``rmkit conform --protocol rmb`` against a real daemon (real redis-server + HTTP).

Figures (machines here are noisy: 2 shared cores, so rates come with a baseline of the same run):

- baseline: bare exchanges/s: the kit pushes a request to the reference daemon's local queue and
  waits for the kit twin to receive its POST, one at a time, with no judging (the floor of the
  daemon + Redis + HTTP round trip the scenarios are made of)
- side by side: the catalogue and ``--examples`` generated scenarios against the reference
  daemon, as ``rmkit conform`` runs them, at ``--jobs 1`` and at the default ``--jobs`` (the cores
  + 1), measured in the same run: scenarios/s of each and the speed-up (the target: at least 10
  scenarios/s at the default on a 2-core machine)
- per faulty example: the time until the generator's first failing scenario, the time to shrink
  it, the shrink runs, the acts left, and the rules that caught it (the catalogue is skipped, so
  this measures the search alone)

Usage: python bench/bench_rmb_conform.py [--examples N] [--faulty NAME ...] [--profile P] [--no-faulty] [--jobs N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

REFERENCE = "{python} -m rmkit.reference_impl.rmb.cli serve --twin {twin} --directory {directory} --seed {seed} " \
            "--redis {redis} --listen {listen} --profile {profile}"
VARIANT = "{python} -m rmkit.conformance.rmb.examples NAME serve --twin {twin} --directory {directory} --seed {seed} " \
          "--redis {redis} --listen {listen} --profile {profile}"


def _open(cmd: str, profile: str, jobs: int = 1):
    from rmkit.conformance.rmb.driven.daemons import Daemons

    loop = asyncio.new_event_loop()
    d = Daemons.create(cmd, profile, jobs)
    loop.run_until_complete(d.start())
    return d, loop


def _close(d, loop) -> None:
    loop.run_until_complete(d.stop())
    loop.close()


def _suite(profile: str, jobs: int, examples: int):
    """(scenarios, seconds, verdict) of the catalogue and ``examples`` generated scenarios on
    ``jobs`` reference daemons (started before the clock starts)."""
    from rmkit.conformance.rmb.driven.judge import Rules
    from rmkit.conformance.rmb.driven.suite import run_suite

    d, loop = _open(REFERENCE, profile, jobs)
    try:
        rep = run_suite(d, loop, max_examples=examples, derandomize=True, seed=None, time_budget=None, catalogue_only=False,
                        regressions=[], save_dir=None)
    finally:
        _close(d, loop)
    n = len(rep.runs) + (rep.generated.examples if rep.generated else 0)
    return n, rep.seconds, rep.verdict(Rules(profile))


async def _bare(h, n: int) -> float:
    from rmkit.conformance.rmb.driven.acts import client_message
    from rmkit.conformance.rmb.driven.harness import PEER_ED

    start = time.monotonic()
    for i in range(n):
        cmd = f"bench.bare{i}"
        await h.push(h.b["local_queue"], client_message(cmd, [PEER_ED], 30, 1, f"bench.ret{i}", "x"))
        await h.twins.wait(lambda: any(e.cmd == cmd for e in h.twins.exchanges), 10)
    return n / (time.monotonic() - start)


def main(argv=None) -> int:
    from rmkit.conformance.rmb.driven.daemons import default_jobs
    from rmkit.conformance.rmb.driven.judge import Rules
    from rmkit.conformance.rmb.driven.suite import search
    from rmkit.conformance.rmb.examples.variants import FAULTY

    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=100, help="generated scenarios against the reference (default 100, "
                                                              "rmkit conform's default)")
    ap.add_argument("--profile", default="spec")
    ap.add_argument("--jobs", type=int, default=default_jobs(), help="the --jobs to compare with 1 (default: rmkit conform's)")
    ap.add_argument("--faulty", nargs="*", help="faulty examples to find and shrink (default: all)")
    ap.add_argument("--no-faulty", action="store_true")
    a = ap.parse_args(argv)

    d, loop = _open(REFERENCE, a.profile)
    try:
        bare = loop.run_until_complete(_bare(d.harnesses[0], 20))
    finally:
        _close(d, loop)
    print(f"reference daemon, profile {a.profile} (real redis-server + HTTP):")
    print(f"  baseline: bare exchanges (push -> POST at the kit twin, one at a time): {bare:.1f}/s")
    rates, reference_failed = {}, False
    for jobs in (1, a.jobs):
        n, secs, verdict = _suite(a.profile, jobs, a.examples)
        rates[jobs] = n / secs
        reference_failed |= verdict != "pass"
        print(f"  --jobs {jobs}: catalogue + {a.examples} generated = {n} scenarios in {secs:.1f} s: {rates[jobs]:.1f} scenarios/s"
              f"{'' if verdict == 'pass' else '  FAILED'}")
    print(f"  side by side: {rates[a.jobs] / rates[1]:.2f} times --jobs 1 at --jobs {a.jobs} "
          f"(target at the default: 10 scenarios/s; {'met' if rates[a.jobs] >= 10 else 'NOT met'})")
    if a.no_faulty:
        return 1 if reference_failed else 0
    names = a.faulty or list(FAULTY)
    print(f"faulty examples (generated scenarios only, derandomized, --jobs {a.jobs}):")
    print(f"  {'example':<20} {'profile':<10} {'found':>8} {'shrunk':>8} {'runs':>5} {'acts':>4}  rules")
    bad = 0
    for name in names:
        cls, profile, expect = FAULTY[name]
        d, loop = _open(VARIANT.replace("NAME", name), profile, a.jobs)
        try:
            rules = Rules(profile)
            g = search(d, loop, rules, max_examples=200, derandomize=True, seed=None, time_budget=None,
                       slow_retries=d.b["retry_delay_s"] >= 1)
        finally:
            _close(d, loop)
        if g.failing is None:
            bad += 1
            print(f"  {name:<20} {profile:<10} NOT FOUND in {g.examples} scenarios ({g.seconds:.1f} s)")
            continue
        caught = sorted({c.rule for _, c in g.failing.failures(rules)})
        print(f"  {name:<20} {profile:<10} {g.found_after_s:7.1f}s {g.seconds - g.found_after_s:7.1f}s {g.shrink_runs:>5} "
              f"{len(g.failing.scenario.acts):>4}  {', '.join(caught)}{'' if set(caught) & expect else '  (not the expected rule)'}")
    return 1 if bad or reference_failed else 0


if __name__ == "__main__":
    sys.exit(main())
