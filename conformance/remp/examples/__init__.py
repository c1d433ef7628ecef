"""Example REMP implementations, each a small variant of the reference machines. The faulty ones
(``EXAMPLES``) break one promise of the documents: the kit's tests require that `rmkit conform`
finds every one of them, shrunk. The legal ones (``LEGAL``) choose differently from the reference
where the documents leave the choice (spec/remp/freedoms.yaml): they must pass.

Use in-process: ``rmkit conform --role validator --impl rmkit.conformance.remp.examples.no_replay_protection:factory``
or as a process: ``rmkit conform --role validator --impl-cmd "python -m rmkit.conformance.remp.examples no_replay_protection ROLE"``.
"""

EXAMPLES = {
    "no_replay_protection": ("validator", "accepts a shard block holding a message already in another accepted block (REMP-REPLAY-001)"),
    "no_forwarding": ("validator", "hands nothing over to the next session at a switch (000: forward messages at the session's end)"),
    "non_sticky_final": ("validator", "keeps reporting on a message after its own final status (REMP-SRC-001)"),
    "collates_rejected": ("validator", "collates messages that 2/3 of the validators rejected (000: not collated further)"),
    "low_fanout": ("fullnode", "sends each message to one validator fewer than floor(N/3)+1 (REMP-FANOUT-002)"),
    "early_reject": ("consumer", "tells the user 'rejected' at the first validator's reject (001: all validators must reject)"),
    "ignores_next_set": ("fullnode", "sends new messages only to the current set while a switch is announced (REMP-CLIENT-003)"),
    "forgets_at_switch": ("validator", "loses its replay memory at a session switch (REMP-VALID-001)"),
    "slow_resend": ("fullnode", "ever-node: resends every three retry intervals instead of every one (REMP-CLIENT-001)"),
    "newest_first": ("validator", "collates the newest messages first (REMP-COLL-001)"),
    "late_final_receipt": ("validator", "ever-node: paces receipts 10 s apart, past the pacing bound (REMP-SEND-001)"),
    "ignores_rejected_digests": ("validator", "collates a message a hand-over forwarded as finally rejected (REMP-COLL-002)"),
    "sends_rejected": ("fullnode", "sends a message it rejected at pre-evaluation to a validator (REMP-FN-001)"),
    "stamps_zero": ("validator", "stamps its receipts with timestamp 0 (REMP-TIME-001)"),
    "fullnode_stamps_zero": ("fullnode", "stamps the receipts it issues with timestamp 0 (REMP-TIME-001)"),
    "fanout_third_rounded_up": ("fullnode", "sends each message to ceil(N/3) validators: too few where N is a multiple of 3 (REMP-FANOUT-002)"),
    "more_than_two_thirds": ("validator", "stops collating only past 2/3 rejects: too late where N is a multiple of 3 (REMP-COLL-002)"),
}

# the profiles each faulty example must be found in (default: both)
FAULTY_PROFILES = {"low_fanout": ("spec",), "fanout_third_rounded_up": ("spec",), "slow_resend": ("ever-node",), "late_final_receipt": ("ever-node",),
                   "no_forwarding": ("spec", "ever-node"), "stamps_zero": ("spec",)}

# legal variants: name -> (role, profiles it must pass in, the freedom it uses)
LEGAL = {
    "random_fanout": ("fullnode", ("spec", "ever-node"), "another random floor(N/3)+1 of each set (REMP-FREE-001, -002)"),
    "fanout_all": ("fullnode", ("spec", "ever-node"), "every validator of each set (REMP-FREE-001)"),
    "paced_receipts": ("validator", ("ever-node",), "the node's paced, coalescing sender (REMP-FREE-006, -007)"),
    "skips_intermediate": ("validator", ("ever-node",), "final receipts only (REMP-FREE-006)"),
    "no_empty_handover": ("validator", ("spec", "ever-node"), "no Forwarded when there is nothing to hand over (REMP-FREE-004)"),
    "optimised_validator": ("validator", ("spec", "ever-node"),
                            "no hand-over of catchain-received messages, accepted first, no Duplicate (REMP-FREE-003, -005, -008)"),
    "final_only_consumer": ("consumer", ("spec", "ever-node"), "'pending' for every intermediate conclusion (REMP-CLIENT-002)"),
    "oldest_only": ("validator", ("spec", "ever-node"), "oldest first without holding back others' candidates (REMP-FREE-005)"),
    "total_current_set": ("fullnode", ("spec",), "total_validators of the current set during an announced switch"),
    "no_vote_records": ("validator", ("spec", "ever-node"), "no accept or reject record of its collator's verdicts (REMP-FREE-011)"),
    "remembers_short_sessions": ("validator", ("spec",), "a message kept past N+2 after short sessions, 001's exception (REMP-FREE-013)"),
    "processed_whole": ("validator", ("spec", "ever-node"), "processed messages handed over whole, the base protocol (REMP-FREE-014)"),
    "every_copy_broadcast": ("validator", ("spec", "ever-node"),
                             "every copy of a message into the catchain, 000's base protocol (REMP-FREE-010)"),
}


def profiles_of(name: str) -> tuple:
    """The profiles an example (faulty or legal) is judged in."""
    if name in LEGAL:
        return LEGAL[name][1]
    return FAULTY_PROFILES.get(name, ("spec", "ever-node"))


def role_of(name: str) -> str:
    return (LEGAL.get(name) or EXAMPLES[name])[0]
