"""Which scenarios can detect the breach of which rule: measured by running each catalogue
scenario, and the generated scenarios, against each rule's mutant (:mod:`.mutants`); a scenario
covers a rule when it fails on that rule's mutant *and* the failure is attributed to the rule (the
judge's finding or a log rule broken names it), not when it fails for any reason.

Generated scenarios count as well: for each mutant the generator (derandomized) searches for a
scenario whose failure names the mutant's rule, shrinks it a little, and keeps it; a kept scenario
is then run against every mutant of its role like a catalogue one, and :mod:`.suite` runs the kept
scenarios against the implementation, so that their verdict is evidence too.

Computed once per spec and code (the key hashes the REMP spec files and the source of the core,
the checker, the judge, the mutants and what they are built on, the faulty examples among them, and
the reference machines), kept in memory and, where the folder is writable, on disk.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

import orjson

from rmkit.conformance.remp.driven import mutants
from rmkit.conformance.remp.driven.catalogue import catalogue
from rmkit.conformance.remp.driven.scenario import Scenario
from rmkit.specload import spec_root

CACHE_DIR = Path(".rmkit") / "coverage"
GEN_EXAMPLES = 60  # generated scenarios tried per mutant
# The shrink of a scenario that caught a mutant: whole steps deleted, within a count of replays,
# and no Hypothesis simplification (its shrinker draws at random, and a time bound ends it at a
# different point on a busy machine): the measure keeps the same scenarios on every run and every
# machine (a kept scenario need not be minimal, only reproducible). The CPU seconds are a safety
# net against a mutant that hangs, far above what the count takes.
GEN_SHRINK_PLAYS = (300, 0)
GEN_SHRINK_S = 120.0


class _Impl:
    """A mutant adapter behind the in-process implementation interface."""

    def __init__(self, cls, role):
        self.obj, self.name = cls(role), "mutant"

    def start(self, hello):
        self.obj.hello(dict(hello["params"], profile=hello["profile"]))

    def step(self, seq, event):
        return self.obj.step(event)

    def end(self):
        self.obj.bye()

    def stderr(self):
        return ""

    def close(self):
        pass


def _mutant_sources() -> set:
    """The source files the mutants are made of: the module of every class each mutant inherits
    from, and the rest of that module's package (its helpers), wherever it lives: several mutants
    are the faulty examples of ``rmkit.conformance.remp.examples``, built on its ``VariantAdapter``."""
    files = set()
    for _role, cls, _profiles in mutants.MUTANTS.values():
        for base in cls.__mro__:
            module = sys.modules.get(base.__module__)
            path = getattr(module, "__file__", None)
            if path is None or base.__module__.split(".")[0] in sys.stdlib_module_names:
                continue
            path = Path(path)
            files.update(path.parent.rglob("*.py") if (path.parent / "__init__.py").is_file() else [path])
    return files


def key_files() -> list:
    """What a coverage result rests on: the REMP spec, the mutants (:func:`_mutant_sources`), and the
    code that runs and judges scenarios (the checker, the judge, the reference machines, the core)."""
    import rmkit
    import rmkit.conformance.remp as remp_pkg
    import rmkit.reference_impl.remp as ref_pkg

    files = set((spec_root() / "remp").glob("*.yaml"))
    for pkg in (rmkit, remp_pkg, ref_pkg):
        files.update(Path(pkg.__file__).parent.rglob("*.py"))
    files.update(_mutant_sources())
    return sorted(f.resolve() for f in files)


def key(profile: str) -> str:
    """A coverage result holds only as long as everything a scenario's verdict rests on is
    unchanged (:func:`key_files`), so the key hashes all of it: an edit of a mutant's source
    measures coverage again instead of reading a stale result."""
    h = hashlib.sha256(profile.encode())
    for f in key_files():
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def attributed(result, rule: str) -> bool:
    """The scenario failed and its failure names ``rule``."""
    from rmkit.conformance.remp.driven.runner import FAIL

    return result.verdict == FAIL and result.failure is not None and rule in {r for r, _ in result.failure.rules}


def _search(rule: str, profile: str, role: str, cls) -> Scenario | None:
    """A generated scenario whose failure on ``rule``'s mutant names the rule, or None."""
    from rmkit.conformance.remp.driven.generate import run_generated
    from rmkit.conformance.remp.driven.names import default_params

    g = run_generated(role, profile, default_params(role, profile), _Impl(cls, role), max_examples=GEN_EXAMPLES,
                      derandomize=True, shrink_budget=GEN_SHRINK_S, shrink_plays=GEN_SHRINK_PLAYS,
                      wanted=lambda p: rule in p.rules)
    if g.failing is None:
        return None
    sc = g.failing
    sc.id = f"generated-{rule.removeprefix('REMP-')}-{sc.digest()[:8]}"
    sc.title = f"generated ({len(sc.events)} steps); caught the mutant breaking {rule}"
    return sc


