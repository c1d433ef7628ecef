"""The TLA+ model and the Python reference machines agree, both ways, and the checks can fail."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter

import pytest

from rmkit.conformance.remp.agreement import promises, receipts, replay, tracecheck
from rmkit.conformance.remp.agreement.explore import TraceStep, explore, follow
from rmkit.conformance.remp.agreement.harness import (FULLNODE_TAKES, ROTATING, SMALL, Harness, Scenario,
                                                      block_number, block_ref)
from rmkit.conformance.remp.agreement.modules import model_dir
from rmkit.protocols.remp.events import (CollationRound, HandToCollator, ReceiptsFromValidator,
                                         ShardBlockIgnored, ShardBlockRejected)
from rmkit.reference_impl.remp.fullnode import FullNode
from rmkit.reference_impl.remp.validator import Validator

from conftest import FIXTURES

REGRESSIONS = FIXTURES / "agreement"
# every action of the model's Next, read from the model (the name its `last` record gives it)
ALL_STEPS = set(re.findall(r'last\' = \[a \|-> "(\w+)"', (model_dir() / "REMPSteps.tla").read_text())) - {"Init"}


# behaviours drawn per (profile, scenario): reading TLC's printed states is most of the time
TRACES = {("spec", "small"): 20, ("spec", "rotating"): 30, ("ever-node", "rotating"): 30}


@pytest.fixture(scope="module")
def drawn():
    """TLC's random behaviours of the model: a fixed seed, a few dozen per profile and scenario;
    those of the documents' profile with REMP.tla's promises checked in every state (the broken
    ones under the key "broken")."""
    rotating, broken = promises.draw_checked(ROTATING, traces=TRACES[("spec", "rotating")], depth=40, seed=12)
    return {("spec", "small"): replay.simulate(SMALL, traces=TRACES[("spec", "small")], depth=30, seed=11),
            ("spec", "rotating"): rotating,
            ("ever-node", "rotating"): replay.simulate(ROTATING, traces=TRACES[("ever-node", "rotating")], depth=40,
                                                       seed=13, profile="ever-node"),
            "broken": broken}


@pytest.fixture(scope="module")
def behaviours(drawn):
    return {k: v for k, v in drawn.items() if k != "broken"}


def _model_receipts(traces) -> int:
    return sum(len(r["rc"]) + len(r["fr"]) for tr in traces for s in tr[1:]
               for r in [receipts.from_tlc(s.values.get("out"))])


@pytest.mark.parametrize("profile,name,sc", [("spec", "small", SMALL), ("spec", "rotating", ROTATING),
                                             ("ever-node", "rotating", ROTATING)])
def test_model_behaviours_replay_into_the_reference(behaviours, profile, name, sc):
    """Every step's statuses and receipts (kind, block, source) agree, in each profile."""
    traces = behaviours[(profile, name)]
    assert len(traces) == TRACES[(profile, name)]
    assert _model_receipts(traces) >= 2 * len(traces), "the behaviours send too few receipts to compare"
    for states in traces:
        d = replay.replay_behaviour(sc, states, profile)
        assert d is None, d.render()


def _kinds(traces) -> Counter:
    return Counter((r["src"] == "fullnode", r["k"]) for tr in traces for s in tr[1:]
                   for out in [receipts.from_tlc(s.values.get("out"))] for r in out["rc"] + out["fr"])


def test_model_behaviours_cover_every_kind_of_step(behaviours):
    for profile in ("spec", "ever-node"):
        seen = Counter(s.values["last"]["a"] for (p, _), traces in behaviours.items() if p == profile
                       for tr in traces for s in tr[1:])
        assert set(seen) >= ALL_STEPS - {"Withhold"} and seen["Announce"], (profile, sorted(ALL_STEPS - set(seen)))
    seen = {s.values["last"]["a"] for traces in behaviours.values() for tr in traces for s in tr[1:]}
    assert seen == ALL_STEPS, f"steps never drawn: {sorted(ALL_STEPS - seen)}"


