"""`rmkit tlc --list` gives each configuration's runtime as the CPU time a run takes (tla/manifest.json),
and the figures hold: a run of small configurations takes about the CPU time the manifest gives.
CPU time, not the wall clock: it does not grow with what else the machine runs."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from rmkit.cli import main
from rmkit.tlc.manifest import load_manifest

# small configurations of each protocol's model: a few seconds of CPU each, mostly the JVM's start
MEASURED = [("rmb", "spec"), ("corda", "fifo"), ("remp", "livehandover")]


def _cpu_of(argv: list) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.mark.parametrize("model, config", MEASURED)
def test_a_listed_runtime_is_the_cpu_time_a_run_takes(model, config):
    listed = next(c for m in load_manifest().models if m.name == model for c in m.configs if c.name == config).runtime_s
    cpu = _cpu_of([sys.executable, "-m", "rmkit", "tlc", model, "--config", config, "--progress", "none"])
    # within a factor of three either way (one whole second of slack for the JVM's start): the listed
    # 15 s of these configurations were ten times what a run took
    assert listed / 3 - 1 <= cpu <= 3 * listed + 1, (model, config, listed, cpu)


def test_the_list_says_what_a_runtime_is(capsys):
    assert main(["tlc", "--list"]) == 0
    out = capsys.readouterr().out
    assert "runtime 00:" in out and " CPU, " in out
    assert out.rstrip().splitlines()[-1].startswith("runtime: the CPU time `rmkit tlc MODEL --config NAME` took")
