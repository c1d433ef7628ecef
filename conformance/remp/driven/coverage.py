"""Which scenarios can detect the breach of which rule: measured by running each catalogue
scenario against each rule's mutant (:mod:`.mutants`); a scenario covers a rule when it fails on
that rule's mutant.

Computed once per spec and code (the key hashes the REMP spec files and the source of the core,
the checker, the judge, the mutants and the reference machines), kept in memory and, where the folder is writable, on disk.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from pathlib import Path

import orjson

from rmkit.conformance.remp.driven import mutants
from rmkit.conformance.remp.driven.catalogue import catalogue
from rmkit.specload import spec_root

CACHE_DIR = Path(".rmkit") / "coverage"


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


def key(profile: str) -> str:
    """A coverage result holds only as long as everything a scenario's verdict rests on is
    unchanged: the REMP spec, the mutants, and the code that runs and judges scenarios (the
    checker, the judge, the reference machines, the core). So the key hashes all of them."""
    import rmkit
    import rmkit.conformance.remp as remp_pkg
    import rmkit.reference_impl.remp as ref_pkg

    h = hashlib.sha256(profile.encode())
    files = sorted((spec_root() / "remp").glob("*.yaml"))
    for pkg in (rmkit, remp_pkg, ref_pkg):
        files += sorted(Path(pkg.__file__).parent.rglob("*.py"))
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def coverage(profile: str) -> dict:
    """rule -> sorted ids of the catalogue scenarios that catch its mutant (``[]``: none does);
    rules without a mutant in this profile are absent."""
    k = key(profile)
    path = CACHE_DIR / f"{k}-{profile}.json"
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        pass
    from rmkit.conformance.remp.driven.runner import FAIL, run_scenario  # runner imports the judge, not us

    out: dict = {}
    for rule in mutants.rules_with_mutants():
        m = mutants.mutant_for(rule, profile)
        if m is None:
            continue
        role, cls = m
        out[rule] = sorted(sc.id for sc in catalogue(profile, [role]) if run_scenario(sc, _Impl(cls, role)).verdict == FAIL)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(out, option=orjson.OPT_SORT_KEYS))
    except OSError:
        pass  # a read-only folder: computed again next time
    return out
