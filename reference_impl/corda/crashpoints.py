"""Crash-point hooks of the node and bridge processes (the names of spec/corda/system.yaml
``crash_points``).

A process passes :meth:`CrashPoints.reach` at each named point. A point is armed either at start
(``--crash-at POINT[:K[:MODE]]`` or the environment variable ``RMKIT_CORDA_CRASH`` in the same
form) or while the process runs, by the harness's arm file (the ``ARM`` placeholder of
spec/corda/node.md, by default ``<folder>/<component>.arm``, holding ``POINT K`` and written to a
temporary name and renamed), which is how the harness picks its next point without a restart.
At the K-th pass after arming the process either kills itself (``exit``: SIGKILL, nothing runs
after) or pauses (``pause``, what an arm file asks: writes the ``PAUSED`` file naming the point
and sleeps, for the harness to kill it from outside)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ENV = "RMKIT_CORDA_CRASH"
MODES = ("exit", "pause")


def arm(path: str | Path, point: str, k: int) -> None:
    """Arm a running process's crash point through its arm file (atomically: a half-written file is
    never read): ``POINT K``, spec/corda/node.yaml ``crash_points``."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{point} {k}\n")
    os.replace(tmp, path)


def parse(text: str, mode: str = "exit") -> tuple[str, int, str]:
    """``POINT[:K[:MODE]]`` (or space-separated) -> (point, K, mode); ``mode`` when none is given."""
    parts = text.replace(":", " ").split()
    if not parts or len(parts) > 3:
        raise ValueError(f"expected POINT[:K[:MODE]], found {text!r}")
    try:
        k = int(parts[1]) if len(parts) > 1 else 1
    except ValueError:
        raise ValueError(f"expected a pass count K >= 1, found {text!r}") from None
    mode = parts[2] if len(parts) > 2 else mode
    if k < 1 or mode not in MODES:
        raise ValueError(f"expected K >= 1 and MODE in {MODES}, found {text!r}")
    return parts[0], k, mode


class CrashPoints:
    """A process's crash points. The arm, paused and ready files are given (the harness's ``ARM``,
    ``PAUSED`` and ``READY``), or named after the component in ``folder``, or absent."""

    def __init__(self, component: str, folder: str | Path | None = None, armed: str | None = None, *,
                 arm: str | Path | None = None, paused: str | Path | None = None, ready: str | Path | None = None):
        self.component = component
        folder = Path(folder) if folder else None
        self.arm_file = Path(arm) if arm else (folder / f"{component}.arm" if folder else None)
        self.paused_file = Path(paused) if paused else (folder / f"{component}.paused" if folder else None)
        self.ready_file = Path(ready) if ready else (folder / f"{component}.ready" if folder else None)
        self.armed: tuple[str, int, str] | None = None
        self.passes = 0
        self._arm_mtime = None
        text = armed or os.environ.get(ENV)
        if text:
            self.armed = parse(text)

    def _arm_file(self) -> Path | None:
        return self.arm_file

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
                self.armed, self.passes = parse(f.read_text(), "pause"), 0
                self._arm_mtime = version
            except (OSError, ValueError):
                pass   # half-written: read again at the next pass

    def ready(self) -> None:
        """Tell a supervisor the process is connected and working (the ``READY`` file)."""
        if self.ready_file is not None:
            self.ready_file.touch()

    def reach(self, point: str) -> None:
        self._refresh()
        if self.armed is None or self.armed[0] != point:
            return
        self.passes += 1
        if self.passes < self.armed[1]:
            return
        if self.armed[2] == "pause" and self.paused_file is not None:
            # written whole, then named: whoever sees the file reads the point (not an empty file)
            partial = self.paused_file.with_name(f".{self.paused_file.name}-{os.getpid()}")
            partial.write_text(point)
            os.replace(partial, self.paused_file)
            while True:
                time.sleep(3600)
        os.kill(os.getpid(), signal.SIGKILL)
