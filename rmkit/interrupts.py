"""SIGINT and SIGTERM while a command runs processes of its own (brokers, daemons, Redis): either
signal becomes :class:`Interrupted` (a ``KeyboardInterrupt``, so the command line's contract
turns it into exit 2, "interrupted; no verdict"), which unwinds through the code that stops every
process by its PID. Any protocol's harness uses it (a command that starts a cluster does).

Two moments must not be cut in half, or a process would be left running: between the start of
a process and the line that records its PID, and the stop itself. Inside :func:`held` a signal
waits and is raised when the block ends."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state = {"handling": False, "held": 0, "pending": None}


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived during a run."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _on_signal(signum, frame) -> None:
    if _state["held"]:
        _state["pending"] = _state["pending"] or signum
        return
    raise Interrupted(signum)


def _raise_pending() -> None:
    signum, _state["pending"] = _state["pending"], None
    if signum is not None:
        raise Interrupted(signum)


@contextmanager
def signals_interrupt():
    """Inside, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread (whatever the
    handlers were: a shell may start a program with SIGINT ignored); the handlers before come
    back at the end. Elsewhere than in the main thread it does nothing (Python runs handlers there
    only)."""
    if not _main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in SIGNALS}
    _state.update(handling=True, held=0, pending=None)
    for s in SIGNALS:
        signal.signal(s, _on_signal)
    ok = False
    try:
        yield
        ok = True
    finally:
        for s, h in before.items():
            signal.signal(s, h)
        _state["handling"] = False
        if ok:
            _raise_pending()   # a signal that came inside a held block at the very end
        _state["pending"] = None


@contextmanager
def held():
    """A block that a signal must not cut in half (a process started and its PID recorded, a
    stop): the signal is raised when the outermost such block ends normally (left pending when
    the block ends with an exception of its own). In a thread other than the main one, or outside
    :func:`signals_interrupt`, it does nothing."""
    if not (_state["handling"] and _main_thread()):
        yield
        return
    _state["held"] += 1
    try:
        yield
    finally:
        _state["held"] -= 1
    if not _state["held"]:
        _raise_pending()
