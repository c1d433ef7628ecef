"""Limits on a test's run that hold on a busy machine.

No test of the default run asserts a wall-clock limit: other work on the machine must not fail
it. What such a limit meant to check is one of:

- the run does not spin: the CPU time this process spends on it is bounded
  (:func:`finish_within`, :func:`cpu_spent`), which another process's load does not change;
- a wait was cut short, not waited out: it ended before the planted delay it waited on would have
  (:data:`PLANTED_DELAY`, far longer than any timeout under test), which load does not shorten;
- the run ends at all: :data:`HANG_CAP` seconds of wall time, beyond any run on any machine,
  turns a hang into a failure instead of a suite that never ends.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

HANG_CAP = 600.0
PLANTED_DELAY = 60.0


def finish_within(cpu_seconds: float, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on a daemon thread; fails if this process spends more than
    ``cpu_seconds`` of CPU time before it returns (a loop that never ends), or if it has not
    returned after :data:`HANG_CAP` seconds (a wait that never ends)."""
    result, error = [], []

    def target():
        try:
            result.append(fn(*args, **kwargs))
        except BaseException as exc:   # handed to the test below
            error.append(exc)

    cpu0, wall0 = time.process_time(), time.monotonic()
    t = threading.Thread(target=target, daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.1)
        spent = time.process_time() - cpu0
        assert spent <= cpu_seconds, f"still running after {spent:.1f} s of CPU time (limit {cpu_seconds} s)"
        assert time.monotonic() - wall0 < HANG_CAP, f"still running after {HANG_CAP} s"
    if error:
        raise error[0]
    return result[0]


@contextmanager
def cpu_spent(limit: float):
    """Asserts that the block spends at most ``limit`` seconds of this process's CPU time."""
    cpu0 = time.process_time()
    yield
    spent = time.process_time() - cpu0
    assert spent <= limit, f"{spent:.1f} s of CPU time (limit {limit} s)"
