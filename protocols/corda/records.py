"""The record format of spec/corda/records.yaml, compiled once into what the log checker reads a
line with: which events exist, which fields each must carry and of which type, and how a
deduplicator verdict maps to the spec's answers (system.yaml ``dedup_answers``).

Reading a record is hand-written over the compiled tables rather than a JSON Schema validation
per line (that would cost tens of microseconds a record); the tables come from the YAML, so the
names the checker accepts and the names the spec defines cannot drift apart.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from typing import Any

from rmkit.errors import SpecError
from rmkit.specload import load_protocol_spec, spec_line

from rmkit.protocols.corda.model import ANSWERS, PROTOCOL

EVENT, ROW = "event", "row"
_MISSING = object()
_NONE: list = []  # no problems (shared: never appended to)


@dataclass(frozen=True)
class FieldRule:
    name: str
    type: str          # string | integer
    minimum: int | None
    nullable: bool

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit the field (None when it does)."""
        if value is None:
            return None if self.nullable else f"expected {self.shown()}, found null"
        if self.type == "string":
            if type(value) is not str or not value:
                return f"expected {self.shown()}, found {_found(value)}"
            return None
        if type(value) is not int:
            return f"expected {self.shown()}, found {_found(value)}"
        if self.minimum is not None and value < self.minimum:
            return f"expected {self.shown()}, found {value}"
        return None

    def shown(self) -> str:
        what = "a non-empty string" if self.type == "string" else "an integer" + (
            f" >= {self.minimum}" if self.minimum is not None else "")
        return what + (" or null" if self.nullable else "")


def _fits(plan: tuple) -> Any:
    """A function telling whether a record has every field of ``plan`` right: the plan written out
    as straight-line code (compiled once), since this runs for every record; a record it rejects
    is read again field by field for the message."""
    body = []
    for name, typ, least, nullable, required in plan:
        ok = "type(x) is str and x != ''" if typ is str else "type(x) is int" + ("" if least is None else f" and x >= {least}")
        if nullable:
            ok = f"x is None or {ok}"
        if not required:
            ok = f"x is M or {ok}"
        body += [f"    x = o.get({name!r}, M)", f"    if not ({ok}):", "        return False"]
    code = "def fits(o, M=M):\n" + "\n".join(body + ["    return True"]) + "\n"
    scope: dict[str, Any] = {"M": _MISSING}
    exec(compile(code, "<corda record plan>", "exec"), scope)
    return scope["fits"]


def _found(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'…' if len(text) > 60 else ''}"


@dataclass(frozen=True)
class RecordFormat:
    format: str
    key: str
    event_fields: dict[str, FieldRule]
    always: tuple[str, ...]
    required: dict[str, tuple[str, ...]]   # event -> fields it must carry besides `always`
    checked: dict[str, tuple[str, ...]]    # event -> every field checked on it (always + required + optional)
    verdicts: dict[str, str]               # record verdict (either spelling) -> spec answer (NEW, DUPLICATE, IN_FLIGHT)
    written: tuple[str, ...]               # the verdicts as a writer writes them (the answers' own spelling)
    row_fields: dict[str, FieldRule]
    row_required: tuple[str, ...]

    def __post_init__(self) -> None:
        # per event, and for a row: (name, python type, least value, nullable, required) to test
        # inline; reading is per record, so it avoids a call per field
        def plan(names, fields, required):
            return tuple((n, str if fields[n].type == "string" else int, fields[n].minimum, fields[n].nullable,
                          n in required) for n in names)

        object.__setattr__(self, "_plans", {ev: plan(self.checked[ev], self.event_fields, (*self.always, *self.required[ev]))
                                            for ev in self.required})
        object.__setattr__(self, "_row_plan", plan(self.row_required, self.row_fields, self.row_required))
        object.__setattr__(self, "_fits", {ev: _fits(p) for ev, p in self._plans.items()})
        object.__setattr__(self, "_row_fits", _fits(self._row_plan))

    def read(self, obj: Any) -> tuple[str | None, list[tuple[str | None, str]]]:
        """(EVENT or ROW, problems as (field, message)) of one parsed line; no problems: usable."""
        if type(obj) is not dict:
            return None, [(None, f"expected a JSON object (an event or a processed-ids row), found {_found(obj)}")]
        ev = obj.get("event", _MISSING)
        if ev is not _MISSING:
            fits = self._fits.get(ev) if type(ev) is str else None
            if fits is None:
                return EVENT, [("event", self._event_hint(ev))]
            if fits(obj) and (ev != "dedup" or obj["verdict"] in self.verdicts):
                return EVENT, _NONE
            plan, kind, what = self._plans[ev], EVENT, f"a {ev} event"
        elif "tx" in obj or "id" in obj:
            if self._row_fits(obj):
                return ROW, _NONE
            plan, kind, what = self._row_plan, ROW, "a processed-ids row"
        else:
            return None, [(None, "expected an event (with field event) or a processed-ids row (fields "
                                 + ", ".join(self.row_required) + "), found neither")]
        out = None
        for name, typ, least, nullable, required in plan:
            v = obj.get(name, _MISSING)
            if v is _MISSING:
                if required:
                    out = out or []
                    fields = self.event_fields if kind == EVENT else self.row_fields
                    out.append((name, f"missing: {what} carries {name} ({fields[name].shown()})"))
                continue
            if type(v) is typ and (v != "" if typ is str else least is None or v >= least):
                continue
            if v is None and nullable:
                continue
            out = out or []
            fields = self.event_fields if kind == EVENT else self.row_fields
            out.append((name, fields[name].problem(v)))
        if out:
            return kind, out
        if kind == EVENT and ev == "dedup" and obj["verdict"] not in self.verdicts:
            return kind, [("verdict", self._hint(obj["verdict"], list(self.written), "verdict"))]
        return kind, _NONE

    def _event_hint(self, ev: Any) -> str:
        return self._hint(ev, list(self.required), "event")

    @staticmethod
    def _hint(value: Any, known: list[str], what: str) -> str:
        if type(value) is not str:
            return f"expected one of {', '.join(known)}, found {_found(value)}"
        near = [k for k in known if k.casefold() == value.casefold()] or difflib.get_close_matches(value, known, n=1, cutoff=0.7)
        return f"unknown {what} {value!r}" + (f"; did you mean {near[0]!r}?" if near else f"; expected one of {', '.join(known)}")


