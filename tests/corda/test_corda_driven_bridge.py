"""Driven conformance of the Corda bridge role: what counts as a drop, how long the drain may run,
what a crash does to the link, and which losses the link adversary makes.

Each bridge here is the reference bridge with one behaviour changed: faulty ones must fail for
their rule, legal ones must pass in every profile."""

import pytest
from hypothesis import given, settings, strategies as st

from clock_support import finish_within
from rmkit.conformance.corda.driven import bridge
from rmkit.conformance.corda.driven.bridge import ReferenceBridge, run_bridge
from rmkit.conformance.corda.driven.suite import search

PROFILES = ["spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"]
AS_BUILT = ["corda-os", "corda-os-2021", "corda-ent-fastpath"]


def strict_rules(outcome) -> set:
    return {v.rule for v in outcome.strict}



# ---- normal-size messages dropped ---------------------------------------------------------------
class DropSecond(ReferenceBridge):
    """Faulty: acknowledges message 2 (normal size) locally at once and never sends it."""

    def on_deliver(self, event):
        if event["message"]["payload"] == "m2":
            return {"acks": [[event["tag"], event["conn"]]]}
        return super().on_deliver(event)


class DropEverything(ReferenceBridge):
    """Faulty: acknowledges every delivery locally at once and never sends anything."""

    def on_deliver(self, event):
        return {"acks": [[event["tag"], event["conn"]]]}


class AckRedeliveredWithoutResend(ReferenceBridge):
    """Faulty: remembers what it sent before a rollback and, when the local broker delivers such a
    message again, acknowledges it at once without sending it again (the remote broker may never
    have got it)."""

    def on_hello(self, event):
        self.ever_sent = set()
        return super().on_hello(event)

    def _pump(self):
        sent = super()._pump()
        self.ever_sent.update(sent)
        return sent

    def on_deliver(self, event):
        if event["tag"] in self.ever_sent:
            return {"acks": [[event["tag"], event["conn"]]]}
        return super().on_deliver(event)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("faulty", [DropSecond, DropEverything])
def test_a_bridge_dropping_normal_size_messages_fails_in_every_profile(profile, faulty):
    """Such a drop was called CORDA-BRIDGE-003, non-strict in the as-built profiles: it passed.
    Only an oversize message may be dropped there; any other is acknowledged without the remote
    broker's acknowledgement (CORDA-BRIDGE-001), strict everywhere."""
    out = run_bridge(faulty(), profile, [("produce",), ("produce",)])
    assert "CORDA-BRIDGE-001" in strict_rules(out), [v.render() for v in out.violations]
    assert not any(v.rule == "CORDA-BRIDGE-003" for v in out.violations), [v.render() for v in out.violations]
    lost = [v for v in out.strict if "N-f1-2-0" in v.explanation]
    assert lost and "never" in lost[0].explanation and "100 bytes" in lost[0].explanation


@pytest.mark.parametrize("profile", AS_BUILT)
def test_drop_second_fails_the_search_in_the_as_built_profiles(profile):
    r = search(DropSecond, profile, max_examples=50, role="bridge")
    assert r.failure is not None and "CORDA-BRIDGE-001" in strict_rules(r.failure)


@pytest.mark.parametrize("profile", PROFILES)
def test_acking_a_redelivered_copy_without_sending_it_again_fails(profile):
    """Sent, lost on its way, rolled back, delivered again and acknowledged without a re-send."""
    acts = [("produce",), ("deliver",), ("lose",), ("link_down",), ("deliver",)]
    out = run_bridge(AckRedeliveredWithoutResend(), profile, acts)
    assert "CORDA-BRIDGE-001" in strict_rules(out), [v.render() for v in out.violations]


@pytest.mark.parametrize("profile", AS_BUILT)
def test_an_oversize_message_dropped_where_the_profile_drops_it_is_a_finding_only(profile):
    out = run_bridge(ReferenceBridge(), profile, [("produce",)] * 4)
    assert not out.strict, [v.render() for v in out.strict]
    dropped = [v for v in out.violations if v.rule == "CORDA-BRIDGE-003"]
    assert len(dropped) == 1 and dropped[0].mode == "non-strict" and "N-f1-3-0" in dropped[0].explanation


def test_no_oversize_message_reaches_the_bridge_in_spec():
    out = run_bridge(ReferenceBridge(), "spec", [("produce",)] * 4)
    assert not out.violations, [v.render() for v in out.violations]


# ---- a bridge that never stops rolling back ------------------------------------------------------
class RollbackOnRemoteAck(ReferenceBridge):
    """Faulty: rolls its session back at every remote acknowledgement (never acknowledges locally)."""

    def on_remote_ack(self, event):
        self.waiting.clear()
        self.unacked.clear()
        return {"rollback": True}


class RollbackOnOversize(ReferenceBridge):
    """Faulty (a poison message): cannot forward an oversize message and rolls back, so the local
    broker delivers it again for ever."""

    def on_deliver(self, event):
        if event["message"].get("size", 0) > self.spec.max_message_size:
            self.waiting.clear()
            self.unacked.clear()
            return {"rollback": True}
        return super().on_deliver(event)


