"""spec/rmb compiled: the rules, the message's wire schema, the signature parameters and each
profile's daemon behaviour, cross-checked once so a broken spec is an error naming file and line.

Everything RMB-specific that code needs comes from here; nothing repeats a value of spec/rmb.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from dataclasses import dataclass
from typing import Any

from rmkit.errors import SpecError, UsageError
from rmkit.rules import RuleSet
from rmkit.specload import load_protocol_spec, spec_line

PROTOCOL = "rmb"
_JSON_TYPES = {"integer": "integer", "string": "string", "array": "array", "boolean": "boolean"}


@dataclass(frozen=True)
class RmbSpec:
    raw: dict[str, Any]
    rules: RuleSet
    profiles: tuple[str, ...]

    @property
    def fields(self) -> dict[str, dict]:
        return self.raw["message"]["fields"]

    @property
    def signature(self) -> dict[str, Any]:
        return self.raw["signature"]

    def behaviour(self, profile: str) -> dict[str, Any]:
        """Setting name -> this profile's value (behaviour.yaml)."""
        if profile not in self.profiles:
            raise UsageError(f"protocol rmb has no profile {profile!r}; expected one of: {', '.join(self.profiles)}")
        return {name: s["values"][profile] for name, s in self.raw["behaviour"]["settings"].items()}

    def mode(self, rule_id: str, profile: str) -> str:
        return self.rules[rule_id].mode(profile)


def _message_schema(fields: dict[str, dict]) -> dict:
    """The JSON Schema of a wire message, built from message.yaml (one fact, one place)."""
    props: dict[str, Any] = {}
    for name, f in fields.items():
        p: dict[str, Any] = {"type": _JSON_TYPES[f["type"]]}
        if "const" in f:
            p["const"] = f["const"]
        if "minimum" in f:
            p["minimum"] = f["minimum"]
        if "min_length" in f:
            p["minLength"] = f["min_length"]
        if f["type"] == "array":
            p["items"] = {"type": f.get("items", "string"), **({"minimum": 0} if f.get("items") == "integer" else {})}
            if "min_items" in f:
                p["minItems"] = f["min_items"]
        props[name] = p
    return {"type": "object", "properties": props,
            "required": [n for n, f in fields.items() if f["required"]]}


@functools.lru_cache(maxsize=None)
def message_validator() -> "jsonschema.Draft202012Validator":
    import jsonschema  # (on demand: the valid messages, nearly all of a log's, never need it)

    return jsonschema.Draft202012Validator(_message_schema(rmb_spec().fields))


_PY = {"integer": int, "string": str, "array": list, "boolean": bool}
_KNOWN_KEYWORDS = {"type", "const", "minimum", "minLength", "items", "minItems"}


def _fits(value: Any, rule: dict) -> bool:
    """Whether ``value`` passes one property of the message schema (the keywords it uses only)."""
    want = _PY[rule["type"]]
    if type(value) is not want:  # a bool is no integer, as in JSON Schema
        return False
    if "const" in rule and value != rule["const"]:
        return False
    if "minimum" in rule and value < rule["minimum"]:
        return False
    if "minLength" in rule and len(value) < rule["minLength"]:
        return False
    if "minItems" in rule and len(value) < rule["minItems"]:
        return False
    return "items" not in rule or all(_fits(v, rule["items"]) for v in value)


@functools.lru_cache(maxsize=None)
def _fast_schema() -> tuple[tuple[str, dict], ...]:
    """The message schema as (field, property) pairs for :func:`message_is_valid`; a keyword it
    does not interpret is a build error, so the fast path can never accept more than the schema."""
    schema = _message_schema(rmb_spec().fields)
    for name, prop in schema["properties"].items():
        for rule in (prop, prop.get("items", {})):
            unknown = set(rule) - _KNOWN_KEYWORDS
            if unknown:
                raise SpecError("spec/rmb/message.yaml", f"fields.{name}", f"the fast validity check does not know {sorted(unknown)}")
    required = set(schema["required"])
    return tuple((name, {**prop, "required": name in required}) for name, prop in schema["properties"].items())


