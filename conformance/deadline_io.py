"""Talking to an implementation under test within a deadline, for every protocol's driven harness.

Why one module: an implementation may hang, write half a line and stop, or never return from a
Python call; each harness must still end the step at ``--timeout``. The two ways to do that (read
a process's output raw, with ``select``, up to the deadline; run a Python call on a thread that
can be abandoned) are written once here, so REMP's and Corda's harnesses cannot drift apart.
"""

from __future__ import annotations

import os
import queue
import select
import threading
import time


def read_line(fd: int, buf: bytearray, timeout: float, max_bytes: int) -> bytes | None:
    """The next line read from ``fd``, without its newline, waiting at most ``timeout`` seconds;
    what follows it stays in ``buf`` for the next call. None at end of file. Raises TimeoutError
    when no whole line came in time, and OverflowError when ``buf`` passed ``max_bytes`` without
    one (what came stays in ``buf``, for the report). Raw reads with ``select``: a buffered
    ``readline`` would block for ever on a process that writes half a line and stops."""
    deadline = time.monotonic() + timeout
    while (end := buf.find(b"\n")) < 0:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        buf += chunk
        if len(buf) > max_bytes and b"\n" not in chunk:
            raise OverflowError
    line = bytes(buf[:end])
    del buf[:end + 1]
    return line


class _Box(list):
    def __init__(self):
        super().__init__()
        self.done = threading.Event()


class Worker:
    """Calls run on one daemon thread, so that a call that never returns can be abandoned (with its
    thread) once the timeout has passed: the kit goes on, the thread is left behind (a daemon,
    which does not keep the kit alive)."""

    def __init__(self):
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True, name="rmkit-impl").start()

    def _serve(self) -> None:
        while True:
            fn, arg, box = self._calls.get()
            try:
                box.append((True, fn(arg)))
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller, which reports it
                box.append((False, exc))
            box.done.set()

    def call(self, fn, arg, timeout: float):
        """``fn(arg)``'s value, or its exception raised here; TimeoutError when it has not returned
        within ``timeout`` seconds."""
        box = _Box()
        self._calls.put((fn, arg, box))
        if not box.done.wait(timeout):
            raise TimeoutError
        ok, value = box[0]
        if not ok:
            raise value
        return value
