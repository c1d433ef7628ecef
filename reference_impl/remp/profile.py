"""What a profile makes the machines do, read from the compiled spec (``model_for(profile)``).

Why: the machines must not restate what ``spec/remp/*.yaml`` already says. Which kinds a profile's
sources emit, who issues Finalized, whether a validator may report a shard block after rejecting,
whether intermediate receipts may be skipped, whether validator receipts carry a time and a
signature: all of that is derived here from the kinds, transitions, rule modes and formats.

The few behaviours of the running node that the spec does not encode (it only *allows* them) are
listed in :data:`AS_BUILT`, each with the reference fact it comes from; a profile that is not listed
there behaves as the documents describe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rmkit.conformance.remp.model import FULLNODE, VALIDATOR, RempModel, model_for
from rmkit.rules import OFF

# Behaviours of the running node (remp-as-built) that the spec permits but does not prescribe.
AS_BUILT: dict[str, dict[str, Any]] = {
    "ever-node": {
        # section 5: "A catchain record that arrives from an older session enters as Ignored{Queue}"
        "older_session_entry": "IgnoredByQueue",
        # section 3: "leftover collator acceptances are silently downgraded to Ignored{Collator} and
        # re-queued, with no receipt" when another block is committed
        "silent_superseded": True,
        # section 3: duplicates by uid (hash of the body) arrive as RejectedByQueue "Duplicate uid ..."
        "uid_duplicates": True,
        # section 3: only the last pending receipt per (destination, message) is kept; sends are
        # spaced 0 / 1000 / 2000 / 5000 ms apart; idle entries are dropped after 30 s
        "send_spacing_ms": (0, 1000, 2000, 5000),
        "send_idle_ms": 30_000,
        # section 2: signatures are base64 in the node's JSON
        "signature_encoding": "base64",
        # section 3: "Any local error, including a resubmission of a message still in processing,
        # produces a RejectedByFullnode for it"
        "reject_resubmission": True,
    },
}
DOCUMENTS_BEHAVIOUR: dict[str, Any] = {
    "older_session_entry": "PutIntoQueue",
    "silent_superseded": False,
    "uid_duplicates": False,
    "send_spacing_ms": None,  # every receipt is sent as it is made
    "send_idle_ms": None,
    "signature_encoding": "hex",  # document 000: "signature": "..." // hex
    "reject_resubmission": False,  # 001: "You only need to send the message once": a copy is ignored
}


@dataclass(frozen=True)
class Traits:
    """The profile-dependent facts the machines use, each derived from the spec (or AS_BUILT)."""

    profile: str
    model: RempModel
    in_table: frozenset  # kinds the profile's sources emit at all
    validator_transitions: dict  # kind -> (to, allowed_from) for the validator role
    fullnode_transitions: dict  # kind -> (to, allowed_from) for the full node role
    validator_finalizes: bool  # validators issue Finalized (else the full node does, once)
    paced_sender: bool  # intermediate receipts may be skipped (REMP-SEQ-001 off)
    validator_zero_time: bool  # validator receipts are relayed with timestamp 0
    validator_signed: bool  # validator receipts carry a signature
    older_session_entry: str
    silent_superseded: bool
    uid_duplicates: bool
    send_spacing_ms: tuple | None
    send_idle_ms: int | None
    signature_encoding: str
    reject_resubmission: bool

    def emits(self, kind: str) -> bool:
        return kind in self.in_table


def traits_for(profile: str) -> Traits:
    m = model_for(profile)
    behaviour = AS_BUILT.get(profile, DOCUMENTS_BEHAVIOUR)
    vt = {k: ki.transitions[VALIDATOR] for k, ki in m.kinds.items() if VALIDATOR in ki.transitions}
    ft = {k: ki.transitions[FULLNODE] for k, ki in m.kinds.items() if FULLNODE in ki.transitions}
    return Traits(
        profile=profile,
        model=m,
        in_table=frozenset(k for k, ki in m.kinds.items() if ki.in_table),
        validator_transitions=vt,
        fullnode_transitions=ft,
        validator_finalizes=VALIDATOR in m.kinds["Finalized"].issuers,
        paced_sender=m.mode("REMP-SEQ-001") == OFF and behaviour["send_spacing_ms"] is not None,
        validator_zero_time=VALIDATOR in m.zero_time_roles,
        validator_signed=bool(m.signature_required),
        older_session_entry=behaviour["older_session_entry"],
        silent_superseded=behaviour["silent_superseded"],
        uid_duplicates=behaviour["uid_duplicates"],
        send_spacing_ms=behaviour["send_spacing_ms"],
        send_idle_ms=behaviour["send_idle_ms"],
        signature_encoding=behaviour["signature_encoding"],
        reject_resubmission=behaviour["reject_resubmission"],
    )


_CACHE: dict[str, Traits] = {}


def traits(profile: str) -> Traits:
    t = _CACHE.get(profile)
    if t is None:
        t = _CACHE[profile] = traits_for(profile)
    return t