@functools.lru_cache(maxsize=None)
def _fast_convert():
    """:func:`_fast_schema` as a msgspec Struct: ``convert(msg)`` raises unless every property fits
    (msgspec's int and str are exact types, a bool no integer, as :func:`_fits` has them)."""
    global _FAST_CONVERT
    import msgspec

    fields = []
    for name, prop in _fast_schema():
        fields.append((name, _fast_type(prop)) if prop["required"] else (name, _fast_type(prop), None))
    struct = msgspec.defstruct("RmbMessageFits", fields, gc=False, kw_only=True)
    errors = (msgspec.ValidationError, TypeError, ValueError, OverflowError)
    _FAST_CONVERT = msgspec.convert, struct, errors
    return _FAST_CONVERT


_FAST_CONVERT = None  # (_fast_convert's, once made: message_is_valid runs for every distinct message)


def _fast_type(rule: dict):
    import msgspec
    from typing import Annotated, Literal

    if "const" in rule:
        return Literal[rule["const"]]
    base = _PY[rule["type"]]
    if base is list:
        base = list[_fast_type(rule["items"])]
    meta = {}
    if "minimum" in rule:
        meta["ge"] = rule["minimum"]
    if "minLength" in rule:
        meta["min_length"] = rule["minLength"]
    if "minItems" in rule:
        meta["min_length"] = rule["minItems"]
    return Annotated[base, msgspec.Meta(**meta)] if meta else base


def message_is_valid(msg: Any) -> bool:
    """True when ``msg`` passes the message schema (the common case, checked without jsonschema)."""
    if type(msg) is not dict:
        return False
    convert, struct, errors = _FAST_CONVERT or _fast_convert()
    try:
        convert(msg, struct)
        return True
    except errors:
        pass
    for name, prop in _fast_schema():
        if name in msg:
            if not _fits(msg[name], prop):
                return False
        elif prop["required"]:
            return False
    return True


def message_problems(msg: Any) -> list[tuple[str, str, str]]:
    """Every way ``msg`` breaks the v1 message: (rule id, field, what is wrong). Empty when valid."""
    if not isinstance(msg, dict):
        return [("RMB-MSG-001", "", f"expected a JSON object, found {type(msg).__name__}")]
    out = []
    if message_is_valid(msg):
        for name in _base64_fields():
            text = msg.get(name)
            if isinstance(text, str) and not is_base64(text):
                out.append(("RMB-MSG-002", name, "not standard padded base64"))
        return out
    for err in sorted(message_validator().iter_errors(msg), key=lambda e: list(map(str, e.absolute_path))):
        where = ".".join(map(str, err.absolute_path)) or (err.validator == "required" and str(err.message).split("'")[1]) or ""
        rule = "RMB-MSG-006" if where.startswith("dst") else "RMB-MSG-001"
        out.append((rule, where, err.message))
    for name in _base64_fields():
        if isinstance(msg.get(name), str) and not is_base64(msg[name]):
            out.append(("RMB-MSG-002", name, "not standard padded base64"))
    return out


@functools.lru_cache(maxsize=None)
def _base64_fields() -> tuple[str, ...]:
    return tuple(name for name, f in rmb_spec().fields.items() if f.get("format") == "base64")


# the form of standard padded base64 (data characters, then at most two '='): a text of this form
# whose length is a multiple of four decodes (the common case, told without decoding it)
_BASE64_FORM = re.compile(r"[A-Za-z0-9+/]*={0,2}").fullmatch


def is_base64(text: str) -> bool:
    if len(text) % 4 == 0 and _BASE64_FORM(text) is not None:
        return True
    try:
        base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return False
    return len(text) % 4 == 0


