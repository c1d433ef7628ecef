"""The receiver judge of Corda driven conformance: legal choices pass in every profile, each faulty
mechanism fails on the rule it breaks, and a report says where (a scenario step or the drain)."""

import json

import pytest

from rmkit.cli import main
from rmkit.conformance.corda.driven import examples as ex
from rmkit.conformance.corda.driven.adapters import ReferenceReceiver, harnessed, reference_factory
from rmkit.conformance.corda.driven.suite import DRAIN_BOUND, run, search
from rmkit.reference_impl.corda.broker import Delivery

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]
# the suite's messages: 0 = session s1 first, 1 = s2 first, 2 = s1 second, 3 = s2 second (sequence numbers 1-4)
S1_FIRST, S2_FIRST, S1_SECOND, S2_SECOND = 0, 1, 2, 3


def play(cls, profile, steps):
    """Run ``steps`` as the kit does: through its wrapper, so that a crash is a real restart."""
    impl = harnessed(cls)("receiver")
    try:
        return run(impl, profile, [tuple(s) for s in steps])
    finally:
        impl.close()


def rules(outcome, strict=True):
    return {v.rule for v in (outcome.strict if strict else outcome.violations)}


def arrive(i, recovery=False):
    return ("arrive", i, recovery)


# ---- every legal example passes in every profile ---------------------------------------------------
@pytest.mark.parametrize("name", sorted(ex.LEGAL))
@pytest.mark.parametrize("profile", PROFILES)
def test_legal_example_passes_in_every_profile(name, profile):
    r = search(ex.LEGAL[name], profile, max_examples=40)
    assert r.failure is None, [v.render() for v in r.failure.violations]


# ---- ORDER-001 is judged against the send order the messages show ----------------------------------
def test_restoring_the_send_order_within_a_session_is_legal():
    """The second message of s1 arrived first; committing the first one first is the order the rule
    asks for, and was failed for passing over the copy that arrived earlier."""
    out = play(ex.SendOrderWithinSession, "spec", [arrive(S1_SECOND), arrive(S1_FIRST)])
    assert out.violations == [], [v.render() for v in out.violations]
    assert search(ex.SendOrderWithinSession, "spec", max_examples=150).failure is None


def test_reversing_what_the_sequence_numbers_order_fails_order_001():
    out = play(ex.ReverseWithinSession, "spec", [arrive(S1_FIRST), arrive(S1_SECOND)])
    assert rules(out) == {"CORDA-ORDER-001"}, [v.render() for v in out.violations]
    assert "N-fs1-2-0 committed before N-fs1-1-0, which was sent before it" in out.strict[0].explanation


def test_following_the_arrival_order_stays_legal_where_the_transport_reordered():
    out = play(ReferenceReceiver, "spec", [arrive(S1_SECOND), arrive(S1_FIRST)])
    assert out.violations == []


def test_reordering_recovery_resends_against_their_ids_fails_order_001():
    """Re-sends carry no sequence number; the N- ids of one flow still show the send order."""
    out = play(ex.ReverseWithinSession, "spec", [arrive(S1_FIRST, True), arrive(S1_SECOND, True)])
    assert rules(out) == {"CORDA-ORDER-001"}


def test_reversal_is_a_finding_where_the_profile_does_not_promise_order():
    r = search(ex.ReverseWithinSession, "corda-os", max_examples=100)
    assert r.failure is None and "CORDA-ORDER-001" in r.findings
    assert search(ex.ReverseWithinSession, "spec", max_examples=200).failure.strict[0].rule == "CORDA-ORDER-001"


# ---- a NEW answer for an id in flight: work abandoned, legal only where the delivery died ------------
ABANDON = [arrive(S1_FIRST), ("deliver",), ("broker_restart",)]


@pytest.mark.parametrize("profile", ["spec", "corda-os"])
def test_abandoning_work_when_the_broker_restarts_is_legal(profile):
    out = play(ex.AbandonOnBrokerRestart, profile, ABANDON)
    assert out.violations == [], [v.render() for v in out.violations]


