"""What the tests that stop processes (RMB's daemon group, Corda's implementation processes) read
of /proc: which PIDs still run, which belong to a group or a parent or name a word in their command
line, and killing what is left so that a failing test does not leave it running."""

from __future__ import annotations

import io
import os
import signal


def running(pids) -> list[int]:
    """Those of ``pids`` that still run, this process apart (a zombie waiting for its parent does not)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and pid != os.getpid():
            alive.append(pid)
    return alive


def procs_whose(field: int, value: int) -> list[int]:
    """PIDs whose /proc stat field (counted after the command name: 1 the parent, 2 the process
    group) equals ``value``."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[field]) == value:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def processes_running(word: str) -> list[int]:
    """PIDs whose command line holds ``word``."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if word.encode() in f.read().replace(b"\0", b" "):
                        out.append(int(d))
            except OSError:
                pass
    return running(out)


def kill_all(pids) -> None:
    """SIGKILL to those of ``pids`` that still run."""
    for pid in running(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class CapturedStream(io.TextIOWrapper):
    """A standard stream a command under test reads or writes in memory (``text()``: what it wrote)."""

    def __init__(self, data: bytes = b""):
        super().__init__(io.BytesIO(data), encoding="utf-8", errors="replace", write_through=True)

    def text(self) -> str:
        return self.buffer.getvalue().decode("utf-8", "replace")