@functools.lru_cache(maxsize=None)
def _measured(profile: str) -> dict:
    k = key(profile)
    path = CACHE_DIR / f"{k}-{profile}.json"
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        pass
    from rmkit.conformance.remp.driven.runner import run_scenario

    found = {}
    by_role: dict = {}
    for rule in mutants.rules_with_mutants():
        for role, cls in mutants.mutants_for(rule, profile).items():
            by_role.setdefault(role, []).append((rule, cls))
            sc = _search(rule, profile, role, cls)
            if sc is not None:
                found.setdefault(sc.digest(), sc)  # one scenario may be found for several mutants
    rules: dict = {}
    for role, entries in by_role.items():
        scenarios = catalogue(profile, [role]) + [sc for sc in found.values() if sc.role == role]
        for rule, cls in entries:
            caught = {sc.id for sc in scenarios if attributed(run_scenario(sc, _Impl(cls, role)), rule)}
            rules[rule] = sorted(caught.union(rules.get(rule, ())))
    out = {"rules": rules, "generated": [
        {"id": sc.id, "role": sc.role, "profile": sc.profile, "params": sc.params, "events": sc.events, "title": sc.title}
        for sc in found.values()]}
    try:  # written whole or not at all: several processes (pytest-xdist's workers) may measure at once
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_bytes(orjson.dumps(out, option=orjson.OPT_SORT_KEYS))
        os.replace(part, path)
    except OSError:
        pass  # a read-only folder: computed again next time
    return out


def coverage(profile: str) -> dict:
    """rule -> sorted ids of the scenarios (catalogue and generated) that catch one of its mutants (one
    per role that has one) with a failure attributed to it (``[]``: none does); a scenario only ever
    runs against the mutants of its own role, so a run of some roles finds among the ids it ran those
    that measure its roles. Rules without a mutant in this profile are absent."""
    return _measured(profile)["rules"]


NO_RULE = "no-rule-measured"  # a scenario that catches no rule's mutant


def rules_measured_by(scenario: Scenario, profile: str) -> list:
    """The rules ``scenario`` is measured to catch (it fails their mutant, naming the rule): those
    its catalogue entry declares first, in their order, then the others it caught. What a test
    named by rules may claim: the catalogue's ``checks`` are intent, this is evidence."""
    caught = {rule for rule, ids in coverage(profile).items() if scenario.id in ids}
    declared = [r for r in scenario.checks if r in caught]
    return declared + sorted(caught.difference(declared))


def generated_scenarios(profile: str, roles=None) -> list[Scenario]:
    """The generated scenarios that caught a mutant, to run beside the catalogue."""
    return [Scenario(id=d["id"], role=d["role"], profile=d["profile"], params=d["params"], events=d["events"],
                     title=d["title"], origin="generated")
            for d in _measured(profile)["generated"] if roles is None or d["role"] in roles]
