"""The parts of rmkit's build that pyproject.toml cannot say statically.

The repository keeps one folder per job (spec/, conformance/, reference_impl/, ...); in the
installed package they all live under the single ``rmkit`` namespace. Every folder below those
roots is declared a package (most hold only data: YAML, JSON, TLA+ modules), so that setuptools
neither warns that an importable folder is missing from ``packages`` nor drops a folder added
later; which data files ship is still chosen by ``package-data`` in pyproject.toml.

``rmkit._linescan`` is optional: where no C compiler is found the build goes on without it and
the ``--jobs`` readers deal their chunks in Python (:mod:`rmkit.linescan`), with the same results.
So are the compiled :mod:`rmkit.logclock` (the log's clock), :mod:`rmkit.subjects` (the streaming
engine RMB's and Corda's checkers feed a record at a time) and :mod:`rmkit.keystore` (the exact
checks' store of keys and memos), written for Cython's pure Python mode: the same file runs as
Python where it is not compiled.
So are the RMB log checker's per-record and per-request modules (``conformance/rmb/checker.py``,
``handlers.py``, ``logjudge.py``, ``state.py``, ``sigreuse.py``): plain Python, compiled by Cython as they are
(their annotations not taken as C types) for about a fifth less CPU per record; where they are not
compiled the same files run, with the same findings (``tests/rmb/test_rmb_compiled.py``). The Corda
records checker's likewise (``conformance/corda/share.py``, ``state.py``, ``packing.py``, ``facts.py``,
``handlers.py``, ``spanning.py``; ``tests/corda/test_corda_compiled.py``), and the dealer of its
``--jobs`` readers (``conformance/corda/_keyshares.pyx``; without it they deal lines in Python).
Both compiled dealers take the CRC-32 of ``key_share`` from ``rmkit/_crc32.pxd`` (cimported:
declarations and inline C, no module of its own).
So are the REMP log checker's (``conformance/remp/checker.py``, ``handlers.py``, ``state.py``,
``metrics.py``, ``clocktrack.py``), compiled as they are in the same way: about 4 % less
CPU for a ``--jobs`` check, the same findings either way (``tests/remp/test_remp_compiled.py``),
and the reading of its ``--jobs`` readers' clock events (``conformance/remp/_clockscan.pyx``;
without it msgspec reads them). That scan and RMB's uid dealer find the end of a plain string
(printable ASCII, no escape) sixteen or eight bytes at a step by ``rmkit/_plainstring.pxd``
(cimported, as ``_crc32.pxd`` is).

A compiled module cimports another's C types by the other's installed name (``rmkit.conformance.remp.state``),
which Cython looks up as a path below its include directories. The ``rmkit`` folder is its own
name there; the other roots install under another name (``conformance/`` is ``rmkit.conformance``),
so their ``.pxd`` files are mirrored under their installed names in ``build/pxd`` (copied anew at
each build), which every extension has on its include path. The ``.pxd`` beside its ``.py`` stays
the one place its declarations live.
"""

import shutil
from pathlib import Path

from setuptools import Extension, find_namespace_packages, setup

ROOTS = {
    "rmkit": "rmkit",
    "rmkit.spec": "spec",
    "rmkit.protocols": "protocols",
    "rmkit.conformance": "conformance",
    "rmkit.reference_impl": "reference_impl",
    "rmkit.fixtures": "fixtures",
    "rmkit.tla": "tla",
    "rmkit.spark_checks": "spark_checks",
}


HERE = Path(__file__).resolve().parent
PXD_MIRROR = HERE / "build" / "pxd"


def mirror_pxd() -> None:
    """Copy the .pxd files of the roots installed under another name to their installed names
    below build/pxd (see the module's docstring)."""
    shutil.rmtree(PXD_MIRROR, ignore_errors=True)
    for name, folder in ROOTS.items():
        if name == folder:  # (rmkit/ is found as it is)
            continue
        for pxd in sorted((HERE / folder).rglob("*.pxd")):
            target = PXD_MIRROR.joinpath(*name.split("."), pxd.relative_to(HERE / folder))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(pxd, target)


def packages() -> list[str]:
    found = []
    for name, folder in ROOTS.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_namespace_packages(folder, exclude=["*__pycache__*", "*.egg-info"])]
    return found


def optional(name: str, source: str) -> Extension:
    """An optional extension (the build goes on without it) that finds every .pxd by its installed name."""
    return Extension(name, [source], include_dirs=[str(PXD_MIRROR)], optional=True)


mirror_pxd()

setup(
    package_dir=ROOTS,
    packages=packages(),
    ext_modules=[optional("rmkit._linescan", "rmkit/_linescan.pyx"),
                 optional("rmkit.logclock", "rmkit/logclock.py"),
                 optional("rmkit.subjects", "rmkit/subjects.py"),
                 optional("rmkit.keystore", "rmkit/keystore.py"),
                 optional("rmkit.conformance.rmb._uidscan", "conformance/rmb/_uidscan.pyx"),
                 optional("rmkit.conformance.rmb.handlers", "conformance/rmb/handlers.py"),
                 optional("rmkit.conformance.rmb.logjudge", "conformance/rmb/logjudge.py"),
                 optional("rmkit.conformance.rmb.state", "conformance/rmb/state.py"),
                 optional("rmkit.conformance.rmb.checker", "conformance/rmb/checker.py"),
                 optional("rmkit.conformance.rmb.sigreuse", "conformance/rmb/sigreuse.py"),
                 optional("rmkit.conformance.corda.share", "conformance/corda/share.py"),
                 optional("rmkit.conformance.corda.state", "conformance/corda/state.py"),
                 optional("rmkit.conformance.corda.packing", "conformance/corda/packing.py"),
                 optional("rmkit.conformance.corda.facts", "conformance/corda/facts.py"),
                 optional("rmkit.conformance.corda.handlers", "conformance/corda/handlers.py"),
                 optional("rmkit.conformance.corda.spanning", "conformance/corda/spanning.py"),
                 optional("rmkit.conformance.corda._keyshares", "conformance/corda/_keyshares.pyx"),
                 optional("rmkit.conformance.remp.checker", "conformance/remp/checker.py"),
                 optional("rmkit.conformance.remp.handlers", "conformance/remp/handlers.py"),
                 optional("rmkit.conformance.remp.state", "conformance/remp/state.py"),
                 optional("rmkit.conformance.remp.metrics", "conformance/remp/metrics.py"),
                 optional("rmkit.conformance.remp.clocktrack", "conformance/remp/clocktrack.py"),
                 optional("rmkit.conformance.remp._clockscan", "conformance/remp/_clockscan.pyx")],
)
