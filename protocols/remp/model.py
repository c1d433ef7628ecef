"""The REMP spec compiled for one profile: kinds with fast field validators, transition tables,
outcome rules, lifetimes and rule modes. Everything here is derived from ``spec/remp/*.yaml``;
this module adds no protocol facts of its own, only checks that the spec's names agree.
"""

from __future__ import annotations

import functools
import re
import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from rmkit.errors import SpecError
from rmkit.rules import RuleSet
from rmkit.specload import load_protocol_spec, spec_line

PROTOCOL = "remp"
FULLNODE, VALIDATOR = "fullnode", "validator"
# What a rule may need beyond the log (rules.yaml `requires`): the validators' public keys
REQUIREMENTS = {"validator_keys": "a --validators file with the validators' and full nodes' public keys",
                "session_starts": "a --validators file whose sessions carry start times (start_ms)"}


@dataclass(frozen=True)
class FieldCheck:
    name: str
    required: bool
    check: Callable[[Any], bool]
    expected: str  # what the format is, for error messages
    fmt: dict[str, Any] | None = None  # the profile's format entry, for the compiled validator


def compile_validator(kind: str, fields: tuple[FieldCheck, ...], typed: bool = False) -> Callable[[Any], list[str] | None] | None:
    """Generate one function that checks every field of a kind and returns the problems (or
    None). Generated code avoids a call per field on the hot path: integers are checked inline,
    strings against a set of values already found good before calling the format's check.
    ``typed``: the function reads a typed receipt's attributes (:mod:`rmkit.protocols.remp.records`) instead of a
    dict's keys; the checks and their texts are the same, less what the typed decoder has settled
    already: every integer an int within its minimum, every string a str, or None, and every
    required field present (a receipt without one is not typed, and the general reading reports it)."""
    if not fields:
        return None
    env: dict[str, Any] = {}
    body = ["def validate(obj):", "    bad = None"]
    for i, fc in enumerate(fields):
        if not fc.name.isidentifier():
            raise ValueError(f"field name {fc.name!r} of {kind} is not an identifier")
        fmt = fc.fmt or {}
        integer = fmt.get("type") == "integer"
        lo = fmt.get("minimum") if integer else None
        if typed and (integer or fmt.get("pattern") is None):
            continue  # its type, minimum and (when required) presence are all there is to check, and the decoder did
        env[f"check{i}"], env[f"good{i}"] = fc.check, set()
        missing = f"{fc.name}: required for {kind}, missing"
        wrong = f"{fc.name}: expected {fc.expected}, found "
        report_wrong = f"bad = (bad or []) + [{wrong!r} + repr(v)]"
        # the field's tests in order, each (condition, statement lines); the first that holds decides
        tests: list[tuple[str, list[str]]] = []
        if not (typed and fc.required):  # (a typed receipt has every required field)
            tests.append(("v is None", [f"if {fc.required!r}: bad = (bad or []) + [{missing!r}]"]))
        if integer:
            cond = ([] if typed else ["type(v) is not int"]) + ([f"v < {int(lo)}"] if lo is not None else [])
            if cond:
                tests.append((" or ".join(cond), [report_wrong]))
        else:
            if not typed:
                tests.append(("type(v) is not str", [report_wrong]))
            tests.append((f"v not in good{i}", [f"if not check{i}(v): {report_wrong}",
                                                f"elif len(good{i}) < 100_000: good{i}.add(v)"]))
        body.append(f"    v = obj.{fc.name}" if typed else f"    v = obj.get({fc.name!r})")
        for j, (cond, lines) in enumerate(tests):
            body.append(f"    {'elif' if j else 'if'} {cond}:")
            body.extend(f"        {line}" for line in lines)
    body.append("    return bad")
    exec("\n".join(body), env)  # noqa: S102 - generated from the spec's own field table
    return env["validate"]


def _reachable(start: str, steps) -> set[str]:
    """The positions ``start`` leads to by transitions ``steps`` ((to, from) pairs), itself included."""
    seen, todo = {start}, [start]
    while todo:
        pos = todo.pop()
        for to, allowed in steps:
            if pos in allowed and to not in seen:
                seen.add(to)
                todo.append(to)
    return seen


