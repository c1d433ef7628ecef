"""Write Python values as TLA+ expressions, for trace modules handed to TLC.

TLC 2.15 has no JSON reader, so a trace reaches the model as a generated module. Names of the
scenario (validators, messages) are model values and are written bare; every other string is
quoted. Dicts whose keys are all identifiers-as-field-names become records when ``record`` is
asked, otherwise functions (``k :> v @@ ...``); lists become sequences, sets and frozensets sets.
"""

from __future__ import annotations

# field names of the records the agreement writes: steps (the model's ``last``), catchain
# records, and the statuses after a step
RECORD_KEYS = frozenset({"a", "m", "v", "to", "res", "r", "b", "s", "w", "k", "from", "pos", "fn",
                         "src", "taken", "quiet", "rc", "fr", "nr"})


class SetOf(tuple):
    """Items written as a TLA+ set even where they are not hashable (records, e.g. receipts)."""



def tla(value, names: frozenset) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if value in names:
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (set, frozenset, SetOf)):
        items = sorted(tla(x, names) for x in value)
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "<<" + ", ".join(tla(x, names) for x in value) + ">>"
    if isinstance(value, dict):
        if value and all(isinstance(k, str) and k in RECORD_KEYS and k not in names for k in value):
            return "[" + ", ".join(f"{k} |-> {tla(v, names)}" for k, v in value.items()) + "]"
        if not value:
            return "<<>>"
        return "(" + " @@ ".join(f"{tla(k, names)} :> {tla(v, names)}" for k, v in value.items()) + ")"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as TLA+")
