"""The REMP checker run in shares (what `rmkit audit` runs on each Spark partition), without Spark:
the shares' records chosen here by message id, fed in log order, merged as `--jobs` merges them.
Shows the bound of the one value a share approximates (the log's running clock) and that roles a
share has not seen are settled on the whole log's."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import orjson
import pytest

from rmkit.conformance.remp.checker import LINE_BITS, RempLogChecker, final_clock
from rmkit.conformance.remp.sharded import RempShards
from rmkit.logread import unwrap_kafka

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "remp"


def records(path: Path) -> list[tuple[int, bytes]]:
    return [(1 + i, line) for i, line in enumerate(path.read_bytes().split(b"\n")) if line]


def share_of(line: bytes, n: int) -> int:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return 0
    if "kind" not in obj and "value" in obj:
        obj = unwrap_kafka(obj)[0] or {}
    mid = obj.get("message_id")
    return zlib.crc32(mid.lower().encode()) % n if isinstance(mid, str) else 0


def shares_of(path: Path, n: int) -> list[list[tuple[int, bytes]]]:
    out = [[] for _ in range(n)]
    for ref, line in records(path):
        out[share_of(line, n)].append((ref, line))
    return out


def clocks(recs, profile="spec", lifetime=60):
    """The checker's running clock after each record (fed one at a time), and the checker."""
    c = RempLogChecker(profile, lifetime_s=lifetime, jobs=1, max_examples=0)
    c.begin(["log"], shared=True)
    out = []
    for ref, line in recs:
        c.feed([([ref], [line])])
        out.append(c.hwm)
    return out, c


def time_and_key(line: bytes):
    obj = orjson.loads(line)
    kts = None
    if "kind" not in obj and "value" in obj:
        obj, kts = unwrap_kafka(obj)[:2]
    t = obj.get("timestamp") or kts
    return t, obj.get("source_id") or obj.get("message_id")


@pytest.mark.parametrize("n", [2, 4, 8])
def test_a_shares_clock_never_runs_ahead_and_lags_by_its_own_two_source_evidence(n):
    """The clock is the latest time two different sources reached. A share computes it over its
    own records: (1) never ahead of the log's clock at the same position (a subset's maxima are
    smaller), (2) behind it by at most the log's clock minus the earlier time of the share's two
    most recent receipts from different sources, (3) the final clock, reconciled over the shares
    as --jobs does, is the log's."""
    path = FIX / "logs" / "sim-spec-clean.jsonl"
    everything = records(path)
    log_clock, whole = clocks(everything)
    at = {ref: h for (ref, _), h in zip(everything, log_clock)}
    ends, tops, worst = [], [], 0
    for recs in shares_of(path, n):
        share_clock, c = clocks(recs)
        last = {}  # source -> the time of its most recent receipt in the share
        for (ref, line), mine in zip(recs, share_clock):
            t, key = time_and_key(line)
            last[key] = t
            glob = at[ref]
            if mine is None:
                continue
            assert mine <= glob, (ref, mine, glob)
            recent = sorted(last.values())[-2]  # the second most recent source's latest time
            assert glob - mine <= max(0, glob - recent), (ref, glob, mine, recent)
            worst = max(worst, glob - mine)
        ends.append(c.hwm)
        tops.append(c.top_mark)
    assert final_clock(ends, tops, whole.clock_jump_ms) == whole.end_clock([whole.hwm], [whole.top_mark])
    # on this small log (a few hundred messages, up to 8 shares) the lag stays well below the time
    # after which a message is closed (horizon + 60 s), so no receipt changes side
    assert worst < whole.close_after_ms / 4, worst


