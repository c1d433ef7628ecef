"""The TLA+ model of RMB (tla/rmb): its profile table comes from spec/rmb, TLC checks its CI
configurations to the figures of tla/manifest.json (the expected findings included: rmb-go's late
timeout after an answered request, the spec profile's delivery after the deadline), and each
property is shown to rest on a mechanism: a copy of the model with that mechanism removed (never
the property's own guard) is caught by TLC, and the counterexample is printed as a readable trace."""

from __future__ import annotations

import json
import re
import sys

import pytest

from conftest import REPO
from rmkit.cli import main
from rmkit.conformance.rmb.tla_tables import render
from rmkit.tlc import run_tlc
from tla_support import mutated_copy
from rmkit.tlc.manifest import load_manifest, result_name
from rmkit.tlc.render import render_result

MODEL_DIR = REPO / "tla" / "rmb"
# The configurations are small: the JIT's optimizing tier costs more CPU than it saves (measured: about
# 40 % less CPU per run with the quick tier alone, the same states).
JAVA_OPTS = ("-XX:TieredStopAtLevel=1",)
PROPERTIES = ("NoDeliveryAfterExpiry", "AtMostTryAttempts", "RepliesOnlyWhileLive", "AnsweredByDeadline", "EventuallyAnswered")
TEMPORAL = ("EventuallyAnswered",)   # checked as a PROPERTY under FairSpec


def test_profiles_module_is_generated_from_the_spec():
    assert (MODEL_DIR / "RMBProfiles.tla").read_text() == render(), "tla/rmb/RMBProfiles.tla is stale: run `make tla-tables`"


def test_profiles_module_carries_the_spec_values():
    text = render()
    assert 'p = "rmb-rs-v1" -> 5' in text          # try clamped to [1, 5]
    assert re.search(r'RetryQueueIn\(p\) ==\n(.*\n){2}.*p = "rmb-go" -> TRUE', text)


def _config(name):
    model = load_manifest().model("rmb")
    return model, model.config(name)


@pytest.mark.parametrize("name", ["spec", "spec-answered", "rs", "rs-mixed", "go", "fanout", "fanout-answered", "fanout-live"] + [
    pytest.param(n, marks=pytest.mark.slow) for n in ("rs-answered", "fanout-crash")])
def test_configuration_checks_to_the_manifest_figures(name):
    model, cfg = _config(name)
    result = run_tlc(model.dir, cfg.module, cfg.cfg, workers=cfg.workers, deadlock_check=cfg.deadlock, java_opts=JAVA_OPTS)
    assert result.complete and result.error is None, result.error
    if cfg.finding:
        assert cfg.expected_finding(result), result.counterexamples
    else:
        assert result.verdict == "pass", result.counterexamples
    assert (result.distinct_states, result.total_states) == (cfg.distinct_states, cfg.total_states)


def test_every_property_is_checked_by_a_passing_configuration():
    """Each property holds in at least one profile's CI configuration (the findings aside)."""
    model = load_manifest().model("rmb")
    checked = set()
    for cfg in model.configs:
        if not cfg.slow and not cfg.finding:
            checked |= {n for l in (model.dir / cfg.cfg).read_text().splitlines()
                        if l.startswith(("INVARIANTS", "PROPERTIES")) for n in l.split()[1:]}
    assert checked >= set(PROPERTIES)


def test_no_delivery_after_expiry_is_claimed_only_where_the_receiver_does_not_check():
    """Where the destination refuses an expired request (rmb-rs-v1, RMB-REMOTE-007), Arrive queues
    nothing once clock > Deadline: NoDeliveryAfterExpiry would restate that guard and pass whatever
    the sender does. A passing configuration checks it only with a destination that accepts expired
    requests, where the sender's deadline check is what keeps them from the handler."""
    model = load_manifest().model("rmb")
    claimed = []
    for cfg in model.configs:
        text = (model.dir / cfg.cfg).read_text()
        line = next(l for l in text.splitlines() if l.startswith("INVARIANTS"))
        if not cfg.finding and "NoDeliveryAfterExpiry" in line.split():
            assert re.search(r"(?m)^    RefuseExpired <- DestinationAcceptsExpired$", text), cfg.cfg
            claimed.append(cfg.name)
    assert claimed


