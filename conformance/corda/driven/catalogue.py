"""The catalogue of named Corda scenarios (``spec/corda/catalogue.yaml``), checked against the rest
of the spec and resolved for one role and profile.

Why named scenarios besides generated ones: a crash window is a few steps long, and a generator
that has to hit it by chance (a crash right after the commit, with a copy still on the broker)
finds it with some seeds and misses it with others. The catalogue plays each crash point of
system.yaml and each window between a commit, its acknowledgement and the durability of its
processed id on every run, first; the generated scenarios then look for what no one named.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rmkit.protocols.corda.model import DRIVEN_ROLES, corda_spec
from rmkit.errors import SpecError
from rmkit.specload import load_protocol_spec, spec_line


@dataclass(frozen=True)
class Named:
    """One scenario of the catalogue."""

    id: str
    title: str
    role: str
    window: str
    checks: tuple[str, ...]
    steps: tuple[tuple, ...]
    profiles: tuple[str, ...] | None = None   # None: every profile


def _fail(spec: dict, path: list, message: str) -> SpecError:
    shown, line = spec_line(spec, "catalogue", path)
    return SpecError(shown, ".".join(str(p) for p in path), message, line=line)


@functools.lru_cache(maxsize=None)
def scenarios() -> tuple[Named, ...]:
    """Every scenario of the catalogue, in file order, each checked: its role is driven, its window
    is declared, its rules exist and its steps are ones the role plays (saved scenarios are checked
    by the same function); every window and every crash point of system.yaml has a scenario."""
    from .steps import step_problem

    spec = load_protocol_spec("corda")
    doc, system = spec["catalogue"], spec["system"]
    rules = {r["id"] for r in spec["rules"]["rules"]}
    profiles = set(spec["protocol"]["profiles"])
    for name, w in doc["windows"].items():
        if "crash_point" in w and w["crash_point"] not in system["crash_points"]:
            raise _fail(spec, ["windows", name, "crash_point"], f"unknown crash point {w['crash_point']!r}; "
                                                                f"system.yaml has {sorted(system['crash_points'])}")
    out, ids = [], set()
    for i, sc in enumerate(doc["scenarios"]):
        at = ["scenarios", i]
        if sc["id"] in ids:
            raise _fail(spec, at + ["id"], f"scenario id {sc['id']!r} used twice")
        ids.add(sc["id"])
        if sc["role"] not in DRIVEN_ROLES:
            raise _fail(spec, at + ["role"], f"expected a driven role ({', '.join(DRIVEN_ROLES)}), found {sc['role']!r}")
        if sc["window"] not in doc["windows"]:
            raise _fail(spec, at + ["window"], f"unknown window {sc['window']!r}; windows: {sorted(doc['windows'])}")
        for j, rule in enumerate(sc["checks"]):
            if rule not in rules:
                raise _fail(spec, at + ["checks", j], f"unknown rule {rule!r}")
        for j, p in enumerate(sc.get("profiles", [])):
            if p not in profiles:
                raise _fail(spec, at + ["profiles", j], f"unknown profile {p!r}")
        problem = step_problem(sc["role"], sc["steps"])
        if problem is not None:
            where, what = problem
            parts = where.replace("]", "").replace("[", ".").split(".")
            raise _fail(spec, at + [int(x) if x.isdigit() else x for x in parts], what)
        out.append(Named(sc["id"], sc["title"], sc["role"], sc["window"], tuple(sc["checks"]),
                         tuple(tuple(s) for s in sc["steps"]), tuple(sc["profiles"]) if "profiles" in sc else None))
    played = {sc.window for sc in out}
    for name in doc["windows"]:
        if name not in played:
            raise _fail(spec, ["windows", name], f"no scenario plays the window {name!r}")
    reached = {doc["windows"][w].get("crash_point") for w in played}
    for point in system["crash_points"]:
        if point not in reached:
            raise _fail(spec, ["windows"], f"no window (so no scenario) plays the crash point {point!r} of system.yaml")
    return tuple(out)


def catalogue(role: str, profile: str) -> list[Named]:
    """The catalogue's scenarios of ``role`` that run in ``profile``, in file order."""
    corda_spec(profile)   # an unknown profile is a usage error naming the profiles
    return [sc for sc in scenarios() if sc.role == role and (sc.profiles is None or profile in sc.profiles)]
