"""What every protocol's ``rmkit conform`` reads the same way from its options.

Why one module: whether a run is derandomized (``--derandomize``, or the Hypothesis ``ci`` profile
that CI sets) and when progress lines go to stderr are promises of the command, not of a
protocol; written once here, REMP, RMB, Corda and the pytest plugin cannot drift apart.
"""

from __future__ import annotations

import argparse
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
    """A progress printer for a person at a terminal; None when stderr is no terminal or when a
    machine-readable report goes to stdout (progress would interleave with it)."""
    quiet = args.format != "text" and not args.out
    if quiet or not sys.stderr.isatty():
        return None
    return lambda message: print(f"  {message}", file=sys.stderr)
