"""Driven conformance throughput: generated scenarios per second against the reference adapter
in-process and as a process (the ratio is the process adapter's slowdown, measured in the same
run; for the process form also the requests, each a pipe round trip, per scenario), optionally beside
an earlier version of the kit (``--baseline REF``: a git revision, run from an export of it in a
subprocess, in-process and as a process, interleaved round by round with the current one, so that
before and after are measured under the same load); per
faulty example and profile the time a derandomized run (catalogue, then generated, as
`rmkit conform --derandomize`) takes to find and shrink it, and the shrunk length; per legal
example and profile the time of a run that must pass. The load average is printed with the rates:
absolute figures mean little on a shared machine, ratios measured in one run do.

    python bench/bench_conform.py [--examples N] [--skip-rates] [--skip-examples] [--baseline REF]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rmkit.conformance.remp.examples import EXAMPLES, LEGAL, profiles_of, role_of
from rmkit.conformance.remp.driven.adapters import InProcessImplementation, ProcessImplementation
from rmkit.conformance.remp.driven.coverage import generated_scenarios
from rmkit.conformance.remp.driven.generate import run_generated
from rmkit.conformance.remp.driven.names import default_params
from rmkit.conformance.remp.driven.suite import run_suite

REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
ROUNDS = 3
ROOT = Path(__file__).resolve().parent.parent
# the import name of each package folder of the source tree (pyproject.toml's package-dir)
PACKAGE_DIRS = {"spec": "spec", "protocols": "protocols", "conformance": "conformance", "reference_impl": "reference_impl",
                "fixtures": "fixtures", "tla": "tla", "spark_checks": "spark_checks"}
RATE = """
import sys, time
from rmkit.conformance.remp.driven.adapters import InProcessImplementation, ProcessImplementation
from rmkit.conformance.remp.driven.generate import run_generated
from rmkit.conformance.remp.driven.names import default_params
role, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = default_params(role, "spec")
for impl in (InProcessImplementation("rmkit.reference_impl.remp.adapter:factory", role),
             ProcessImplementation(sys.executable + " -m rmkit.reference_impl.remp.adapter ROLE", role, 60)):
    run_generated(role, "spec", p, impl, max_examples=2, seed=seed)
    t, c = time.perf_counter(), time.process_time()
    g = run_generated(role, "spec", p, impl, max_examples=n, seed=seed)
    dt, dc = time.perf_counter() - t, time.process_time() - c
    assert g.failing is None, g.message
    print(dt, g.examples, g.steps, dc)
