"""spec/rmb/daemon.md is the contract a daemon under test meets: every placeholder the kit fills
and every number the harness reads from the spec (daemon.yaml, freedoms.yaml's timing and retry
gaps) is stated there with the value the code uses, and `rmkit conform --help` points to it."""

from __future__ import annotations

import re

from conftest import REPO
from rmkit.conformance.rmb.driven.daemons import MAX_JOBS, PER_DAEMON
from rmkit.conformance.rmb.driven.harness import PLACEHOLDERS, daemon_contract
from rmkit.protocols.rmb.model import rmb_spec

DOC = (REPO / "spec" / "rmb" / "daemon.md").read_text(encoding="utf-8")


def _row(name: str) -> str:
    rows = [line for line in DOC.splitlines() if line.startswith(f"| {name} |")]
    assert len(rows) == 1, f"daemon.md: expected one table row for {name!r}, found {len(rows)}"
    return rows[0]


def test_every_placeholder_is_documented():
    for name in PLACEHOLDERS:
        assert f"`{{{name}}}`" in DOC, name


def test_every_window_and_bound_has_its_number():
    contract = daemon_contract()
    timing = {k: v["value"] for k, v in rmb_spec().raw["freedoms"]["timing"].items()}
    windows = {k: v["value"] for k, v in contract["windows"].items()}
    for row, value in [("listen", windows["listen_s"]), ("settle", windows["settle_s"]), ("stop grace", windows["stop_grace_s"]),
                       ("response", timing["response_s"]), ("quiet", timing["quiet_s"]), ("slow twin", timing["slow_answer_s"]),
                       ("clock slack", timing["clock_slack_s"])]:
        assert re.search(rf"\| {value:g} s\b", _row(row)), (row, value)
    gaps = {f["name"]: f for f in rmb_spec().raw["freedoms"]["freedoms"]}["retry_pacing"]["bounds"]
    for profile, bound in gaps.items():
        assert f"{bound['max_gap_s']:g} s ({profile})" in _row("retry gap"), profile
    assert f"to {contract['expire']['max_exp_s']['value']} s" in _row("short exp")
    flat = " ".join(DOC.split())
    assert f"up to {PER_DAEMON} at once" in flat and f"at most {MAX_JOBS}" in flat


def test_conform_help_points_to_the_contract(capsys):
    from rmkit.cli import main

    try:
        main(["conform", "--help"])
    except SystemExit:
        pass
    assert "spec/rmb/daemon.md" in capsys.readouterr().out


def test_what_the_kit_leaves_to_the_daemon_is_stated_with_the_kits_numbers():
    """The unstated items an implementer meets are each stated or named a freedom, with the numbers
    the harness uses; the seed sentence for an unknown twin in a fan-out is quoted as written."""
    from test_rmb_spec import SHARED, _norm

    timing = {k: v["value"] for k, v in rmb_spec().raw["freedoms"]["timing"].items()}
    assert f"at least {timing['slow_answer_s']:g} s" in _row("the HTTP client timeout")
    for item in ("the backlog entry's value", "the TTL for `exp 0`", "the parked envelope's value", "a non-base64 `dat`"):
        _row(item)
    assert "behaviour.yaml` `non_base64_dat`" in _row("a non-base64 `dat`")
    assert rmb_spec().behaviour("spec")["non_base64_dat"] == "either"
    ids = [f["id"] for f in rmb_spec().raw["freedoms"]["freedoms"]]
    assert f"[`freedoms.yaml`](freedoms.yaml), {ids[0]} to {ids[-1]}" in DOC
    flat = " ".join(DOC.split())
    quote = "if one or more twins are invalid, the message can't be processed, and an error message is pushed directly tot the `$ret` queue"
    assert quote in flat
    if SHARED is not None:
        assert _norm(quote) in _norm(next((SHARED / "seeds").glob("004_*.txt")).read_text(encoding="utf-8"))
    for field in ("`src`", "`dst`", "`uid`"):
        assert any(line.startswith(f"| {field} |") for line in DOC.splitlines()), field
