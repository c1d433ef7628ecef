"""What a profile makes the machines do, read from the compiled spec (``model_for(profile)``).

Why: the machines must not restate what ``spec/remp/*.yaml`` already says. Which kinds a profile's
sources emit, who issues Finalized, whether a validator may report a shard block after rejecting,
whether intermediate receipts may be skipped, whether validator receipts carry a time and a
signature: all of that is derived here from the kinds, transitions, rule modes and formats.

Choices that the rules only allow (how a validator paces its receipts, how a duplicate is found...)
come from ``spec/remp/behaviours.yaml``, each with the reference fact it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmkit.protocols.remp.model import FULLNODE, VALIDATOR, RempModel, model_for
from rmkit.rules import OFF

@dataclass(frozen=True)
class Traits:
    """The profile-dependent facts the machines use, each derived from the spec."""

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
    behaviour = m.behaviours
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
        validator_signed=VALIDATOR not in m.unsigned_roles,
        older_session_entry=behaviour["older_session_entry"],
        silent_superseded=behaviour["silent_superseded"],
        uid_duplicates=behaviour["uid_duplicates"],
        send_spacing_ms=tuple(behaviour["send_spacing_ms"]) if behaviour["send_spacing_ms"] is not None else None,
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