def test_dropping_a_live_new_copy_is_dedup_008():
    out = play(ex.DropNewCopy, "spec", [arrive(S1_FIRST), arrive(S1_FIRST)])
    assert rules(out) == {"CORDA-DEDUP-008"}, [v.render() for v in out.violations]
    assert "tag 1" in out.strict[0].explanation
    r = search(ex.DropNewCopy, "corda-os", max_examples=200)
    assert r.failure is not None and rules(r.failure) == {"CORDA-DEDUP-008"}


class ProcessesEveryNewCopy(ReferenceReceiver):
    """A deduplicator without its in-flight set: a copy of an id being processed is NEW and processed too."""

    def on_deliver(self, event):
        dedup_id = event["message"]["dedup_id"]
        if dedup_id not in self.node.in_flight:
            return super().on_deliver(event)
        self.node.processing.append(Delivery(event["tag"], self.node.in_flight[dedup_id].message, False, event["conn"]))
        return {"answer": "NEW"}

    def commit_now(self):
        done = []
        while self.node.processing:
            d = self.node.processing[0]
            self.node.in_flight.setdefault(d.message.dedup_id, d)
            done.append(self.node.commit().dedup_id)
        return done


def test_processing_both_copies_is_dedup_001_not_dedup_008():
    out = play(ProcessesEveryNewCopy, "spec", [arrive(S1_FIRST), arrive(S1_FIRST)])
    assert rules(out) == {"CORDA-DEDUP-001"}, [v.render() for v in out.violations]
    assert "committed a second time" in out.strict[0].explanation


# ---- the drain: any rhythm within its bound; beyond it, no progress under the liveness rule ----------
@pytest.mark.parametrize("profile", PROFILES)
def test_a_node_acting_every_seventh_tick_passes(profile):
    out = play(ex.SlowRhythm, profile, [arrive(S1_FIRST), arrive(S1_FIRST), ("tick",)])
    assert out.violations == [], [v.render() for v in out.violations]


class AcksEveryNthTick(ReferenceReceiver):
    EVERY = DRAIN_BOUND + 5

    def make_node(self, profile, database=None):
        self.ticks = 0
        return super().make_node(profile, database)

    def on_tick(self, event):
        self.ticks += 1
        return {"commits": self.commit_now(), "acks": self.acks_now() if self.ticks % self.EVERY == 0 else []}


def test_a_node_slower_than_the_bound_fails_with_no_progress():
    out = play(AcksEveryNthTick, "corda-os", [arrive(S1_FIRST)])
    assert rules(out) == {"CORDA-ACK-002"}, [v.render() for v in out.violations]
    assert f"no progress within {DRAIN_BOUND} ticks" in out.strict[0].explanation
    assert out.strict[0].where.startswith("drain tick")


def test_a_new_copy_never_handed_to_its_flow_is_dedup_008_no_progress():
    out = play(ex.StuckNewCopy, "spec", [arrive(S1_FIRST), arrive(S1_FIRST)])
    assert rules(out) == {"CORDA-DEDUP-008"}, [v.render() for v in out.violations]
    assert f"no progress within {DRAIN_BOUND} ticks" in out.strict[0].explanation


class NeverAcksDuplicates(ReferenceReceiver):
    def on_deliver(self, event):
        reply = super().on_deliver(event)
        if reply["answer"] == "DUPLICATE":
            self.node.to_ack.pop()
        return reply


def test_a_duplicate_never_acknowledged_is_dedup_003():
    out = play(NeverAcksDuplicates, "spec", [arrive(S1_FIRST), ("deliver",), ("tick",), ("crash",), arrive(S1_FIRST)])
    assert rules(out) == {"CORDA-DEDUP-003"}, [v.render() for v in out.violations]
    assert f"no progress within {DRAIN_BOUND} ticks" in out.strict[0].explanation


