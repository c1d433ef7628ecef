"""Generate ``tla/corda/CordaProfiles.tla`` from spec/corda: what each profile chooses (the
deduplicator's consequences, the fast path, the in-order bridge), so the TLA+ model reads the
same facts as the reference machines (``make tla-tables``; a test fails when it is stale)."""

from __future__ import annotations

from rmkit.protocols.corda.model import corda_spec, profiles


def _case(name: str, values: dict[str, object]) -> str:
    def tla(v):
        return ("TRUE" if v else "FALSE") if isinstance(v, bool) else f'"{v}"'
    arms = "\n    [] ".join(f'p = "{p}" -> {tla(v)}' for p, v in values.items())
    return f"{name}(p) ==\n    CASE {arms}"


def render() -> str:
    specs = {p: corda_spec(p) for p in profiles()}
    parts = [
        "---------------------------- MODULE CordaProfiles ----------------------------",
        "(* GENERATED from spec/corda by `make tla-tables` (rmkit.conformance.corda.tla_tables). *)",
        "(* Do not edit: change the YAML and regenerate; a test fails when this is stale.        *)",
        "Profiles == {" + ", ".join(f'"{p}"' for p in specs) + "}",
        "",
        "\\* The deduplicator's answer -> what happens: process | ack_and_drop | discard (system.yaml dedup_answers)",
        _case("NewConsequenceIn", {p: s.consequence["NEW"] for p, s in specs.items()}),
        _case("DuplicateConsequenceIn", {p: s.consequence["DUPLICATE"] for p, s in specs.items()}),
        _case("InFlightConsequenceIn", {p: s.consequence["IN_FLIGHT"] for p, s in specs.items()}),
        "\\* The enterprise sequence-number fast path (system.yaml profile_params.fast_path)",
        _case("FastPathIn", {p: s.fast_path for p, s in specs.items()}),
        "\\* A session's next message waits for the remote acknowledgement of the one before it",
        _case("InOrderBridgeIn", {p: s.in_order_bridge for p, s in specs.items()}),
        "=============================================================================",
    ]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
