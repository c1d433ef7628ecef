"""The Corda reference machines (reference_impl/corda): each crash point of the spec leads where the
spec says, each profile behaves as the reference facts say, and random runs with crashes keep the
protocol's guarantees (exactly once, no loss, acknowledgement after commit)."""

import pytest
from hypothesis import given, strategies as st

from rmkit.reference_impl.corda import Answer, StepRefused, System
from rmkit.reference_impl.corda.sender import Flow, OversizeRefused

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]


def run(s: System, *steps):
    for st_ in steps:
        name, _, arg = st_.partition(":")
        s.step(name, **({"i": int(arg)} if arg else {}))
    return s


def send_all(s: System, n: int):
    for _ in range(n):
        run(s, "Suspend", "Produce")


def deliver_everything(s: System):
    """Drive the path to quiescence without faults."""
    for _ in range(100):
        for name in ("Commit", "Ack", "Deliver", "BridgeAck", "RemoteAccept", "Forward"):
            try:
                s.step(name)
                break
            except StepRefused:
                continue
        else:
            return s
    raise AssertionError("no quiescence")


@pytest.mark.parametrize("profile", PROFILES)
def test_happy_path_is_exactly_once_and_leaves_nothing_behind(profile):
    s = System.one_session(profile, 3)
    send_all(s, 3)
    deliver_everything(s)
    v = s.view()
    assert v["effects"] == [1, 2, 3] and v["db"] == [1, 2, 3]
    assert v["out"] == [] and v["inq"] == [] and v["transit"] == []
    assert s.answers == ["NEW"] * 3
    assert [m.dedup_id for m in s.sender.sent_log] == ["N-f1-1-0", "N-f1-2-0", "N-f1-3-0"]
    assert [m.sequence_number for m in s.sender.sent_log] == [1, 2, 3]


def test_suspend_actions_run_in_the_spec_order():
    s = System.one_session("spec", 1)
    send_all(s, 1)
    deliver_everything(s)
    names = [e[0] for e in s.receiver.journal if e[0] != "deliver"]
    assert names == list(s.spec.suspend_actions[:4])


def test_crash_before_commit_redelivers_and_processes_once():
    s = System.one_session("corda-os", 1)
    send_all(s, 1)
    run(s, "Forward", "RemoteAccept", "BridgeAck", "Deliver", "ReceiverCrash")
    assert s.view()["inq"] == [(1, 1, 1, 1, False)]  # back, undelivered
    deliver_everything(s)
    assert s.view()["effects"] == [1] and s.answers == ["NEW", "NEW"]


def test_crash_between_commit_and_ack_is_caught_by_deduplication():
    s = System.one_session("corda-os", 1)
    send_all(s, 1)
    run(s, "Forward", "RemoteAccept", "BridgeAck", "Deliver", "Commit", "ReceiverCrash")
    deliver_everything(s)
    assert s.view()["effects"] == [1] and s.answers == ["NEW", "DUPLICATE"]
    assert s.view()["inq"] == []


def test_bridge_crash_between_remote_and_local_ack_duplicates_and_the_receiver_drops_it():
    s = System.one_session("corda-os", 1)
    send_all(s, 1)
    run(s, "Forward", "RemoteAccept", "BridgeRollback")  # remote has it, local ack never happened
    assert len(s.view()["out"]) == 1
    deliver_everything(s)
    assert s.view()["effects"] == [1] and sorted(s.answers) == ["DUPLICATE", "NEW"]


def test_sender_replay_regenerates_the_same_id_without_uuid_or_sequence():
    s = System.one_session("corda-os", 1)
    run(s, "Suspend", "Produce", "SenderCrash", "Produce")
    first, again = s.sender.sent_log
    assert first.dedup_id == again.dedup_id == "N-f1-1-0"
    assert (first.sender_uuid, first.sequence_number) == ("A-0", 1)
    assert (again.sender_uuid, again.sequence_number) == (None, None)
    deliver_everything(s)
    assert s.view()["effects"] == [1] and s.answers == ["NEW", "DUPLICATE"]


def _in_flight(profile):
    s = System.one_session(profile, 1)
    send_all(s, 1)
    run(s, "Forward", "RemoteAccept", "BridgeAck", "Deliver", "BrokerRestart", "Deliver")
    return s


def test_in_flight_copy_is_discarded_without_ack_in_corda_os():
    s = _in_flight("corda-os")
    assert s.answers == ["NEW", "IN_FLIGHT"]
    assert s.receiver.to_ack == []
    run(s, "Commit", "Ack", "ReceiverCrash")  # the discarded copy comes back after a restart
    deliver_everything(s)
    assert s.answers[-1] == "DUPLICATE" and s.view()["inq"] == [] and s.view()["effects"] == [1]


def test_in_flight_copy_is_acknowledged_before_the_commit_in_corda_os_2021():
    s = _in_flight("corda-os-2021")
    assert s.answers == ["NEW", "IN_FLIGHT"]
    run(s, "Ack")
    acks = [e for e in s.receiver.journal if e[0] == "acknowledge"]
    assert acks and acks[0][3] and 1 not in s.view()["db"]  # acknowledged, not committed


