"""Hypothesis-generated scenarios per role, run in lock-step against the reference, shrunk on failure.

Why Hypothesis's stateful testing: the events are drawn from the role's vocabulary with the
environment's preconditions, and when an implementation departs, Hypothesis shrinks the run to a
minimal sequence of events, which becomes a scenario file (:mod:`.scenario`) that reruns exactly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, seed as hyp_seed, settings
from hypothesis.stateful import run_state_machine_as_test

from rmkit.conformance.remp.driven.gen_consumer import ConsumerWorld
from rmkit.conformance.remp.driven.gen_fullnode import FullNodeWorld
from rmkit.conformance.remp.driven.gen_validator import ValidatorWorld
from rmkit.conformance.remp.driven.machine import Departure, Trace, bind
from rmkit.conformance.remp.driven.scenario import Scenario

WORLDS = {"validator": ValidatorWorld, "fullnode": FullNodeWorld, "consumer": ConsumerWorld}
STEPS_PER_SCENARIO = 40
BATCH = 25


@dataclass
class Generated:
    """The outcome of the generated scenarios of one role: how many ran, and the shrunk failing
    scenario if one failed (``found_s``: time to the first failure, ``shrunk_s``: time shrinking)."""

    role: str
    examples: int
    steps: int
    elapsed_s: float
    failing: Scenario | None = None
    message: str = ""
    kit_error: str = ""


def run_generated(role: str, profile: str, params: dict, impl, *, max_examples: int = 100, seed: int | None = None,
                  derandomize: bool = False, time_budget: float | None = None,
                  steps: int = STEPS_PER_SCENARIO) -> Generated:
    trace = Trace()
    machine = bind(WORLDS[role], role, profile, params, impl, trace)
    started = time.perf_counter()
    done = 0
    batch_no = 0
    while done < max_examples:
        n = min(BATCH, max_examples - done)
        conf = settings(max_examples=n, stateful_step_count=steps, deadline=None, database=None,
                        derandomize=derandomize and seed is None, print_blob=False, report_multiple_bugs=False,
                        suppress_health_check=list(HealthCheck),
                        phases=[Phase.explicit, Phase.generate, Phase.shrink])
        if seed is not None or not derandomize:
            base = seed if seed is not None else int(time.time_ns() % (1 << 32))
            machine_run = hyp_seed(base + batch_no)(machine)
        else:
            # derandomized batches differ by their own subclass (Hypothesis derives the seed from the test)
            machine_run = type(f"{machine.__name__}{batch_no}", (machine,), {})
        try:
            run_state_machine_as_test(machine_run, settings=conf)
        except Departure as exc:
            failing = Scenario(id=f"generated-{role}", role=role, profile=profile, params=params, events=list(trace.events),
                               origin="generated")
            failing.id = f"generated-{role}-{failing.digest()}"
            return Generated(role, done + n, trace.steps, time.perf_counter() - started, failing, str(exc))
        except Exception as exc:  # a bug of the kit's generator: reported, never a pass
            import traceback

            return Generated(role, done + n, trace.steps, time.perf_counter() - started,
                             kit_error="".join(traceback.format_exception(exc))[-3000:])
        done += n
        batch_no += 1
        if time_budget is not None and time.perf_counter() - started >= time_budget:
            break
    return Generated(role, trace.runs, trace.steps, time.perf_counter() - started)
