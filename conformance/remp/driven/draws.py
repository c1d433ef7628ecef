"""The vocabulary the role generators draw their steps from, and the two sources of the drawing.

Why not Hypothesis's stateful runner: it spent about three quarters of a generated scenario's time
on its own bookkeeping (feature flags, spans, mutation of earlier runs), and the lock-step run is
cheap. So a scenario is drawn from one flat sequence of small choices (an integer below ``n``, or
"one more step?"): a seeded :class:`random.Random` makes them when searching (fast), and Hypothesis
makes them when shrinking (:class:`HypothesisChoices`, see :mod:`.generate`), replaying the failing
sequence first and then simplifying it. The same sequence always gives the same scenario, whoever
draws it, because the generators draw only through a :class:`Choices`.

A generator declares its steps as methods with :func:`rule` (the argument strategies) and
:func:`precondition`, like Hypothesis's stateful rules; the strategies here are the few it needs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


class Choices:
    """Where a scenario's choices come from."""

    def below(self, n: int) -> int:  # an integer in [0, n)
        raise NotImplementedError

    def more(self) -> bool:  # one more step?
        raise NotImplementedError

    def span(self, fn):
        """``fn(choices)``: the choices of one step, kept together (Hypothesis deletes whole steps)."""
        return fn(self)


class RandomChoices(Choices):
    """Choices from a seeded generator, recorded so that Hypothesis can replay and shrink them.
    It always takes one more step: the scenario's length is the step limit, unless it fails first."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.made: list = []
        self.steps: list = []  # (start, end) in ``made`` of each step's choices

    def below(self, n: int) -> int:
        if n <= 1:
            return 0
        v = int(self.rng.random() * n)
        self.made.append(v)
        return v

    def more(self) -> bool:
        self.made.append(True)
        return True

    def span(self, fn):
        start = len(self.made)
        try:
            return fn(self)
        finally:
            self.steps.append((start, len(self.made)))


class ReplayChoices(RandomChoices):
    """The choices of an earlier sequence, in order (an integer out of range taken modulo ``n``);
    when they run out, no more steps and zeros. Records what it gave, like :class:`RandomChoices`."""

    def __init__(self, tape: list):
        super().__init__(0)
        self.tape, self.at = tape, 0

    def _next(self):
        if self.at < len(self.tape):
            self.at += 1
            return self.tape[self.at - 1]
        return None

    def below(self, n: int) -> int:
        if n <= 1:
            return 0
        v = self._next()
        v = v % n if isinstance(v, int) and not isinstance(v, bool) else 0
        self.made.append(v)
        return v

    def more(self) -> bool:
        v = self._next()
        v = v is True
        self.made.append(v)
        return v


class HypothesisChoices(Choices):
    """Choices drawn by Hypothesis (inside a strategy), so that it can shrink them: each is one
    integer or boolean of its choice sequence, in the order :class:`RandomChoices` records them."""

    def __init__(self, draw):
        self.draw = draw

    def below(self, n: int) -> int:
        if n <= 1:
            return 0
        return self.draw(_hypothesis_strategies().integers(n))

    def more(self) -> bool:
        return self.draw(_hypothesis_strategies().booleans)

    def span(self, fn):
        return self.draw(_hypothesis_strategies().span(fn))


class _HypothesisStrategies:
    """The few Hypothesis strategies :class:`HypothesisChoices` draws with, made once."""

    def __init__(self):
        from hypothesis import strategies as hst

        self.hst, self._ints, self.booleans = hst, {}, hst.booleans()

        @hst.composite
        def span(draw, fn):
            return fn(HypothesisChoices(draw))

        self.span = span

    def integers(self, n: int):
        s = self._ints.get(n)
        if s is None:
            s = self._ints[n] = self.hst.integers(0, n - 1)
        return s


_STRATEGIES: list = []


def _hypothesis_strategies() -> _HypothesisStrategies:
    if not _STRATEGIES:
        _STRATEGIES.append(_HypothesisStrategies())
    return _STRATEGIES[0]


# ---- strategies ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sampled:
    values: tuple

    def draw(self, c: Choices):
        return self.values[c.below(len(self.values))]


@dataclass(frozen=True)
class _Integers:
    lo: int
    hi: int

    def draw(self, c: Choices):
        return self.lo + c.below(self.hi - self.lo + 1)


@dataclass(frozen=True)
class _Lists:
    elements: object
    min_size: int
    max_size: int
    unique: bool

    def draw(self, c: Choices):
        n = self.min_size + c.below(self.max_size - self.min_size + 1)
        out: list = []
        for _ in range(n * 3 if self.unique else n):  # a unique list may come out shorter, never longer
            if len(out) == n:
                break
            v = self.elements.draw(c)
            if not (self.unique and v in out):
                out.append(v)
        if len(out) < self.min_size:  # only when unique draws kept repeating: fill in order
            out += [v for v in self.elements.values if v not in out][: self.min_size - len(out)]
        return out


class st:  # noqa: N801 -- read like Hypothesis's ``strategies as st``
    """The strategies a generator's rules take (the names Hypothesis gives them)."""

    @staticmethod
    def sampled_from(values) -> _Sampled:
        return _Sampled(tuple(values))

    @staticmethod
    def integers(lo: int, hi: int) -> _Integers:
        return _Integers(lo, hi)

    @staticmethod
    def booleans() -> _Sampled:
        return _Sampled((False, True))

    @staticmethod
    def lists(elements, *, min_size: int = 0, max_size: int, unique: bool = False) -> _Lists:
        return _Lists(elements, min_size, max_size, unique)


# ---- rules ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    fn: object
    args: tuple  # ((name, strategy), ...)
    pre: object  # self -> bool, or None


def rule(**strategies):
    """A step a generator may take, with the strategies of its arguments."""
    def mark(fn):
        fn._driven_rule = tuple(strategies.items())
        return fn
    return mark


def precondition(pred):
    """The step is taken only when ``pred(world)`` holds (and every other precondition it has)."""
    def mark(fn):
        prev = getattr(fn, "_driven_pre", None)
        fn._driven_pre = pred if prev is None else (lambda self: pred(self) and prev(self))
        return fn
    return mark


def rules_of(cls: type) -> tuple:
    """The rules of a generator class, in definition order (base classes first)."""
    seen: dict = {}
    for klass in reversed(cls.__mro__):
        for name, fn in vars(klass).items():
            if callable(fn) and hasattr(fn, "_driven_rule"):
                seen[name] = Rule(name, fn, fn._driven_rule, getattr(fn, "_driven_pre", None))
    return tuple(seen.values())
