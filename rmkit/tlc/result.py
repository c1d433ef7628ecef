"""The typed outcome of a TLC run: a verdict plus structured witness data, rendered elsewhere.

In the manner of Porcupine/Elle (and of :mod:`rmkit.verdict`): :class:`TlcResult` holds facts
only: the verdict (``pass``, ``violation`` or ``error``), the state-space figures, and for a
violation the counterexample(s) as lists of :class:`TraceState` with parsed values.
:mod:`rmkit.tlc.render` turns it into text; :meth:`TlcResult.to_json` into JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

PASS, VIOLATION, ERROR = "pass", "violation", "error"
VERDICTS = (PASS, VIOLATION, ERROR)

# Kinds of violation.
INVARIANT, PROPERTY, DEADLOCK, ASSERTION, ASSUMPTION = "invariant", "property", "deadlock", "assertion", "assumption"

# Kinds of error.
ERR_JAVA_MISSING = "java-missing"
ERR_JAR_MISSING = "jar-missing"
ERR_SPEC_MISSING = "spec-missing"      # module or cfg file not found before starting TLC
ERR_PARSE = "parse"                    # SANY: syntax or lexical error, missing module
ERR_SEMANTIC = "semantic"              # SANY: undefined symbol, wrong arity...
ERR_CONFIG = "config"                  # the .cfg is unreadable or names something undefined
ERR_EVAL = "evaluation"                # TLC failed evaluating the spec (e.g. out-of-domain)
ERR_OOM = "out-of-memory"
ERR_TIMEOUT = "timeout"
ERR_TLC = "tlc"                        # anything else: exit code and output tail

MODEL_CHECK, SIMULATE = "model-check", "simulate"

# TraceState markers.
STATE, STUTTERING, BACK_TO = "state", "stuttering", "back-to"


@dataclass
class ProgressUpdate:
    """One TLC progress report (every minute while model checking).

    ``states_found`` is TLC's "states generated" so far; ``distinct`` and ``queue`` are ``None`` in
    simulation (TLC reports -1); ``depth`` is the search depth reached (model checking only).
    """

    states_found: int
    distinct: int | None
    queue: int | None
    rate_per_min: int | None
    depth: int | None
    elapsed_s: float


@dataclass
class TraceState:
    """One step of a counterexample.

    ``action`` is the name TLC prints (``Initial predicate``, ``Next``, ...), with ``module`` and
    ``line``/``column`` of its definition when TLC gives them. ``marker`` is ``state`` for a real
    state, ``stuttering`` for "N: Stuttering" (the behaviour stops changing forever) and
    ``back-to`` for a lasso's "Back to state N" (``back_to`` = N, reached by ``action``); markers
    have no values.
    """

    index: int
    action: str
    values: dict[str, Any] = field(default_factory=dict)
    module: str | None = None
    line: int | None = None
    column: int | None = None
    marker: str = STATE
    back_to: int | None = None


@dataclass
class Counterexample:
    """One violation and its trace (empty when TLC 2.15 prints none, e.g. Assert in an action)."""

    kind: str
    name: str | None
    message: str
    trace: list[TraceState] = field(default_factory=list)
    module: str | None = None
    line: int | None = None

    @property
    def states(self) -> list[TraceState]:
        return [s for s in self.trace if s.marker == STATE]

    @property
    def lasso(self) -> int | None:
        """Index of the state a liveness counterexample loops back to, if it is a lasso."""
        return next((s.back_to for s in self.trace if s.marker == BACK_TO), None)

    @property
    def stutters(self) -> bool:
        return any(s.marker == STUTTERING for s in self.trace)


@dataclass
class TlcError:
    """Why TLC did not give a verdict on the spec: what happened, where, and what to do."""

    kind: str
    message: str
    module: str | None = None
    line: int | None = None
    column: int | None = None
    advice: str | None = None
    details: list[str] = field(default_factory=list)
    trace: list[TraceState] = field(default_factory=list)
    output_tail: list[str] = field(default_factory=list)


@dataclass
class TlcResult:
    verdict: str
    mode: str = MODEL_CHECK
    module: str | None = None
    config: str | None = None
    distinct_states: int | None = None
    total_states: int | None = None
    depth: int | None = None
    seconds: float | None = None
    complete: bool = False          # TLC finished on its own (not stopped by timeout or trace cap)
    stopped: str | None = None      # "timeout" or "max-traces" when rmkit stopped TLC
    counterexamples: list[Counterexample] = field(default_factory=list)
    error: TlcError | None = None
    exit_code: int | None = None
    tlc_version: str | None = None
    seed: int | None = None
    command: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list, repr=False)  # TLC's raw output (not in JSON)

    # The first counterexample's fields, for the common single-violation case.
    @property
    def kind(self) -> str | None:
        return self.counterexamples[0].kind if self.counterexamples else None

    @property
    def name(self) -> str | None:
        return self.counterexamples[0].name if self.counterexamples else None

    @property
    def trace(self) -> list[TraceState]:
        return self.counterexamples[0].trace if self.counterexamples else []

    @property
    def traces(self) -> list[list[TraceState]]:
        return [c.trace for c in self.counterexamples]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("output")
        head = {"verdict": self.verdict, "kind": self.kind, "name": self.name}
        return {**head, **{k: v for k, v in d.items() if k not in head}}

    def to_json(self, indent: bool = True) -> str:
        opt = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
        return orjson.dumps(self.to_dict(), option=opt).decode() + "\n"

    def counterexamples_json(self) -> str:
        """The counterexample(s) alone, for ``--trace-out``."""
        doc = {"module": self.module, "config": self.config, "mode": self.mode, "seed": self.seed,
               "counterexamples": [asdict(c) for c in self.counterexamples]}
        return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_INDENT_2).decode() + "\n"