@pytest.mark.parametrize("faulty,profile,acts", [
    (RollbackOnRemoteAck, "spec", [("produce",)]),
    (RollbackOnRemoteAck, "corda-os", [("produce",)]),
    (RollbackOnOversize, "corda-os", [("produce",)] * 3),
])
def test_a_bridge_rolling_back_for_ever_fails_for_no_progress_instead_of_hanging(faulty, profile, acts):
    """The drain delivered and transferred as long as anything could move: a rollback at every step
    made it loop for ever, whatever --timeout and --time-budget said."""
    out = finish_within(30, run_bridge, faulty(), profile, acts)
    stalled = [v for v in out.strict if v.rule == "CORDA-BRIDGE-002" and "no progress within" in v.explanation]
    assert stalled, [v.render() for v in out.violations]


def test_the_search_over_a_bridge_rolling_back_for_ever_ends_with_a_failure():
    r = finish_within(60, search, RollbackOnOversize, "corda-os", max_examples=100, role="bridge")
    assert r.failure is not None and "CORDA-BRIDGE-002" in strict_rules(r.failure)


class RetryEveryThirdTick(ReferenceBridge):
    """Faulty: never acknowledges locally; every third tick it rolls back and sends everything again."""

    def on_hello(self, event):
        self.ticks = 0
        return super().on_hello(event)

    def on_remote_ack(self, event):
        return {"send": self._pump()}

    def on_tick(self, event):
        self.ticks += 1
        if self.ticks % 3:
            return super().on_tick(event)
        self.waiting.clear()
        self.unacked.clear()
        return {"rollback": True}


def test_a_bridge_busy_for_ever_at_a_slow_pace_fails_at_the_tick_bound():
    out = finish_within(30, run_bridge, RetryEveryThirdTick(), "corda-os", [("produce",)])
    stalled = [v for v in out.strict if v.rule == "CORDA-BRIDGE-002"]
    assert stalled and f"no progress within {bridge.MAX_DRAIN_TICKS} ticks" in stalled[0].explanation, \
        [v.render() for v in out.violations]


def test_the_cli_reports_a_bridge_rolling_back_for_ever_in_seconds(tmp_path, capsys):
    """It ran on past --timeout and --time-budget, its memory growing."""
    from rmkit.cli import main

    argv = ["conform", "--protocol", "corda", "--derandomize", "--regressions", str(tmp_path), "--profile", "corda-os",
            "--role", "bridge", "--impl", f"{__name__}:RollbackOnOversize", "--max-examples", "100", "--time-budget", "3",
            "--timeout", "1"]
    assert finish_within(60, main, argv) == 1
    out = capsys.readouterr().out
    assert "CORDA-BRIDGE-002 (strict)" in out and "no progress within" in out, out


# ---- a bridge on a slow rhythm --------------------------------------------------------------------
class SendsOnTicks(ReferenceBridge):
    """Legal: forwards only on ticks (pacing); a delivery or a remote acknowledgement sends nothing."""

    ticking = False

    def _pump(self):
        return super()._pump() if self.ticking else []

    def on_tick(self, event):
        self.ticking = True
        try:
            return super().on_tick(event)
        finally:
            self.ticking = False


class EverySeventhTick(SendsOnTicks):
    """Legal: sends and acknowledges locally only on every seventh tick (pacing and batching)."""

    def on_hello(self, event):
        self.ticks, self.ready = 0, []
        return super().on_hello(event)

    def on_remote_ack(self, event):
        d = self.unacked.pop(event["tag"], None)
        if d is not None:
            self.ready.append([d.tag, d.connection])
        return {}

    def on_tick(self, event):
        self.ticks += 1
        if self.ticks % 7:
            return {}
        acks, self.ready = self.ready, []
        return {**super().on_tick(event), "acks": acks}

    def on_link_down(self, event):
        self.ready = []
        return super().on_link_down(event)

    def on_crash(self, event):
        self.ready = []
        return super().on_crash(event)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_bridge_acting_every_seventh_tick_passes(profile):
    """The drain was six ticks whatever moved: a bridge on a slower rhythm failed."""
    r = search(EverySeventhTick, profile, max_examples=60, role="bridge")
    assert r.failure is None, r.failure and [v.render() for v in r.failure.violations]


# ---- a crash ends the bridge's connection to the peer ----------------------------------------------
class StrictAboutRemoteAcks(SendsOnTicks):
    """Legal: takes a remote acknowledgement of a tag it never sent since it started as a broken
    peer and stops (such an acknowledgement cannot come over its own connection)."""

    def handle(self, event):
        if event["type"] in ("hello", "crash"):
            self.sent_since_start = set()
        if event["type"] == "remote_ack" and event["tag"] not in self.sent_since_start:
            raise RuntimeError(f"remote acknowledgement of tag {event['tag']}, never sent since this bridge started")
        reply = super().handle(event)
        self.sent_since_start.update(reply.get("send", []))
        return reply