def test_the_ever_node_behaviours_reach_what_differs_from_the_documents(behaviours):
    """The profile's own receipts are compared, not only the documents' shared ones: validators'
    Finalized, AcceptedByQueue at each hand-off, IgnoredByQueue for a message from an older
    session's catchain, the full node's RejectedByFullnode of a resubmission; and none of the
    kinds the profile's table leaves out (SentToValidators, Duplicate, Timeout)."""
    ever = _kinds(behaviours[("ever-node", "rotating")])
    for kind in ((False, "Finalized"), (False, "AcceptedByQueue"), (False, "IgnoredByQueue"),
                 (True, "RejectedByFullnode")):
        assert ever[kind], kind
    assert not {k for _, k in ever} & {"SentToValidators", "Duplicate", "Timeout"}
    spec = _kinds(behaviours[("spec", "rotating")])
    assert spec[(True, "Finalized")] and not spec[(False, "Finalized")] and not spec[(False, "IgnoredByQueue")]


def test_the_model_keeps_the_promises_of_the_adversarial_model(drawn):
    """REMP.tla's promises (NoReplay, NoInclusionAfterObsolete, FinalizedWasSubmittedAndAccepted),
    instantiated on REMPSteps' variables, hold in every state of the behaviours replayed above."""
    assert not drawn["broken"], [c.name for c in drawn["broken"]]
    traces = drawn[("spec", "rotating")]
    assert len(traces) == TRACES[("spec", "rotating")]
    assert sum(len(t) for t in traces) >= 20 * len(traces)
    assert any(s.values["last"]["a"] == "McCommit" for t in traces for s in t)


@pytest.mark.parametrize("promise,patch", [
    ("NoReplay", {"    /\\ ~Refused(b)\n": "",  # no validator refuses a replaying block, and the chain
                  "    /\\ blocks[b].h = Height        \\* and before another block of its round is accepted\n": ""}),
    ("FinalizedWasSubmittedAndAccepted", {  # the full node finalizes what is open, not what the block holds
        'Committed(b, m) == m \\in blocks[b].msgs /\\ fk[m].st = "open"': 'Committed(b, m) == fk[m].st = "open"'}),
], ids=["replay", "finalize"])
def test_the_promises_check_fails_when_a_mechanism_of_the_step_model_is_removed(promise, patch):
    """The link can fail: REMPSteps with a mechanism removed breaks the promise through the same
    mapping. (Removing only the validators' refusal does not: in REMPSteps a candidate is accepted
    only at the chain's height, which alone keeps a message out of two blocks.)"""
    broken = promises.check_mutant(ROTATING, patch, depth=40, seconds=120, seed=1)
    assert broken is not None and broken.name == promise, broken


def test_the_full_node_is_a_party_to_every_event(behaviours):
    """The audit: every action of the model (and a Tick) says what the full node takes at it, and
    replaying the model's behaviours steps the full node with exactly that event at each step (and
    with the validators' receipts, ReceiptsFromValidator, at every step where they send one)."""
    assert set(FULLNODE_TAKES) == ALL_STEPS | {"Tick"}
    taken = Counter()
    for (profile, name), traces in behaviours.items():
        sc = SMALL if name == "small" else ROTATING
        for states in traces[:10]:
            h = Harness(sc, profile=profile)
            for step in replay.steps_of(states):
                before = len(h.fn_events)
                h.apply(step)
                events = [t for a, t in h.fn_events[before:]]
                assert all(a == step["a"] for a, _ in h.fn_events[before:])
                own = [t for t in events if t is not ReceiptsFromValidator]
                want = FULLNODE_TAKES[step["a"]][0]
                assert own == ([want] if want is not None else []), (step, events)
                assert (ReceiptsFromValidator in events) == bool(h.step_receipts()["rc"]), (step, events)
                taken[step["a"]] += 1
    assert {"ShardIgnore", "ShardReject", "Announce", "McCommit"} <= set(taken)


