"""Several peers, sessions and sending processes in the Corda receiver's scenarios; the message names
its sending peer; a reply's commits and acknowledgements in the order they happened; and where a
bridge's failure is reported.

Faulty nodes that only several senders or peers reveal are caught on the rule that names their cause
(a table keyed by id and sender: CORDA-DEDUP-003, not a table that lost the id; ordering by sequence
numbers across senders: CORDA-ORDER-001), and the freedoms the documents leave (a table keyed by
peer and id, a reply in one ordered list) pass."""

import json

import pytest

from rmkit.conformance.corda.driven import bridge as brg, examples as ex
from rmkit.conformance.corda.driven.adapters import ReferenceReceiver, harnessed
from rmkit.conformance.corda.driven.contract import FIELDS, Topology, default_topology, topology_range
from rmkit.conformance.corda.driven.suite import Stopped, message, play_once, read_saved, run, search, universe
from rmkit.errors import UsageError

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]


def play(cls, profile, steps, role="receiver"):
    impl = harnessed(cls)(role)
    try:
        return play_once(run if role == "receiver" else brg.run_bridge, impl, profile, [tuple(s) for s in steps])
    finally:
        impl.close()


def test_the_default_topology_is_the_four_messages_saved_scenarios_name():
    ids = [(m[0], m[1], m[4], m[5]) for m in universe(default_topology())]
    assert ids == [("N-fs1-1-0", "A:s1", "A-0", 1), ("N-fs2-1-0", "A:s2", "A-0", 2),
                   ("N-fs1-2-0", "A:s1", "A-0", 3), ("N-fs2-2-0", "A:s2", "A-0", 4)]


def test_the_largest_topology_has_distinct_ids_and_each_sender_counts_up_from_one():
    t = Topology(*(topology_range(f)[1] for f in FIELDS))
    msgs = universe(t)
    assert len({m[0] for m in msgs}) == len(msgs) == t.peers * t.sessions * t.messages
    by_sender = {}
    for m in msgs:
        by_sender.setdefault(m[4], []).append(m[5])
    assert len(by_sender) == t.peers * t.senders
    assert all(nums == list(range(1, len(nums) + 1)) for nums in by_sender.values()), by_sender
    assert {message(i, True, t).sender_uuid for i in range(len(msgs))} == {None}


class Recorder(ReferenceReceiver):
    seen: list = []

    def handle(self, event):
        if event["type"] == "deliver":
            Recorder.seen.append(event["message"])
        return super().handle(event)


def test_generated_scenarios_draw_several_peers_sessions_and_senders_and_name_the_peer():
    Recorder.seen = []
    search(Recorder, "spec", max_examples=100, named=False)
    assert all("peer" in m and m["session_id"].startswith(m["peer"] + ":") for m in Recorder.seen)
    assert {m["peer"] for m in Recorder.seen} == {"A", "C"}
    assert len({m["session_id"] for m in Recorder.seen}) >= 3
    senders = {}
    for m in Recorder.seen:
        senders.setdefault(m["peer"], set()).add(m["sender_uuid"])
    assert any(len(uuids - {None}) >= 2 for uuids in senders.values()), senders


@pytest.mark.parametrize("profile", PROFILES)
def test_a_table_keyed_by_id_and_sender_is_reported_as_the_key_not_as_a_lost_id(profile):
    r = search(ex.SenderKeyedIds, profile)
    assert r.failure is not None
    first = r.failure.strict[0]
    assert first.rule == "CORDA-DEDUP-003", first.render()
    assert "looked up with the sender" in first.explanation
    assert "CORDA-DEDUP-005" not in {v.rule for v in r.failure.strict}


def test_the_same_readmission_by_a_table_that_lost_the_id_stays_dedup_005():
    steps = [("arrive", 0, False), ("deliver",), ("tick",), ("crash",), ("arrive", 0, True), ("deliver",)]
    assert {v.rule for v in play(ex.DedupOnlyInMemory, "spec", steps).strict} == {"CORDA-DEDUP-005"}
    assert {v.rule for v in play(ex.SenderKeyedIds, "spec", steps).strict} == {"CORDA-DEDUP-003"}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("cls", [ex.PeerScopedIds, ex.OrderedReply, ex.NewestSessionFirst])
def test_freedoms_several_peers_and_senders_leave_pass(cls, profile):
    r = search(cls, profile, max_examples=100)
    assert r.failure is None, r.failure and [v.render() for v in r.failure.violations]


def test_ordering_by_sequence_numbers_across_a_senders_restart_breaks_the_sessions_order():
    r = search(ex.SortBySequenceNumber, "spec")
    assert r.failure is not None and {v.rule for v in r.failure.strict} == {"CORDA-ORDER-001"}
    assert r.failure.actions[0][0] == "topology"   # it takes two sending processes in one session
    assert search(ex.SortBySequenceNumber, "corda-os", max_examples=50).failure is None   # a finding there


def test_an_acknowledgement_before_its_commit_in_one_reply_is_ack_001():
    steps = [("arrive", 0, False), ("deliver",), ("tick",)]
    out = play(ex.AckBeforeCommitInOneReply, "spec", steps)
    assert {v.rule for v in out.strict} == {"CORDA-ACK-001"} and out.strict[0].where == "step 3"
    assert not play(ex.OrderedReply, "spec", steps).violations


class BothForms(ReferenceReceiver):
    def on_tick(self, event):
        reply = super().on_tick(event)
        return {**reply, "done": [["commit", c] for c in reply["commits"]]} if reply["commits"] else reply


def test_a_reply_with_done_and_commits_is_malformed():
    out = play(BothForms, "spec", [("arrive", 0, False), ("deliver",), ("tick",)])
    assert isinstance(out, Stopped) and "must not carry commits or acks" in out.cause


def test_a_bridge_failure_in_the_drain_is_reported_at_its_drain_tick():
    out = play(brg.Pipelining, "spec", [("produce",), ("produce",), ("deliver",), ("deliver",), ("lose",)], role="bridge")
    v = out.strict[0]
    assert v.rule == "CORDA-ORDER-001" and v.where.startswith("drain tick "), v.render()
    assert any(line.startswith(v.where + ":") for line in out.log), out.log
    out = play(brg.NoRollback, "spec", [("produce",), ("deliver",), ("link_down",)], role="bridge")
    assert out.strict[0].where == "the end of the drain"
    out = play(brg.AckOnSend, "spec", [("produce",), ("deliver",)], role="bridge")
    assert out.strict[0].where == "step 2"


def test_a_saved_topology_is_read_back_and_a_bad_one_refused(tmp_path):
    path = tmp_path / "s.json"
    steps = [["topology", 2, 2, 3, 2], ["arrive", 11, True]]
    path.write_text(json.dumps({"role": "receiver", "profile": "spec", "steps": steps}))
    assert read_saved(path)[2] == [tuple(s) for s in steps]
    for bad, field in (([["topology", 3, 1, 1, 1]], "steps[0][1]"), ([["arrive", 0, False], ["topology", 1, 1, 1, 1]], "steps[1]"),
                       ([["topology", 1, 1, 1, 1], ["arrive", 1, False]], "steps[1][1]")):
        path.write_text(json.dumps({"role": "receiver", "profile": "spec", "steps": bad}))
        with pytest.raises(UsageError, match=field.replace("[", r"\[").replace("]", r"\]")):
            read_saved(path)
