"""Which scenarios can detect the breach of which Corda rule: measured by playing each scenario
against each rule's mutant of the reference (:mod:`.mutants`), in every profile that judges the
rule; a scenario covers a rule when it fails that mutant *by that rule* (the first strict violation
names it; where the rule is non-strict, a finding of it) while the reference shows no violation of
the rule in it, not when it fails for any reason.

The scenarios measured are the catalogue's (spec/corda/catalogue.yaml) and, for a mutant none of
those catches in some profile, one generated scenario that does: a derandomized Hypothesis search
(a fixed seed and a fixed number of examples, shrunk) for steps whose outcome names the rule. The
generated ones are kept here with their steps, and ``rmkit conform`` plays them after the
catalogue, before it generates its own, so that their verdict is evidence too.

Why measured once and kept (``coverage.json``, read by :mod:`.coverage`), as RMB's: the per-rule table of
every run reads it, and a change of the suite, the judges or the mutants that changes what catches
what is a change of that file to review. ``python -m rmkit.conformance.corda.driven.measure``
measures again and rewrites it; a test measures again and compares (every scenario is played in
process against the reference and each mutant: seconds). Bounded by counts, not by time: the
search's examples per mutant and profile (:data:`SEARCH_EXAMPLES`), the suite's bound on steps
(spec/corda/adapter.yaml ``max_steps``), Hypothesis's own limit on shrinks.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys

from .coverage import FILE, caught_by, not_covered

SEARCH_EXAMPLES = 400   # generated scenarios tried per mutant and profile before giving up
SEED = 0


def in_scope(role: str, profile: str) -> list[str]:
    """The rules ``role`` judges that ``profile`` does not switch off, in spec order."""
    from .report import judged_rules

    return [r.id for r in judged_rules(role, profile) if r.mode(profile) != "off"]


def catches(outcome, rule: str, profile: str) -> bool:
    """The outcome fails by ``rule``: its first strict violation names it, or, where the profile
    has the rule non-strict, it shows a finding of it. A breakdown of the implementation is no
    rule's evidence."""
    from rmkit.protocols.corda.model import corda_spec

    from .report import first_broken
    from .judge import Stopped

    if isinstance(outcome, Stopped):
        return False
    if corda_spec(profile).mode(rule) == "strict":
        first = first_broken(outcome.violations)
        return first is not None and first.rule == rule
    return any(v.rule == rule for v in outcome.violations)


class _Player:
    """Plays scenarios against one adapter class in one profile, as the suite does (a harnessed
    in-process implementation, so that a crash is a real restart on the scenario's database)."""

    def __init__(self, cls, role: str, profile: str):
        from .adapters import harnessed

        self.impl = harnessed(cls)(role)
        self.role, self.profile = role, profile

    def play(self, steps):
        from .bridge import run_bridge
        from .suite import play_once, run

        return play_once(run_bridge if self.role == "bridge" else run, self.impl, self.profile, list(steps))

    def close(self):
        from .suite import close

        close(self.impl)


def _clean_on_reference(outcome, rule: str) -> bool:
    from .judge import failed

    return not failed(outcome) and not any(v.rule == rule for v in outcome.violations)


def _search(rule: str, role: str, profile: str, mutant, reference) -> list | None:
    """Steps whose outcome on ``mutant`` names ``rule`` while the reference passes them without a
    violation of it, shrunk; None when :data:`SEARCH_EXAMPLES` scenarios show none."""
    from hypothesis import HealthCheck, Phase, find, settings, strategies as st
    from hypothesis.errors import NoSuchExample

    from .bridge import actions as bridge_actions
    from .contract import number
    from .suite import scenarios

    # what the suite's own search draws: for the receiver a topology (several peers, sessions,
    # senders) as the first step, then the steps
    drawn = st.lists(bridge_actions(), max_size=number("bridge", "max_steps")) if role == "bridge" else scenarios()

    def wanted(acts) -> bool:
        return catches(mutant.play(acts), rule, profile) and _clean_on_reference(reference.play(acts), rule)

    try:
        found = find(drawn, wanted,
                     settings=settings(max_examples=SEARCH_EXAMPLES, database=None, deadline=None,
                                       phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck)),
                     random=random.Random(SEED))
    except NoSuchExample:
        return None
    return [list(a) for a in found]


