"""Agreement between the TLA+ model of RMB (``tla/rmb``) and the reference daemon
(``reference_impl/rmb/daemon.py``), model -> reference: TLC's simulation draws random behaviours
of the model (each state records its step in ``last``); each behaviour is replayed step by step
into real reference daemons (the sender, twin 1, and one daemon per destination) on a real
``redis-server``, and after every step both sides' states must be equal. The first difference is
a :class:`Disagreement`.

The harness plays only the environment, never the daemon: the client (it pushes the request),
the handlers (they answer), the network (an exchange the model loses, fails with a 500 or
duplicates; a delivery is a real HTTP POST to the receiving daemon, whose answer is its own),
the scheduler (a worker is parked at each point where the model lets time pass: after it read
the backlog, and in each pause between attempts) and the clock (the daemons read a virtual clock;
Redis's TTLs run on it: the harness reads the TTL a daemon set, keeps it, and drops the key when
the virtual clock passes it). Every decision (skip an expired job, retry or report, refuse an
expired request, route or drop a reply, scrub) is the reference daemon's own; its outcome is
compared with the model's state.
"""

from __future__ import annotations

import asyncio
import time as _time
from typing import Optional

from rmkit.conformance.disagreement import Disagreement, SimulationFailed
from rmkit.tlc.generated import run_generated
from rmkit.tlc.result import ERROR, STATE

from rmkit.conformance.rmb.agreement_harness import (ABSENT, BUDGETS, Harness, Scenario, StepStuck,
                                                      _virtual_environment, model_view)


async def _replay(sc: Scenario, states: list, redis_port: int) -> Optional[Disagreement]:
    real = [s for s in states if s.marker == STATE]
    h = Harness(sc, redis_port)
    clock, sched = h.clock, h.sched
    done: list = []
    with _virtual_environment(clock, sched):
        await h.start()
        try:
            for i, s in enumerate(real[1:], 1):
                last = dict(s.values["last"])
                done.append(last)
                want = model_view(s.values)
                try:
                    await h.step(last)
                except (StepStuck, KeyError, IndexError, TypeError, AssertionError) as e:
                    return Disagreement(i, last, want, None, f"the reference cannot take this step: {type(e).__name__}: {e}", done)
                got = await h.view()
                if got != want:
                    return Disagreement(i, last, want, got, "states differ", done)
        finally:
            await h.stop()
    return None


def replay_behaviour(sc: Scenario, states: list, redis_port: int) -> Optional[Disagreement]:
    """Replay one TLC behaviour (its states, the first being initial) into the reference daemons."""
    return asyncio.run(_replay(sc, states, redis_port))


def simulation_module(sc: Scenario, depth: int) -> tuple[str, str]:
    module = f"""---- MODULE RMBSim ----
\\* GENERATED: the RMB model with a step counter, to draw random behaviours from TLC.
EXTENDS RMB
VARIABLE n
SimInit == Init /\\ n = 0
SimNext == Next /\\ n' = n + 1
SimSpec == SimInit /\\ [][SimNext]_<<vars, n>>
\\* violated (so TLC prints the behaviour) at the depth, or where the model can go no further
SimGoOn == n < {depth} /\\ ENABLED Next
====
"""
    consts = [f'    Profile = "{sc.profile}"', f"    Dests = {sc.dests}", f"    Try = {sc.tries}", f"    Exp = {sc.exp}",
              f"    MaxTime = {sc.max_time}"] + [f"    {b} = {v}" for b, v in zip(BUDGETS, sc.budgets)] + list(ABSENT)
    cfg = "CONSTANTS\n" + "\n".join(consts) + "\nSPECIFICATION SimSpec\nINVARIANT SimGoOn\n"
    return module, cfg


def simulate(sc: Scenario, *, traces: int, depth: int, seed: int, timeout: float = 120) -> list:
    """Up to ``traces`` random behaviours of up to ``depth`` steps (fewer where the model stops)."""
    module, cfg = simulation_module(sc, depth)
    result = run_generated("rmb", "RMBSim", module, cfg, simulate_depth=depth + 1, seed=seed,
                           continue_after_violation=True, max_traces=traces, timeout=timeout, deadlock_check=False,
                           java_opts=("-XX:TieredStopAtLevel=1",))   # a small model: the quick JIT tier is enough
    if result.verdict == ERROR:
        raise SimulationFailed(result.error.message if result.error else "TLC error")
    return result.traces


def agree(sc: Scenario, redis_port: int, *, traces: int = 20, depth: int = 25, seed: int = 1) -> tuple[int, int, list[Disagreement]]:
    """Replay ``traces`` simulated behaviours; (behaviours replayed, steps replayed, disagreements)."""
    found, steps, n = [], 0, 0
    for trace in simulate(sc, traces=traces, depth=depth, seed=seed):
        n += 1
        steps += sum(1 for s in trace if s.marker == STATE) - 1
        d = replay_behaviour(sc, trace, redis_port)
        if d is not None:
            found.append(d)
    return n, steps, found


AGREEMENT_EXIT_CODES = """exit codes:
  0  the model and the reference daemons agree both ways for every profile
  1  a behaviour of the model the reference does not follow, or a walk of the reference the
     model cannot follow
  2  usage error (an unknown profile), redis-server, Java or TLC missing, or an internal error"""


def command_line():
    """``python -m rmkit.conformance.rmb.agreement [PROFILE...]``: both directions for each profile
    (model -> reference: 100 behaviours of depth 30, seed 7; reference -> model: 40 walks)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m rmkit.conformance.rmb.agreement", epilog=AGREEMENT_EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Replay the RMB model's random behaviours into the reference daemons on a real\n"
                                            "redis-server, and the reference's random walks into the model (TLC): see tla/README.md.")
    p.add_argument("profiles", nargs="*", metavar="PROFILE",
                   help=f"profiles to check (default: every one: {', '.join(_profiles())})")
    p.set_defaults(func=_agree_profiles)
    return p


def _profiles() -> list[str]:
    from rmkit.protocols.rmb.model import rmb_spec

    return list(rmb_spec().profiles)


def _agree_profiles(args) -> int:
    from rmkit.conformance.rmb.trace_validation import reference_walk, validate
    from rmkit.errors import UsageError
    from rmkit.reference_impl.rmb.redisproc import RedisServer

    known = _profiles()
    for profile in args.profiles:
        if profile not in known:
            raise UsageError(f"PROFILE {profile!r}: expected one of {', '.join(known)}")
    problems = 0
    with RedisServer() as server:
        for profile in args.profiles or known:
            t = _time.monotonic()
            n, steps, bad = agree(Scenario(profile), server.port, traces=100, depth=30, seed=7)
            print(f"{profile}: model -> reference: {n} behaviours, {steps} steps replayed, {len(bad)} disagreements, "
                  f"{_time.monotonic() - t:.1f} s")
            for d in bad[:3]:
                print(d.render())
            t = _time.monotonic()
            walks = [reference_walk(Scenario(profile), server.port, seed=s) for s in range(40)]
            missed = validate(Scenario(profile), walks)
            print(f"{profile}: reference -> model: {len(walks)} walks, {sum(len(w) - 1 for w in walks)} steps, "
                  f"{len(missed)} not followed by the model {missed}, {_time.monotonic() - t:.1f} s")
            problems += len(bad) + len(missed)
    return 1 if problems else 0


if __name__ == "__main__":
    import sys

    from rmkit.guard import run_command_line

    sys.exit(run_command_line(command_line()))