# (SMALL walks are matched up to the planted event in the rejection tests below)
@pytest.mark.parametrize("profile,seed", [("spec", 3), ("spec", 4), ("ever-node", 5)])
def test_reference_traces_are_admitted_by_the_model(profile, seed):
    """Events proposed without the model's guards: the model takes those the reference took
    (sending the same receipts) and cannot take those the reference refused."""
    sc = ROTATING
    steps = explore(sc, seed, 50, profile=profile)
    assert len(steps) == 50
    assert sum(len(s.receipts["rc"]) + len(s.receipts["fr"]) for s in steps) >= 5
    assert any(not s.taken for s in steps)
    v = tracecheck.check_trace(sc, steps, profile=profile)
    assert v.verdict == tracecheck.ACCEPTED, v.render()
    assert v.steps == len(steps)


def test_walks_propose_events_the_model_refuses():
    """The walker copies no guard: across walks it proposes events the environment or the
    machines refuse (stale or decided blocks, a block the validators refuse as a replay) and
    events the reference takes without a trace (a second submission, an idle collation round)."""
    steps = [s for seed in (3, 4, 6) for s in explore(ROTATING, seed, 50)]
    refused = Counter(s.action["a"] for s in steps if not s.taken)
    assert {"ShardAccept", "McCommit"} <= set(refused), refused
    assert any(s.taken and s.action["a"] == "Submit" and not s.receipts["fr"] for s in steps)


def _first_receipt_step(steps):
    for i, s in enumerate(steps):
        if any(p != "none" for ms in s.statuses["pos"].values() for p in ms.values()):
            return i
    raise AssertionError("the walk made no validator receipt")


def test_a_trace_with_a_wrong_status_is_rejected_at_that_step():
    steps = explore(ROTATING, 3, 50)
    k = _first_receipt_step(steps)
    bad = json.loads(json.dumps(steps[k].statuses))
    v = next(v for v, ms in bad["pos"].items() if any(p != "none" for p in ms.values()))
    m = next(m for m, p in bad["pos"][v].items() if p != "none")
    bad["pos"][v][m] = "rejected" if bad["pos"][v][m] != "rejected" else "queue"
    tampered = steps[:k] + [TraceStep(steps[k].action, bad, True, steps[k].receipts)] + steps[k + 1:]
    verdict = tracecheck.check_trace(ROTATING, tampered, probe=False)
    assert verdict.verdict == tracecheck.REJECTED
    assert verdict.first_unmatched == k + 1
    assert f"rejected at event {k + 1}" in verdict.render()


def test_a_trace_with_a_step_the_model_cannot_take_is_rejected():
    """A catchain record nobody posted, which the reference takes with a trace: no receipt and
    no status changed, but a record it posts on (with a receipt, the receipts differ: below)."""
    steps = explore(SMALL, 2, 50)
    ghost = TraceStep({"a": "DeliverRecord", "r": {"k": "new", "m": "m1"}, "to": frozenset({"v1"})},
                      steps[0].statuses, True, {"rc": [], "fr": []}, False)
    verdict = tracecheck.check_trace(SMALL, [steps[0], ghost] + steps[1:], probe=False)
    assert verdict.verdict == tracecheck.REJECTED and verdict.first_unmatched == 2


def test_an_event_the_reference_refuses_but_the_model_takes_is_rejected():
    """The verdicts are compared: an idle collation round (nothing to collate: no receipt, no
    status changes) that the model takes and the reference is made to refuse. Only the verdicts
    differ there."""
    steps = explore(SMALL, 2, 50)  # SMALL: every honest validator is a member of every session
    k = next(i for i, s in enumerate(steps) if s.action["a"] == "Collate" and not s.action["res"])
    refused = TraceStep(steps[k].action, steps[k].statuses, False, steps[k].receipts, steps[k].quiet)
    assert steps[k].taken and not steps[k].receipts["rc"] and steps[k].statuses == steps[k - 1].statuses
    verdict = tracecheck.check_trace(SMALL, steps[:k] + [refused], probe=False)
    assert verdict.verdict == tracecheck.REJECTED and verdict.first_unmatched == k + 1
    assert "the reference refused it" in verdict.render()