def _name(role: str, steps: list) -> str:
    return f"generated-{role}-{hashlib.sha256(json.dumps(steps).encode()).hexdigest()[:8]}"


def _catalogue(profile: str) -> dict[str, dict]:
    """The catalogue's scenarios that run in ``profile`` (spec/corda/catalogue.yaml), by id."""
    from .catalogue import catalogue

    return {sc.id: {"role": role, "title": sc.title, "steps": [list(a) for a in sc.steps]}
            for role in ("receiver", "bridge") for sc in catalogue(role, profile)}


def _catching(rule: str, role: str, profile: str, cls, pool: dict[str, dict]) -> list[str]:
    """The scenarios of ``pool`` (of ``role``) that catch ``cls`` by ``rule`` and that the reference
    passes without a violation of it."""
    from . import mutants

    mutant, reference = _Player(cls, role, profile), _Player(mutants.reference(role), role, profile)
    try:
        return sorted(name for name, sc in pool.items() if sc["role"] == role
                      and catches(mutant.play(sc["steps"]), rule, profile)
                      and _clean_on_reference(reference.play(sc["steps"]), rule))
    finally:
        mutant.close()
        reference.close()


def measure(say=print) -> dict:
    """Measure again: for every (rule, role) mutant and every profile that judges the rule, the
    catalogue's and the kept generated scenarios that catch it, after a search for one wherever
    none does. Returns the coverage as :func:`load` gives it."""
    from rmkit.protocols.corda.model import profiles

    from . import mutants

    kept: dict[str, dict] = {}   # generated scenarios kept, by name
    for profile in profiles():
        for (rule, role), m in mutants.MUTANTS.items():
            if rule not in in_scope(role, profile) or _catching(rule, role, profile, m.cls, {**_catalogue(profile), **kept}):
                continue
            mutant, reference = _Player(m.cls, role, profile), _Player(mutants.reference(role), role, profile)
            try:
                steps = _search(rule, role, profile, mutant, reference)
            finally:
                mutant.close()
                reference.close()
            if steps is not None:
                kept[_name(role, steps)] = {"role": role, "steps": steps, "title": f"generated ({len(steps)} steps); "
                                            f"caught the mutant {m.name} breaking {rule} in {profile}"}
    # a scenario kept for one mutant may catch others, in other profiles too: the whole matrix
    rules: dict[str, dict] = {}
    for profile in profiles():
        pool = {**_catalogue(profile), **kept}
        for (rule, role), m in mutants.MUTANTS.items():
            if rule not in in_scope(role, profile):
                continue
            found = _catching(rule, role, profile, m.cls, pool)
            rules.setdefault(rule, {}).setdefault(role, {"mutant": m.name, "caught_by": {}})["caught_by"][profile] = found
            say(f"{profile:<20} {rule:<17} {role:<9} {m.name:<26} caught by {len(found)}")
    return {"scenarios": dict(sorted(kept.items())), "rules": {r: dict(sorted(v.items())) for r, v in sorted(rules.items())}}


def write(cov: dict) -> None:
    FILE.write_text(json.dumps({"about": "scenarios that fail each rule's mutant by that rule, per role and profile, and "
                                         "the generated scenarios kept for that; python -m "
                                         "rmkit.conformance.corda.driven.measure measures again",
                                **cov}, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def uncovered(cov: dict) -> list[tuple[str, str, str]]:
    """(rule, role, profile) in the scope of a role that no scenario covers and the spec gives no
    reason for: what must not be."""
    from rmkit.protocols.corda.model import profiles

    out = []
    for profile in profiles():
        for role in ("receiver", "bridge"):
            for rule in in_scope(role, profile):
                if not caught_by(rule, role, profile, cov) and not_covered(rule, profile) is None:
                    out.append((rule, role, profile))
    return out


def main(argv: list[str] | None = None) -> int:
    cov = measure()
    write(cov)
    missing = uncovered(cov)
    print(f"written {FILE.name}: {len(cov['rules'])} rules, {len(cov['scenarios'])} generated scenarios kept; "
          f"{len(missing)} (rule, role, profile) neither covered nor given a reason {missing}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
