"""Read the names a TLC ``.cfg`` file checks (invariants, properties) and spot keywords 2.15 lacks.

Why: TLC 2.15 reports a violated ``PROPERTY []P`` as "Invariant P is violated" and a liveness
violation as "Temporal properties were violated" without a name; the cfg tells which names are
properties, so the verdict can say ``property`` and name it when there is only one. And 2.15
rejects ``CHECK_DEADLOCK`` / ``POSTCONDITION`` / ``ALIAS`` with a bare "expecting a keyword" error,
which deserves a hint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KEYWORDS = {
    "CONSTANT", "CONSTANTS", "INIT", "NEXT", "SPECIFICATION", "INVARIANT", "INVARIANTS", "PROPERTY",
    "PROPERTIES", "CONSTRAINT", "CONSTRAINTS", "ACTION_CONSTRAINT", "ACTION_CONSTRAINTS", "SYMMETRY",
    "VIEW", "CHECK_DEADLOCK", "POSTCONDITION", "ALIAS",
}
NOT_IN_TLC_2_15 = {
    "CHECK_DEADLOCK": "remove it and run with the -deadlock flag to turn deadlock checking off "
                      "(manifest: \"deadlock\": false)",
    "POSTCONDITION": "remove it (TLC 2.15 has no postconditions)",
    "ALIAS": "remove it (TLC 2.15 has no trace aliases)",
}


@dataclass
class CfgNames:
    invariants: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # keywords TLC 2.15 rejects


def read_cfg_names(text: str) -> CfgNames:
    text = re.sub(r"\(\*.*?\*\)", " ", text, flags=re.DOTALL)
    text = re.sub(r"\\\*[^\n]*", " ", text)
    out = CfgNames()
    current: list[str] | None = None
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*|<-|=|\S", text):
        if word in KEYWORDS:
            current = (out.invariants if word.startswith("INVARIANT") else
                       out.properties if word.startswith("PROPERT") else None)
            if word in NOT_IN_TLC_2_15 and word not in out.unsupported:
                out.unsupported.append(word)
        elif current is not None and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", word):
            current.append(word)
    return out