def _ignored_reported_as_queued(real_emit):
    """A planted divergence: IgnoredByCollator reported as PutIntoQueue. Both move the validator
    to the queue, so every status stays the same: only the receipt's kind differs."""

    def emit(self, out, m, kind, *a, **kw):
        return real_emit(self, out, m, "PutIntoQueue" if kind == "IgnoredByCollator" else kind, *a, **kw)

    return emit


def _block_off_by_seven(real_emit):
    """A planted divergence: IncludedIntoBlock names another block; statuses stay the same."""

    def emit(self, out, m, kind, *a, **kw):
        if kind == "IncludedIntoBlock":
            kw["block"] = block_ref(block_number(kw["block"]) + 7)
        return real_emit(self, out, m, kind, *a, **kw)

    return emit


def _fullnode_signs_as_a_validator(real_emit):
    """A planted divergence: the full node's receipts name a validator as their source; the full
    node's statuses are read by role, so they stay the same: only the receipt's source differs."""

    def emit(self, out, mid, kind, time, **fields):
        sent = real_emit(self, out, mid, kind, time, **fields)
        if sent:
            pub = out[-1]
            out[-1] = dataclasses.replace(pub, receipt=dataclasses.replace(pub.receipt, source_id="v1"))
        return sent

    return emit


@pytest.mark.parametrize("machine,mutant,kind", [(Validator, _ignored_reported_as_queued, "PutIntoQueue"),
                                                 (Validator, _block_off_by_seven, "IncludedIntoBlock"),
                                                 (FullNode, _fullnode_signs_as_a_validator, "v1 ")],
                         ids=["kind", "block", "source"])
def test_a_wrong_receipt_with_the_right_statuses_is_caught_replaying_the_model(behaviours, monkeypatch, machine,
                                                                               mutant, kind):
    monkeypatch.setattr(machine, "_emit", mutant(machine._emit))
    found = [d for d in (replay.replay_behaviour(ROTATING, s) for s in behaviours[("spec", "rotating")]) if d is not None]
    assert found, "no behaviour reached the planted divergence"
    d = found[0]
    assert d.reason == "receipts differ"
    assert d.reference == {"pos": d.model["pos"], "fn": d.model["fn"]}, "statuses alone would not have caught it"
    text = d.render()
    assert "first difference:" in text and kind in text.split("first difference:")[1], text
    assert "events, with the receipts each side sent" in text


def _full_node_rejects_a_rejected_candidate(self, ev):
    """A planted full-node divergence: the shard's rejection of a candidate reported as the
    message's own rejection (RejectedByFullnode), though another validator may still collate it."""
    out: list = []
    if type(ev) is ShardBlockRejected:
        for mid in ev.msg_ids:
            m = self.msgs.get(mid)
            if m is not None and not m.final:
                self._emit(out, mid, "RejectedByFullnode", ev.time, error=ev.error)
    return out


def _full_node_closes_an_ignored_candidate(self, ev):
    """A planted full-node divergence: an ignored candidate taken as the end of its messages
    (marked final: no receipt now; a later resubmission is then ignored instead of rejected)."""
    if type(ev) is ShardBlockIgnored:
        for mid in ev.msg_ids:
            m = self.msgs.get(mid)
            if m is not None:
                m.final = True
    return []


@pytest.mark.parametrize("mutant,event", [(_full_node_rejects_a_rejected_candidate, ShardBlockRejected),
                                          (_full_node_closes_an_ignored_candidate, ShardBlockIgnored)],
                         ids=["rejected-candidate", "ignored-candidate"])
