"""Generated scenarios per role, run in lock-step against the reference, shrunk on failure.

Why two drawers: searching must be fast (hundreds of scenarios a second), so scenarios are drawn
by a seeded :class:`random.Random` (:class:`.draws.RandomChoices`); shrinking must be good, so the
failing scenario's choice sequence is handed to Hypothesis, which replays it from its example
database and shrinks it (:func:`shrink`) to a minimal sequence of events. That becomes a scenario
file (:mod:`.scenario`) that reruns exactly (``rmkit replay``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rmkit.conformance.remp.driven.draws import Choices, HypothesisChoices, RandomChoices, ReplayChoices, rules_of
from rmkit.conformance.remp.driven.gen_consumer import ConsumerWorld
from rmkit.conformance.remp.driven.gen_fullnode import FullNodeWorld
from rmkit.conformance.remp.driven.gen_validator import ValidatorWorld
from rmkit.conformance.remp.driven.machine import Departure, Trace, bind
from rmkit.conformance.remp.driven.names import validators
from rmkit.conformance.remp.driven.scenario import Scenario

WORLDS = {"validator": ValidatorWorld, "fullnode": FullNodeWorld, "consumer": ConsumerWorld}
# The validator set sizes a scenario draws from (its first choice): the documents fix none ("Seven or
# more" on real shards, N/3+1 and 2/3 thresholds for any N), so every size from 1 to 16 is drawn,
# each residue modulo 3 and the sizes where floor(N/3)+1 and N/3+1 round differently among them.
# Hypothesis shrinks a choice towards 0, so the first is the simplest: a scenario that fails at any
# size shrinks to four validators, one that needs its size keeps it.
SET_SIZES = (4, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)
STEPS_PER_SCENARIO = 40
# shrinking stops simplifying after this much CPU time of the kit's process (the scenario found so
# far is kept): CPU time, so that a machine busy with other work shrinks as far as an idle one
SHRINK_BUDGET_S = 45.0
# the replays each shrinking stage may make: the bound a derandomized run actually meets (the same
# on every machine, so it names the same scenario and rules), well above what the faulty examples need
DROP_PLAYS, SHRINK_PLAYS = 1_000, 2_500
OFF = 3  # a rule whose switch draws this is off for the whole scenario (varies the mix, as swarm testing)


@dataclass
class Generated:
    """The outcome of the generated scenarios of one role: how many ran, and the shrunk failing
    scenario if one failed (``rules``: what its failure was attributed to)."""

    role: str
    examples: int
    steps: int
    elapsed_s: float
    failing: Scenario | None = None
    message: str = ""
    kit_error: str = ""
    rules: tuple = ()
    found_s: float = 0.0
    shrunk_from: int = 0
    # what the scenarios drew of each parameter the documents leave open: name -> values seen
    exercised: dict = field(default_factory=dict)


@dataclass
class Played:
    """One scenario played: its events, and why it failed (``None``: it passed)."""

    events: list
    failure: str | None = None
    rules: tuple = ()
    kit_error: str = ""
    made: list = field(default_factory=list)
    params: dict = field(default_factory=dict)  # the hello's parameters (the set size drawn)


_STOP = object()


def _step(c: Choices, w, active):
    """One step of a scenario: _STOP, None, or the Departure it ended with (returned, not raised,
    so that the step's choices are closed before the scenario ends). ``active``: (rule,
    precondition or None) of the rules switched on, in the rules' order."""
    if not c.more():
        return _STOP
    w.before_step()
    enabled = [r for r, pre in active if pre is None or pre(w)]
    if not enabled:
        return _STOP
    r = enabled[c.below(len(enabled))]
    try:
        r.fn(w, **{name: s.draw(c) for name, s in r.args})
    except Departure as d:
        return d
    return None