@dataclass(frozen=True)
class KindInfo:
    name: str
    status: str
    level: str
    category: str
    final: bool
    issuers: frozenset[str]
    in_table: bool
    fields: tuple[FieldCheck, ...]
    validate: Callable[[dict], list[str] | None] | None  # compiled from fields
    validate_typed: Callable[[Any], list[str] | None] | None  # the same, on a typed receipt (records.py)
    bit: int  # this kind's bit in a message's set of kinds seen
    has_block: bool  # carries the shard block group (required or optional)
    # role -> (position after, positions it may follow)
    transitions: dict[str, tuple[str, frozenset[str]]]
    seed_names: tuple[str, ...]
    # the same as a log can show it: where the profile lets a role leave out its intermediate
    # receipts (freedom skip_intermediate), a kind may also follow any position from which
    # left-out receipts lead to one it may follow (see RempModel._log_transitions)
    log_transitions: dict[str, tuple[str, frozenset[str]]] | None = None


@dataclass(frozen=True)
class RoleMachine:
    positions: tuple[str, ...]
    final: frozenset[str]


def _fail(spec, part: str, path: list, message: str):
    shown, line = spec_line(spec, part, path)
    raise SpecError(shown, ".".join(map(str, path)), message, line=line)


_HEX_ALTERNATIVES = re.compile(r"\^\(?((?:\[0-9a-(?:fA-F|f)\]\{\d+\}\|?)+)\)?\$")
_HEX_PART = re.compile(r"\[0-9a-(fA-F|f)\]\{(\d+)\}")


def _hex_check(pattern: str) -> Callable[[Any], bool] | None:
    """An exact, faster equivalent of a pattern that only says "N hex digits" (or one of several
    lengths, lower case or any case): bytes.fromhex instead of a regex. None for other patterns."""
    m = _HEX_ALTERNATIVES.fullmatch(pattern)
    if m is None:
        return None
    parts = _HEX_PART.findall(m.group(1))
    cases = {c for c, _ in parts}
    if len(cases) != 1 or "".join(f"[0-9a-{c}]{{{n}}}|" for c, n in parts).rstrip("|") != m.group(1):
        return None
    lengths = frozenset(int(n) for _, n in parts)
    fromhex = bytes.fromhex
    digits = b"0123456789abcdef" + (b"ABCDEF" if cases != {"f"} else b"")
    even = frozenset(n for n in lengths if n % 2 == 0)  # (fromhex refuses an odd count of digits)

    def every(values: list) -> bool:
        """``all(map(check, values))`` in a few C calls over the whole list: every value a string
        of one of the lengths (an even one, as fromhex needs) made of the pattern's digits only,
        which is what check asks of it. Called once per batch of receipts for their signatures."""
        try:
            raw = "".join(values).encode("ascii")
        except (TypeError, UnicodeEncodeError):  # a value that is no string, or a character fromhex refuses
            return False
        return set(map(len, values)) <= even and not raw.translate(None, digits)

    # called once per receipt for its signature: kept to a few operations. A value that is no
    # string has no length or is refused by fromhex (TypeError); fromhex skips spaces, which the
    # length catches.
    if cases == {"f"}:
        def check(v) -> bool:
            try:
                # hex digits only (fromhex), so "no upper case" is lower() == v: str.islower()
                # looks every character up in the Unicode tables, six times slower on a signature
                return len(v) in lengths and len(fromhex(v)) * 2 == len(v) and v.lower() == v
            except (TypeError, ValueError):
                return False
    else:
        def check(v) -> bool:
            try:
                return len(v) in lengths and len(fromhex(v)) * 2 == len(v)
            except (TypeError, ValueError):
                return False

    check.every = every
    return check


def _format_check(fmt: dict[str, Any]) -> tuple[Callable[[Any], bool], str]:
    if fmt["type"] == "integer":
        lo = fmt.get("minimum")
        if lo is None:
            return _with_every(lambda v: type(v) is int), "an integer"
        return _with_every(lambda v, lo=lo: type(v) is int and v >= lo), f"an integer >= {lo}"
    pattern = fmt.get("pattern")
    if pattern is None:
        return _with_every(lambda v: type(v) is str), "a string"
    fast = _hex_check(pattern)
    if fast is not None:
        return fast, f"a string matching {pattern}"
    match = re.compile(pattern).fullmatch
    good: set[str] = set()  # ids repeat (sources, blocks): remember the ones already found good

    def check(v) -> bool:
        if type(v) is not str:
            return False
        if v in good:
            return True
        if match(v) is None:
            return False
        if len(good) > 200_000:
            good.clear()
        good.add(v)
        return True

    return _with_every(check), f"a string matching {pattern}"


