"""A scenario: the events one role is driven through, with its test configuration; and its file form.

Why a file: a failing scenario, once shrunk, must rerun exactly anywhere (``rmkit replay FILE``) and
be kept as a regression. JSON Lines: a header line (``"type": "scenario"``: id, role, profile,
parameters, the rules it exercises, and when it failed, why), then one line per step
(``"type": "step"``: its number, the event, and what the reference answered) so that the file
reads on its own.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from rmkit.errors import UsageError

FORMAT = "rmkit-remp-scenario/1"


@dataclass
class Scenario:
    id: str
    role: str
    profile: str
    params: dict
    events: list
    title: str = ""
    checks: tuple = ()
    origin: str = "generated"  # catalogue | generated | regression
    note: dict = field(default_factory=dict)

    def digest(self) -> str:
        """A short hash of what the scenario does (for file names of regressions)."""
        body = orjson.dumps([self.role, self.profile, self.params, self.events], option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(body).hexdigest()[:12]


def write_scenario(path: Path, sc: Scenario, expected: list | None = None, failure: dict | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {"type": "scenario", "format": FORMAT, "id": sc.id, "role": sc.role, "profile": sc.profile,
            "params": sc.params, "title": sc.title, "checks": list(sc.checks), "origin": sc.origin}
    if failure:
        head["failure"] = failure
    lines = [orjson.dumps(head)]
    for i, e in enumerate(sc.events, 1):
        line = {"type": "step", "seq": i, "event": e}
        if expected is not None and i <= len(expected):
            line["expected"] = expected[i - 1]
        lines.append(orjson.dumps(line))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def read_scenario(path: str | Path) -> Scenario:
    """A scenario file back, checked against ``spec/schema/remp-scenario.schema.json`` (with its
    format version), the roles and profiles of the spec, and each step's event against the wire
    types; errors name the file, line and field."""
    from rmkit.logread import MAX_LINE_BYTES, UTF8_BOM, line_too_long, split_lines

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise UsageError(f"{p}: cannot read ({exc.strerror})") from None
    raw, rest = split_lines(data[len(UTF8_BOM):] if data.startswith(UTF8_BOM) else data)  # the lines rmkit check reads
    rows = []
    for n, line in enumerate(raw + ([rest] if rest else []), 1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            raise UsageError(f"{p}:{n}: {line_too_long(len(line))}")
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"{p}:{n}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise UsageError(f"{p}:{n}: expected a JSON object, found {type(obj).__name__}")
        rows.append((n, obj))
    if not rows or rows[0][1].get("type") != "scenario":
        raise UsageError(f"{p}:1: type: expected a header line with \"type\": \"scenario\" (a file written by rmkit conform)")
    hline, head = rows[0]
    if head.get("format") != FORMAT:
        found = "nothing" if "format" not in head else repr(head["format"])
        raise UsageError(f"{p}:{hline}: field format: expected {FORMAT!r} (the format this rmkit reads), found {found}")
    _check_line(p, hline, head, "header")
    _check_header(p, hline, head)
    events = []
    for n, obj in rows[1:]:
        _check_line(p, n, obj, "step")
        if obj["seq"] != len(events) + 1:
            raise UsageError(f"{p}:{n}: field seq: expected {len(events) + 1}, found {obj['seq']!r}")
        _check_event(p, n, obj["event"])
        events.append(obj["event"])
    _check_reference(p, hline, head, rows[1:])
    return Scenario(id=str(head.get("id") or p.stem), role=head["role"], profile=head["profile"], params=head["params"],
                    events=events, title=head.get("title", ""), checks=tuple(head.get("checks") or ()),
                    origin="regression", note=head.get("failure") or {})


@functools.lru_cache(maxsize=None)
def _validator(part: str):
    import jsonschema

    from rmkit.specload import load_schema

    schema = load_schema("remp-scenario")
    return jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{part}"})


def _check_line(p: Path, n: int, obj: dict, part: str) -> None:
    import jsonschema

    errors = list(_validator(part).iter_errors(obj))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        where = ".".join(map(str, err.absolute_path)) or "(line)"
        raise UsageError(f"{p}:{n}: field {where}: {err.message} (spec/schema/remp-scenario.schema.json, {part})")


def _check_header(p: Path, n: int, head: dict) -> None:
    from rmkit.protocols.remp.adapterwire import adapter_spec
    from rmkit.protocol import get_protocol

    roles = list(adapter_spec()["roles"])
    if head["role"] not in roles:
        raise UsageError(f"{p}:{n}: field role: expected one of {', '.join(roles)}, found {head['role']!r}")
    profiles = list(get_protocol("remp").profiles())
    if head["profile"] not in profiles:
        raise UsageError(f"{p}:{n}: field profile: expected one of {', '.join(profiles)}, found {head['profile']!r}")


def _check_event(p: Path, n: int, event: dict) -> None:
    from rmkit.protocols.remp.adapterwire import WireError, from_json

    try:
        from_json(event, where="event", part="events")
    except WireError as exc:
        raise UsageError(f"{p}:{n}: field {exc}") from None


def _check_reference(p: Path, hline: int, head: dict, steps: list) -> None:
    """The reference machine must be able to take the scenario: events that contradict each other
    (a session starting before the previous one...) make the file unusable, which is said here,
    with the line, instead of failing in the middle of a run."""
    from rmkit.reference_impl.remp.adapter import ReferenceAdapter

    ref = ReferenceAdapter(head["role"])
    try:
        ref.hello(dict(head["params"], profile=head["profile"]))
    except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
        raise UsageError(f"{p}:{hline}: field params: the reference machine cannot start with them: "
                         f"{type(exc).__name__}: {exc}") from None
    for n, obj in steps:
        try:
            ref.step(obj["event"])
        except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
            raise UsageError(f"{p}:{n}: field event: the reference machine cannot take this event after the ones "
                             f"before it: {type(exc).__name__}: {exc}") from None