def _cross_check(spec: dict[str, Any], rules: RuleSet, profiles: tuple[str, ...]) -> None:
    for i, r in enumerate(spec["rules"]["rules"]):
        if not r["id"].startswith("RMB-"):
            raise SpecError(*spec_line(spec, "rules", ["rules", i, "id"])[:1], f"rules[{i}].id",
                            f"expected an RMB-... id, found {r['id']!r}", line=spec_line(spec, "rules", ["rules", i, "id"])[1])
        if set(r["modes"]) != set(profiles):
            shown, line = spec_line(spec, "rules", ["rules", i, "modes"])
            raise SpecError(shown, f"rules[{i}].modes", f"expected a mode for each profile {sorted(profiles)}, found {sorted(r['modes'])}", line=line)
    for name, s in spec["behaviour"]["settings"].items():
        if set(s["values"]) != set(profiles):
            shown, line = spec_line(spec, "behaviour", ["settings", name, "values"])
            raise SpecError(shown, f"settings.{name}.values", f"expected a value for each profile {sorted(profiles)}, found {sorted(s['values'])}", line=line)
        for j, rid in enumerate(s["rules"]):
            if rid not in rules:
                shown, line = spec_line(spec, "behaviour", ["settings", name, "rules", j])
                raise SpecError(shown, f"settings.{name}.rules[{j}]", f"unknown rule {rid!r}", line=line)
    for i, a in enumerate(spec["behaviour"]["ambiguities"]):
        if set(a["readings"]) != set(profiles):
            shown, line = spec_line(spec, "behaviour", ["ambiguities", i, "readings"])
            raise SpecError(shown, f"ambiguities[{i}].readings", f"expected a reading for each profile {sorted(profiles)}", line=line)
    sig, fields = spec["signature"], spec["message"]["fields"]
    for key in ("pieces", ):
        for j, piece in enumerate(sig["challenge"][key]):
            if piece not in fields or not fields[piece]["signed"]:
                shown, line = spec_line(spec, "signature", ["challenge", key, j])
                raise SpecError(shown, f"challenge.pieces[{j}]", f"{piece!r} is not a field marked signed in message.yaml", line=line)
    signed = {n for n, f in fields.items() if f["signed"]}
    if signed != set(sig["challenge"]["pieces"]):
        shown, line = spec_line(spec, "signature", ["challenge", "pieces"])
        raise SpecError(shown, "challenge.pieces", f"expected every signed field of message.yaml {sorted(signed)}", line=line)
    if set(sig["not_covered"]) != set(fields) - signed:
        shown, line = spec_line(spec, "signature", ["not_covered"])
        raise SpecError(shown, "not_covered", f"expected the unsigned fields of message.yaml {sorted(set(fields) - signed)}", line=line)
    _cross_check_logcheck(spec, rules)


def _cross_check_logcheck(spec: dict[str, Any], rules: RuleSet) -> None:
    """Every rule once: under logcheck.yaml's ``checked``, or with why no log can show it (its
    ``not_loggable`` in rules.yaml). The second kind is also given as logcheck's ``not_loggable``
    (rule id -> why), the log checker's view of it."""
    lc = spec["logcheck"]
    lc["not_loggable"] = {r.id: r.not_loggable for r in rules if r.not_loggable}
    both = set(lc["checked"]) & set(lc["not_loggable"])
    for part in ("checked", "needs_directory"):
        for rid in lc[part]:
            if rid not in rules:
                shown, line = spec_line(spec, "logcheck", [part, rid] if part != "needs_directory" else [part, lc[part].index(rid)])
                raise SpecError(shown, f"{part}.{rid}", f"unknown rule {rid!r}", line=line)
    missing = [r.id for r in rules if r.id not in lc["checked"] and r.id not in lc["not_loggable"]]
    if missing or both:
        shown, line = spec_line(spec, "logcheck", ["checked"])
        raise SpecError(shown, "checked", f"expected every rule of rules.yaml once: under checked, or with not_loggable in rules.yaml; "
                        f"missing {missing}, under both {sorted(both)}", line=line)
    for i, rid in enumerate(lc["needs_directory"]):
        if rid not in lc["checked"]:
            shown, line = spec_line(spec, "logcheck", ["needs_directory", i])
            raise SpecError(shown, f"needs_directory[{i}]", f"{rid} is not under checked", line=line)


@functools.lru_cache(maxsize=None)
def rmb_spec() -> RmbSpec:
    spec = load_protocol_spec(PROTOCOL)
    profs = spec["protocol"]["profiles"]
    profiles = tuple(sorted(profs, key=lambda p: not profs[p].get("default", False)))
    rules = RuleSet.from_spec(spec["rules"])
    _cross_check(spec, rules, profiles)
    return RmbSpec(spec, rules, profiles)
