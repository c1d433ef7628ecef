"""The lock-step driver the generators share: every event goes to the reference and to the
implementation, and their outputs are compared before the next event is drawn.

Why the reference drives the drawing: what may come next depends on what the validator did (the
messages it handed its collator, the blocks it refused), and the spec's answer is the reference's.
A generator therefore draws only events a real environment could send next, and an implementation
that departs is caught at the step it departs, which is then shrunk (:mod:`.generate`).
"""

from __future__ import annotations

from rmkit.conformance.remp.driven.adapters import ImplementationFailure
from rmkit.conformance.remp.driven.runner import LockStep, Rejected, named_rules


class Departure(AssertionError):
    """The implementation departed from the reference at one step; ``rules``: the rules and
    requirements the departure is attributed to (the judge's findings, the log rules broken)."""

    def __init__(self, why: str, rules=()):
        super().__init__(why)
        self.rules = tuple(rules)


class Trace:
    """What the generated runs share with the caller: the events of the latest run and whether it
    failed, and how many runs and steps there were."""

    def __init__(self):
        self.events: list = []
        self.failed = False
        self.runs = 0
        self.steps = 0


class DrivenMachine:
    """Base of the role generators. Subclasses are made per run by :func:`bind` with ``role``,
    ``profile``, ``params``, ``impl`` and ``trace``; their steps are :func:`.draws.rule` methods."""

    role = profile = ""
    params: dict = {}
    impl = None
    trace: Trace = None
    defer = False  # whether steps may be deferred (see :class:`.runner.LockStep`); set per scenario by the player

    def __init__(self):
        self.run = LockStep(self.role, self.profile, self.params, self.impl, "generated")
        self.events: list = []
        self.trace.events = self.events
        self.trace.failed = False
        self.trace.runs += 1
        self._broken = False
        try:
            self.run.start(early=self.defer)
        except ImplementationFailure as f:
            self._depart(str(f))

    def before_step(self) -> None:
        """Called before the preconditions of a step are asked (a generator may cache what they read)."""

    def _depart(self, why: str, rules=()):
        self._broken = True
        self.trace.failed = True
        raise Departure(why, rules)

    def send(self, event: dict) -> list:
        """One step: the reference's outputs, after checking the implementation's against them (or,
        for a step the run defers, before: it is checked with the next request, and a departure it
        shows ends the scenario there, the events drawn after it dropped)."""
        self.events.append(event)
        self.trace.steps += 1
        run = self.run
        if self.defer and run.can_defer(event):
            return run.defer(event)
        try:
            expected, _, diff = run.step(event)
        except (ImplementationFailure, Rejected) as f:
            self._failed(f)
        if diff:
            self._depart(f"step {run.seq}: {diff.summary()}", [r for r, _ in named_rules(run.rules_broken(), diff)])
        return expected

    def _failed(self, f):
        """Depart at the step ``f`` (an implementation's failure, or a deferred step rejected) names."""
        if isinstance(f, Rejected):
            del self.events[f.seq:]
            self._depart(str(f), [r for r, _ in named_rules(self.run.rules_broken(), f.judgement)])
        if 0 <= f.step < len(self.events):  # a failure of the hello (step 0) is found with the first request
            del self.events[f.step:]
        self._depart(str(f))

    def teardown(self):
        if self._broken:
            return
        try:
            self.run.flush()
        except (ImplementationFailure, Rejected) as f:
            self._failed(f)
        broken = self.run.rules_broken()
        if broken:
            self.trace.failed = True
            raise Departure(f"the receipts break {', '.join(sorted({r for r, _ in broken}))}", dict.fromkeys(r for r, _ in broken))
        try:
            self.impl.end()
        except ImplementationFailure as f:
            self.trace.failed = True
            raise Departure(str(f)) from None


def bind(base: type, role: str, profile: str, params: dict, impl, trace: Trace) -> type:
    """A subclass of generator ``base`` for one run (instantiated per scenario)."""
    return type(base.__name__, (base,), {"role": role, "profile": profile, "params": params, "impl": impl,
                                         "trace": trace})
