"""A started process's own process group (``start_new_session``): whether any of it still runs,
and stopping all of it. A harness stops the group, not only the process it started, because a
wrapper (``sh -c 'daemon & ...'``) or an implementation's own children live on in it."""

from __future__ import annotations

import os
import signal
import subprocess
import time


def group_alive(pgid: int) -> bool:
    """Whether a process of the group ``pgid`` still runs (a zombie does not: it waits to be reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                state, _parent, group = f.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(group) == pgid and state != "Z":
            return True
    return False


def signal_group(pgid: int, sig: int) -> None:
    """``sig`` to every process of the group; a group already gone is no error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_group(proc: subprocess.Popen, grace_s: float, poll_s: float) -> None:
    """Stop ``proc``'s group (its PID is the group's id): SIGTERM, up to ``grace_s`` for the process
    and the rest of its group to exit, then SIGKILL to what still runs; ``proc`` is reaped."""
    if proc.poll() is not None and not group_alive(proc.pid):
        return
    signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while (proc.poll() is None or group_alive(proc.pid)) and time.monotonic() < deadline:
        time.sleep(poll_s)
    if proc.poll() is None or group_alive(proc.pid):
        signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