def test_after_a_crash_nothing_the_old_bridge_sent_is_acknowledged_to_the_new_one():
    """The link kept what the crashed bridge had sent and acknowledged it to the restarted one."""
    acts = [("produce",), ("deliver",), ("tick",), ("crash",), ("deliver",), ("transfer",)]
    out = run_bridge(StrictAboutRemoteAcks(), "corda-os", acts)
    assert not out.strict, [v.render() for v in out.strict]


@pytest.mark.parametrize("profile", PROFILES)
def test_a_bridge_strict_about_remote_acks_passes(profile):
    r = search(StrictAboutRemoteAcks, profile, max_examples=100, role="bridge")
    assert r.failure is None, r.failure and [v.render() for v in r.failure.violations]


# ---- which losses the link makes -------------------------------------------------------------------
WITHOUT_LOSE = st.lists(st.sampled_from([a for a in bridge._DRAWN if a != "lose"]).map(lambda a: (a,)), max_size=25)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(WITHOUT_LOSE)
def test_pipelining_keeps_order_through_link_failures_and_crashes(acts):
    """A connection that fails loses everything after the failure and the bridge rolls back: a
    pipelining bridge keeps the session's order through that. Only a message the remote broker
    did not take while it took later ones (``lose``) puts it out of order (test_corda_driven)."""
    out = run_bridge(bridge.Pipelining(), "spec", acts)
    assert not out.strict, [v.render() for v in out.strict]


def test_a_lost_message_is_shown_as_one_message_the_remote_broker_did_not_take():
    out = run_bridge(bridge.Pipelining(), "spec", [("produce",), ("produce",), ("deliver",), ("deliver",), ("lose",),
                                                   ("transfer",)])
    assert "CORDA-ORDER-001" in strict_rules(out)
    assert any("did not take tag 1" in line for line in out.log), out.log


# ---- one reply, in order; a remote acknowledgement across a rollback (spec/corda/adapter.md) -------
class RollsBackOnTick(ReferenceBridge):
    """Sends what it holds and rolls back in the same reply at its first tick, then sends nothing
    again: it only waits for remote acknowledgements and acknowledges the live delivery of a tag."""

    def on_hello(self, event):
        self.heard, self.live, self.rolled = [], {}, False
        return super().on_hello(event)

    def on_deliver(self, event):
        self.live[event["tag"]] = event["conn"]
        return {} if self.rolled else super().on_deliver(event)

    def on_remote_ack(self, event):
        self.heard.append(event["tag"])
        conn = self.live.get(event["tag"])
        return {"acks": [[event["tag"], conn]] if conn is not None else []}

    def on_tick(self, event):
        if self.rolled:
            return {}
        self.rolled = True
        self.waiting.clear()
        self.unacked.clear()
        return {"send": [], "rollback": True}


def test_a_tag_sent_before_a_rollback_is_acknowledged_once_delivered_again():
    """adapter.md "One reply, in order": what is on the link survives the bridge's rollback; once
    the local broker delivered the tag again, its remote acknowledgement comes and the bridge
    acknowledges it under the new conn. Delivered again only after the link's turn, it is dropped
    from the link and the bridge hears nothing: one that waits for that acknowledgement instead of
    sending again fails CORDA-BRIDGE-002."""
    b = RollsBackOnTick()
    out = run_bridge(b, "corda-os", [("produce",), ("deliver",), ("tick",), ("deliver",), ("transfer",)])
    assert b.heard == [1] and not out.violations, (b.heard, out.log)
    late = RollsBackOnTick()
    out = run_bridge(late, "corda-os", [("produce",), ("deliver",), ("tick",), ("transfer",), ("deliver",)])
    assert late.heard == [] and strict_rules(out) == {"CORDA-BRIDGE-002"}, (late.heard, out.log)


class SendsAndRollsBack(ReferenceBridge):
    """Sends its first delivery and rolls back in the same reply; later ones as the reference."""

    def on_hello(self, event):
        self.heard, self.rolled = [], False
        return super().on_hello(event)

    def on_deliver(self, event):
        reply = super().on_deliver(event)
        if self.rolled:
            return reply
        self.rolled = True
        self.waiting.clear()
        self.unacked.clear()
        return {**reply, "rollback": True}

    def on_remote_ack(self, event):
        self.heard.append(event["tag"])
        return super().on_remote_ack(event)


def test_a_send_in_a_reply_that_rolls_back_goes_on_the_link_first():
    """send is applied before rollback: the tag is on the link, and reaches the remote broker once
    the local broker delivered it again (the remote acknowledgement follows)."""
    b = SendsAndRollsBack()
    out = run_bridge(b, "corda-os", [("produce",), ("deliver",), ("deliver",), ("transfer",)])
    assert b.heard[:1] == [1] and not out.violations, (b.heard, out.log)
