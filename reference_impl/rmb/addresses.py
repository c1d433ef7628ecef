"""The addresses RMB's reference servers (daemons, recorders) listen on and connect to: reading
``HOST:PORT`` options, and why a server cannot listen, said as the line a user reads."""

from __future__ import annotations

import errno

from rmkit.errors import RmkitError, UsageError


class CannotStart(RmkitError):
    """A daemon or recorder cannot start for a reason of its environment: its port is busy, its
    Redis does not answer. The message names the option."""


def host_port(text: str, flag: str, any_port: bool = False) -> tuple[str, int]:
    """``HOST:PORT`` (an empty host: 127.0.0.1) with PORT from 1 to 65535, or 0 (a free port,
    chosen at start) where ``any_port``; a :class:`UsageError` naming ``flag`` otherwise."""
    host, sep, port = text.rpartition(":")
    low = 0 if any_port else 1
    if not sep or not (port.isascii() and port.isdigit()) or not low <= int(port) <= 65535:
        raise UsageError(f"{flag}: expected HOST:PORT with PORT from {low} to 65535, found {text!r}")
    return host or "127.0.0.1", int(port)


def listen_problem(exc: OSError, flag: str, host: str, port: int) -> CannotStart:
    """Why a server cannot listen on ``host:port`` (given as ``flag``), as the line to show."""
    where = f"{flag} {host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return CannotStart(f"{where}: the port is busy (address already in use): choose another port or stop what listens there")
    if exc.errno == errno.EADDRNOTAVAIL:
        return CannotStart(f"{where}: cannot listen: the address is not one of this machine's")
    if exc.errno == errno.EACCES:
        return CannotStart(f"{where}: cannot listen: permission denied")
    return CannotStart(f"{where}: cannot listen ({exc.strerror or exc})")
