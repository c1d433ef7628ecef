"""Run one function per share in worker processes and collect the results in share order.

``rmkit check --jobs N`` of every protocol splits the work the same way: N processes, each
checking the records whose key hashes into its share, and the parent merging the partial results.
A worker's exception travels back to the parent and is raised there (never a hang, never a silent
empty share); a worker that does not exit is killed.
"""

from __future__ import annotations

import multiprocessing as mp
import zlib
from typing import Any, Callable, Sequence

from rmkit.gctune import frozen_for_fork
from rmkit.peerread import PeerStopped


def _run_share(conn, fn: Callable[..., Any], args: tuple) -> None:
    try:
        conn.send(("done", fn(*args)))
    except BaseException as exc:  # the parent raises it, instead of waiting forever
        conn.send(("error", exc))
    finally:
        conn.close()


def start_processes(target: Callable[..., None], per_process_args: Sequence[tuple]) -> tuple[list, list]:
    """One process per argument tuple, each called as ``target(conn, *args)`` with its end of a
    pipe (forked where the platform can, so the arguments need not be picklable there); returns
    the parent's pipe ends and the processes, in the order of ``per_process_args``."""
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    pipes, procs = [], []
    with frozen_for_fork():  # the parent's objects stay shared with the children (rmkit.gctune)
        for args in per_process_args:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=target, args=(child, *args), daemon=True)
            proc.start()
            child.close()
            pipes.append(parent)
            procs.append(proc)
    return pipes, procs


def stop_processes(procs: Sequence[Any]) -> None:
    """Wait a little for each process to exit; kill one that does not."""
    for proc in procs:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()


def run_in_processes(fn: Callable[..., Any], shares: Sequence[tuple], *, first_here: bool = False,
                     while_waiting: Callable[[], Any] | None = None) -> list[Any]:
    """``[fn(*args) for args in shares]``, each call in a process of its own. ``first_here``: the
    first call runs in this process while the others run in theirs (a process fewer, for a caller
    whose every process holds an interpreter and its modules: memory a bound may count); where it
    fails the others are killed, not waited for, unless it failed because another stopped
    (:class:`rmkit.peerread.PeerStopped`, shares that read the log themselves): then that share's
    failure is what is raised. ``while_waiting``: called here once this process
    has nothing to do but wait for the others (after the first call, with ``first_here``), for
    work the caller needs next that would otherwise run after the last share, such as an import."""
    pipes, procs = start_processes(_run_share, [(fn, args) for args in shares[1 if first_here else 0:]])
    finished = False
    try:
        try:
            first = [fn(*shares[0])] if first_here else []
        except PeerStopped as stopped:
            raise _failure_of(pipes) or stopped from None
        if while_waiting is not None:
            while_waiting()
        results = [p.recv() for p in pipes]
        finished = True
    finally:
        if not finished:
            for proc in procs:
                proc.kill()
        stop_processes(procs)
    for kind, value in results:
        if kind == "error":
            raise value
    return first + [value for _, value in results]


def _failure_of(pipes: list) -> BaseException | None:
    """The first failure the other shares report that is not their own :class:`PeerStopped`
    (None: none reports one). Called once this process's share has stopped, its pipes to the
    others closed: each other share then ends, with its report or its failure, or has died."""
    for pipe in pipes:
        try:
            if not pipe.poll(_REPORT_WAIT_S):
                continue
            kind, value = pipe.recv()
        except (EOFError, OSError):  # died without a report
            continue
        if kind == "error" and not isinstance(value, PeerStopped):
            return value
    return None


# how long a share that stopped with its peers' reading is waited for to report why (a safety: it
# ends as soon as its peers' pipes close)
_REPORT_WAIT_S = 30


def key_share(key: str | None, n: int) -> int:
    """The share (of ``n``) whose process checks the records of ``key``; records without a key
    go to share 0. One rule for every protocol that splits by a text key."""
    return 0 if key is None else zlib.crc32(key.encode("utf-8", "surrogatepass")) % n


def key_bytes_share(key: bytes, n: int) -> int:
    """:func:`key_share` of a key given as its UTF-8 bytes, for a reader that takes a key from a
    line's text without decoding the line (the same rule, beside it; a call of one from the other
    would cost every record of the hot readers a call)."""
    return zlib.crc32(key) % n
