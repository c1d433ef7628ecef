"""Deliberately faulty REMP implementations: each a small variant of the reference machines that
breaks one promise of the documents. They show what `rmkit conform` reports, and the kit's tests
require that it finds every one of them (with the length of the shrunk scenario).

Use in-process: ``rmkit conform --role validator --impl rmkit.conformance.examples.no_replay_protection:factory``
or as a process: ``rmkit conform --role validator --impl-cmd "python -m rmkit.conformance.examples no_replay_protection ROLE"``.
"""

EXAMPLES = {
    "no_replay_protection": ("validator", "accepts a shard block holding a message already in another accepted block (REMP-REPLAY-001)"),
    "no_forwarding": ("validator", "hands nothing over to the next session at a switch (000: forward messages at the session's end)"),
    "non_sticky_final": ("validator", "keeps reporting on a message after its own final status (REMP-SRC-001)"),
    "collates_rejected": ("validator", "collates messages that 2/3 of the validators rejected (000: not collated further)"),
    "low_fanout": ("fullnode", "sends each message to one validator fewer than floor(N/3)+1 (REMP-FANOUT-002)"),
    "early_reject": ("consumer", "tells the user 'rejected' at the first validator's reject (001: all validators must reject)"),
}
