"""A checker's modules that setup.py compiles with Cython (from the same .py files; optional: where
no C compiler is found they run as Python) must report what their Python files report. The
comparison is run once here, on the modules as installed, and once in a subprocess whose import
system loads those modules from their .py files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# the subprocess: the named modules of the package imported from their .py files, then every run's findings
_FROM_SOURCE = r"""
import importlib.abc, importlib.util, json, os, sys

PURE = {f"{sys.argv[1]}.{name}" for name in sys.argv[2].split(",")}


class FromSource(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in PURE:
            return None
        return importlib.util.spec_from_file_location(name, os.path.join(path[0], name.rsplit(".", 1)[1] + ".py"))


sys.meta_path.insert(0, FromSource())
with open(sys.argv[3], encoding="utf-8") as f:
    found = [FINDINGS(*run) for run in json.load(f)]
print(json.dumps([sorted(sys.modules[name].__file__.rsplit("/", 1)[1] for name in PURE)] + found))
"""


def compiled(modules: dict) -> list[str]:
    """The names of ``modules`` (name -> module) that were loaded from a compiled file."""
    return [name for name, module in modules.items() if not module.__file__.endswith(".py")]


def same_findings_from_source(package: str, modules, findings: str, runs: list, tmp_path: Path) -> list:
    """``FINDINGS(*run)`` (defined by the source ``findings``) of every run, here and in a subprocess
    that imports ``package``'s ``modules`` from their .py files; asserts both ran what they should
    and found the same, and returns the findings."""
    namespace: dict = {}
    exec(findings, namespace)
    here = [json.loads(json.dumps(namespace["FINDINGS"](*run))) for run in runs]
    listed = tmp_path / "runs.json"
    listed.write_text(json.dumps(runs), encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", findings + _FROM_SOURCE, package, ",".join(modules), str(listed)],
                         cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    files, *pure = json.loads(run.stdout)
    assert files == sorted(f"{name}.py" for name in modules)  # (the subprocess ran the Python files)
    assert here == pure
    return here