# ---- corda-os-2021: the loss an acknowledged IN_FLIGHT copy leads to is the profile's departure ------
OS2021_LOSS = [arrive(S1_FIRST), arrive(S2_FIRST), ("deliver",), ("deliver",), ("broker_restart",), ("deliver",),
               ("deliver",), ("tick",), ("crash",)]


def test_newest_session_first_loses_only_what_the_2021_profile_loses():
    out = play(ex.NewestSessionFirst, "corda-os-2021", OS2021_LOSS)
    assert out.strict == [], [v.render() for v in out.violations]
    assert [(v.rule, v.mode) for v in out.violations] == [("CORDA-DEDUP-004", "non-strict")]
    assert "N-fs1-1-0" in out.violations[0].explanation and "IN_FLIGHT" in out.violations[0].explanation


IN_FLIGHT_ACKED_THEN_CRASH = [arrive(S1_FIRST), ("deliver",), ("broker_restart",), ("deliver",), ("crash",)]


def test_the_same_loss_is_strict_where_in_flight_copies_are_not_acknowledged():
    out = play(ex.AckInFlight, "corda-os", IN_FLIGHT_ACKED_THEN_CRASH)
    assert rules(out) == {"CORDA-DEDUP-004", "CORDA-DEDUP-002"}, [v.render() for v in out.violations]


def test_acknowledging_in_flight_copies_passes_in_2021_with_the_loss_as_a_finding():
    out = play(ex.AckInFlight, "corda-os-2021", IN_FLIGHT_ACKED_THEN_CRASH)
    assert out.strict == [] and rules(out, strict=False) == {"CORDA-DEDUP-004"}, [v.render() for v in out.violations]


# ---- the rule a report cites ---------------------------------------------------------------------------
def test_fast_path_at_the_mark_is_dedup_006_with_no_restart():
    out = play(ex.FastPathAtMark, "corda-ent-fastpath", [arrive(S1_FIRST), ("deliver",), ("tick",), arrive(S1_FIRST)])
    assert rules(out) == {"CORDA-DEDUP-006"}, [v.render() for v in out.violations]
    assert "not above" in out.strict[0].explanation


def test_fast_path_at_the_mark_is_dedup_006_after_the_drain_restart():
    out = play(ex.FastPathAtMark, "corda-ent-fastpath", [arrive(S1_FIRST), arrive(S1_FIRST)])
    assert rules(out) == {"CORDA-DEDUP-006"}, [v.render() for v in out.violations]


def test_a_forgotten_id_below_the_mark_after_a_restart_is_dedup_005():
    # both first messages open their sessions: one sender key, whose mark is 2 after both commits
    steps = [arrive(S1_FIRST), arrive(S2_FIRST), ("deliver",), ("deliver",), ("tick",), ("crash",), arrive(S1_FIRST)]
    out = play(ex.DedupOnlyInMemory, "corda-ent-fastpath", steps)
    assert rules(out) == {"CORDA-DEDUP-005"}, [v.render() for v in out.violations]


def test_an_id_written_after_the_commit_is_dedup_001_without_a_restart_and_dedup_005_with_one():
    between = [arrive(S1_FIRST), arrive(S1_FIRST), ("deliver",), ("tick",)]
    assert rules(play(ex.DuplicateAfterRestart, "corda-os", between)) == {"CORDA-DEDUP-001"}
    restart = [arrive(S1_FIRST), ("deliver",), ("tick",), ("crash",)]
    assert rules(play(ex.DuplicateAfterRestart, "corda-os", restart)) == {"CORDA-DEDUP-005"}


def test_a_committed_id_answered_in_flight_is_dedup_003_not_a_loss():
    out = play(ex.InFlightForCommitted, "spec", [arrive(S1_FIRST), ("deliver",), arrive(S1_FIRST), ("tick",)])
    assert rules(out) == {"CORDA-DEDUP-003"}, [v.render() for v in out.violations]
    assert "committed" in out.strict[0].explanation
    r = search(ex.InFlightForCommitted, "corda-os", max_examples=200)
    assert r.failure is not None and rules(r.failure) == {"CORDA-DEDUP-003"}


