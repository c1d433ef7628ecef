"""The Corda log check under a declared bound (conformance/corda/stream.py, docs/corda-check-streaming.md):
where the bound holds, it finds what the exact check finds, in one process and in shares; and its
memory follows the messages open, not the log.

The logs are the reference machines' records under random schedules and crashes
(``corda_records_sim``), faulty receivers among them, with each injector's plant
(conformance/corda/faults.py) on top; the bound given is the tightest that holds for the log (the
longest gap between two successive records of one message), so that the check forgets as early
as the bound lets it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from rmkit.conformance.corda.checker import CordaLogChecker
from rmkit.conformance.corda.faults import PLANTERS
from rmkit.protocols.corda.model import corda_spec

import corda_records_sim as sim

PROFILES = ("spec", "corda-os", "corda-os-2021", "corda-ent-fastpath")


def _split(lines: list[dict], folder: Path) -> list[str]:
    """The events file and the export (in insertion order), as a node gives them."""
    events, rows = folder / "events.jsonl", folder / "processed.jsonl"
    events.write_text("".join(json.dumps(r) + "\n" for r in lines if "event" in r))
    rows.write_text("".join(json.dumps(r) + "\n" for r in sorted((r for r in lines if "event" not in r), key=lambda r: r["t"])))
    return [str(events), str(rows)]


def tightest_bound_ms(lines: list[dict]) -> int:
    """The longest gap between two successive records (by time) of one message: the least bound that holds."""
    times: dict[str, list] = {}
    for r in lines:
        times.setdefault(r["id"], []).append(r["t"])
    gap = 1
    for ts in times.values():
        ts.sort()
        gap = max([gap, *(b - a for a, b in zip(ts, ts[1:]))])
    return gap


def findings(report) -> list:
    return sorted((v.rule, v.subject) for v in report.violations)


def _run(profile: str, seed: int, messages: int, fault: str | None) -> list[dict]:
    text = sim.run(profile, seed, messages=messages, steps=40 + 15 * messages,
                   patch=sim.FAULTY[fault] if fault else None)
    return [json.loads(x) for x in text.splitlines()]


def _renamed(r: dict, k: int, t0: int, tx0: int) -> dict:
    """Record ``r`` of run ``k``: its own ids, sessions, sender keys and deliveries, its time from
    ``t0``, its transactions after ``tx0``."""
    r = dict(r, t=r["t"] + t0, id=f"{r['id'][:2]}r{k}{r['id'][2:]}")
    for name in ("session", "sender", "delivery"):
        if isinstance(r.get(name), str):
            r[name] = f"r{k}-{r[name]}"
    if "tx" in r:
        r["tx"] += tx0
    return r


def _log(profile: str, seed: int, messages: int, fault: str | None, plant: str | None, runs: int = 1,
         overlap: float = 0.5) -> list[dict]:
    """``runs`` simulated runs one after another, each starting when ``overlap`` of the one before had
    passed (their messages interleave), as one log: the events in time order, then the export."""
    events, rows, t0, tx0 = [], [], 0, 0
    for k in range(runs):
        lines = _run(profile, seed + k, messages, fault)
        start = lines[0]["t"]
        events += [_renamed(r, k, t0, tx0) for r in lines if "event" in r]
        rows += [_renamed(r, k, t0, tx0) for r in lines if "event" not in r]
        t0 += int((lines[-1]["t"] - start) * overlap) + 1
        tx0 += 1 + max((r["tx"] for r in lines if "tx" in r), default=0)
    events.sort(key=lambda r: r["t"])
    rows.sort(key=lambda r: r["t"])
    lines = events + rows
    if plant is not None:
        got = PLANTERS[plant](lines, random.Random(seed), corda_spec(profile))
        if got is not None:
            lines = got[0]
    return lines


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(profile=st.sampled_from(PROFILES), seed=st.integers(0, 10_000), messages=st.integers(2, 9),
       fault=st.sampled_from([None, *sorted(sim.FAULTY)]), plant=st.sampled_from([None, *sorted(PLANTERS)]),
       settled=st.booleans(), runs=st.integers(1, 6), overlap=st.sampled_from([0.3, 0.7, 1.0, 1.5]))
def test_where_the_bound_holds_the_bounded_check_finds_what_the_exact_one_finds(tmp_path_factory, profile, seed,
                                                                                messages, fault, plant, settled,
                                                                                runs, overlap):
    lines = _log(profile, seed, messages, fault, plant, runs, overlap)
    inputs = _split(lines, tmp_path_factory.mktemp("log"))
    exact = CordaLogChecker(profile, settled=settled).run(inputs)
    bound = tightest_bound_ms(lines) / 1000
    one = CordaLogChecker(profile, settled=settled, horizon_s=bound).run(inputs)
    assert findings(one) == findings(exact)
    assert one.counts == exact.counts
    assert one.metrics["late_records"] == 0
    shares = CordaLogChecker(profile, settled=settled, horizon_s=bound, jobs=2).run(inputs)
    assert findings(shares) == findings(exact)
    assert shares.counts == exact.counts
    # as `rmkit audit` hands a share its records: one input after another
    audit = CordaLogChecker(profile, settled=settled, horizon_s=bound)
    audited = audit.merge(inputs, [audit.check_share(inputs, audit.file_batches(inputs))])
    assert findings(audited) == findings(exact)


def test_memory_follows_the_open_messages_not_the_log(tmp_path):
    """Four times the runs, one after another: the most tracks and ids open at once (summed over the
    engines) stay about those of a run or two, while the ids grow with the log."""
    peaks, ids = [], []
    bound = tightest_bound_ms(_log("spec", 7, 6, None, None, runs=20, overlap=1.0)) / 1000  # (holds for its first 5 runs too)
    for runs in (5, 20):
        lines = _log("spec", 7, 6, None, None, runs=runs, overlap=1.0)
        folder = tmp_path / str(runs)
        folder.mkdir()
        report = CordaLogChecker("spec", settled=True, horizon_s=bound).run(_split(lines, folder))
        peaks.append(report.metrics["peak_open"])
        ids.append(report.subjects)
    assert ids[1] == 4 * ids[0]
    # (a denser moment of the longer log may hold a few more: the peak grows by far less than the ids)
    assert peaks[1] - peaks[0] < (ids[1] - ids[0]) / 4, (peaks, ids)
    assert peaks[1] < ids[1] / 2, (peaks, ids)


def test_a_record_after_its_message_was_judged_is_late_and_judged_against_the_memo(tmp_path):
    """The bound broken: a copy, its NEW answer and a second commit come after the message was judged;
    each is counted late, and the answer and the commit are judged against what stays of the message
    (its first commit) as the exact check judges them."""
    t0 = 1_767_225_600_000
    ev = [{"t": t0, "node": "B", "event": "received", "id": "R-1", "sender": "k", "seq": 1, "session": "s", "delivery": "d1"},
          {"t": t0 + 1, "node": "B", "event": "dedup", "id": "R-1", "verdict": "NEW"},
          {"t": t0 + 2, "node": "B", "event": "committed", "id": "R-1", "tx": 1},
          {"t": t0 + 3, "node": "B", "event": "acked", "id": "R-1", "delivery": "d1"}]
    # the clock moves on past R-1's horizon (its last record + 4 ms); its memo is kept 4 ms more
    ev += [{"t": t0 + 8, "node": "B", "event": "received", "id": "R-2", "sender": "k", "seq": 2, "session": "s", "delivery": "e"}]
    ev += [{"t": t0 + 9, "node": "B", "event": "received", "id": "R-1", "sender": "k", "seq": None, "session": "s", "delivery": "d2"},
           {"t": t0 + 9, "node": "B", "event": "dedup", "id": "R-1", "verdict": "NEW"},
           {"t": t0 + 10, "node": "B", "event": "committed", "id": "R-1", "tx": 9}]
    rows = [{"node": "B", "id": "R-1", "sender": "k", "seq": 1, "tx": 1, "t": t0 + 2}]
    events, export = tmp_path / "events.jsonl", tmp_path / "processed.jsonl"
    events.write_text("".join(json.dumps(r) + "\n" for r in ev))
    export.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = CordaLogChecker("spec", horizon_s=0.004).run([str(events), str(export)])
    assert ("CORDA-DEDUP-001", "R-1") in findings(report)
    assert ("CORDA-DEDUP-005", "R-1") in findings(report)
    assert report.metrics["late_records"] == 3
    exact = CordaLogChecker("spec").run([str(events), str(export)])
    assert {f for f in findings(exact) if f[1] == "R-1"} <= set(findings(report))


def test_without_a_bound_nothing_is_forgotten_and_the_spec_declares_none():
    """The documents bound no message's life (records.yaml horizon): the default check is exact."""
    from rmkit.conformance.corda.checker import spec_horizon_s

    assert spec_horizon_s() is None
    assert CordaLogChecker("spec").bound_ms is None
    assert CordaLogChecker("spec", horizon_s=2.5).bound_ms == 2500


def test_a_bound_the_spec_declares_is_the_default(monkeypatch):
    from rmkit.conformance.corda import checker

    records = {**checker.corda_spec_records(), "horizon": {"bound": 30, "kept_until": "horizon"}}
    monkeypatch.setattr(checker, "corda_spec_records", lambda: records)
    assert checker.CordaLogChecker("spec").bound_ms == 30_000
    assert checker.CordaLogChecker("spec", horizon_s=5).bound_ms == 5000


def test_the_command_line_declares_the_bound(tmp_path, capsys):
    from rmkit.cli import main

    lines = _log("spec", 3, 5, "ack_before_commit", None, runs=3)
    inputs = _split(lines, tmp_path)
    bound = tightest_bound_ms(lines) / 1000
    code = main(["check", "--protocol", "corda", "--settled", "--horizon", str(bound), "--format", "json", *inputs])
    report = json.loads(capsys.readouterr().out)
    exact = CordaLogChecker("spec", settled=True).run(inputs)
    assert code == (1 if exact.verdict == "fail" else 0)
    assert report["metrics"]["horizon_s"] == bound
    assert sorted((v["rule"], v["message_id"]) for v in report["violations"]) == findings(exact)