def play(world: type, choices: Choices, steps: int) -> Played:
    """Play one scenario of ``world`` (a bound generator class) with ``choices``."""
    trace = world.trace
    trace.events = []
    # steps are deferred (judged with a later request) only where the choices can be cut back to the
    # failing step: Hypothesis's, when shrinking, are left as one by one would leave them
    world.defer = isinstance(choices, RandomChoices)
    ends: list = []  # the events sent by the end of the world's start, then of each step
    params = dict(world.params, validators=validators(SET_SIZES[choices.below(len(SET_SIZES))]))
    try:
        w = world.__new__(world)
        w.params = params
        w.__init__()
        ends.append(len(trace.events))
        rules = rules_of(world)
        on = [choices.below(4) != OFF for _ in rules]
        if not any(on):
            on = [True] * len(rules)
        active = [(r, r.pre) for r, o in zip(rules, on) if o]
        for _ in range(steps):
            res = choices.span(lambda c: _step(c, w, active))
            ends.append(len(trace.events))
            if res is _STOP:
                break
            if res is not None:
                raise res
        w.teardown()
    except Departure as d:
        _cut(choices, ends, len(trace.events))
        return Played(list(trace.events), str(d), d.rules, params=params)
    except Exception as exc:  # a bug of the kit's generator: reported, never a pass
        import traceback

        return Played(list(trace.events), kit_error="".join(traceback.format_exception(exc))[-3000:], params=params)
    return Played(list(trace.events), params=params)


def _cut(choices: Choices, ends: list, failed_at: int) -> None:
    """Forget the choices of the steps after the one whose event failed (a deferred step fails when a
    later request is answered): the choice sequence is then the one a run judging each step at once
    would have left, which the shrinkers start from."""
    if not isinstance(choices, RandomChoices) or not ends:
        return
    k = next((i for i, e in enumerate(ends) if e >= failed_at), len(ends) - 1)
    if k == 0:  # at the start: before any step's choice (the rule switches included)
        del choices.made[:], choices.steps[:]
    elif k < len(ends) - 1:
        del choices.made[choices.steps[k - 1][1]:], choices.steps[k:]


class _Budget:
    """True while ``plays`` scenario replays are not used up (the bound that makes a derandomized
    run shrink to the same scenario on any machine, busy or not), and, as a safety net for a slow
    implementation, ``seconds`` of the kit's CPU time are not spent and four times as long in wall
    time (the kit's CPU time does not count an implementation in another process)."""

    def __init__(self, seconds: float, plays: int):
        self.cpu = time.process_time() + seconds
        self.wall = time.perf_counter() + 4 * seconds
        self.plays = plays
        self.used = 0

    def __call__(self) -> bool:
        self.used += 1
        return self.used <= self.plays and time.process_time() < self.cpu and time.perf_counter() < self.wall


def drop_steps(world: type, made: list, spans: list, steps: int, wanted, budget_s: float,
               plays: int = DROP_PLAYS) -> tuple[list, list]:
    """A first, cheap shrink: delete whole steps (runs of them, then one at a time, from the last)
    while the scenario still fails as ``wanted`` says; returns the shorter choice sequence and its
    steps. Hypothesis then simplifies what is left (deleting steps is where it spends most runs)."""
    left = _Budget(budget_s, plays)
    changed = True
    while changed and left():
        changed = False
        for size in (8, 4, 2, 1):
            i = len(spans) - size
            while i >= 0 and left():
                cand = made[:spans[i][0]] + made[spans[i + size - 1][1]:]
                c = ReplayChoices(cand)
                p = play(world, c, steps)
                if p.failure is not None and wanted(p):
                    made, spans, changed = c.made, c.steps, True
                i = min(i - 1, len(spans) - size)
    return made, spans


class _OutOfTime(BaseException):
    """Ends a shrink that ran out of time (a BaseException, so that Hypothesis stops at once
    instead of taking it for another failure)."""


