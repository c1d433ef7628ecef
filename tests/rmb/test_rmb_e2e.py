"""End to end with the public npm clients: ts-rmb-redis-client and its MessageBusServer (and a
Python handler) through two reference daemons, each on its own redis-server, with recording
proxies between them and a third twin that is down. The same scenarios as `make demo`."""

import json

import pytest

from rmb_support import NPM_DIR, npm_ready, redis_server_or_skip
from rmkit.reference_impl.rmb.demo import run_scenarios
from rmkit.specload import schema_problem


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    npm_ready()
    redis_server_or_skip()
    workdir = tmp_path_factory.mktemp("rmb-e2e")
    return {s.name: s for s in run_scenarios(NPM_DIR, workdir, "spec")}, workdir


def test_npm_client_request_answered_by_npm_server_through_two_daemons(steps):
    s = steps[0]["npm client -> twin 1 -> twin 2 -> npm MessageBusServer"]
    assert s.ok and s.facts["reply dat"] == "5" and s.facts["reply src"] == 2, s.facts


def test_npm_client_request_answered_by_python_handler(steps):
    s = steps[0]["npm client -> twin 1 -> twin 2 -> Python handler"]
    assert s.ok, s.facts


def test_destination_down_retried_then_error_on_ret(steps):
    s = steps[0]["a destination that is down"]
    assert s.ok and s.facts["attempts"] == 3 and "twin 3" in s.facts["error on ret"], s.facts


def test_expired_backlog_drops_the_reply_with_408(steps):
    s = steps[0]["an expired backlog"]
    assert s.ok and s.facts["reply endpoint answered"] == 408, s.facts


def test_tampered_signature_gets_401(steps):
    s = steps[0]["a tampered signature"]
    assert s.ok and s.facts["status"] == 401, s.facts


def test_each_twin_had_its_own_redis_and_the_logs_hold_every_exchange(steps):
    s, workdir = steps[0]["message logs"], steps[1]
    assert s.ok, s.facts
    twins = json.loads((workdir / "twins.json").read_text())
    assert len({t["redis_port"] for t in twins}) == 2  # RMB-NODE-001
    for name in ("twin-1.log.jsonl", "twin-2.log.jsonl", "recorder-1.log.jsonl", "recorder-2.log.jsonl"):
        lines = [json.loads(line) for line in (workdir / name).read_text().splitlines()]
        assert lines, name
        for i, e in enumerate(lines, 1):  # every line passes the log's schema (spec/schema/rmb-log.schema.json)
            assert schema_problem(e, "rmb-log") is None, f"{name}:{i}: {schema_problem(e, 'rmb-log')}"
    recorded = [json.loads(line) for line in (workdir / "recorder-2.log.jsonl").read_text().splitlines()]
    statuses = sorted(e["status"] for e in recorded if e["event"] == "recorded-response")
    assert 202 in statuses and 401 in statuses  # the recorder saw the accepted requests and the tampered one
