"""Peak memory of a process tree, sampled from /proc: the benchmarks' one reading of it.

RSS counts the pages forked workers share with their parent once per process; PSS splits them
among the sharers, so the two bound what a check with workers really holds. Without /proc
(another OS) nothing is summed and the peaks stay at zero.
"""

from __future__ import annotations

import os
import threading


def tree_pids(pid: int) -> list[int]:
    """The process and its descendants (from /proc)."""
    parent = {}
    for entry in (os.listdir("/proc") if os.path.isdir("/proc") else ()):  # no /proc: nothing summed
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    parent[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(c for c, pp in parent.items() if pp == p)
    return out


def tree_memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in bytes summed over a process and its descendants: RSS counts the pages forked
    workers share with their parent once per process, PSS splits them among the sharers."""
    rss = pss = 0
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
        except OSError:
            continue
    return rss, pss


class TreeMemory:
    """Peak summed RSS and PSS of a process tree, sampled every ``every`` seconds while it runs."""

    def __init__(self, pid: int, every: float = 0.25):
        self.peak_rss = self.peak_pss = 0
        self._pid, self._every = pid, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            rss, pss = tree_memory(self._pid)
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
