"""The JSON form of a receipt, per profile, and the deterministic ids the simulator uses.

Why separate: the machines produce :class:`~rmkit.protocols.remp.events.Receipt` values; what a receipt looks like in
the log (field names, which per-kind fields it carries, hex or base64 signature, timestamp 0 for
relayed validator receipts) is a matter of the profile's wire format, decided here from the spec:
a kind's fields come from ``kinds.yaml`` (via the compiled model), zero timestamps from
``common_fields.timestamp.zero_allowed``, unsigned validator receipts from
``common_fields.signature.required``, the encoding from :mod:`.profile`.

Signatures: given a ``signer`` (:class:`rmkit.protocols.remp.signing.Signer`, holding the
nodes' private keys), each signed receipt carries the Ed25519 signature of its boxed TL form by its
source's key. Without one, deterministic stand-ins (BLAKE2b-512 of the receipt's identifying
fields keyed by the source): 64 bytes, in the profile's encoding, so that the format checks hold
but a signature check (``--validators``) would not.
"""

from __future__ import annotations

import base64
import hashlib

_blake2b = hashlib.blake2b
from typing import Callable

from rmkit.protocols.remp.model import FULLNODE, VALIDATOR

from rmkit.protocols.remp.events import Receipt
from .profile import Traits, traits


def hex_id(*parts) -> str:
    """A deterministic 32-byte id (64 lowercase hex digits) from the given parts."""
    return hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=32).hexdigest()


def fake_signature(receipt: Receipt, timestamp: int) -> bytes:
    """64 deterministic bytes standing for the source's signature of the receipt."""
    return _blake2b(f"{receipt.source_id}|{receipt.kind}|{receipt.msg_id}|{timestamp}".encode(), digest_size=64).digest()


def renderer(profile: str, profile_traits: Traits | None = None, signer=None) -> Callable[[Receipt, str], dict]:
    """A function ``render(receipt, role) -> dict`` giving the receipt's JSON object in the
    profile's form (``role``: the issuing role, ``"fullnode"`` or ``"validator"``), signed by
    ``signer`` when given (see the module's doc)."""
    t = profile_traits or traits(profile)
    m = t.model
    fields_of = {}
    for name, ki in m.kinds.items():
        names = {f.name for f in ki.fields}
        fields_of[name] = ("block_id" in names, "mc_block_id" in names, "error" in names, "sent_to" in names,
                           "mc_block_file_hash" in names)
    zero_roles = m.zero_time_roles
    validator_zero = VALIDATOR in zero_roles
    fullnode_zero = FULLNODE in zero_roles
    validator_signed = t.validator_signed
    b64 = t.signature_encoding == "base64"
    b64encode = base64.b64encode
    sign = fake_signature

    def render(r: Receipt, role: str) -> dict:
        if role == VALIDATOR:
            ts = 0 if validator_zero else r.time
            signed = validator_signed
        else:
            ts = 0 if fullnode_zero else r.time
            signed = True
        if signed and signer is None:
            raw = sign(r, ts)
            sig = b64encode(raw).decode() if b64 else raw.hex()
        else:
            sig = ""
        d = {"kind": r.kind, "message_id": r.msg_id, "timestamp": ts, "source_id": r.source_id, "signature": sig}
        has_block, has_mc, has_error, has_sent, has_mc_file = fields_of[r.kind]
        b = r.block
        if has_block and b is not None:
            d["block_id"] = b.root_hash
            d["block_file_hash"] = b.file_hash
            d["block_seqno"] = b.seqno
            d["shard"] = f"{b.shard:016x}"
            d["wc"] = b.wc
        mb = r.mc_block
        if has_mc and mb is not None and mb.seqno != 0:  # remp-as-built section 2: only when seqno != 0
            d["mc_block_id"] = mb.root_hash
            if has_mc_file:
                d["mc_block_file_hash"] = mb.file_hash
            d["mc_block_seqno"] = mb.seqno
        if has_error and r.error is not None:
            d["error"] = r.error
        if has_sent and r.sent_to is not None:
            d["sent_to"] = r.sent_to
            d["total_validators"] = r.total_validators
        if signed and signer is not None:
            raw = signer.signature(d)
            d["signature"] = b64encode(raw).decode() if b64 else raw.hex()
        return d

    return render
