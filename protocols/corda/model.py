"""The Corda spec (spec/corda/*.yaml) compiled for one profile, with its cross-references checked.

Schema validation happens in :func:`rmkit.specload.load_protocol_spec`; here the names that must
match across files are checked (every per-profile map covers exactly the profiles of
protocol.yaml, every consequence and role named exists), so a typo is a :class:`SpecError` naming
file, line and field at start-up, never a wrong verdict later. The reference machines, the TLA+
constants and the conformance suite read their profile-dependent behaviour from
:class:`CordaSpec` only.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from rmkit.errors import SpecError, UsageError
from rmkit.rules import RuleSet
from rmkit.specload import load_protocol_spec, spec_line

PROTOCOL = "corda"
ANSWERS = ("NEW", "DUPLICATE", "IN_FLIGHT")
DRIVEN_ROLES = ("receiver", "bridge")   # the roles `rmkit conform --protocol corda` drives and judges


def _fail(spec: dict, part: str, path: list, message: str) -> SpecError:
    shown, line = spec_line(spec, part, path)
    return SpecError(shown, ".".join(str(p) for p in path), message, line=line)


def _check_profiles(spec: dict, part: str, path: list, mapping: dict, profiles: list[str]) -> None:
    if set(mapping) != set(profiles):
        missing = sorted(set(profiles) - set(mapping))
        extra = sorted(set(mapping) - set(profiles))
        raise _fail(spec, part, path, f"expected a value for each profile {profiles}; "
                                      f"missing {missing or 'none'}, unknown {extra or 'none'}")


def check_cross_references(spec: dict) -> None:
    """Raise :class:`SpecError` for the first name that does not match across spec/corda files."""
    profiles = list(spec["protocol"]["profiles"])
    roles = set(spec["protocol"]["roles"])
    system, messages = spec["system"], spec["messages"]
    for i, r in enumerate(spec["rules"]["rules"]):
        _check_profiles(spec, "rules", ["rules", i, "modes"], r["modes"], profiles)
        if not r["id"].startswith("CORDA-"):
            raise _fail(spec, "rules", ["rules", i, "id"], f"expected an id CORDA-..., found {r['id']!r}")
        for p in r.get("profile_notes", {}):
            if p not in profiles:
                raise _fail(spec, "rules", ["rules", i, "profile_notes", p], f"unknown profile {p!r}")
        modes = {x["id"]: x["modes"] for x in spec["rules"]["rules"]}
        for p, d in r.get("known_departure", {}).items():  # a strict rule's breach the profile's facts have
            if p not in profiles:
                raise _fail(spec, "rules", ["rules", i, "known_departure", p], f"unknown profile {p!r}")
            if modes.get(d["reported_as"], {}).get(p) != "non-strict":
                raise _fail(spec, "rules", ["rules", i, "known_departure", p, "reported_as"],
                            f"expected a rule non-strict in profile {p}, found {d['reported_as']!r}")
        _check_driven(spec, i, r)
    for answer in ANSWERS:
        if answer not in system["dedup_answers"]:
            raise _fail(spec, "system", ["dedup_answers"], f"missing the deduplicator's answer {answer}")
    for answer, a in system["dedup_answers"].items():
        _check_profiles(spec, "system", ["dedup_answers", answer, "consequence"], a["consequence"], profiles)
        for p, c in a["consequence"].items():
            if c not in system["consequences"]:
                raise _fail(spec, "system", ["dedup_answers", answer, "consequence", p], f"unknown consequence {c!r}")
    for name, p in system["profile_params"].items():
        _check_profiles(spec, "system", ["profile_params", name, "values"], p["values"], profiles)
    for name, c in system["crash_points"].items():
        if c["role"] not in roles:
            raise _fail(spec, "system", ["crash_points", name, "role"], f"unknown role {c['role']!r}; roles: {sorted(roles)}")
    for name, q in messages["queues"].items():
        if q["consumer"] not in roles:
            raise _fail(spec, "messages", ["queues", name, "consumer"], f"unknown role {q['consumer']!r}")
    for letter, f in messages["dedup_ids"].items():
        if f["prefix"] != f"{letter}-" or not f["pattern"].startswith(f"^{letter}-"):
            raise _fail(spec, "messages", ["dedup_ids", letter, "prefix"], f"expected prefix {letter}- in prefix and pattern")
        if re.compile(f["pattern"]).groups != len(f["parts"]):
            raise _fail(spec, "messages", ["dedup_ids", letter, "pattern"],
                        f"expected {len(f['parts'])} groups (one per part), found {re.compile(f['pattern']).groups}")


def _check_driven(spec: dict, i: int, r: dict) -> None:
    """Every rule says which driven roles judge it, so a conform report can list what it judged and
    name what it did not; a rule no role judges says where it is judged instead."""
    if "driven" not in r:
        raise _fail(spec, "rules", ["rules", i], f"{r['id']}: missing driven (the roles of rmkit conform that judge "
                                                 f"it, of {list(DRIVEN_ROLES)}; [] with judged_elsewhere if none)")
    for j, role in enumerate(r["driven"]):
        if role not in DRIVEN_ROLES:
            raise _fail(spec, "rules", ["rules", i, "driven", j], f"unknown driven role {role!r}; expected one of {list(DRIVEN_ROLES)}")
    if not r["driven"] and "judged_elsewhere" not in r:
        raise _fail(spec, "rules", ["rules", i, "driven"], f"{r['id']}: no driven role judges it; "
                                                           "say where it is judged instead (judged_elsewhere)")
    if r["driven"] and "judged_elsewhere" in r:
        raise _fail(spec, "rules", ["rules", i, "judged_elsewhere"], f"{r['id']}: judged by the driven roles "
                                                                     f"{r['driven']}; judged_elsewhere is for a rule none judges")


@dataclass(frozen=True)
class IdFormat:
    letter: str
    pattern: re.Pattern
    parts: tuple[str, ...]
    deterministic: bool


@dataclass(frozen=True)
class CordaSpec:
    """What one profile of the spec says, in the shape the machines and checkers use."""

    profile: str
    rules: RuleSet
    consequence: dict[str, str]          # answer -> process | ack_and_drop | discard
    acknowledged: dict[str, str]         # consequence -> after_commit | now | never
    in_order_bridge: bool
    fast_path: bool
    oversize: str                        # refused_at_send | dropped_by_bridge
    max_message_size: int
    suspend_actions: tuple[str, ...]
    dedup_order: tuple[str, ...]
    crash_points: dict[str, str]         # name -> role
    id_formats: dict[str, IdFormat]
    headers: dict[str, dict[str, Any]]

    def mode(self, rule_id: str) -> str:
        return self.rules[rule_id].mode(self.profile)

    def id_format(self, dedup_id: str) -> IdFormat | None:
        """The format a deduplication id is in (None: none of the spec's)."""
        for f in self.id_formats.values():
            if f.pattern.fullmatch(dedup_id):
                return f
        return None


def profiles() -> list[str]:
    return list(load_protocol_spec(PROTOCOL)["protocol"]["profiles"])


@functools.lru_cache(maxsize=None)
def corda_spec(profile: str) -> CordaSpec:
    spec = load_protocol_spec(PROTOCOL)
    check_cross_references(spec)
    if profile not in spec["protocol"]["profiles"]:
        raise UsageError(f"protocol corda has no profile {profile!r}; expected one of: {', '.join(spec['protocol']['profiles'])}")
    system, messages = spec["system"], spec["messages"]
    params = {name: p["values"][profile] for name, p in system["profile_params"].items()}
    return CordaSpec(
        profile=profile,
        rules=RuleSet.from_spec(spec["rules"]),
        consequence={a: v["consequence"][profile] for a, v in system["dedup_answers"].items()},
        acknowledged={c: v["acknowledged"] for c, v in system["consequences"].items()},
        in_order_bridge=bool(params["in_order_bridge"]),
        fast_path=bool(params["fast_path"]),
        oversize=str(params["oversize"]),
        max_message_size=int(params["max_message_size"]),
        suspend_actions=tuple(a["name"] for a in system["suspend_actions"]),
        dedup_order=tuple(system["dedup_order"]),
        crash_points={n: c["role"] for n, c in system["crash_points"].items()},
        id_formats={k: IdFormat(k, re.compile(f["pattern"]), tuple(f["parts"]), f["deterministic"])
                    for k, f in messages["dedup_ids"].items()},
        headers=dict(messages["headers"]),
    )
