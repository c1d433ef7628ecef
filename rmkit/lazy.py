"""Names of a package imported from their modules on first use (PEP 562), and numpy on first use.

Why: every ``rmkit`` command builds the whole command line, which touches every protocol's
packages, and a check pays each import before it reads a line; a process that runs one machine
(one node, a bridge) need not load the others either.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable


def lazy_attributes(package: str, where: dict[str, tuple[str, str]]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for the module ``package``: ``where`` maps each exported name to
    (module, its name there), the module absolute or relative to ``package``. A name is looked up
    once, then held as an ordinary attribute of the module."""

    def __getattr__(name: str):
        found = where.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(found[0], package), found[1])
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__


def numpy_module():
    """numpy, imported on first use (a process that never needs it, such as a share of a --jobs
    check, does not pay its import of a tenth of a second nor its memory).

    The checks use numpy's elementwise operations and sorts only, never its BLAS, whose threads
    (one per core, started at import) spin a while after it: a tenth of a CPU second taken from the
    other processes on a machine of two cores. Unless the caller chose otherwise, BLAS starts with
    one thread."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy

    return numpy
