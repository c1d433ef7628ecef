"""Shared set-up of the RMB tests: the pinned npm clients (interop/rmb-npm) and redis-server."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import REPO

NPM_DIR = REPO / "interop" / "rmb-npm"


def npm_ready() -> str:
    """The node binary, with interop/rmb-npm's lockfile installed (`npm ci`, registry only).
    Skips only where node is absent; a failed install is a failure."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the npm RMB clients cannot run (make .venv/.installed installs it)")
    if not (NPM_DIR / "node_modules" / "ts-rmb-http-client").is_dir():
        npm = shutil.which("npm")
        assert npm, "node is installed but npm is not: cannot install interop/rmb-npm"
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NPM_DIR, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"npm ci in interop/rmb-npm failed:\n{done.stderr[-2000:]}"
    return node


def run_vectors(mode: str, cases: list[dict]) -> list[dict]:
    node = npm_ready()
    done = subprocess.run([node, "vectors.js", mode], cwd=NPM_DIR, input="".join(json.dumps(c) + "\n" for c in cases),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(out) == len(cases), done.stderr[-3000:]
    return out


def redis_server_or_skip() -> str:
    path = shutil.which("redis-server")
    if path is None:
        pytest.skip("redis-server is not installed (make .venv/.installed installs it with apt-get)")
    return path
