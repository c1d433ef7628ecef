"""rmkit.processes.run_in_processes: the results in the order of the calls, each call in a process
of its own, or the first in the caller's (``first_here``); a call's exception raised in the caller."""

from __future__ import annotations

import os

import pytest

from rmkit.processes import run_in_processes


def _pid_of(k: int) -> tuple[int, int]:
    return k, os.getpid()


def _fails(k: int) -> int:
    if k == 1:
        raise ValueError(f"share {k} failed")
    return k


@pytest.mark.parametrize("first_here", [False, True])
def test_results_come_in_order_from_the_processes_asked_for(first_here):
    got = run_in_processes(_pid_of, [(k,) for k in range(3)], first_here=first_here)
    assert [k for k, _ in got] == [0, 1, 2]
    pids = [pid for _, pid in got]
    assert (pids[0] == os.getpid()) is first_here
    assert os.getpid() not in pids[1:] and len(set(pids)) == 3


@pytest.mark.parametrize("first_here", [False, True])
@pytest.mark.parametrize("failing", [0, 1])
def test_a_failed_call_is_raised_in_the_caller(first_here, failing):
    calls = [((k + 1 - failing) % 3,) for k in range(3)]  # (the call of share 1 first, or second)
    with pytest.raises(ValueError, match="share 1 failed"):
        run_in_processes(_fails, calls, first_here=first_here)


_here: list = []


def _noted(k: int) -> int:
    _here.append(("call", k, os.getpid()))
    return k


@pytest.mark.parametrize("first_here", [False, True])
def test_while_waiting_runs_once_here_after_this_process_has_done_its_call(first_here):
    _here.clear()
    got = run_in_processes(_noted, [(k,) for k in range(3)], first_here=first_here,
                           while_waiting=lambda: _here.append(("waiting", None, os.getpid())))
    assert got == [0, 1, 2]
    here = [(what, k) for what, k, pid in _here if pid == os.getpid()]
    assert here == ([("call", 0)] if first_here else []) + [("waiting", None)]