def shrink(world: type, made: list, steps: int, wanted, budget_s: float = SHRINK_BUDGET_S,
           plays: int = SHRINK_PLAYS) -> Played | None:
    """The simplest scenario Hypothesis finds that still fails as ``wanted`` says, starting from the
    choice sequence ``made`` (put into its example database, so that it is replayed first and then
    simplified); when time runs out, the shortest failing one seen so far; None when Hypothesis
    cannot replay it (the implementation is not deterministic)."""
    from hypothesis import HealthCheck, Phase, find, settings, strategies as hst
    from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes
    from hypothesis.errors import HypothesisException

    db = InMemoryExampleDatabase()
    key = b"rmkit-driven-shrink"
    # the secondary corpus holds failures not yet shrunk; one in the primary would be taken as shrunk already
    db.save(key + b".secondary", choices_to_bytes(made))
    left = _Budget(budget_s, plays)
    best: list = []

    def failing(p: Played) -> bool:
        if not wanted(p):
            return False
        if not best or len(p.events) < len(best[0].events):
            best[:] = [p]
        return True

    started = hst.just(None)

    @hst.composite
    def scenario(draw):
        draw(started)  # a draw in every case (a scenario may end before its first choice, e.g. at hello)
        if not left():
            raise _OutOfTime
        return play(world, HypothesisChoices(draw), steps)

    conf = settings(database=db, phases=[Phase.reuse, Phase.shrink], deadline=None,
                    max_examples=1, suppress_health_check=list(HealthCheck), print_blob=False)
    try:
        # no seed: Hypothesis does not read its database in a seeded run
        return find(scenario(), failing, settings=conf, database_key=key)
    except (_OutOfTime, HypothesisException):
        return best[0] if best else None


def _failing(p: Played) -> bool:
    return p.failure is not None


def run_generated(role: str, profile: str, params: dict, impl, *, max_examples: int = 100, seed: int | None = None,
                  derandomize: bool = False, time_budget: float | None = None,
                  steps: int = STEPS_PER_SCENARIO, wanted=_failing, shrink_budget: float = SHRINK_BUDGET_S,
                  shrink_plays: tuple[int, int] = (DROP_PLAYS, SHRINK_PLAYS)) -> Generated:
    """Up to ``max_examples`` scenarios (fewer when ``time_budget`` runs out); the first that fails
    as ``wanted`` says (by default: at all) is shrunk, within ``shrink_plays`` replays (deleting
    steps, then Hypothesis's simplification) and ``shrink_budget`` s of CPU, and returned.
    Derandomized runs start from seed 0."""
    trace = Trace()
    world = bind(WORLDS[role], role, profile, params, impl, trace)
    started = time.perf_counter()
    base = seed if seed is not None else (0 if derandomize else time.time_ns() % (1 << 32))
    done = 0
    exercised: dict = {"validator set size": set(), "sessions": set(), "messages": set(), "steps": set()}
    while done < max_examples:
        choices = RandomChoices(base * 1_000_003 + done)
        p = play(world, choices, steps)
        done += 1
        _exercised(exercised, p)
        if p.kit_error:
            return Generated(role, done, trace.steps, time.perf_counter() - started, kit_error=p.kit_error)
        if p.failure is not None and wanted(p):
            found = time.perf_counter() - started
            made, _ = drop_steps(world, choices.made, choices.steps, steps, wanted, shrink_budget / 3, shrink_plays[0])
            if shrink_plays[1]:
                small = shrink(world, made, steps, wanted, shrink_budget * 2 / 3, shrink_plays[1]) or p
            else:  # deleting steps alone: the same scenario on every run (Hypothesis's shrink draws at random)
                small = play(world, ReplayChoices(made), steps)
            failing = Scenario(id=f"generated-{role}", role=role, profile=profile, params=small.params or p.params,
                               events=small.events, origin="generated")
            failing.id = f"generated-{role}-{failing.digest()}"
            return Generated(role, done, trace.steps, time.perf_counter() - started, failing, small.failure or "",
                             rules=small.rules, found_s=found, shrunk_from=len(p.events), exercised=exercised)
        if time_budget is not None and time.perf_counter() - started >= time_budget:
            break
    return Generated(role, done, trace.steps, time.perf_counter() - started, exercised=exercised)


def _exercised(seen: dict, p: Played) -> None:
    """Add what scenario ``p`` drew of the open parameters to ``seen``."""
    seen["validator set size"].add(len(p.params.get("validators") or ()))
    seen["sessions"].add(1 + sum(1 for e in p.events if e.get("type") == "SessionSwitch" and e.get("seqno", 0) > 0))
    seen["messages"].add(len({e.get("msg_id") or (e.get("receipt") or {}).get("message_id") for e in p.events} - {None}))
    seen["steps"].add(len(p.events))
