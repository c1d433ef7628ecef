"""The cyclic garbage collector paused while a streaming checker runs.

A log checker allocates a few container objects per record (per-source state, evidence tuples)
and keeps tens of thousands of open subjects alive. With Python's default thresholds the
collector runs every 700 allocations and walks the whole heap again and again: about a tenth of
the fastest checker's time on a million records, for nothing, because its state holds no reference
cycles. Raising the thresholds (50,000 allocations) still left 0.3-0.4 s of collections per million
records; the checker's garbage is freed by reference counting alone (measured: a whole check of
300,000 records leaves about a hundred objects in cycles), so inside :func:`paused_collections`
the collector does not run at all. Whatever cycles were made inside are collected by the first
collection after, which runs as usual.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

_lock = threading.Lock()
_users = 0
_was_enabled = False


@contextmanager
def paused_collections():
    """Pause the collector for the duration (nested and concurrent uses share one pause; the
    first to enter notes whether it was on, the last to leave turns it back on if it was)."""
    global _users, _was_enabled
    with _lock:
        if _users == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _was_enabled:
                gc.enable()


@contextmanager
def frozen_for_fork():
    """Around forking worker processes: the objects the parent holds (modules, the compiled spec)
    are moved out of the collector's reach while the children start, so that a child's collections
    never write to them and their pages stay shared with the parent instead of being copied into
    every worker. The parent's objects are collectable again after."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