@pytest.mark.parametrize("n", [2, 3, 5])
def test_shares_merge_to_the_single_process_report(n):
    """Every simulator fixture in n shares (by message id) gives rmkit check's report."""
    lm = json.loads((FIX / "logs" / "manifest.json").read_text())
    for f in lm["logs"]:
        path = FIX / "logs" / f["file"]
        one = RempLogChecker(f["profile"], lifetime_s=f.get("lifetime"), jobs=1, max_examples=0).run([str(path)])
        sharded = RempShards(RempLogChecker(f["profile"], lifetime_s=f.get("lifetime"), max_examples=0)._kwargs)
        parts = [sharded.check_share([str(path)], [([r for r, _ in recs], [x for _, x in recs])])
                 for recs in shares_of(path, n) if recs]
        got = sharded.merge([str(path)], parts)
        assert {(v.rule, v.subject) for v in got.violations} == {(v.rule, v.subject) for v in one.violations}
        assert (got.counts, got.records, got.subjects, got.metrics["outcomes"], got.metrics["per_source"]) == \
               (one.counts, one.records, one.subjects, one.metrics["outcomes"], one.metrics["per_source"])


def test_a_role_shown_in_another_share_judges_the_message_as_one_process_does():
    """ever-node: Finalized is issued by both roles, so the full node is known as one only by its
    RejectedByFullnode for another message. With that message in another share, the share holding
    the finalized message holds it back and judges it on the log's first roles: REMP-OUTCOME-001
    as rmkit check finds it."""
    path = FIX / "rules" / "ever-node" / "REMP-OUTCOME-001.jsonl"
    one = RempLogChecker("ever-node", jobs=1, max_examples=0).run([str(path)])
    assert {v.rule for v in one.violations} == {"REMP-OUTCOME-001"}
    recs = records(path)
    first_mid = orjson.loads(recs[0][1])["value"]["message_id"]
    apart = [[r for r in recs if first_mid.encode() in r[1]], [r for r in recs if first_mid.encode() not in r[1]]]
    sharded = RempShards(RempLogChecker("ever-node", max_examples=0)._kwargs)
    parts = [sharded.check_share([str(path)], [([r for r, _ in p], [x for _, x in p])]) for p in apart]
    got = sharded.merge([str(path)], parts)
    assert {(v.rule, v.subject) for v in got.violations} == {(v.rule, v.subject) for v in one.violations}
    # a share judging on its own roles would have missed it
    alone = RempLogChecker("ever-node", jobs=1, max_examples=0)
    alone.begin([str(path)])
    alone.feed([([r for r, _ in apart[1]], [x for _, x in apart[1]])])
    assert not alone.finish(alone.hwm).violations


def test_a_share_travels_between_processes(tmp_path):
    """A share is pickled (Spark sends it back to the driver): the model is rebuilt from the profile."""
    import pickle

    path = FIX / "logs" / "sim-spec-faults.jsonl"
    sharded = RempShards(RempLogChecker("spec", lifetime_s=60, max_examples=0)._kwargs)
    recs = records(path)
    share = sharded.check_share([str(path)], [([r for r, _ in recs], [x for _, x in recs])])
    back = pickle.loads(pickle.dumps(share))
    assert back.model is share.model and back.progress is None
    want = RempLogChecker("spec", lifetime_s=60, jobs=1, max_examples=0).run([str(path)])
    assert sharded.merge([str(path)], [back]).counts == want.counts
    assert recs[0][0] >> LINE_BITS == 0