def _fields(fields: dict) -> dict[str, FieldRule]:
    return {n: FieldRule(n, f["type"], f.get("min"), bool(f.get("nullable", False))) for n, f in fields.items()}


def _fail(spec: dict, path: list, message: str) -> SpecError:
    shown, line = spec_line(spec, "records", path)
    return SpecError(shown, ".".join(str(p) for p in path), message, line=line)


@functools.lru_cache(maxsize=None)
def record_format() -> RecordFormat:
    """records.yaml compiled, with its names checked against each other and against system.yaml."""
    spec = load_protocol_spec(PROTOCOL)
    rec = spec["records"]
    ev = rec["events"]
    fields = _fields(ev["fields"])
    for i, name in enumerate(ev["always"]):
        if name not in fields:
            raise _fail(spec, ["events", "always", i], f"unknown field {name!r}; fields: {sorted(fields)}")
    required, checked = {}, {}
    for kind, k in ev["kinds"].items():
        for part in ("required", "optional"):
            for i, name in enumerate(k.get(part, [])):
                if name not in fields:
                    raise _fail(spec, ["events", "kinds", kind, part, i], f"unknown field {name!r}; fields: {sorted(fields)}")
        required[kind] = tuple(k["required"])
        checked[kind] = tuple(dict.fromkeys([*ev["always"], *k["required"], *k.get("optional", [])]))
    for name in ("received", "dedup", "committed", "acked", "discarded", "sent"):
        if name not in required:
            raise _fail(spec, ["events", "kinds"], f"missing the event {name!r} the log checker judges")
    written = ev["verdicts"]["written"]
    for i, answer in enumerate(written):
        if answer not in spec["system"]["dedup_answers"]:
            raise _fail(spec, ["events", "verdicts", "written", i], f"unknown answer {answer!r}; system.yaml dedup_answers: {list(ANSWERS)}")
    if set(written) != set(ANSWERS):
        raise _fail(spec, ["events", "verdicts", "written"], f"expected a verdict for each answer {list(ANSWERS)}")
    also = ev["verdicts"].get("also_read", {})
    for spelling, answer in also.items():
        if answer not in written:
            raise _fail(spec, ["events", "verdicts", "also_read", spelling], f"unknown answer {answer!r}; written: {written}")
    verdicts = {a: a for a in written} | dict(also)
    rows = _fields(rec["processed"]["fields"])
    for i, name in enumerate(rec["processed"]["required"]):
        if name not in rows:
            raise _fail(spec, ["processed", "required", i], f"unknown field {name!r}; fields: {sorted(rows)}")
    if rec["key"] not in ev["always"] or rec["key"] not in rec["processed"]["required"]:
        raise _fail(spec, ["key"], f"the shard key {rec['key']!r} must be a field of every event and row")
    return RecordFormat(rec["format"], rec["key"], fields, tuple(ev["always"]), required, checked,
                        verdicts, tuple(written), rows, tuple(rec["processed"]["required"]))