def test_a_wrong_full_node_reaction_to_a_failed_candidate_is_caught_only_by_stepping_it(behaviours, monkeypatch,
                                                                                          mutant, event):
    """The full node is stepped on ShardBlockIgnored / ShardBlockRejected: a wrong reaction there
    is caught (ever-node, where the full node's table lets it speak after SentToValidators), and
    the same machines pass when the full node is not told of failed candidates: only that step
    catches it."""
    traces = behaviours[("ever-node", "rotating")]
    monkeypatch.setattr(FullNode, "_on_candidate_fate", mutant)
    found = [d for d in (replay.replay_behaviour(ROTATING, s, "ever-node") for s in traces) if d is not None]
    assert found, "no behaviour reached the planted divergence"
    text = found[0].render()
    assert found[0].reason == "receipts differ" and "fullnode RejectedByFullnode" in text.split("first difference:")[1]
    stepped = Harness._fullnode

    def not_told(self, ev):
        return [] if type(ev) is event else stepped(self, ev)

    monkeypatch.setattr(Harness, "_fullnode", not_told)
    assert not [s for s in traces if replay.replay_behaviour(ROTATING, s, "ever-node") is not None]


# Two validators per session, the next set disjoint from the current one: a copy to the current
# set alone never reaches the next (in ROTATING the sets overlap, and 1/3+1 of the current set may
# already be 1/3+1 of the next: the documents' rule then holds without the announcement).
HANDOVER = Scenario(validators=("v1", "v2", "v3", "v4"), faulty=(), msgs=("m1",),
                    members=(("v1", "v2"), ("v3", "v4")), min_fanout=1)


def test_the_announced_set_reaches_the_model_and_a_full_node_ignoring_it_is_caught(monkeypatch):
    """UpcomingValidators: once the next session's set is announced, the full node sends a new
    message to that set too, and the model admits it; a full node that ignores the announcement
    sends to the current set only, which the model does not allow (000: "to each validator in the
    next shard (in case of session switching)")."""
    events = [{"a": "Announce"}, {"a": "Submit", "m": "m1"}, {"a": "Receive", "m": "m1", "v": "v4"}]
    steps = follow(HANDOVER, events)  # v4, of the next set, queues m1 in the current session
    assert all(s.taken for s in steps) and steps[1].action["to"] & {"v3", "v4"}
    v = tracecheck.check_trace(HANDOVER, steps, probe=False)
    assert v.verdict == tracecheck.ACCEPTED, v.render()
    monkeypatch.setattr(FullNode, "_on_upcoming", lambda self, ev: [])
    steps = follow(HANDOVER, events[:2])
    assert not steps[1].action["to"] & {"v3", "v4"}
    v = tracecheck.check_trace(HANDOVER, steps)
    assert v.verdict == tracecheck.REJECTED and v.first_unmatched == 2, v.render()
    assert "the reference took it; the model cannot take it" in v.render()


def test_a_wrong_receipt_with_the_right_statuses_is_caught_by_the_trace_check(monkeypatch):
    monkeypatch.setattr(Validator, "_emit", _ignored_reported_as_queued(Validator._emit))
    steps = explore(ROTATING, 3, 50)
    bad = next(i for i, s in enumerate(steps)
               if s.action["a"] == "Collate" and "ign" in s.action["res"].values())
    verdict = tracecheck.check_trace(ROTATING, steps[:bad + 1])
    assert verdict.verdict == tracecheck.REJECTED and verdict.first_unmatched == bad + 1, verdict.render()
    text = verdict.render()
    assert "first difference: model" in text and "IgnoredByCollator" in text and "PutIntoQueue" in text, text


