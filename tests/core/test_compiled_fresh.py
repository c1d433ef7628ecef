"""A compiled module is never older than the source it was built from.

Why: ``setup.py`` compiles some modules in place (a ``.pyx``, or a ``.py`` in Cython's pure Python
mode), and Python imports the compiled file before the source beside it. An edit to the source
without a rebuild would leave the old code running with no sign of it; this test names the module
and the command that rebuilds it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SETUP = (REPO / "setup.py").read_text()
# setup.py's extensions: optional("installed.name", "source/path")
EXTENSIONS = re.compile(r'optional\(\s*"([\w.]+)",\s*"([^"]+)"\)')
# the roots installed under another name than their folder's ("rmkit.conformance": "conformance")
ROOTS = dict(re.findall(r'^\s*"rmkit\.(\w+)":\s*"(\w+)",', SETUP, re.M))


def pxd_of(installed: str) -> Path:
    """The .pxd in the repository of a module cimported by its installed name below ``rmkit``
    (``conformance.remp.state``: conformance/remp/state.pxd; ``subjects``: rmkit/subjects.pxd)."""
    first, _, rest = installed.partition(".")
    if first in ROOTS and rest:
        return REPO / ROOTS[first] / Path(*rest.split(".")).with_suffix(".pxd")
    return REPO / "rmkit" / Path(*installed.split(".")).with_suffix(".pxd")


def cimported(source: Path) -> list[Path]:
    """The kit's own ``.pxd`` files compiled into a source: those a ``.pyx`` cimports (``from
    rmkit.x cimport ...``) and those a ``.py`` in Cython's pure Python mode cimports (``from
    cython.cimports.rmkit.x import ...``), with the ``.pxd`` beside such a ``.py`` (its own C
    declarations). An edit to one is an edit to the module."""
    if source.suffix not in (".py", ".pyx", ".pxd"):
        return []
    text = source.read_text()
    found = re.findall(r"^\s*(?:from\s+rmkit\.([\w.]+)\s+cimport|cimport\s+rmkit\.([\w.]+)"
                       r"|from\s+cython\.cimports\.rmkit\.([\w.]+)\s+import)", text, re.M)
    deps = [pxd_of(a or b or c) for a, b, c in found]
    beside = source.with_suffix(".pxd")
    if source.suffix == ".py" and beside.is_file():
        deps.insert(0, beside)
    return deps


def compiled_sources() -> list[tuple[Path, Path]]:
    """(source, compiled file) for every extension setup.py names whose compiled file is built in
    place, and for every ``.pxd`` of the kit such a source cimports."""
    pairs = []
    for name, source in EXTENSIONS.findall(SETUP):
        src = REPO / source
        stem = name.rsplit(".", 1)[-1]
        for built in src.parent.glob(f"{stem}.*.so"):
            pairs += [(dep, built) for dep in [src, *cimported_all(src)]]
    return pairs


def cimported_all(source: Path) -> list[Path]:
    """:func:`cimported`, followed through the ``.pxd`` files themselves (a ``.pxd`` that cimports
    another's types compiles them into every module that cimports it)."""
    found: list[Path] = []
    todo = cimported(source)
    while todo:
        dep = todo.pop(0)
        if dep not in found:
            found.append(dep)
            todo += cimported(dep) if dep.is_file() else []
    return found


def test_setup_names_its_extensions_and_their_sources_exist():
    names = EXTENSIONS.findall(SETUP)
    assert names, "setup.py names no extension in the form this test reads: update the pattern"
    for _, source in names:
        assert (REPO / source).is_file(), source
        for dep in cimported(REPO / source):
            assert dep.is_file(), f"{source} cimports {dep.relative_to(REPO)}, which is missing"


def test_the_dealers_cimport_the_one_crc32():
    """The two compiled dealers take CRC-32 from the kit's one ``.pxd`` (the pattern above reads
    it): an edit to it must make both stale."""
    deps = {source: cimported(REPO / source) for source in ("conformance/rmb/_uidscan.pyx", "conformance/corda/_keyshares.pyx")}
    assert all(REPO / "rmkit" / "_crc32.pxd" in found for found in deps.values()), deps


def test_the_line_walkers_cimport_the_one_plain_string_end():
    """REMP's clock scan and RMB's uid dealer find a plain string's end by the kit's one ``.pxd``:
    an edit to it must make both stale."""
    deps = {source: cimported(REPO / source) for source in ("conformance/remp/_clockscan.pyx", "conformance/rmb/_uidscan.pyx")}
    assert all(REPO / "rmkit" / "_plainstring.pxd" in found for found in deps.values()), deps


def test_the_remp_checker_counts_the_declarations_it_cimports():
    """The REMP checker (a ``.py``) cimports the clock's C type from ``rmkit/logclock.pxd``, and its
    state's and histogram's by their installed names (``rmkit.conformance.remp.state``, which
    setup.py mirrors from conformance/): an edit to any of them makes the compiled checker stale,
    as it makes the compiled module whose declarations it holds stale."""
    remp = REPO / "conformance" / "remp"
    assert cimported(remp / "checker.py") == [REPO / "rmkit" / "logclock.pxd", remp / "state.pxd", remp / "metrics.pxd"]
    assert cimported(remp / "state.py") == [remp / "state.pxd"]
    assert REPO / "rmkit" / "logclock.pxd" in cimported(REPO / "rmkit" / "logclock.py")


def test_the_rmb_checker_counts_the_engine_and_clock_declarations_it_cimports():
    """The RMB checker cimports the streaming engine's C type (``rmkit/subjects.pxd``), which
    cimports the clock's (``rmkit/logclock.pxd``): an edit to either makes the compiled checker
    stale, as it makes the compiled engine stale."""
    subjects, clock = REPO / "rmkit" / "subjects.pxd", REPO / "rmkit" / "logclock.pxd"
    assert cimported(REPO / "conformance" / "rmb" / "checker.py") == [subjects]
    assert cimported_all(REPO / "conformance" / "rmb" / "checker.py") == [subjects, clock]
    assert cimported_all(REPO / "rmkit" / "subjects.py") == [subjects, clock]


def test_no_compiled_module_is_older_than_its_source():
    stale = [f"{built.relative_to(REPO)} is older than {src.relative_to(REPO)}"
             for src, built in compiled_sources() if built.stat().st_mtime < src.stat().st_mtime]
    assert not stale, ("; ".join(stale) + ": the compiled module would run the old code. "
                       "Rebuild it: `.venv/bin/pip install --no-deps -e .` (or `make` after touching setup.py)")

