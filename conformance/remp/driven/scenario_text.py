"""A scenario as a reader wants it when it failed: every step's event on one line with its key
fields, the outputs the reference gave, and at the failing step what was expected and what came.

Why: a shrunk failure is a handful of steps, and the failing step alone rarely explains itself
(a replay is refused because of a block three steps before). Printed whole, as Hypothesis prints a
falsifying example, the scenario can be read without opening the saved file.
"""

from __future__ import annotations

import re

from rmkit.conformance.remp.driven.compare import describe

_ID = re.compile(r"^[0-9a-fA-F]{16,}$")
_KEY_FIELDS = ("kind", "source_id", "source", "msg_id", "message_id", "validator", "name", "session", "seqno")


def _value(v, depth: int = 0) -> str:
    if isinstance(v, str):
        return v[:8] if _ID.match(v) else (v if len(v) <= 24 else v[:21] + "...")
    if isinstance(v, list):
        shown = ", ".join(_value(x, depth + 1) for x in v[:6])
        return f"[{shown}{', ...' if len(v) > 6 else ''}]"
    if isinstance(v, dict):
        if "seqno" in v and "root_hash" in v:  # a block id: its sequence number names it in a scenario
            return f"#{v['seqno']}"
        if depth >= 1:
            return "{...}"
        keys = [k for k in _KEY_FIELDS if k in v] or list(v)[:4]
        return "{" + " ".join(f"{k}={_value(v[k], depth + 1)}" for k in keys if v[k] is not None) + "}"
    return str(v)


def describe_event(event: dict) -> str:
    """``ShardBlockAccepted block=#2 msg_ids=[ca0df2c9] time=180200 collated_by=v2``: the event's
    type and its fields (those set), ids cut to 8 characters, blocks by sequence number."""
    fields = " ".join(f"{k}={_value(v)}" for k, v in event.items() if k != "type" and v is not None)
    return f"{event.get('type', '?')} {fields}".rstrip()


def scenario_lines(res, indent: str = "  ") -> list[str]:
    """Every step of ``res.scenario`` up to the failing one (the rest never ran): the event, the
    reference's outputs, and at the failing step ``expected`` and ``actual``; a marker ``>`` on it."""
    sc, f = res.scenario, res.failure
    last = f.step if f is not None else len(sc.events)
    lines = [f"{indent}scenario ({len(sc.events)} steps; params {_value(sc.params)}):"]
    if f is not None and f.step == 0:
        lines.append(f"{indent}  >   0. hello (role {sc.role}, profile {sc.profile})")
    for i, ev in enumerate(sc.events[:last], 1):
        failing = f is not None and i == f.step
        lines.append(f"{indent}  {'>' if failing else ' '} {i:>3}. {describe_event(ev)}")
        if failing:
            lines.append(f"{indent}         expected: " + (", ".join(describe(o) for o in f.expected) or "(no outputs)"))
            if f.actual is not None:
                lines.append(f"{indent}         actual:   " + (", ".join(describe(o) for o in f.actual) or "(no outputs)"))
        elif i <= len(res.expected):
            lines.append(f"{indent}         -> " + (", ".join(describe(o) for o in res.expected[i - 1]) or "(no outputs)"))
    if last < len(sc.events):
        lines.append(f"{indent}  ({len(sc.events) - last} later step(s) not run)")
    return lines