def test_a_message_closed_before_its_source_showed_a_role_in_the_share_is_held_back(tmp_path):
    """The share closes the finalized message mid-run (another message of the share moves its
    clock 1,000 s on) before it has seen the full node issue a full-node kind: it holds the message
    back and judges it at the merge on the role the full node showed first in the log (in another
    share, before the message's last receipt), as rmkit check judges it."""
    src = FIX / "rules" / "ever-node" / "REMP-OUTCOME-001.jsonl"
    lines = src.read_bytes().split(b"\n")
    lines = [x for x in lines if x]
    later = []
    for n, line in enumerate(lines[1:3]):  # two validators' PutIntoQueue for a new message, 1,000 s later
        rec = orjson.loads(line)
        rec["timestamp"] += 1_000_000
        rec["offset"] += 100
        rec["key"] = rec["value"]["message_id"] = "ab" * 32
        later.append(orjson.dumps(rec))
    path = tmp_path / "held-back.jsonl"
    path.write_bytes(b"\n".join(lines + later) + b"\n")
    one = RempLogChecker("ever-node", jobs=1, max_examples=0).run([str(path)])
    assert ("REMP-OUTCOME-001", orjson.loads(lines[1])["value"]["message_id"]) in {(v.rule, v.subject) for v in one.violations}
    recs = records(path)
    apart = [recs[:1], recs[1:]]  # the full node's RejectedByFullnode alone in the first share
    sharded = RempShards(RempLogChecker("ever-node", max_examples=0)._kwargs)
    parts = [sharded.check_share([str(path)], [([r for r, _ in p], [x for _, x in p])]) for p in apart]
    assert len(parts[1]._deferred) == 1
    got = sharded.merge([str(path)], parts)
    assert {(v.rule, v.subject) for v in got.violations} == {(v.rule, v.subject) for v in one.violations}
    assert got.counts == one.counts and got.metrics["outcomes"] == one.metrics["outcomes"]


@pytest.mark.parametrize("n", [2, 3])
def test_a_rule_reported_once_per_source_is_reported_once_over_the_shares(n, tmp_path):
    """REMP-TIME-002 names a source's first timestamp in unix seconds once: sharded (the audit's
    partitions, --jobs's processes) it is the same single finding, whichever shares the source's
    other messages fall into."""
    recs = [json.loads(x) for x in (FIX / "logs" / "sim-spec-clean.jsonl").read_text().splitlines()]
    src = next(r["source_id"] for r in recs if r["kind"] == "IncludedIntoBlock")  # a validator
    for r in recs:
        if r["source_id"] == src:
            r["timestamp"] //= 1000
    path = tmp_path / "seconds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    one = RempLogChecker("spec", lifetime_s=60, jobs=1, max_examples=0).run([str(path)])
    assert one.counts["REMP-TIME-002"] == 1
    held = {share_of(json.dumps(r).encode(), n) for r in recs if r["source_id"] == src}
    assert len(held) == n  # the source reports on messages of every share
    sharded = RempShards(RempLogChecker("spec", lifetime_s=60, max_examples=0)._kwargs)
    parts = [sharded.check_share([str(path)], [([r for r, _ in recs], [x for _, x in recs])])
             for recs in shares_of(path, n) if recs]
    processes = RempLogChecker("spec", lifetime_s=60, jobs=n, max_examples=0).run([str(path)])
    for got in (sharded.merge([str(path)], parts), processes):
        assert [(v.rule, v.subject, v.evidence) for v in got.violations] == \
               [(v.rule, v.subject, v.evidence) for v in one.violations]
        assert got.counts == one.counts


def _sharded_and_processes(path: Path, n: int, **kw) -> list:
    sharded = RempShards(RempLogChecker("spec", max_examples=0, **kw)._kwargs)
    parts = [sharded.check_share([str(path)], [([r for r, _ in recs], [x for _, x in recs])])
             for recs in shares_of(path, n) if recs]
    return [sharded.merge([str(path)], parts), RempLogChecker("spec", jobs=n, max_examples=0, **kw).run([str(path)])]


