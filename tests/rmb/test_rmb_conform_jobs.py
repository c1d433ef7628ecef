"""`rmkit conform --protocol rmb --jobs N`: scenarios run side by side on N daemons (each its own
redis-server and kit twins) with the verdicts of one daemon: the same failing scenarios and rules
for a faulty daemon at --jobs 1 and 2, the same generated scenarios at any --jobs."""

from __future__ import annotations

import asyncio

import pytest

from rmb_support import redis_server_or_skip
from rmkit.cli import main
from rmkit.conformance.rmb.driven.daemons import PER_DAEMON, Daemons, default_jobs
from rmkit.conformance.rmb.driven.judge import Rules
from rmkit.conformance.rmb.driven.suite import draw_scenarios, run_suite

SERVE = "--twin {twin} --directory {directory} --seed {seed} --redis {redis} --listen {listen} --profile {profile}"


def variant_cmd(name: str) -> str:
    return f"{{python}} -m rmkit.conformance.rmb.examples {name} serve " + SERVE


def failing(cmd: str, profile: str, jobs: int, examples: int = 0) -> tuple[set, set, object]:
    """(failing scenario ids, rules that failed, the generated failure's acts) of one run."""
    redis_server_or_skip()
    loop = asyncio.new_event_loop()
    d = Daemons.create(cmd, profile, jobs)
    try:
        loop.run_until_complete(d.start())
        assert len({h.redis_server.port for h in d.harnesses}) == jobs  # a Redis of its own each
        rep = run_suite(d, loop, max_examples=examples, derandomize=True, seed=None, time_budget=None,
                        catalogue_only=examples == 0, regressions=[], save_dir=None)
    finally:
        loop.run_until_complete(d.stop())
        loop.close()
    rules = Rules(profile)
    runs = rep.failing_runs(rules)
    final = rep.final.scenario.acts if rep.final else None
    return {r.scenario.id for r in runs}, {c.rule for r in runs for _, c in r.failures(rules)}, final


def test_a_faulty_daemon_fails_the_same_catalogue_scenarios_at_jobs_1_and_2():
    one = failing(variant_cmd("retries-on-4xx"), "spec", 1)
    two = failing(variant_cmd("retries-on-4xx"), "spec", 2)
    assert one[0] and one[:2] == two[:2], (one, two)
    assert "RMB-RETRY-003" in one[1]


@pytest.mark.slow
def test_a_faulty_daemon_gives_the_same_shrunk_failure_at_jobs_1_and_3():
    one = failing(variant_cmd("retries-on-4xx"), "spec", 1, examples=40)
    three = failing(variant_cmd("retries-on-4xx"), "spec", 3, examples=40)
    assert one[2] is not None and len(one[2]) == 1
    assert one == three


def test_the_generated_scenarios_do_not_depend_on_the_jobs():
    """The draw is Hypothesis' alone (seeded or derandomized): the daemons only run it."""
    assert draw_scenarios("spec", False, 30, True, None) == draw_scenarios("spec", False, 30, True, None)
    assert draw_scenarios("rmb-go", True, 20, False, 7) == draw_scenarios("rmb-go", True, 20, False, 7)
    assert draw_scenarios("spec", False, 20, False, 7) != draw_scenarios("spec", False, 20, False, 8)


def test_daemons_take_scenarios_side_by_side_in_order():
    class Alive:
        def alive(self):
            return True

    d = Daemons.__new__(Daemons)
    d.harnesses = [Alive(), Alive()]
    at_once = []
    now = [0]

    async def run(h, sc):
        now[0] += 1
        at_once.append(now[0])
        await asyncio.sleep(0.01)
        now[0] -= 1
        return sc

    got = asyncio.run(d.deal(list(range(50)), run))
    assert got == list(range(50))
    assert max(at_once) == 2 * PER_DAEMON
    assert asyncio.run(d.deal(list(range(50)), run, stop=lambda i: i >= 10)) == list(range(10))


def test_jobs_is_checked_and_defaults_to_the_cores_and_one(capsys, tmp_path):
    assert default_jobs() >= 2
    code = main(["conform", "--protocol", "rmb", "--impl-cmd", "true", "--jobs", "0", "--regressions", str(tmp_path)])
    assert code == 2
    assert "--jobs: expected a number of daemons from 1 to" in capsys.readouterr().err
