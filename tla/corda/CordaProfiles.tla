---------------------------- MODULE CordaProfiles ----------------------------
(* GENERATED from spec/corda by `make tla-tables` (rmkit.conformance.corda.tla_tables). *)
(* Do not edit: change the YAML and regenerate; a test fails when this is stale.        *)
Profiles == {"spec", "corda-os", "corda-os-2021", "corda-ent-fastpath"}

\* The deduplicator's answer -> what happens: process | ack_and_drop | discard (system.yaml dedup_answers)
NewConsequenceIn(p) ==
    CASE p = "spec" -> "process"
    [] p = "corda-os" -> "process"
    [] p = "corda-os-2021" -> "process"
    [] p = "corda-ent-fastpath" -> "process"
DuplicateConsequenceIn(p) ==
    CASE p = "spec" -> "ack_and_drop"
    [] p = "corda-os" -> "ack_and_drop"
    [] p = "corda-os-2021" -> "ack_and_drop"
    [] p = "corda-ent-fastpath" -> "ack_and_drop"
InFlightConsequenceIn(p) ==
    CASE p = "spec" -> "discard"
    [] p = "corda-os" -> "discard"
    [] p = "corda-os-2021" -> "ack_and_drop"
    [] p = "corda-ent-fastpath" -> "discard"
\* The enterprise sequence-number fast path (system.yaml profile_params.fast_path)
FastPathIn(p) ==
    CASE p = "spec" -> FALSE
    [] p = "corda-os" -> FALSE
    [] p = "corda-os-2021" -> FALSE
    [] p = "corda-ent-fastpath" -> TRUE
\* A session's next message waits for the remote acknowledgement of the one before it
InOrderBridgeIn(p) ==
    CASE p = "spec" -> TRUE
    [] p = "corda-os" -> FALSE
    [] p = "corda-os-2021" -> FALSE
    [] p = "corda-ent-fastpath" -> FALSE
=============================================================================
