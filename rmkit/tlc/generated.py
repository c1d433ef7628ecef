"""Run TLC on a module generated beside a shipped model (a simulation module with a step counter,
a trace to validate): the model's own modules (not its ``MC*`` roots) are copied with the
generated module and cfg into a temporary folder, so nothing is ever written into ``tla/``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rmkit.tlc.manifest import tla_root
from rmkit.tlc.result import TlcResult
from rmkit.tlc.runner import run_tlc


def run_generated(model_path: str, name: str, module: str, cfg: str, **run_kwargs) -> TlcResult:
    """Check (or simulate) the generated module ``name`` (text ``module``, config ``cfg``) against
    the modules of ``tla/<model_path>``; ``run_kwargs`` go to :func:`run_tlc`."""
    with tempfile.TemporaryDirectory(prefix=f"rmkit-{name.lower()}-") as tmp:
        folder = Path(tmp)
        for f in (tla_root() / model_path).glob("*.tla"):
            if not f.name.startswith("MC"):
                shutil.copy(f, folder / f.name)
        (folder / f"{name}.tla").write_text(module)
        (folder / f"{name}.cfg").write_text(cfg)
        return run_tlc(folder, name, f"{name}.cfg", **run_kwargs)
