"""Crash-point hooks of the node and bridge processes (the names of spec/corda/system.yaml
``crash_points``).

A process passes :meth:`CrashPoints.reach` at each named point. A point is armed either at start
(``--crash-at POINT[:K[:MODE]]`` or the environment variable ``RMKIT_CORDA_CRASH`` in the same
form) or while the process runs, by an arm file (``<folder>/<component>.arm`` holding
``POINT K MODE``, written to a temporary name and renamed), which is how the crash-point harness picks its next point without a restart.
At the K-th pass after arming the process either kills itself (``exit``: SIGKILL, nothing runs
after) or pauses (``pause``: writes ``<folder>/<component>.paused`` naming the point and sleeps,
for the harness to kill it from outside)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ENV = "RMKIT_CORDA_CRASH"
MODES = ("exit", "pause")


def arm(folder: str | Path, component: str, point: str, k: int, mode: str) -> None:
    """Arm a running process's crash point (atomically: a half-written file is never read)."""
    tmp = Path(folder) / f"{component}.arm.tmp"
    tmp.write_text(f"{point} {k} {mode}")
    os.replace(tmp, Path(folder) / f"{component}.arm")


def parse(text: str) -> tuple[str, int, str]:
    """``POINT[:K[:MODE]]`` (or space-separated) -> (point, K, mode)."""
    parts = text.replace(":", " ").split()
    if not parts or len(parts) > 3:
        raise ValueError(f"expected POINT[:K[:MODE]], found {text!r}")
    k = int(parts[1]) if len(parts) > 1 else 1
    mode = parts[2] if len(parts) > 2 else "exit"
    if k < 1 or mode not in MODES:
        raise ValueError(f"expected K >= 1 and MODE in {MODES}, found {text!r}")
    return parts[0], k, mode


class CrashPoints:
    def __init__(self, component: str, folder: str | Path | None = None, armed: str | None = None):
        self.component = component
        self.folder = Path(folder) if folder else None
        self.armed: tuple[str, int, str] | None = None
        self.passes = 0
        self._arm_mtime = None
        text = armed or os.environ.get(ENV)
        if text:
            self.armed = parse(text)

    def _arm_file(self) -> Path | None:
        return self.folder / f"{self.component}.arm" if self.folder else None

    def _refresh(self) -> None:
        f = self._arm_file()
        if f is None:
            return
        try:
            st = f.stat()
        except FileNotFoundError:
            return
        version = (st.st_ino, st.st_mtime_ns)
        if version != self._arm_mtime:
            try:
                self.armed, self.passes = parse(f.read_text()), 0
                self._arm_mtime = version
            except (OSError, ValueError):
                pass   # half-written: read again at the next pass

    def ready(self) -> None:
        """Tell a supervisor the process is connected and working (``<folder>/<component>.ready``)."""
        if self.folder is not None:
            (self.folder / f"{self.component}.ready").touch()

    def reach(self, point: str) -> None:
        self._refresh()
        if self.armed is None or self.armed[0] != point:
            return
        self.passes += 1
        if self.passes < self.armed[1]:
            return
        if self.armed[2] == "pause" and self.folder is not None:
            # written whole, then named: whoever sees the file reads the point (not an empty file)
            partial = self.folder / f".{self.component}.paused-{os.getpid()}"
            partial.write_text(point)
            os.replace(partial, self.folder / f"{self.component}.paused")
            while True:
                time.sleep(3600)
        os.kill(os.getpid(), signal.SIGKILL)