def test_rmkit_tlc_rmb_shows_rmb_go_timing_out_an_answered_request(tmp_path, capsys):
    """rmb-go promises no answer by the deadline: TLC finds the request answered, its reply routed to
    $ret, and the scrubber's "request timeout" pushed to $ret after the deadline all the same."""
    code = main(["tlc", "rmb", "--config", "go-late-timeout", "--progress", "none", "--format", "json", "--out", str(tmp_path),
                 f"--java-opt={JAVA_OPTS[0]}"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    assert (doc["distinct_states"], doc["total_states"]) == (14, 15), "figures of tla/manifest.json"
    assert doc["name"] == "AnsweredByDeadline" and doc["finding"]["rule"] == "RMB-BACKLOG-003" and doc["finding"]["reproduced"]
    trace = json.loads((tmp_path / "rmb-go-late-timeout.trace.json").read_text())["counterexamples"][0]["trace"]
    steps = [s["values"]["last"]["a"] for s in trace]
    out = trace[-1]["values"]["out"]
    deadline = 1   # Exp of the configuration (now = 0)
    replies = [o for o in out if o["k"] == "reply" and o["t"] <= deadline]
    timeouts = [o for o in out if o["k"] == "timeout" and o["t"] > deadline]
    assert replies and timeouts, out
    assert steps.index("ReplyArrive") < len(steps) - 1 and steps[-1] == "Tick"
    assert not any(trace[i]["values"]["budget"][m] for i in range(len(trace)) for m in ("loss", "fail", "crash", "delay"))


def test_the_spec_profile_delivers_after_the_deadline(capsys):
    """The spec profile's finding: its worker reads the backlog once per job and the receiver does not
    check exp, so a POST made after the deadline reaches the handler (rmb-rs-v1 closes it)."""
    model, cfg = _config("spec-expiry")
    result = run_tlc(model.dir, cfg.module, cfg.cfg, workers=1, deadlock_check=False, java_opts=JAVA_OPTS)
    assert cfg.expected_finding(result)
    assert (result.distinct_states, result.total_states) == (cfg.distinct_states, cfg.total_states)
    sys.stdout.write(render_result(result, title="finding spec-expiry", max_traces=1))
    final = result.counterexamples[0].states[-1].values
    assert any(g["t"] > 1 for g in final["got"]) and final["bl"]["on"] is False


def _cfg_text(base: str, invariants: list[str], **constants) -> str:
    text = (MODEL_DIR / base).read_text()
    for name, value in constants.items():
        text, n = re.subn(rf"(?m)^(    {name} = ).*$", rf"\g<1>{value}", text)
        assert n == 1, name
    temporal = [x for x in invariants if x in TEMPORAL]
    text = re.sub(r"(?m)^PROPERTIES .*$", "PROPERTIES " + " ".join(temporal), text) if temporal else \
        re.sub(r"(?m)^PROPERTIES .*\n?", "", text)
    return re.sub(r"(?m)^INVARIANTS .*$", "INVARIANTS " + " ".join(x for x in invariants if x not in TEMPORAL), text)


# ---- mutations: each removes one mechanism; TLC must catch it on the property it protects ----------
# name: (replacements in RMB.tla, the manifest cfg it runs on, changed constants, the property TLC must report)
MUTATIONS = {
    # rmb-rs-v1's worker no longer checks the deadline before an attempt (RMB-RETRY-004): with a
    # destination that does not check exp, a retry after the deadline reaches its handler
    "sender_posts_after_deadline": (
        [("    /\\ ~(Restamp /\\ clock >= Deadline)\n", "")],
        "MCRMB_rs_mixed.cfg", {}, "NoDeliveryAfterExpiry"),
    # rmb-go's retry entries lose their attempt number when the daemon restarts (the count kept in memory)
    "attempts_not_persisted": (
        [("    /\\ last' = [a |-> \"Crash\"]\n    /\\ UNCHANGED <<clock, local, bl, hash, fwd, rq, out,",
          "    /\\ last' = [a |-> \"Crash\"]\n    /\\ rq' = [d \\in Dst |-> IF rq[d] > 0 THEN 1 ELSE 0]\n"
          "    /\\ UNCHANGED <<clock, local, bl, hash, fwd, out,")],
        "MCRMB_go.cfg", {}, "AtMostTryAttempts"),
    # the backlog is written without a TTL: Redis never drops it
    "backlog_without_ttl": (
        [("    /\\ bl' = IF bl.on /\\ clock' > bl.until THEN [bl EXCEPT !.on = FALSE] ELSE bl", "    /\\ bl' = bl")],
        "MCRMB_spec.cfg", {}, "RepliesOnlyWhileLive"),
    # the reply endpoint routes a reply without reading the backlog (RMB-REPLY-004). A mechanism, not
    # the property's guard: the property speaks of time (liveUntil), the endpoint of a Redis key; the
    # key says "live" only as long as its TTL (removed by backlog_without_ttl) keeps it, so each of the
    # two mutations leaves the other mechanism in place and TLC still finds a late reply routed
    "reply_routed_without_live_check": (
        [("    /\\ LET live == IF AfterPost THEN hash.on ELSE bl.on", "    /\\ LET live == TRUE")],
        "MCRMB_spec.cfg", {}, "RepliesOnlyWhileLive"),
    # rmb-go without its scrubber: the backlog hash entry stays for ever
    "no_scrubber": (
        [("       IN /\\ hash' = IF scrub THEN", "       IN /\\ hash' = IF FALSE THEN")],
        "MCRMB_go.cfg", {}, "RepliesOnlyWhileLive"),
    # rmb-rs-v1's worker checks the deadline one second late (clock > Deadline): a POST made at the
    # deadline, a second on the wire, reaches a destination that does not check exp after it
    "deadline_check_one_second_late": (
        [("    /\\ ~(Restamp /\\ clock >= Deadline)\n", "    /\\ ~(Restamp /\\ clock > Deadline)\n")],
        "MCRMB_rs_mixed.cfg", {}, "NoDeliveryAfterExpiry"),
    # the dispatcher writes a forward job for the first destination only
    "first_destination_only": (
        [("    /\\ fwd' = DstSeq\n", "    /\\ fwd' = <<DstSeq[1]>>\n")],
        "MCRMB_fanout_answered.cfg", {}, "AnsweredByDeadline"),
    # the same, under FairSpec: the destination whose attempts all failed is never answered
    "no_error_after_last_attempt_live": (
        [("            /\\ out' = out \\cup {[d |-> d, k |-> \"error\", t |-> clock]}\n            /\\ UNCHANGED <<rq, hash, liveUntil, skew>>",
          "            /\\ UNCHANGED <<rq, hash, liveUntil, skew, out>>")],
        "MCRMB_fanout_live.cfg", {}, "EventuallyAnswered"),
    # after the last failed attempt the worker drops the job instead of pushing an error to $ret
    "no_error_after_last_attempt": (
        [("            /\\ out' = out \\cup {[d |-> d, k |-> \"error\", t |-> clock]}\n            /\\ UNCHANGED <<rq, hash, liveUntil, skew>>",
          "            /\\ UNCHANGED <<rq, hash, liveUntil, skew, out>>")],
        "MCRMB_spec_answered.cfg", {}, "AnsweredByDeadline"),
}


def test_every_property_has_a_mutation():
    assert {m[3] for m in MUTATIONS.values()} == set(PROPERTIES)


def test_the_mixed_configuration_lets_time_pass_while_a_request_is_on_the_wire():
    """The sender's deadline check keeps expired requests from a destination that does not check exp
    only if it is aligned with the time a request may spend on the wire (one second): delays are
    possible in rs-mixed, and no configuration narrows where they may pass."""
    text = (MODEL_DIR / "MCRMB_rs_mixed.cfg").read_text()
    assert re.search(r"(?m)^    MaxDelay = [1-9]", text) and re.search(r'(?m)^    Profile = "rmb-rs-v1"$', text)
    assert "DelayPossible" not in text


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_caught_by_tlc(name, tmp_path):
    """The mutation's configuration is a manifest configuration (which passes unmutated, see
    test_configuration_checks_to_the_manifest_figures) checked for the protected property alone."""
    replacements, base, constants, expected = MUTATIONS[name]
    mutated_copy(MODEL_DIR, tmp_path, "RMB.tla", replacements, name)
    base_invariants = [n for l in (MODEL_DIR / base).read_text().splitlines() if l.startswith(("INVARIANTS", "PROPERTIES"))
                       for n in l.split()[1:]]
    assert expected in base_invariants, f"{base} does not check {expected} unmutated"
    (tmp_path / "M.cfg").write_text(_cfg_text(base, ["TypeOK", expected], **constants))
    result = run_tlc(tmp_path, "MCRMB", "M.cfg", workers=1, deadlock_check=False, java_opts=JAVA_OPTS)
    assert result.verdict == "violation", result.error
    if expected in TEMPORAL:
        assert result_name(result) == "liveness failure"
        return
    assert result.name == expected, (result.name, [s.values.get("last") for s in result.counterexamples[0].states])
    rendered = render_result(result, title=f"mutation {name}", max_traces=1)
    sys.stdout.write(rendered)
    assert "state 2" in rendered and expected in rendered
