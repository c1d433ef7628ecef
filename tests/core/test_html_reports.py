"""The HTML reports of `check` and of `conform` (REMP, Corda; RMB's in test_rmb_conform, the audit's
in test_spark_audit), read as a browser would: verdict first, then the rules broken, the evidence
or failing scenarios with the command that reproduces each, then the per-rule matrix. Planted
faults give the expected rule: a fixture named by the rule it breaks, a faulty example adapter.
A slow test opens the pages in a headless browser."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from html_support import read_page
from rmkit.cli import main

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "fixtures" / "remp" / "rules"


def _planted(rule: str) -> Path:
    """A rule fixture whose manifest says it breaks ``rule`` (and only rules it lists)."""
    for f in json.loads((RULES / "manifest.json").read_text())["fixtures"]:
        if f["profile"] == "spec" and rule in f["expect"]:
            return RULES / f["file"]
    raise AssertionError(f"no fixture plants {rule}")


def check_html(tmp_path) -> tuple[Path, str]:
    log = _planted("REMP-FANOUT-001")
    out = tmp_path / "check.html"
    assert main(["check", str(log), "--html", str(out)]) == 1
    return out, str(log.relative_to(REPO)) if log.is_relative_to(REPO) else str(log)


def test_check_html_puts_the_verdict_and_the_broken_rule_first(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    out, log = check_html(tmp_path)
    page = read_page(out.read_text())
    assert page.verdict == "fail"
    assert page.sections[:3] == ["failing", "evidence", "rules"], page.sections
    assert "REMP-FANOUT-001" in page.text["failing"]
    assert f"{log}:" in page.text["evidence"] and "What to do:" in page.text["evidence"]
    assert page.text["rules"].count("REMP-") >= 30  # every rule in the matrix


def remp_conform_html(tmp_path) -> Path:
    out = tmp_path / "conform.html"
    code = main(["conform", "--role", "validator", "--impl", "rmkit.conformance.remp.examples.no_replay_protection:factory",
                 "--catalogue-only", "--regressions", str(tmp_path / "regs"), "--html", str(out)])
    assert code == 1
    return out


def test_remp_conform_html_gives_each_failure_its_reproduce_command(tmp_path, capsys):
    page = read_page(remp_conform_html(tmp_path).read_text())
    assert page.verdict == "fail"
    assert page.sections[:3] == ["failing", "scenarios-failed", "rules"], page.sections
    assert "REMP-VALID-001" in page.text["failing"]
    assert page.reproduce and all(shlex.split(c)[:3] == ["rmkit", "conform", "--role"] for c in page.reproduce)
    assert all("--impl rmkit.conformance.remp.examples.no_replay_protection:factory" in c for c in page.reproduce)
    assert "expected: BlockRefused" in page.text["scenarios-failed"]


def corda_conform_html(tmp_path) -> Path:
    out = tmp_path / "corda.html"
    code = main(["conform", "--protocol", "corda", "--profile", "corda-os", "--role", "receiver",
                 "--impl", "rmkit.conformance.corda.driven.examples:AckBeforeCommit", "--max-examples", "200",
                 "--derandomize", "--regressions", str(tmp_path / "regs"), "--html", str(out)])
    assert code == 1
    return out


def test_corda_conform_html_gives_the_failure_its_reproduce_command(tmp_path, capsys):
    page = read_page(corda_conform_html(tmp_path).read_text())
    assert page.verdict == "fail"
    assert page.sections[:3] == ["failing", "scenarios-failed", "rules"], page.sections
    assert "CORDA-ACK-001" in page.text["failing"]
    saved = next((tmp_path / "regs").glob("*.json"))
    assert page.reproduce == [f"rmkit replay --protocol corda {saved} --impl "
                              "rmkit.conformance.corda.driven.examples:AckBeforeCommit"]


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--dump-dom"]


@pytest.mark.slow
def test_the_reports_open_in_a_headless_browser(tmp_path, capsys, monkeypatch):
    """What the browser made of each page (its DOM after parsing) still says the verdict, the
    failing rule and the command to reproduce it."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium (apt-get install -y chromium)")
    monkeypatch.chdir(REPO)
    pages = {"check": (check_html(tmp_path)[0], "REMP-FANOUT-001", None),
             "remp": (remp_conform_html(tmp_path), "REMP-VALID-001", "rmkit conform --role validator"),
             "corda": (corda_conform_html(tmp_path), "CORDA-ACK-001", "rmkit replay --protocol corda")}
    for name, (path, rule, command) in pages.items():
        profile = tmp_path / f"chromium-{name}"
        done = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", path.as_uri()],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        page = read_page(done.stdout)
        assert page.verdict == "fail" and rule in page.text["failing"], (name, done.stdout[:2000])
        assert command is None or any(command in c for c in page.reproduce), (name, page.reproduce)
