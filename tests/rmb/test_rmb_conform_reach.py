"""RMB driven conformance reaches the rules that need a key type, a tag, an error's every field or
a request's expiry: each faulty example below is caught by the catalogue scenarios named, and a
daemon that words its errors (its scrubber's too) its own way passes them."""

from __future__ import annotations

import asyncio

import pytest

from rmb_support import redis_server_or_skip
from rmkit.conformance.rmb.driven.daemons import Daemons
from rmkit.conformance.rmb.driven.judge import Rules
from rmkit.conformance.rmb.driven.scenario import catalogue
from rmkit.conformance.rmb.driven.suite import describe_run, run_batches

SERVE = "--twin {twin} --directory {directory} --seed {seed} --redis {redis} --listen {listen} --profile {profile}"
REFERENCE = "{python} -m rmkit.reference_impl.rmb.cli serve " + SERVE


def variant_cmd(name: str) -> str:
    return f"{{python}} -m rmkit.conformance.rmb.examples {name} serve " + SERVE


def failed_rules(cmd: str, profile: str, titles: list[str], jobs: int = 2) -> set[str]:
    redis_server_or_skip()
    loop = asyncio.new_event_loop()
    d = Daemons.create(cmd, profile, jobs)
    try:
        loop.run_until_complete(d.start())
        chosen = [sc for sc in catalogue(profile, d.b["retry_delay_s"] >= 1) if sc.title in titles]
        assert len(chosen) == len(titles), [sc.title for sc in chosen]
        runs = run_batches(d, loop, chosen)
    finally:
        loop.run_until_complete(d.stop())
        loop.close()
    rules = Rules(profile)
    print("\n".join(line for r in runs if r.failed(rules) for line in describe_run(r, rules, evidence_lines=10)))
    return {c.rule for r in runs for _, c in r.failures(rules)}


SR = ["sr25519 key: request, retried, reply", "sr25519 key: the handler's answer posted back"]
EXPIRY = ["answered, then expired (rmb-go: its scrubber's timeout)", "not answered, expired"]


@pytest.mark.parametrize("cmd, profile, titles, expected", [
    (variant_cmd("broken-sr25519"), "spec", SR + ["request, reply"], {"RMB-SIG-006"}),
    (variant_cmd("forgets-tag"), "rmb-rs-v1", ["request, reply"], {"RMB-REPLY-005"}),
    (variant_cmd("error-keeps-dat"), "spec", ["connection refused"], {"RMB-RETRY-002"}),
    (variant_cmd("no-scrubber"), "rmb-go", EXPIRY, {"RMB-BACKLOG-003"}),
    (variant_cmd("forgets-tag"), "spec", ["request, reply"], set()),  # tag restoration: rmb-rs-v1's only
    (variant_cmd("own-error-words"), "rmb-go", EXPIRY + ["connection refused"], set()),  # error words are free
    (REFERENCE, "rmb-go", EXPIRY, set()),
    (REFERENCE, "spec", SR + EXPIRY, set()),
])
def test_the_rule_is_reached(cmd, profile, titles, expected):
    assert failed_rules(cmd, profile, titles) == expected