def _with_every(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``check.every(values)``: whether check holds for every value (a format's check for a
    whole batch at once; :func:`_hex_check` gives its own, faster one)."""
    check.every = lambda values: all(map(check, values))
    return check


class RempModel:
    """The compiled spec of one profile. Build with :func:`model_for`."""

    def __init__(self, profile: str):
        spec = load_protocol_spec(PROTOCOL)
        self.spec = spec
        manifest = spec["protocol"]
        self.profile = profile
        self.profiles = list(manifest["profiles"])
        if profile not in self.profiles:
            raise ValueError(f"unknown REMP profile {profile!r}")
        self.levels: dict[str, int] = manifest["levels"]
        self.rules = RuleSet.from_spec(spec["rules"])
        self._check_rules(spec, manifest)
        self.formats = self._compile_formats(spec)
        self.roles = self._compile_roles(spec)
        self.kinds = self._compile_kinds(spec, manifest)
        self.outcomes = self._compile_outcomes(spec)
        self.queued_mask = self._compile_queued(spec)
        for _, _, when in self.outcomes:
            if "any_kind" in when:
                when["any_mask"] = sum(self.kinds[k].bit for k in when["any_kind"])
        lt = spec["lifetimes"]
        self.default_lifetime_s: float = lt["mc_catchain_lifetime"]["default_seconds"]
        self.expiry_bound_lifetimes: float = lt["expiry_bound_lifetimes"][profile]["value"]
        self.horizon_extra_s: float = lt["horizon"]["extra_seconds"]
        self.timeout_floor_lifetimes: float = lt["timeout_floor_lifetimes"]["value"]  # REMP-EXPIRY-002
        self.latency: dict[str, dict[str, Any]] = lt["latency"]
        self.session_rules = lt["session_rules"]
        self.thresholds = {name: (Fraction(t["fraction"]), t["plus"], t.get("of_n_minus_one", False), t.get("round", "floor"))
                           for name, t in manifest.get("thresholds", {}).items()}
        for needed in ("fanout_min", "stop_collation_rejected", "faulty_max"):
            if needed not in self.thresholds:
                _fail(spec, "protocol", ["thresholds"], f"expected a threshold named {needed!r}")
        self.behaviours: dict[str, Any] = {}
        for name, b in spec["behaviours"]["behaviours"].items():
            if self.profile not in b:
                _fail(spec, "behaviours", ["behaviours", name], f"expected a value for profile {self.profile!r}")
            self.behaviours[name] = b[self.profile]
        common = spec["kinds"]["common_fields"]
        self.zero_time_roles = frozenset(common["timestamp"].get("zero_allowed", {}).get(profile, ()))
        # REMP-TIME-002: integers that are unix seconds of plausible dates, not milliseconds
        sr = spec["formats"]["formats"][common["timestamp"]["format"]]["seconds_range"]
        self.seconds_range: tuple[int, int] = (sr["from"], sr["until"])
        self.signature_required: bool = common["signature"]["required"][profile]
        self.unsigned_roles = frozenset(common["signature"].get("unsigned_allowed", {}).get(profile, ()))
        self.signature_check, self.signature_expected = self.formats[common["signature"]["format"]]
        self.hash_check, self.hash_expected = self.formats[common["message_id"]["format"]]
        self.ids_fold_case: bool = self.hash_check("A" * 64)  # upper-case hex allowed: compare ids case-folded
        self.seed_names = {alias: k.name for k in self.kinds.values() for alias in k.seed_names}
        self._typed = None
        self._threshold_of: dict[tuple[str, int], int] = {}

    # -- cross-reference checks -------------------------------------------------------------
    def _check_rules(self, spec, manifest):
        docs = set(manifest["documents"])
        for i, r in enumerate(spec["rules"]["rules"]):
            for prof in r["modes"]:
                if prof not in self.profiles:
                    _fail(spec, "rules", ["rules", i, "modes", prof], f"unknown profile {prof!r}; expected one of {self.profiles}")
            if set(r["modes"]) != set(self.profiles):
                _fail(spec, "rules", ["rules", i, "modes"], f"expected a mode for every profile {self.profiles}, found {sorted(r['modes'])}")
            for j, need in enumerate(r.get("requires", ())):
                if need not in REQUIREMENTS:
                    _fail(spec, "rules", ["rules", i, "requires", j], f"unknown requirement {need!r}; expected one of {sorted(REQUIREMENTS)}")
            if r["source"]["doc"] not in docs:
                _fail(spec, "rules", ["rules", i, "source", "doc"], f"unknown document {r['source']['doc']!r}; expected one of {sorted(docs)}")
        ids = [r["id"] for r in spec["rules"]["rules"]]
        dup = {x for x in ids if ids.count(x) > 1}
        if dup:
            _fail(spec, "rules", ["rules"], f"rule ids must be unique, found duplicates {sorted(dup)}")

    def _compile_formats(self, spec):
        out = {}
        for name, f in spec["formats"]["formats"].items():
            if self.profile not in f:
                _fail(spec, "formats", ["formats", name], f"expected a format for profile {self.profile!r}")
            out[name] = _format_check(f[self.profile])
        return out

    def _compile_roles(self, spec):
        roles = {}
        for role, r in spec["transitions"]["roles"].items():
            if role not in spec["protocol"]["roles"]:
                _fail(spec, "transitions", ["roles", role], f"unknown role {role!r}")
            bad = set(r["final"]) - set(r["positions"])
            if bad:
                _fail(spec, "transitions", ["roles", role, "final"], f"final positions {sorted(bad)} are not in positions")
            roles[role] = RoleMachine(tuple(r["positions"]), frozenset(r["final"]))
        return roles

    def _field(self, spec, part, path, name, entry, required) -> FieldCheck:
        fmt = entry["format"]
        if fmt not in self.formats:
            _fail(spec, part, path + [name, "format"], f"unknown format {fmt!r}; expected one of {sorted(self.formats)}")
        check, expected = self.formats[fmt]
        return FieldCheck(name, required, check, expected, spec["formats"]["formats"][fmt][self.profile])

    def _compile_kinds(self, spec, manifest):
        kd = spec["kinds"]
        trans = spec["transitions"]["roles"]
        out = {}
        for name, k in kd["kinds"].items():
            path = ["kinds", name]
            if k["level"] not in manifest["levels"]:
                _fail(spec, "kinds", path + ["level"], f"unknown level {k['level']!r}")
            if k["status"] not in manifest["statuses"]:
                _fail(spec, "kinds", path + ["status"], f"unknown status {k['status']!r}")
            if k["category"] not in manifest["outcome_categories"]:
                _fail(spec, "kinds", path + ["category"], f"unknown category {k['category']!r}")
            for key in ("issuers", "in_table"):
                if set(k[key]) != set(self.profiles):
                    _fail(spec, "kinds", path + [key], f"expected an entry for every profile {self.profiles}")
            issuers = frozenset(k["issuers"][self.profile])
            if issuers - set(manifest["roles"]):
                _fail(spec, "kinds", path + ["issuers"], f"unknown roles {sorted(issuers - set(manifest['roles']))}")
            fields = []
            for fname, entry in kd["common_fields"].items():
                if fname in ("signature", "timestamp", "message_id", "source_id"):
                    continue  # checked once per receipt by the checker (SIG-001, TIME-001, cached ids)
                fields.append(self._field(spec, "kinds", ["common_fields"], fname, entry, entry["required"][self.profile]))
            for fname, entry in (k.get("fields") or {}).items():
                fields.append(self._field(spec, "kinds", path + ["fields"], fname, entry, entry["required"][self.profile]))
            has_block = False
            for gname, need in (k.get("groups") or {}).items():
                if gname not in kd["field_groups"]:
                    _fail(spec, "kinds", path + ["groups", gname], f"unknown field group {gname!r}")
                need = need if isinstance(need, str) else need.get(self.profile, "optional")
                has_block |= gname == "shard_block"
                for fname, entry in kd["field_groups"][gname].items():
                    req = need == "required" and not entry.get("optional_in_group", False)
                    fields.append(self._field(spec, "kinds", ["field_groups", gname], fname, entry, req))
            transitions = {}
            for role, r in trans.items():
                t = r["kinds"].get(name)
                if t is None:
                    continue
                tp = ["roles", role, "kinds", name]
                if t["to"] not in r["positions"]:
                    _fail(spec, "transitions", tp + ["to"], f"unknown position {t['to']!r}; expected one of {r['positions']}")
                if self.profile not in t["from"]:
                    _fail(spec, "transitions", tp + ["from"], f"expected an entry for profile {self.profile!r}")
                allowed = set()
                for pos in t["from"][self.profile]:
                    if pos == "open":
                        allowed |= set(r["positions"]) - set(r["final"])
                    elif pos in r["positions"]:
                        allowed.add(pos)
                    else:
                        _fail(spec, "transitions", tp + ["from", self.profile], f"unknown position {pos!r}; expected 'open' or one of {r['positions']}")
                transitions[role] = (t["to"], frozenset(allowed))
            for role in issuers:
                if role not in transitions:
                    _fail(spec, "transitions", ["roles", role, "kinds"], f"kind {name} may be issued by {role} in profile {self.profile} but has no transition for that role")
            out[name] = KindInfo(name, k["status"], k["level"], k["category"], k["final"], issuers,
                                 k["in_table"][self.profile], tuple(fields), compile_validator(name, tuple(fields)),
                                 compile_validator(name, tuple(fields), typed=True),
                                 1 << len(out), has_block, transitions, tuple(k.get("seed_names", ())))
        for role, r in trans.items():
            for name in r["kinds"]:
                if name not in out:
                    _fail(spec, "transitions", ["roles", role, "kinds", name], f"unknown kind {name!r}")
        return self._log_transitions(spec, out)

    def _log_transitions(self, spec, kinds: dict) -> dict:
        """Each kind's transitions as a receipt log can show them. Where a freedom lets a role leave
        out the receipts that are not final (``skip_intermediate``, freedoms.yaml), a receipt may
        come straight after a position from which left-out receipts lead to one its transition
        follows: a validator that rejected, was then included in an accepted block (IncludedIntoAcceptedBlock,
        left out) and later saw the block rejected sends RejectedByShardchain right after its
        RejectedByQueue, and that is no report after a final status. The model's own table
        (``transitions``: TLA+ constants, reference machines, docs) stays the documents' one."""
        skipping = {role for fr in spec["freedoms"]["freedoms"] if fr["name"] == "skip_intermediate"
                    and self.profile in fr["profiles"] for role in fr["roles"]}
        reach = {}  # role -> position -> the positions its left-out receipts lead to
        for role in skipping:
            steps = [kt.transitions[role] for kt in kinds.values() if role in kt.transitions and not kt.final]
            reach[role] = {p: _reachable(p, steps) for p in self.roles[role].positions}
        out = {}
        for name, ki in kinds.items():
            log = dict(ki.transitions)
            for role in reach.keys() & ki.transitions.keys():
                to, allowed = ki.transitions[role]
                log[role] = (to, frozenset(p for p, led_to in reach[role].items() if led_to & allowed))
            out[name] = dataclasses.replace(ki, log_transitions=log)
        return out

    def _compile_queued(self, spec) -> int:
        """Bits of the kinds by which a validator counts as having queued a message (outcomes.yaml queued_by)."""
        entry = spec["outcomes"]["queued_by"].get(self.profile)
        if entry is None:
            _fail(spec, "outcomes", ["queued_by"], f"expected an entry for profile {self.profile!r}")
        if entry["kinds"] == ["any"]:
            return sum(k.bit for k in self.kinds.values())
        for i, name in enumerate(entry["kinds"]):
            if name not in self.kinds:
                _fail(spec, "outcomes", ["queued_by", self.profile, "kinds", i], f"unknown kind {name!r}")
        return sum(self.kinds[name].bit for name in entry["kinds"])

    def _compile_outcomes(self, spec):
        rules = []
        for i, o in enumerate(spec["outcomes"]["outcomes"]):
            when = dict(o["when"])
            for kind in when.get("any_kind", []):
                if kind not in spec["kinds"]["kinds"]:
                    _fail(spec, "outcomes", ["outcomes", i, "when", "any_kind"], f"unknown kind {kind!r}")
            if "queued_fraction_in" in when:
                q = dict(when["queued_fraction_in"])
                q["at_least"] = Fraction(q["at_least"])
                when["queued_fraction_in"] = q
            rules.append((o["name"], o["final"], when))
        return rules

    # -- helpers used by checker, machines and docs ------------------------------------------

    def typed_decoder(self):
        """The typed decoder (:class:`rmkit.protocols.remp.records.TypedDecoder`), built on first use."""
        if self._typed is None:
            from rmkit.protocols.remp.records import TypedDecoder

            self._typed = TypedDecoder(self)
        return self._typed

    def mode(self, rule_id: str) -> str:
        return self.rules[rule_id].mode(self.profile)

    def threshold(self, name: str, n: int) -> int:
        """The count a threshold of protocol.yaml gives for N validators (e.g. fanout_min(7) = 3)."""
        got = self._threshold_of.get((name, n))  # asked per message: remembered
        if got is None:
            frac, plus, minus_one, rounding = self.thresholds[name]
            base = (n - 1 if minus_one else n) * frac.numerator
            whole = -(-base // frac.denominator) if rounding == "ceil" else base // frac.denominator
            got = whole + plus
            if len(self._threshold_of) < 4096:
                self._threshold_of[(name, n)] = got
        return got

    def expiry_bound_ms(self, lifetime_s: float) -> int:
        return int(self.expiry_bound_lifetimes * lifetime_s * 1000)

    def default_horizon_s(self, lifetime_s: float) -> float:
        return self.expiry_bound_lifetimes * lifetime_s + self.horizon_extra_s


@functools.lru_cache(maxsize=None)
def model_for(profile: str) -> RempModel:
    return RempModel(profile)
