"""What every protocol's ``rmkit conform`` reads the same way from its options.

Why one module: whether a run is derandomized (``--derandomize``, or the Hypothesis ``ci`` profile
that CI sets) and when progress lines go to stderr are promises of the command, not of a
protocol; written once here, the protocols and the pytest plugin cannot drift apart.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Callable

DEFAULT_REGRESSIONS = Path(".rmkit") / "regressions"


def regressions_dir(arg: str | None) -> Path:
    """Where saved failing scenarios are read first and new ones saved: ``--regressions``, else
    ``RMKIT_REGRESSIONS``, else ``.rmkit/regressions`` (checked writable before a run starts)."""
    return Path(arg) if arg else Path(os.environ.get("RMKIT_REGRESSIONS") or DEFAULT_REGRESSIONS)


def regressions_of(folder: str | Path, implementation: str) -> Path:
    """Where one implementation's saved failures are read and written: with the default folder (no
    ``--regressions``, no ``RMKIT_REGRESSIONS``) a folder of its own per implementation command
    (``impl-`` and a digest of the command as written, placeholders and all), so that failures
    found in one implementation are never replayed against another; a folder the user named is
    used as it is (what to keep together is then their choice)."""
    folder = Path(folder)
    if os.environ.get("RMKIT_REGRESSIONS") or folder != DEFAULT_REGRESSIONS:
        return folder
    return folder / f"impl-{hashlib.sha256(implementation.encode()).hexdigest()[:12]}"


def implementation_of(args: argparse.Namespace) -> str:
    """The implementation as the user named it (``--impl-cmd CMD`` as written, placeholders and all,
    else ``--impl MODULE:FACTORY``): what saved failures are kept per."""
    return getattr(args, "impl_cmd", None) or getattr(args, "impl", None) or ""


def implementation_regressions(args: argparse.Namespace) -> Path:
    """The folder of this implementation's saved failures (:func:`regressions_of` of ``--regressions``
    or its default): every protocol's ``rmkit conform`` reads and writes there."""
    return regressions_of(regressions_dir(getattr(args, "regressions", None)), implementation_of(args))


@contextlib.contextmanager
def hypothesis_data_in(folder: str | Path):
    """Hypothesis's own files (its cache of the constants it found in the code under test) written
    under ``folder``/.hypothesis while the block runs, instead of ``.hypothesis`` in the working
    directory: a run keeps everything it leaves behind with the implementation's saved failures.
    The previous place is restored afterwards (a process that runs the command twice, or pytest
    around it, keeps its own)."""
    from hypothesis import configuration

    before = getattr(configuration, "__hypothesis_home_directory")
    configuration.set_hypothesis_home_dir(Path(folder) / ".hypothesis")
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(before)


_ROLE = re.compile(r"(?<![\w./~-])ROLE(?![\w./-])")


def with_role(word: str, role: str) -> str:
    """``ROLE`` in one word of ``--impl-cmd`` replaced by ``role`` where it stands as a word of its
    own (``ROLE``, ``--role=ROLE``, ``--role ROLE``), never inside a path or a name
    (``/srv/ROLE/bin``, ``ROLE.log``, ``my-ROLE``): a file that happens to be named so stays."""
    return _ROLE.sub(role, word)


def derandomize_wanted(flag: bool = False) -> bool:
    """True when asked for (``--derandomize``) or when the Hypothesis ``ci`` profile is selected:
    CI runs must find the same scenarios every time."""
    return flag or os.environ.get("HYPOTHESIS_PROFILE") == "ci"


def stderr_progress(args: argparse.Namespace) -> Callable[[str], None] | None:
    """A progress printer: every step for a person at a terminal; when stderr is no terminal (a CI
    log), the latest step every half minute (:mod:`rmkit.progress`); None when a machine-readable
    report goes to stdout (progress would interleave with it)."""
    quiet = args.format != "text" and not args.out
    if quiet:
        return None
    if sys.stderr.isatty():
        return lambda message: print(f"  {message}", file=sys.stderr)
    from rmkit.progress import Ticker

    return Ticker("rmkit conform").tick


DEFAULT_TIMEOUT = 5.0  # --timeout of conform and replay, seconds per step


def impl_argv(args: argparse.Namespace) -> list[str]:
    """The options that name the implementation as given (``--impl-cmd CMD`` or ``--impl
    MODULE:FACTORY``, and ``--timeout`` when not the default): what a rerun must repeat."""
    out = []
    if getattr(args, "impl_cmd", None):
        out += ["--impl-cmd", args.impl_cmd]
    elif getattr(args, "impl", None):
        out += ["--impl", args.impl]
    timeout = getattr(args, "timeout", None)
    if timeout is not None and timeout != DEFAULT_TIMEOUT:
        out += ["--timeout", f"{timeout:g}"]
    return out


def replay_command(protocol: str, scenario, impl: list[str]) -> str:
    """``rmkit replay`` of a saved scenario against the same implementation, quoted for a POSIX
    shell: printed wherever a failure is, so that one paste reproduces it."""
    import shlex

    from rmkit.protocol import default_protocol

    argv = ["rmkit", "replay"] + (["--protocol", protocol] if protocol != default_protocol("conform") else []) + [str(scenario)]
    return shlex.join(argv + (impl or ["--impl-cmd", "CMD"]))
