"""Turn TLC's framed messages (and SANY's loose lines) into a :class:`TlcResult`.

Why a separate step: the runner only moves lines; everything that knows what TLC *means* lives
here, so it can be tested on recorded output. The verdict comes from the messages, not from the
exit code: with ``-continue`` TLC 2.15 exits 0 and says "No error has been found" after printing
violations, and 2.15's exit codes are not documented. The exit code is only a fallback.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Callable

from rmkit.tlc import messages as M
from rmkit.tlc.cfgfile import NOT_IN_TLC_2_15, CfgNames
from rmkit.tlc.messages import Message
from rmkit.tlc.result import (
    ASSERTION, ASSUMPTION, BACK_TO, DEADLOCK, ERR_CONFIG, ERR_EVAL, ERR_OOM, ERR_PARSE, ERR_SEMANTIC,
    ERR_TIMEOUT, ERR_TLC, ERROR, INVARIANT, MODEL_CHECK, PASS, PROPERTY, SIMULATE, STUTTERING, VIOLATION,
    Counterexample, ProgressUpdate, TlcError, TlcResult, TraceState,
)
from rmkit.tlc.values import parse_state

_LOC = re.compile(r"line (\d+), col (\d+) to line \d+, col \d+ of module (\w+)")
_POS = re.compile(r"Line (\d+), column (\d+) to line \d+, column \d+ in (\w+)")
_ACTION = re.compile(r"^<(?P<name>.*?)(?: line (?P<line>\d+), col (?P<col>\d+) to line \d+, col \d+ of module (?P<module>\w+))?>$")
_STATE_HEAD = re.compile(r"^(\d+): (.*)$")
_BACK_TO = re.compile(r"^(?:(\d+): Back to state(?::)?|Back to state:? ?(\d+):?)\s*(.*)$")
_NUM = r"(-?[\d,]+)"
_PROGRESS = re.compile(rf"Progress\((-?\d+)\).*?: {_NUM} states generated(?: \({_NUM} s/min\))?, {_NUM} distinct states found"
                       rf"(?: \({_NUM} ds/min\))?, {_NUM} states left on queue")
_STATS = re.compile(rf"{_NUM} states generated, {_NUM} distinct states found, {_NUM} states left on queue")
_OOM = ("OutOfMemoryError", "Java heap space", "GC overhead limit exceeded", "Direct buffer memory")

# Exit codes of TLC (2.15 measured: 10 assumption, 11 deadlock, 12 safety, 13 liveness,
# 75/76 evaluation failure, 150 parse/semantic, 151 config, 255 general), for the fallback.
EXIT_CODE_MEANING = {
    10: "an assumption is false", 11: "deadlock", 12: "a safety property (invariant) is violated",
    13: "a liveness property is violated", 75: "evaluating the spec failed", 76: "evaluating an invariant failed",
    150: "parsing or semantic analysis failed", 151: "the configuration is invalid", 255: "TLC failed",
}

OOM_ADVICE = ("give TLC more memory (rmkit tlc --java-opt=-Xmx8g; run_tlc(java_opts=('-Xmx8g',))), "
              "use fewer workers, or a smaller config")


def _int(text: str | None) -> int | None:
    return None if text is None else int(text.replace(",", ""))


def _nonneg(n: int | None) -> int | None:
    return None if n is None or n < 0 else n


def parse_action(text: str) -> tuple[str, str | None, int | None, int | None]:
    """``<Next line 5, col 12 to line 5, col 36 of module Sim>`` -> (name, module, line, column)."""
    m = _ACTION.match(text.strip())
    if m is None:
        return text.strip(), None, None, None
    return m.group("name"), m.group("module"), _int(m.group("line")), _int(m.group("col"))


class Interpreter:
    """Consumes items from :class:`rmkit.tlc.messages.MessageReader`; :meth:`finish` gives the result."""

    def __init__(self, *, module: str, config: str, cfg_names: CfgNames, mode: str,
                 progress: Callable[[ProgressUpdate], None] | None = None, clock: Callable[[], float] | None = None):
        self.module, self.config, self.cfg = module, config, cfg_names
        self.mode = mode
        self.progress, self.clock = progress, clock
        self.counterexamples: list[Counterexample] = []
        self.errors: list[TlcError] = []
        self.current: Counterexample | TlcError | None = None  # what trace states attach to
        self.loose: list[str] = []
        self.tail: deque[str] = deque(maxlen=40)
        self.version: str | None = None
        self.seed: int | None = None
        self.warnings: list[str] = []
        self.success = self.finished = False
        self.distinct = self.total = self.depth = None
        self.initial: int | None = None  # initial states computed (None: TLC never got that far)
        self.last_progress: ProgressUpdate | None = None

    # -- feeding ---------------------------------------------------------------------------------
    def handle(self, item: Message | str) -> None:
        if isinstance(item, str):
            self.loose.append(item)
            if item.strip() and not item.startswith(("Parsing file", "Semantic processing")):
                self.tail.append(item)
            if any(s in item for s in _OOM):
                self._error(ERR_OOM, "TLC ran out of memory (java.lang.OutOfMemoryError)", advice=OOM_ADVICE)
            elif "StackOverflowError" in item:
                self._error(ERR_TLC, "TLC overflowed the Java stack (deep recursion in the spec)",
                            advice="raise the stack size, e.g. --java-opt=-Xss16m")
            elif "UnsupportedClassVersionError" in item:
                self._error(ERR_TLC, "this java is too old for tla2tools.jar", advice="install Java 17 "
                            "(apt-get install openjdk-17-jre-headless) or set JAVA_HOME to it")
            return
        msg = item
        self.tail.extend(line for line in msg.lines if line.strip())
        handler = self._HANDLERS.get(msg.code)
        if handler is not None:
            handler(self, msg)
        elif msg.severity in (M.ERROR, M.TLC_BUG):
            self._generic_error(msg)
        elif msg.severity == M.WARNING:
            self.warnings.append(msg.text)

    @property
    def violations(self) -> int:
        return len(self.counterexamples)

    # -- message handlers ------------------------------------------------------------------------
    def _version(self, msg: Message) -> None:
        # a tla2tools.jar built outside a release prints its date as the placeholder "Day Month
        # 20??": the version without a date reads better than a date nobody filled in
        text = msg.text.splitlines()[0].strip() if msg.text else None
        self.version = re.sub(r"\s+of Day Month 20\?\?", " (build date not recorded)", text) if text else None

    def _mode(self, msg: Message) -> None:
        m = re.search(r"with seed (-?\d+)", msg.text)
        if m:
            self.seed = int(m.group(1))

    def _violation(self, kind: str, name: str | None, message: str, **kw) -> Counterexample:
        ce = Counterexample(kind=kind, name=name, message=message, **kw)
        self.counterexamples.append(ce)
        self.current = ce
        return ce

    def _invariant_kind(self, name: str) -> str:
        return PROPERTY if name in self.cfg.properties and name not in self.cfg.invariants else INVARIANT

    def _invariant(self, msg: Message) -> None:
        m = re.search(r"Invariant (\S+) is violated", msg.text)
        name = m.group(1) if m else None
        ce = self._violation(self._invariant_kind(name) if name else INVARIANT, name, msg.text.splitlines()[0])
        if msg.code == M.INVARIANT_INITIAL:  # the state follows in the same message
            body = "\n".join(msg.text.splitlines()[1:])
            ce.trace.append(TraceState(1, "Initial predicate", parse_state(body)))

    def _invariant_eval(self, msg: Message) -> None:
        m = re.search(r"Evaluating invariant (\S+) failed", msg.text)
        name = m.group(1) if m else None
        assertion = next((c for c in msg.children if c.code == M.ASSERT_FAILED), None)
        if assertion is not None:
            self._violation(ASSERTION, name, assertion.text)
        else:
            self._error(ERR_EVAL, msg.text, advice="fix the invariant so that TLC can evaluate it in every state")

    def _action_property(self, msg: Message) -> None:
        m = re.search(r"Action property (\S+) is violated", msg.text)
        self._violation(PROPERTY, m.group(1) if m else None, msg.text.splitlines()[0] if msg.text else "Action property violated.")

    def _deadlock(self, msg: Message) -> None:
        self._violation(DEADLOCK, None, msg.text or "Deadlock reached.")

    def _temporal(self, msg: Message) -> None:
        props = self.cfg.properties
        self._violation(PROPERTY, props[0] if len(props) == 1 else None, msg.text or "Temporal properties were violated.")

    def _assumption(self, msg: Message) -> None:
        m = _LOC.search(msg.text)
        self._violation(ASSUMPTION, None, msg.text, module=m.group(3) if m else None, line=_int(m.group(1)) if m else None)

    def _general(self, msg: Message) -> None:
        codes = {c.code for c in msg.children}
        text = msg.text
        if M.ASSERT_FAILED in codes:
            child = next(c for c in msg.children if c.code == M.ASSERT_FAILED)
            self._violation(ASSERTION, None, child.text)
        elif any(s in text for s in _OOM):
            self._error(ERR_OOM, "TLC ran out of memory (java.lang.OutOfMemoryError: "
                        + (text.strip().splitlines() or ["Java heap space"])[-1].strip() + ")", advice=OOM_ADVICE)
        elif codes & {5001, 5002, 5003, 5004, 5005, 5006} or "ConfigFileException" in text:
            child = next((c for c in msg.children if 5000 < c.code < 5100), None)
            detail = child.text if child is not None else text
            m = re.search(r"at line (\d+)", detail)
            self._error(ERR_CONFIG, f"{self.config}: {detail}", line=_int(m.group(1)) if m else None,
                        advice=self._unsupported_advice())
        else:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            # drop TLC's boilerplate ("TLC threw an unexpected exception ...")
            keep = [ln for ln in lines if not ln.startswith(("TLC threw", "This was probably", "See the User Output",
                                                              "The exception was"))]
            keep = [ln[2:] if ln.startswith(": ") else ln for ln in keep]
            self._error(ERR_EVAL, "\n".join(keep) or text, advice="TLC could not evaluate the spec; see the location below")

    def _positions(self, msg: Message) -> None:
        m = _POS.search(msg.text)
        target = self.current
        if target is not None and m is not None and target.module is None:
            target.module, target.line = m.group(3), int(m.group(1))
            if isinstance(target, TlcError):
                target.column = int(m.group(2))
        if isinstance(target, TlcError):
            target.details.append(msg.text)

    def _follow_up(self, msg: Message) -> None:
        if isinstance(self.current, TlcError):
            self.current.details.append(msg.text)
            if self.current.module is None:
                m = _LOC.search(msg.text)
                if m:
                    self.current.module, self.current.line, self.current.column = m.group(3), int(m.group(1)), int(m.group(2))
        elif not self.counterexamples:
            self._generic_error(msg)

    def _state(self, msg: Message) -> None:
        lines = msg.text.splitlines()
        if not lines:
            return
        head = _STATE_HEAD.match(lines[0].strip())
        index, action_text = (int(head.group(1)), head.group(2)) if head else (len(self._trace()) + 1, lines[0])
        name, module, line, col = parse_action(action_text)
        self._trace().append(TraceState(index, name, parse_state("\n".join(lines[1:])), module, line, col))

    def _stuttering(self, msg: Message) -> None:
        head = _STATE_HEAD.match(msg.text.strip())
        index = int(head.group(1)) if head else len(self._trace()) + 1
        self._trace().append(TraceState(index, "Stuttering", marker=STUTTERING))

    def _back_to(self, msg: Message) -> None:
        m = _BACK_TO.match(msg.text.strip())
        trace = self._trace()
        target = _int(m.group(1) or m.group(2)) if m else None
        name, module, line, col = parse_action(m.group(3)) if m and m.group(3) else ("", None, None, None)
        trace.append(TraceState(len(trace) + 1, name, {}, module, line, col, marker=BACK_TO, back_to=target))

    def _trace(self) -> list[TraceState]:
        if self.current is None:  # states without a header: keep them on an anonymous violation
            self._violation(INVARIANT, None, "TLC printed a trace without saying why")
        return self.current.trace

    def _progress(self, msg: Message) -> None:
        m = _PROGRESS.search(msg.text)
        if m is None:
            return
        depth, gen, rate, distinct, _drate, queue = (_int(g) for g in m.groups())
        upd = ProgressUpdate(states_found=gen, distinct=_nonneg(distinct), queue=_nonneg(queue), rate_per_min=rate,
                             depth=_nonneg(depth), elapsed_s=round(self.clock(), 3) if self.clock else 0.0)
        self.last_progress = upd
        if upd.distinct is not None:
            self.distinct = upd.distinct
        self.total = upd.states_found
        if upd.depth is not None and msg.code == M.PROGRESS:
            self.depth = max(self.depth or 0, upd.depth)
        if self.progress is not None:
            self.progress(upd)

    def _stats(self, msg: Message) -> None:
        m = _STATS.search(msg.text)
        if m:
            self.total, distinct, _queue = (_int(g) for g in m.groups())
            self.distinct = _nonneg(distinct)

    def _sim_stats(self, msg: Message) -> None:
        m = re.search(r"states generated: (\d+)", msg.text)
        if m:
            self.total = int(m.group(1))

    def _depth(self, msg: Message) -> None:
        m = re.search(r"search is (\d+)", msg.text)
        if m:
            self.depth = int(m.group(1))

    def _initial(self, msg: Message) -> None:
        m = re.search(r"(?:Finished computing initial states: |Computed )([\d,]+)", msg.text)
        if m:
            self.initial = int(m.group(1).replace(",", ""))

    def _out_of_memory(self, msg: Message) -> None:
        """TLC's own out-of-memory reports (1001: the heap; 1002: while computing the initial
        states; 1003: the liveness graph), framed messages rather than Java's exception text."""
        where = {1002: " while computing the initial states", 1003: " while checking liveness"}.get(msg.code, "")
        self._error(ERR_OOM, f"TLC ran out of memory{where} (TLC message {msg.code})", advice=OOM_ADVICE)

    def _success(self, msg: Message) -> None:
        self.success = True

    def _finished(self, msg: Message) -> None:
        self.finished = True

    def _parse_failed(self, msg: Message) -> None:
        if not any(e.kind in (ERR_PARSE, ERR_SEMANTIC) for e in self.errors):
            err = self._sany_error() or TlcError(ERR_PARSE, msg.text or "parsing or semantic analysis failed")
            self.errors.append(err)
            self.current = err

    def _ignore(self, msg: Message) -> None:
        pass

    _HANDLERS = {
        M.VERSION: _version, 2187: _mode, 2188: _mode,
        M.INVARIANT_VIOLATED: _invariant, M.INVARIANT_INITIAL: _invariant, M.INVARIANT_EVAL_FAILED: _invariant_eval,
        M.DEADLOCK: _deadlock, M.TEMPORAL_VIOLATED: _temporal, M.ACTION_PROPERTY_VIOLATED: _action_property, M.ASSUMPTION_FALSE: _assumption,
        M.GENERAL: _general, M.NESTED_POSITIONS: _positions, M.UNABLE_TO_FINGERPRINT: _follow_up,
        M.BEHAVIOR_FOLLOWS: _ignore, M.COUNTEREXAMPLE_FOLLOWS: _ignore,
        M.STATE_PRINT: _state, M.STUTTERING: _stuttering, M.BACK_TO_STATE: _back_to,
        M.PROGRESS: _progress, M.PROGRESS_SIMULATION: _progress, M.STATS: _stats, M.SIMULATION_STATS: _sim_stats,
        M.DEPTH: _depth, M.SUCCESS: _success, M.INITIAL_STATES: _initial, M.INITIAL_STATES_SIMULATION: _initial,
        1001: _out_of_memory, 1002: _out_of_memory, 1003: _out_of_memory, 2186: _finished, M.PARSE_FAILED: _parse_failed,
        2401: _ignore,  # "use -XX:+UseParallelGC" (the runner passes it; a user's java_opts may not)
    }

    # -- errors ----------------------------------------------------------------------------------
    def _error(self, kind: str, message: str, *, module: str | None = None, line: int | None = None,
               column: int | None = None, advice: str | None = None) -> TlcError:
        if kind == ERR_OOM and any(e.kind == ERR_OOM for e in self.errors):
            return next(e for e in self.errors if e.kind == ERR_OOM)
        err = TlcError(kind, message.strip(), module, line, column, advice)
        self.errors.append(err)
        self.current = err
        return err

    def _generic_error(self, msg: Message) -> None:
        text = msg.text
        kind = ERR_CONFIG if re.search(r"configuration file|constant parameter|not assigned a value", text) else ERR_TLC
        m = _LOC.search(text)
        if kind == ERR_CONFIG and self.config not in text:
            text = f"{self.config}: {text}"
        self._error(kind, text or f"TLC error (message code {msg.code})",
                    module=m.group(3) if m else None, line=_int(m.group(1)) if m else None,
                    column=_int(m.group(2)) if m else None,
                    advice=self._unsupported_advice() if kind == ERR_CONFIG else None)

    def _unsupported_advice(self) -> str | None:
        """A keyword of the .cfg that TLC 2.15 does not know, which it reports in more than one way
        (a keyword it did not expect; or, after INVARIANT, an invariant of that name not defined)."""
        if not self.cfg.unsupported:
            return None
        return "; ".join(f"{k} is not understood by TLC 2.15: {NOT_IN_TLC_2_15[k]}" for k in self.cfg.unsupported)

    def _sany_error(self) -> TlcError | None:
        """A parse or semantic error from SANY's loose output lines."""
        lines = self.loose
        text = "\n".join(lines)
        if "Semantic errors:" in text:
            found = []
            start = next(i for i, ln in enumerate(lines) if "Semantic errors:" in ln)
            i = start
            while i < len(lines):
                m = _LOC.search(lines[i])
                if m:
                    j, body = i + 1, []
                    while j < len(lines) and not lines[j].strip():
                        j += 1
                    while j < len(lines) and lines[j].strip():
                        body.append(lines[j].strip())
                        j += 1
                    found.append((m, " ".join(body)))
                    i = j
                else:
                    i += 1
            if found:
                m, what = found[0]
                return TlcError(ERR_SEMANTIC, f"semantic error: {what}", m.group(3), int(m.group(1)), int(m.group(2)),
                                advice="fix the module at the line shown",
                                details=[f"line {x.group(1)}, col {x.group(2)} of module {x.group(3)}: {w}" for x, w in found])
        markers = ("***Parse Error***", "Lexical error", "Fatal errors while parsing", "Could not parse module",
                   "Cannot find source file")
        if not any(mk in text for mk in markers):
            return None
        module = None
        for pat in (r"Could not parse module (\w+)", r"imported in module (\w+)", r"Fatal errors while parsing TLA\+ spec in file (\w+)"):
            mm = re.search(pat, text)
            if mm:
                module = mm.group(1)
                break
        where = re.search(r"at line (\d+), column (\d+)", text)
        what = next((ln.strip() for ln in lines if ln.strip().startswith(("Encountered", "Lexical error", "Cannot find source file"))), None)
        if what is None:
            what = next((ln.strip() for ln in lines if "Could not parse" in ln), "the module could not be parsed")
        missing = "Cannot find source file" in what
        return TlcError(ERR_PARSE, ("missing module: " if missing else "parse error: ") + what, module,
                        int(where.group(1)) if where else None, int(where.group(2)) if where else None,
                        advice=("put the module next to the spec or EXTEND a standard module" if missing
                                else "fix the module at the line shown"),
                        details=[ln for ln in lines if ln.strip() and not ln.startswith(("Parsing file", "Semantic processing"))][:30])

    # -- result ----------------------------------------------------------------------------------
    def finish(self, *, exit_code: int | None, seconds: float, stopped: str | None, timeout: float | None,
               command: list[str], output: list[str]) -> TlcResult:
        res = TlcResult(verdict=PASS, mode=self.mode, module=self.module, config=self.config,
                        distinct_states=self.distinct if self.mode == MODEL_CHECK else None,
                        total_states=self.total, depth=self.depth if self.mode == MODEL_CHECK else None,
                        seconds=round(seconds, 3), complete=self.finished and stopped is None and self.mode == MODEL_CHECK, stopped=stopped,
                        counterexamples=self.counterexamples, exit_code=exit_code, tlc_version=self.version,
                        seed=self.seed, command=command, warnings=self.warnings, output=output)
        error = self.errors[0] if self.errors else None
        if error is None and any(s in "\n".join(self.loose) for s in ("***Parse Error***", "Semantic errors:", "Lexical error")):
            error = self._sany_error()
        if error is not None:
            error.details.extend(f"{e.kind}: {e.message}" for e in self.errors[1:])
        if self.counterexamples:
            res.verdict = VIOLATION
            res.error = error
        elif error is not None:
            res.verdict, res.error = ERROR, error
        elif self.initial == 0:
            # a run over no state checked nothing: the initial predicate holds in no state (or the
            # constants leave nothing to choose from), and every property holds vacuously
            res.verdict = ERROR
            res.error = TlcError(ERR_TLC, "the model has no initial state: nothing was checked",
                                 advice="check Init and the constants of the .cfg (an empty set, a predicate no state satisfies)")
        elif stopped == "timeout":
            if self.mode == SIMULATE and self.initial:
                res.verdict = PASS  # no violation in the time given; `complete` stays False
            elif self.mode == SIMULATE:
                res.verdict = ERROR
                res.error = TlcError(ERR_TIMEOUT, f"TLC did not reach the simulation within {timeout:g} s "
                                     "(no initial state computed): nothing was checked",
                                     advice="allow more time (--timeout)")
            else:
                res.verdict = ERROR
                res.error = TlcError(ERR_TIMEOUT, f"TLC did not finish within {timeout:g} s"
                                     + (f" ({self.total:,} states generated, {self.distinct:,} distinct so far)"
                                        if self.total is not None and self.distinct is not None else ""),
                                     advice="allow more time (--timeout) or check a smaller config")
        elif self.success or (exit_code == 0 and self.finished):
            res.verdict = PASS
        else:
            meaning = EXIT_CODE_MEANING.get(exit_code or 0, "TLC stopped without a verdict")
            res.verdict = ERROR
            res.error = TlcError(ERR_TLC, f"TLC exited with code {exit_code}: {meaning}",
                                 advice="see the output tail below (the whole output: --out DIR)")
        if res.error is not None:
            res.error.output_tail = list(self.tail)[-20:]
        return res


def parse_output(text: str, *, module: str = "?", config: str = "?", cfg_text: str = "", mode: str = MODEL_CHECK,
                 exit_code: int | None = 0) -> TlcResult:
    """Interpret a saved ``-tool`` output (e.g. a ``.tlc.log`` written by ``rmkit tlc --out``)."""
    from rmkit.tlc.cfgfile import read_cfg_names
    from rmkit.tlc.messages import MessageReader

    reader = MessageReader()
    interp = Interpreter(module=module, config=config, cfg_names=read_cfg_names(cfg_text), mode=mode)
    lines = text.splitlines()
    for line in lines:
        for item in reader.feed(line):
            interp.handle(item)
    for msg in reader.close():
        interp.handle(msg)
    return interp.finish(exit_code=exit_code, seconds=0.0, stopped=None, timeout=None, command=[], output=lines)
