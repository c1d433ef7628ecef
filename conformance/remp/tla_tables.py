"""Generate ``tla/remp/REMPTables.tla``: the spec's tables as TLA+ definitions.

Why generated: the TLA+ model must not restate what ``spec/remp/*.yaml`` says (one fact, one
place). The receipt kinds a profile's sources emit, the positions each kind moves a source to and
from, the quorum thresholds and the documents' session rule are written here from the compiled
spec; a test fails when the committed module is stale (regenerate with ``make tla-tables``).
"""

from __future__ import annotations

from fractions import Fraction

from rmkit.protocols.remp.model import FULLNODE, VALIDATOR, model_for

MODULE = "REMPTables"


def _str_set(items) -> str:
    return "{" + ", ".join(f'"{x}"' for x in items) + "}"


def _threshold(name: str, frac: Fraction, plus: int, minus_one: bool, rounding: str | None) -> str:
    n = "(N - 1)" if minus_one else "N"
    num, den = frac.numerator, frac.denominator
    if rounding == "ceil":
        body = f"({n} * {num} + {den - 1}) \\div {den}"
    else:
        body = f"({n} * {num}) \\div {den}"
    return f"{name}(N) == {body}" + (f" + {plus}" if plus else "")


def _role_table(model, role: str, prefix: str) -> list[str]:
    r = model.roles[role]
    kinds = [(k, ki.transitions[role]) for k, ki in model.kinds.items()
             if role in ki.transitions and ki.in_table and role in ki.issuers]
    lines = [
        f"{prefix}Positions == {_str_set(r.positions)}",
        f"{prefix}Final == {_str_set(sorted(r.final))}",
        f"{prefix}Kinds == {_str_set(k for k, _ in kinds)}",
        f"\\* the position a {role} is at after reporting each kind",
        f"{prefix}To == " + " @@ ".join(f'"{k}" :> "{to}"' for k, (to, _) in kinds),
        f"\\* the positions from which the {role} may report each kind",
        f"{prefix}From == " + " @@ ".join(f'"{k}" :> {_str_set(sorted(frm))}' for k, (_, frm) in kinds),
    ]
    return lines


def render(profile: str = "spec") -> str:
    model = model_for(profile)
    lines = [
        f"---- MODULE {MODULE} ----",
        f"\\* GENERATED from spec/remp (profile {profile!r}) by `make tla-tables`; do not edit.",
        "\\* Receipt kinds, positions and transitions per source role (transitions.yaml), quorum",
        "\\* thresholds (protocol.yaml) and the documents' session rule (lifetimes.yaml).",
        "EXTENDS Naturals, TLC",
        "",
        f'Profile == "{profile}"',
        "",
    ]
    lines += _role_table(model, VALIDATOR, "V")
    lines.append("")
    lines += _role_table(model, FULLNODE, "Fn")
    lines.append("")
    for name, (frac, plus, minus_one, rounding) in model.thresholds.items():
        camel = "".join(p.capitalize() for p in name.split("_"))
        lines.append(_threshold(camel, frac, plus, minus_one, rounding))
    lines.append("")
    rules = model.session_rules["documents"]
    lines.append(f"\\* {rules['rule']}")
    lines.append(f"ObsoleteAfterSessions == {int(rules['obsolete_after_sessions'])}")
    lines.append("")
    lines.append("====")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Write the module beside the model (``make tla-tables``)."""
    import sys
    from pathlib import Path

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tla/remp") / f"{MODULE}.tla"
    target.write_text(render())
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