def test_fast_path_reads_the_database_only_when_it_must():
    s = System.one_session("corda-ent-fastpath", 3)
    send_all(s, 2)
    deliver_everything(s)
    # no mark yet for either key (the session-init message has its own): the database is read
    assert s.receiver.db_reads == 2
    send_all(s, 1)
    deliver_everything(s)
    assert s.receiver.db_reads == 2  # above the mark: NEW without a read
    run(s, "SenderCrash", "Produce")  # a recovery re-send carries no sender UUID: read
    deliver_everything(s)
    assert s.receiver.db_reads == 3 and s.answers[-1] == "DUPLICATE"
    assert s.view()["effects"] == [1, 2, 3]


def test_oversize_is_refused_at_send_in_spec_and_dropped_by_the_bridge_as_built():
    for profile, expect in (("spec", "refused"), ("corda-os", "dropped")):
        s = System.one_session(profile, 1)
        big = s.spec.max_message_size + 1
        s.sender.flows["f1"] = Flow("f1", "f1", "A:s1", [[("m1", big)]])
        if expect == "refused":
            with pytest.raises(OversizeRefused):
                s.step("Suspend")
            continue
        run(s, "Suspend", "Produce", "Forward")
        assert [m.payload for m in s.bridge.dropped] == ["m1"] and s.view()["out"] == []
        deliver_everything(s)
        assert s.view()["effects"] == []  # lost: CORDA-BRIDGE-003, non-strict in corda-os


def test_rollback_reorders_a_session_as_built_but_not_in_spec():
    s = System.one_session("corda-os", 2)
    send_all(s, 2)
    run(s, "Forward", "Forward", "LinkLose:0", "RemoteAccept", "BridgeAck", "BridgeRollback")
    deliver_everything(s)
    assert s.view()["effects"] == [2, 1]
    s = System.one_session("spec", 2)
    send_all(s, 2)
    run(s, "Forward")
    with pytest.raises(StepRefused):
        s.step("Forward")  # in order: the second waits for the first's remote acknowledgement


STEPS = ["Suspend", "Produce", "SenderCrash", "Forward", "LinkLose", "LinkDup", "AckLose", "RemoteAccept",
         "BridgeAck", "BridgeRollback", "Deliver", "Commit", "Ack", "ReceiverCrash", "BrokerRestart"]


@given(profile=st.sampled_from(PROFILES), steps=st.lists(st.sampled_from(STEPS), max_size=60))
def test_random_runs_keep_exactly_once_no_loss_and_ack_after_commit(profile, steps):
    s = System.one_session(profile, 3)
    for name in steps:
        try:
            s.step(name)
        except StepRefused:
            pass
        effects = s.view()["effects"]
        assert len(effects) == len(set(effects)), "an effect committed twice"
    committed = set()
    for e in s.receiver.journal:
        if e[0] == "commit":
            committed.add(e[1])
        elif e[0] == "acknowledge" and e[3] and profile != "corda-os-2021":
            assert e[2] in committed, "acknowledged before its commit"
    if s.sender.can_produce("f1"):
        s.step("Produce")
    while s.sender.can_suspend("f1"):  # finish the flow, then drain after a reconnect of everything
        run(s, "Suspend", "Produce")
    run(s, "BridgeRollback", "ReceiverCrash")
    deliver_everything(s)
    v = s.view()
    produced = {m.payload for m in s.sender.sent_log}
    assert {f"m{k}" for k in v["effects"]} == produced, "a message lost"


def test_a_killed_receiver_process_finds_its_commits_in_sqlite(tmp_path):
    """A real crash: the reference receiving node runs as a process on a SQLite database and is
    killed (SIGKILL) between its commit and the broker seeing the acknowledgement, or before its
    commit; a new process on the same file answers the redelivered copy DUPLICATE, or NEW."""
    import json
    import os
    import signal
    import subprocess
    import sys

    db = str(tmp_path / "node.sqlite")
    msg = {"dedup_id": "N-f1-1-0", "session_id": "A:s1", "session_init": True, "sender_uuid": "A-0",
           "sequence_number": 1, "payload": "m1"}

    def start():
        p = subprocess.Popen([sys.executable, "-m", "rmkit.conformance.corda.driven.adapters", "receiver"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        return p

    def call(p, event):
        p.stdin.write(json.dumps(event) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    def kill(p):
        os.kill(p.pid, signal.SIGKILL)
        p.wait()

    hello = {"type": "hello", "role": "receiver", "profile": "corda-os", "database": db}
    p = start()
    call(p, hello)
    assert call(p, {"type": "deliver", "tag": 1, "conn": 0, "message": msg})["answer"] == "NEW"
    kill(p)  # before the commit: redelivered, NEW again
    p = start()
    call(p, hello)
    assert call(p, {"type": "deliver", "tag": 1, "conn": 1, "message": msg})["answer"] == "NEW"
    assert call(p, {"type": "tick"})["commits"] == ["N-f1-1-0"]
    kill(p)  # after the commit, the acknowledgement lost with the process: redelivered, DUPLICATE
    p = start()
    call(p, hello)
    assert call(p, {"type": "deliver", "tag": 1, "conn": 2, "message": msg})["answer"] == "DUPLICATE"
    assert call(p, {"type": "tick"}) == {"commits": [], "acks": [[1, 2]]}
    p.stdin.close()
    p.wait()
    from rmkit.reference_impl.corda.store import SqliteStore

    assert SqliteStore(db).effects() == [("A:s1", "m1", "N-f1-1-0")]