"""


def rate(impl, role: str, n: int, seed: int = 0) -> tuple[float, int, int, float]:
    """(wall seconds, scenarios, steps, CPU seconds of this process) of ``n`` generated scenarios.
    The CPU time is what the run would take on an idle core when all of it runs here (in-process)."""
    t, c = time.perf_counter(), time.process_time()
    g = run_generated(role, "spec", default_params(role, "spec"), impl, max_examples=n, seed=seed)
    dt, dc = time.perf_counter() - t, time.process_time() - c
    assert g.failing is None and not g.kit_error, g.message or g.kit_error
    return dt, g.examples, g.steps, dc


def _add(total: list, part: tuple) -> None:
    for i, x in enumerate(part):
        total[i] += x


def baseline_tree(ref: str, into: Path) -> Path:
    """The package tree of revision ``ref``, importable as ``rmkit`` from the returned folder."""
    src = into / "src"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    pkg = into / "path"
    pkg.mkdir()
    shutil.copytree(src / "rmkit", pkg / "rmkit")
    for name, folder in PACKAGE_DIRS.items():
        if (src / folder).is_dir() and not (pkg / "rmkit" / name).exists():
            (pkg / "rmkit" / name).symlink_to(src / folder, target_is_directory=True)
    return pkg


def baseline_rate(path: Path, role: str, n: int, seed: int) -> tuple[tuple, tuple]:
    """(in-process, process) (wall seconds, scenarios, steps, CPU seconds) of revision ``path``."""
    env = dict(os.environ, PYTHONPATH=str(path))
    out = subprocess.run([sys.executable, "-c", RATE, role, str(n), str(seed)], env=env, check=True, capture_output=True,
                         text=True, cwd=path).stdout.split()
    inproc, proc = out[:4], out[4:8]
    return ((float(inproc[0]), int(inproc[1]), int(inproc[2]), float(inproc[3])),
            (float(proc[0]), int(proc[1]), int(proc[2]), float(proc[3])))


def example_run(name: str, profile: str):
    role = role_of(name)
    t = time.perf_counter()
    rep = run_suite(profile, [role], lambda r: InProcessImplementation(f"rmkit.conformance.remp.examples.{name}:factory", r),
                    max_examples=500 if name in EXAMPLES else 100, derandomize=True, regressions=None)
    dt = time.perf_counter() - t
    failed = [r for r in rep.results if r.verdict == "fail"]
    g = rep.generated.get(role)
    return dt, rep.verdict, [r.scenario.id for r in failed if r.scenario.origin == "catalogue"], g


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=300)
    ap.add_argument("--skip-rates", action="store_true")
    ap.add_argument("--skip-examples", action="store_true")
    ap.add_argument("--baseline", metavar="REF", help="also measure the rates of git revision REF (in-process and process)")
    args = ap.parse_args()
    if not args.skip_rates:
        tmp = Path(tempfile.mkdtemp(prefix="rmkit-bench-"))
        try:
            base = baseline_tree(args.baseline, tmp) if args.baseline else None
            print(f"generated scenarios (up to 40 steps each), {args.examples} per role and form in {ROUNDS} interleaved rounds; "
                  f"load average {os.getloadavg()[0]:.1f}")
            for role in ("validator", "fullnode", "consumer"):
                inproc = InProcessImplementation(REFERENCE, role)
                proc = ProcessImplementation(f"{sys.executable} -m rmkit.reference_impl.remp.adapter ROLE", role, 60)
                rate(inproc, role, 2)  # warm: the spec loaded, the process started
                rate(proc, role, 2)
                warm_requests = getattr(proc, "requests", 0)
                ti, tp, tb, tbp = [0.0, 0, 0, 0.0], [0.0, 0, 0, 0.0], [0.0, 0, 0, 0.0], [0.0, 0, 0, 0.0]
                chunk = max(1, args.examples // ROUNDS)
                for k in range(ROUNDS):  # interleaved, so that a change of load hits every form alike
                    _add(ti, rate(inproc, role, chunk, seed=k))
                    _add(tp, rate(proc, role, chunk, seed=k))
                    if base is not None:
                        b_in, b_proc = baseline_rate(base, role, chunk, k)
                        _add(tb, b_in)
                        _add(tbp, b_proc)
                proc.close()
                line = (f"  {role:<9} in-process {ti[1] / ti[0]:7.1f} scenarios/s ({ti[2] / ti[0]:7.0f} steps/s; "
                        f"{ti[1] / ti[3]:6.1f} per CPU second) | process "
                        f"{tp[1] / tp[0]:7.1f} scenarios/s ({tp[2] / tp[0]:7.0f} steps/s; "
                        f"{(proc.requests - warm_requests) / tp[1]:5.1f} requests per scenario) | process slowdown "
                        f"{(tp[0] / tp[1]) / (ti[0] / ti[1]):4.2f}x")
                if base is not None:
                    line += (f" | {args.baseline}: {tb[1] / tb[0]:6.1f} scenarios/s ({tb[2] / tb[0]:6.0f} steps/s; "
                             f"{tb[1] / tb[3]:6.1f} per CPU second), now {(ti[1] / ti[0]) / (tb[1] / tb[0]):4.1f}x the "
                             f"scenarios/s ({(ti[2] / ti[0]) / (tb[2] / tb[0]):4.1f}x the steps/s); its process form "
                             f"{tbp[1] / tbp[0]:6.1f} scenarios/s, slowdown {(tbp[0] / tbp[1]) / (tb[0] / tb[1]):4.2f}x")
                print(line + f" | load {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.skip_examples:
        return
    for profile in ("spec", "ever-node"):
        generated_scenarios(profile)  # the coverage measurement, once (cached), outside the timings below
    for title, names in (("faulty examples: a derandomized run (catalogue + 500 generated) must fail", EXAMPLES),
                         ("legal examples: a derandomized run (catalogue + 100 generated) must pass", LEGAL)):
        print(title)
        for name in names:
            for profile in profiles_of(name):
                dt, verdict, cat, g = example_run(name, profile)
                if g is not None and g.failing is not None:
                    found = (f"; generated: found after {g.examples} scenarios ({g.found_s:.1f} s), shrunk from "
                             f"{g.shrunk_from} to {len(g.failing.events)} steps")
                else:
                    found = "; generated: none failed"
                print(f"  {name:<22} {profile:<9} {dt:6.1f} s  {verdict.upper():<4}  catalogue failed: {', '.join(cat) or '-'}{found}",
                      flush=True)


if __name__ == "__main__":
    main()