@pytest.mark.parametrize("same_source", [False, True], ids=["two-sources", "one-source-ahead"])
def test_the_final_clock_and_its_outlier_are_the_logs_when_the_latest_receipts_fall_in_two_shares(same_source, tmp_path):
    """The log's last two receipts, well past the clock-jump limit and for messages of different
    shares: from two sources, they set the log's final clock (no share's own clock reaches it);
    from one source, they are one clock outlier (REMP-TIME-001), the first of them, not one per
    share."""
    recs = [json.loads(x) for x in (FIX / "logs" / "sim-spec-clean.jsonl").read_text().splitlines()]
    probe = RempLogChecker("spec", lifetime_s=60)
    at = max(r["timestamp"] for r in recs) + probe.clock_jump_ms + 10_000
    by_share = {}
    for r in recs:
        if r["kind"] == "IncludedIntoBlock":
            by_share.setdefault(share_of(json.dumps(r).encode(), 2), r)
    a, b = by_share[0], by_share[1]
    assert a["source_id"] != b["source_id"]
    fresh = {}  # a new message of each share: no tomb, no open state, only the clock differs
    for i in range(1000):
        mid = f"{i:064x}"
        fresh.setdefault(share_of(json.dumps({"message_id": mid}).encode(), 2), mid)
    last = [a | {"timestamp": at, "message_id": fresh[0]},
            b | {"timestamp": at, "message_id": fresh[1], "source_id": a["source_id"] if same_source else b["source_id"]}]
    path = tmp_path / "last.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs + last))
    one = RempLogChecker("spec", lifetime_s=60, jobs=1, max_examples=0).run([str(path)])
    assert one.counts.get("REMP-TIME-001", 0) == (1 if same_source else 0)
    if not same_source:  # the log's clock reached the last receipts
        assert one.metrics["log_time_span_s"] * 1000 == at - min(r["timestamp"] for r in recs)
    for got in _sharded_and_processes(path, 2, lifetime_s=60):
        assert [(v.rule, v.subject, v.evidence) for v in got.violations] == \
               [(v.rule, v.subject, v.evidence) for v in one.violations]
        assert (got.counts, got.metrics["log_time_span_s"], got.metrics["outcomes"]) == \
               (one.counts, one.metrics["log_time_span_s"], one.metrics["outcomes"])


def test_a_message_closes_by_the_clock_alone_not_by_when_the_checker_sweeps(tmp_path):
    """A receipt that arrives after its message's close point (horizon + 60 s after the first
    receipt) is late, also when the clock passed that point between two sweeps (a sweep runs
    when the clock has moved a second on): so that one process and every share, whose sweeps fall
    at other times, close the message at the same receipt."""
    t0, fn, sig = 1_700_000_000_000, "e3" * 32, "25" * 64
    vals = [f"{i:02x}" * 32 for i in range(1, 5)]
    m = "5a" * 32

    def receipt(kind, mid, dt, src, **extra):
        return {"kind": kind, "message_id": mid, "timestamp": t0 + dt, "source_id": src, "signature": sig, **extra}

    # the message whose receipts move the clock past M's close point shares M's share (of 2 and
    # of 3, by this test's rule and by --jobs's, the id's last digit): the share's clock is the log's
    with_m = next(mid for mid in (f"{k:063x}a" for k in range(10_000))
                  if all(share_of(json.dumps({"message_id": mid}).encode(), n) ==
                         share_of(json.dumps({"message_id": m}).encode(), n) for n in (2, 3)))
    log = [receipt("SentToValidators", m, 0, fn, sent_to=7, total_validators=7)]
    for mid, dt, pair in [(f"{1:064x}", 88_500, vals[:2]), (f"{2:064x}", 89_600, vals[2:]), (with_m, 90_200, vals[:2])]:
        log += [receipt("PutIntoQueue", mid, dt, v) for v in pair]
    log.append(receipt("RejectedByFullnode", m, 90_300, fn, error="Can't deserialize message"))
    path = tmp_path / "close.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in log))
    kw = dict(lifetime_s=60, horizon_s=30)
    one = RempLogChecker("spec", jobs=1, max_examples=0, **kw).run([str(path)])
    assert RempLogChecker("spec", **kw).close_after_ms == 90_000  # the clock (90.2 s) is past M's close point
    assert one.metrics["late_receipts"] == 1 and ("REMP-LIVE-001", m) in {(v.rule, v.subject) for v in one.violations}
    for n in (2, 3):
        for got in _sharded_and_processes(path, n, **kw):
            assert {(v.rule, v.subject) for v in got.violations} == {(v.rule, v.subject) for v in one.violations}
            assert (got.counts, got.metrics["late_receipts"]) == (one.counts, one.metrics["late_receipts"])