def test_a_broken_reference_is_caught_and_saved_as_a_fixture(behaviours, monkeypatch, tmp_path):
    """A reference that forgets to report IncludedIntoBlock disagrees with the model; the saved
    fixture reproduces the disagreement without TLC."""
    real_emit = Validator._emit

    def no_included(self, out, m, kind, *a, **kw):
        if kind == "IncludedIntoBlock":
            return False
        return real_emit(self, out, m, kind, *a, **kw)

    monkeypatch.setattr(Validator, "_emit", no_included)
    found = [d for d in (replay.replay_behaviour(ROTATING, s) for s in behaviours[("spec", "rotating")]) if d is not None]
    assert found, "no behaviour collated a message"
    d = found[0]
    assert d.action["a"] == "Collate" and d.reason == "receipts differ"
    text = d.render()
    assert f"step {d.step}:" in text and "!=" in text and "collator" in text
    path = tmp_path / "regression.json"
    path.write_text(json.dumps(d.fixture(ROTATING)))
    again = replay.replay_fixture(path)
    assert again is not None and again.step == d.step
    monkeypatch.setattr(Validator, "_emit", real_emit)
    assert replay.replay_fixture(path) is None  # with the fix, the regression passes


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*.json")), ids=lambda p: p.stem)
def test_regression_fixtures_agree(path):
    d = replay.replay_fixture(path)
    assert d is None, d.render()


def test_regression_folder_is_not_empty():
    assert sorted(REGRESSIONS.glob("*.json")), "fixtures/remp/agreement holds the regressions the agreement found"


def test_obsolete_body_after_a_late_record_is_not_collated():
    """The model found it: a reject record that reaches a validator after the message expired, then
    the message's body, must not put an obsolete message back into the collation queue."""
    h = Harness(SMALL)
    for step in ({"a": "Submit", "m": "m1", "to": frozenset({"v1"})},
                 {"a": "Receive", "m": "m1", "v": "v1"},
                 {"a": "Collate", "v": "v1", "res": {"m1": "rej"}},
                 {"a": "Switch", "s": 1}, {"a": "Switch", "s": 2},
                 {"a": "DeliverRecord", "r": {"k": "reject", "m": "m1", "from": "v1"}, "to": frozenset({"v2"})},
                 {"a": "DeliverRecord", "r": {"k": "new", "m": "m1", "s": 0}, "to": frozenset({"v2"})}):
        h.apply(step)
    outs = h.validators["v2"].step(CollationRound(h.time + 1, 100))
    handed = [o for o in outs if isinstance(o, HandToCollator)]
    assert handed and handed[0].msg_ids == ()
    assert h.statuses()["pos"]["v2"]["m1"] == "none"


@pytest.mark.slow
@pytest.mark.parametrize("profile,seed", [("spec", 21), ("spec", 22), ("spec", 23), ("ever-node", 24), ("ever-node", 25)])
def test_agreement_at_scale(profile, seed):
    traces = replay.simulate(ROTATING, traces=500, depth=60, seed=seed, timeout=900, profile=profile)
    assert len(traces) == 500
    for states in traces:
        d = replay.replay_behaviour(ROTATING, states, profile)
        assert d is None, d.render()
    for k in range(20):
        v = tracecheck.check_trace(ROTATING, explore(ROTATING, seed * 100 + k, 80, profile=profile), profile=profile)
        assert v.verdict == tracecheck.ACCEPTED, v.render()


def test_walks_step_every_machine_on_ticks_and_feed_receipts_to_the_full_node():
    """Time passes in a walk (Tick steps, no step of the model: the trace check holds the statuses
    still and wants no receipt), and the validators' receipts reach the full node as they do in
    the protocol. The same walk (ROTATING, seed 3) is admitted by the model above."""
    h = Harness(ROTATING)
    steps = explore(ROTATING, 3, 50, harness=h)
    assert steps == explore(ROTATING, 3, 50)
    assert sum(s.action["a"] == "Tick" for s in steps) >= 3
    assert any(m.answered for m in h.fullnode.msgs.values())