def test_a_violation_in_the_drain_names_the_drain():
    out = play(ProcessesEveryNewCopy, "spec", [arrive(S1_FIRST), arrive(S1_FIRST), ("tick",)])
    assert out.strict and out.strict[0].where == "drain tick 1", [v.render() for v in out.violations]
    assert "at drain tick 1:" in out.strict[0].render()


def test_replay_labels_the_drain_apart_from_the_scenario(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"protocol": "corda", "role": "receiver", "profile": "corda-os",
                                "steps": [list(s) for s in [arrive(S1_FIRST), arrive(S1_FIRST), ("crash",)]]}))
    assert main(["replay", "--protocol", "corda", str(path), "--impl", "rmkit.conformance.corda.driven.adapters:reference_factory"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    assert sum(line.startswith("3: crash") for line in lines) == 1, lines
    assert any(line.startswith("drain tick 1: deliver N-fs1-1-0") for line in lines), lines
    assert any(line.startswith("drain restart 1: crash") for line in lines), lines


@pytest.mark.parametrize("profile", PROFILES)
def test_the_reference_passes_in_every_profile(profile):
    assert search(reference_factory, profile, max_examples=60).failure is None


def test_dedup_only_in_memory_forgets_across_a_restart_on_the_same_database(tmp_path):
    """A restart may be a new node on the same database file: the faulty example must still forget,
    and the reference must still remember."""
    copy = {"dedup_id": "N-fs1-1-0", "session_id": "A:s1", "session_init": True, "sender_uuid": "A-0",
            "sequence_number": 1, "payload": "A:s1/m1"}
    answers = {}
    for cls in (ReferenceReceiver, ex.DedupOnlyInMemory):
        hello = {"type": "hello", "role": "receiver", "profile": "spec", "database": str(tmp_path / f"{cls.__name__}.db")}
        first = cls("receiver")
        first.handle(hello)
        first.handle({"type": "deliver", "tag": 1, "conn": 0, "message": copy})
        first.handle({"type": "tick"})
        again = cls("receiver")
        again.handle(hello)
        answers[cls] = again.handle({"type": "deliver", "tag": 1, "conn": 1, "message": copy})["answer"]
    assert answers == {ReferenceReceiver: "DUPLICATE", ex.DedupOnlyInMemory: "NEW"}


# ---- a broker restart with work in progress: keep it or give it up, never both (adapter.md) -------
class KeepsAndRestartsWork(ReferenceReceiver):
    """Keeps the work in progress at a broker restart (as the reference does) and also starts it
    again: the redelivered copy of an id being processed is answered NEW and committed too."""

    def on_hello(self, event):
        self.restarted, self.again = set(), []
        return super().on_hello(event)

    def on_broker_restart(self, event):
        self.restarted = set(self.node.in_flight)
        return super().on_broker_restart(event)

    def on_deliver(self, event):
        dedup_id = event["message"]["dedup_id"]
        if dedup_id not in self.restarted:
            return super().on_deliver(event)
        self.restarted.discard(dedup_id)
        self.again.append((dedup_id, [event["tag"], event["conn"]]))
        return {"answer": "NEW"}

    def on_tick(self, event):
        reply = super().on_tick(event)
        done = list(reply.get("done") or [["commit", c] for c in reply.get("commits", [])] + [["ack", *a] for a in reply.get("acks", [])])
        for dedup_id, copy in self.again:
            done += [["commit", dedup_id], ["ack", *copy]]
        self.again = []
        return {"done": done}


def test_work_in_progress_at_a_broker_restart_may_be_kept_or_given_up_but_not_both():
    steps = ABANDON + [("deliver",), ("tick",)]
    for cls in (ReferenceReceiver, ex.AbandonOnBrokerRestart):
        out = play(cls, "corda-os", steps)
        assert out.violations == [], (cls.__name__, [v.render() for v in out.violations])
    out = play(KeepsAndRestartsWork, "corda-os", steps)
    assert "CORDA-DEDUP-001" in rules(out), [v.render() for v in out.violations]
