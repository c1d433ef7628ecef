"""Which rules a driven run can judge: the roles the suite drives, and per profile the log rules
their receipts can break and the requirements that bind them. Read by the suite (what a report
lists), the mutants (why a rule is not covered) and the report alike."""

from __future__ import annotations

from rmkit.conformance.remp.driven.catalogue import conformance_spec, requirements
from rmkit.conformance.remp.driven.judge import binds
from rmkit.protocols.remp.adapterwire import adapter_spec
from rmkit.protocols.remp.model import model_for

ROLES = ("validator", "fullnode", "consumer")


def rules_in_scope(profile: str, roles) -> dict:
    """id -> title of the log rules the roles' receipts can break (active in the profile) and the
    requirements of the roles, in spec order."""
    m = model_for(profile)
    spec = adapter_spec()["roles"]
    wanted = {r for role in roles for r in spec[role]["rules"]}
    out = {r.id: r.title for r in m.rules if r.id in wanted and r.mode(profile) != "off"}
    for rid, req in requirements().items():
        if set(req["roles"]) & set(roles) and binds(rid, profile):
            out[rid] = req["title"]
    for sc in conformance_spec()["scenarios"]:  # rules a catalogue scenario names (e.g. consumer outcomes)
        if sc["role"] in roles:
            for rid in sc["checks"]:
                if rid not in out and rid in {r.id for r in m.rules} and m.rules[rid].mode(profile) != "off":
                    out[rid] = m.rules[rid].title
    return out
