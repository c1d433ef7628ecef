"""Ed25519 signing and verification of REMP receipts.

What is signed: the boxed TL ``tonNode.rempReceipt`` that the JSON receipt stands for
(:func:`rmkit.protocols.remp.tlreceipt.signed_bytes`), signed by the source's Ed25519 key; the
receipt's ``source_id`` is that key's id (:func:`~rmkit.protocols.remp.tlreceipt.pub_key_id`).
This is the client procedure of document 000 ("convert it into binary format and then check your
signature using a key you can get from the validator set").

Choices, documented in ``spec/remp/keys.md``:

- :func:`sign_receipt` sets ``source_id`` to the key's id when the receipt has none. A receipt
  that names another source is refused (:class:`SigningError`) unless ``replace_source=True``:
  the source id is part of the signed bytes, and signing in another node's name silently would
  hide a mix-up of keys.
- The signature is written as the profile's behaviour ``signature_encoding`` says: lowercase hex
  (128 digits) for ``spec``, base64 for ``ever-node``. :class:`Verifier` decodes either, so that
  it says whether the key signed the bytes; ``rmkit receipt verify`` then calls a signature in the
  other encoding ``malformed``, as ``rmkit check`` flags it (REMP-SIG-001).
- :func:`verify_receipt` answers one of ``valid``, ``invalid`` (the signature does not verify with
  the source's key), ``unknown-source`` (no key for the source id, or the source is not in the
  validator set of the session in force at the receipt's time), ``unsigned`` (no signature) or
  ``malformed`` (the signature or the receipt's fields cannot be decoded), with the reason.

Speed: one C call per receipt (libsodium's ``crypto_sign_open``) with the public keys decoded
once per source; the Python around it is kept to a dictionary lookup and the TL serialization.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from binascii import a2b_base64 as _a2b, b2a_base64 as _b2a
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from nacl.bindings import crypto_sign, crypto_sign_open, crypto_sign_seed_keypair
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey

from rmkit.protocols.remp.keys import FORMAT as VALSET_FORMAT, FULLNODE, VALIDATOR, ValidatorSet
from rmkit.protocols.remp.tlreceipt import ReceiptConversionError, decode_signature, pub_key_id, signed_bytes
from rmkit.errors import InputError
from rmkit.specload import check_user_document, read_user_document, yaml_line

VALID, INVALID, UNKNOWN_SOURCE, UNSIGNED, MALFORMED = "valid", "invalid", "unknown-source", "unsigned", "malformed"
STATUSES = (VALID, INVALID, UNKNOWN_SOURCE, UNSIGNED, MALFORMED)
KEY_FORMAT = "rmkit.ed25519-key/1"


class SigningError(ValueError):
    """A receipt cannot be signed as asked (its source id names another key, or its fields cannot
    be serialized). ``field`` names the receipt field at fault, when one is."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class VerifyResult(NamedTuple):
    status: str
    reason: str

    @property
    def ok(self) -> bool:
        return self.status == VALID


def key_id(public_key: bytes) -> str:
    """The source id (64 lowercase hex digits) of an Ed25519 public key."""
    return pub_key_id(bytes(public_key)).hex()


def signature_encoding(profile: str) -> str:
    """``hex`` or ``base64``: how the profile writes signatures (behaviours.yaml signature_encoding)."""
    from rmkit.protocols.remp.model import model_for

    return model_for(profile).behaviours["signature_encoding"]


def encode_signature(sig: bytes, encoding: str) -> str:
    return base64.b64encode(sig).decode() if encoding == "base64" else sig.hex()


def signature_bytes(receipt: dict) -> bytes | None:
    """:func:`~rmkit.protocols.remp.tlreceipt.decode_signature` with a fast path for the two
    well-formed cases (128 hex digits, 88 characters of canonical base64): the same answer, about
    four times faster; anything else goes to ``decode_signature`` for its exact error."""
    raw = receipt.get("signature")
    if type(raw) is str:
        n = len(raw)
        try:
            if n == 128:
                data = _fromhex(raw)
                if len(data) == 64:
                    return data
            elif n == 88 and raw[-2:] == "==":
                data = _a2b(raw, strict_mode=True)
                if len(data) == 64 and _b2a(data, newline=False).decode() == raw:
                    return data
        except (ValueError, binascii.Error):
            pass
    return decode_signature(receipt)


_fromhex = bytes.fromhex


# ---- signing ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrivateKey:
    """An Ed25519 key pair read from a key file (``spec/remp/keys.md``)."""

    seed: bytes
    name: str | None = None
    role: str | None = None

    @property
    def signing_key(self) -> SigningKey:
        return SigningKey(self.seed)

    @property
    def public_key(self) -> bytes:
        return crypto_sign_seed_keypair(self.seed)[0]

    @property
    def id(self) -> str:
        return key_id(self.public_key)

    def document(self) -> dict[str, Any]:
        doc = {"format": KEY_FORMAT}
        if self.name:
            doc["name"] = self.name
        if self.role:
            doc["role"] = self.role
        doc |= {"seed": self.seed.hex(), "public_key": self.public_key.hex(), "id": self.id}
        return doc


def load_private_key(path: str | Path) -> PrivateKey:
    """Read a key file; errors name the file, line and field."""
    path = str(path)
    data, node = read_user_document(path, "--key")
    if not isinstance(data, dict):
        raise InputError(f"--key {path}: expected a JSON object with format {KEY_FORMAT!r} and seed (64 hex digits), "
                         f"found {type(data).__name__}")
    check_user_document(data, "remp-key", node, path, "--key")
    key = PrivateKey(bytes.fromhex(data["seed"]), data.get("name"), data.get("role"))
    for fld, want in (("public_key", key.public_key.hex()), ("id", key.id)):
        if fld in data and data[fld].lower() != want:
            raise InputError(f"--key {path}:{yaml_line(node, [fld])}: {fld}: the seed gives {want}, the file says {data[fld]}")
    return key


def write_private_key(path: Path, key: PrivateKey) -> None:
    path.write_text(json.dumps(key.document(), indent=1) + "\n", encoding="utf-8")
    path.chmod(0o600)


def _as_seed(signing_key) -> bytes:
    if isinstance(signing_key, PrivateKey):
        return signing_key.seed
    if isinstance(signing_key, SigningKey):
        return bytes(signing_key)
    if isinstance(signing_key, (bytes, bytearray)) and len(signing_key) == 32:
        return bytes(signing_key)
    raise TypeError(f"expected a SigningKey, a PrivateKey or a 32-byte seed, found {type(signing_key).__name__}")


class Signer:
    """Signs receipts with one or more keys, chosen by the receipt's ``source_id`` (the simulator
    signs for every node it runs); the key pairs are expanded once."""

    def __init__(self, keys: Iterable, profile: str = "spec"):
        self._sk: dict[str, bytes] = {}
        for k in keys:
            pk, sk = crypto_sign_seed_keypair(_as_seed(k))
            self._sk[key_id(pk)] = sk
        self.encoding = signature_encoding(profile)

    def __contains__(self, source_id: str) -> bool:
        return source_id in self._sk

    def signature(self, receipt: dict) -> bytes:
        """The 64 signature bytes of the receipt by its source's key (``KeyError``: no such key)."""
        return crypto_sign(signed_bytes(receipt), self._sk[receipt["source_id"]])[:64]

    def sign_in_place(self, receipt: dict) -> dict:
        receipt["signature"] = encode_signature(self.signature(receipt), self.encoding)
        return receipt


def sign_receipt(receipt: dict, signing_key, profile: str = "spec", *, replace_source: bool = False) -> dict:
    """A copy of ``receipt`` with ``source_id`` the key's id and ``signature`` its signature, in the
    profile's encoding. Raises :class:`SigningError` when the receipt names another source (unless
    ``replace_source``) or its fields cannot be serialized."""
    pk, sk = crypto_sign_seed_keypair(_as_seed(signing_key))
    kid = key_id(pk)
    src = receipt.get("source_id")
    same = isinstance(src, str) and src.lower() == kid
    if src not in (None, "") and not same and not replace_source:
        raise SigningError(f"source_id: the receipt names source {src!r}, but the signing key's id is {kid}; "
                           "sign with that source's key (or replace the source id on purpose)", "source_id")
    if "source_id" in receipt and "signature" in receipt:
        out = dict(receipt)
    else:  # add the missing fields where the documents' receipts have them: after the timestamp
        out = {}
        for k, v in receipt.items():
            if k not in ("source_id", "signature"):
                out[k] = v
                if k == "timestamp":
                    out["source_id"] = out["signature"] = None
        out.setdefault("source_id", None)
        out.setdefault("signature", None)
    out["source_id"] = src if same else kid
    out["signature"] = ""
    try:
        data = signed_bytes(out)
    except ValueError as exc:  # ReceiptConversionError, or the TL codec's TlError
        raise SigningError(str(exc), getattr(exc, "field", None) or getattr(exc, "path", None)) from None
    out["signature"] = encode_signature(crypto_sign(data, sk)[:64], signature_encoding(profile))
    return out


# ---- verification -------------------------------------------------------------------------------
class Verifier:
    """Verifies receipts against one validator set, one after another: the public keys are looked
    up by source id in a dictionary built once (the raw 32 bytes libsodium takes, so no key object
    is made per receipt), and each verification is one call into libsodium."""

    def __init__(self, valset: ValidatorSet):
        if not valset.has_keys:
            raise ValueError(f"{valset.path}: the validator set lists source ids only, no public keys: "
                             "signatures cannot be verified")
        self.valset = valset
        self.keys = valset.keys
        self.counts = dict.fromkeys(STATUSES, 0)

    def source_problem(self, src: str, at_ms: int | None = None) -> str | None:
        """Why ``src`` may not issue a receipt at ``at_ms`` (None: it may)."""
        vs = self.valset
        if src not in self.keys:
            return f"source_id {src} is not the key id of any validator or full node of {vs.path}"
        if at_ms is None or not vs.timed:
            return None
        idx = vs.session_index_at(at_ms)
        if src in vs.members(idx):
            return None
        where = vs.session_of(src)
        return (f"source {src} is a validator of session(s) {', '.join(map(str, where))}, not a member at time {at_ms}: "
                f"{vs.describe_window(idx)}")

    def verify(self, receipt: dict, at_ms: int | None = None) -> VerifyResult:
        res = self._verify(receipt, at_ms)
        self.counts[res.status] += 1
        return res

    def _verify(self, receipt: dict, at_ms: int | None) -> VerifyResult:
        src = receipt.get("source_id")
        if not isinstance(src, str) or len(src) != 64:
            return VerifyResult(MALFORMED, f"source_id: expected 64 hex digits, found {src!r}")
        src = src.lower()
        pk = self.keys.get(src)
        if pk is None:
            return VerifyResult(UNKNOWN_SOURCE, self.source_problem(src))
        try:
            sig = signature_bytes(receipt)
        except ReceiptConversionError as exc:
            return VerifyResult(MALFORMED, str(exc))
        if sig is None:
            return VerifyResult(UNSIGNED, f"no signature (source {src})")
        try:
            data = signed_bytes(receipt)
        except ValueError as exc:  # ReceiptConversionError, or the TL codec's TlError
            return VerifyResult(MALFORMED, str(exc))
        try:
            crypto_sign_open(sig + data, pk)
        except BadSignatureError:
            return VerifyResult(INVALID, f"the signature does not verify with the key of source {src}: the receipt was "
                                         "changed after signing, or another key signed it")
        problem = self.source_problem(src, at_ms)
        if problem is not None:
            return VerifyResult(UNKNOWN_SOURCE, problem)
        return VerifyResult(VALID, "")


def verify_receipt(receipt: dict, valset: ValidatorSet, at_ms: int | None = None) -> VerifyResult:
    """Verify one receipt against a validator set (see the module's doc for the statuses). With
    ``at_ms`` and a validator set whose sessions have start times, the source must also be in the
    validator set of the session in force then (or the previous or next one)."""
    return Verifier(valset)._verify(receipt, at_ms)


# ---- key sets -----------------------------------------------------------------------------------
def derive_seed(seed: str, *parts) -> bytes:
    """A deterministic 32-byte Ed25519 seed from a user seed and a label (test keys only)."""
    return hashlib.sha256("|".join(["rmkit test key", str(seed), *map(str, parts)]).encode()).digest()


@dataclass
class KeySet:
    """A validator set with the private keys of its nodes (what ``rmkit keys gen`` writes)."""

    validator_set: ValidatorSet
    private: dict[str, PrivateKey]  # key id -> key

    @property
    def full_node_ids(self) -> list[str]:
        return [k for k, p in self.private.items() if k in self.validator_set.full_nodes]


def generate_key_set(out_dir: str | Path, validators: int, sessions: int = 1, seed: str | None = None,
                     rotate: int | None = None, full_nodes: int = 1) -> Path:
    """Write ``validators.yaml`` and ``keys/*.json`` under ``out_dir``: ``sessions`` sessions of
    ``validators`` validators each, drawn from a pool that rotates ``rotate`` validators per
    session (default max(1, N // 3), as the simulator does). Deterministic with ``seed``."""
    import os

    if validators < 1 or sessions < 1 or full_nodes < 0:
        raise ValueError("validators and sessions must be >= 1, full_nodes >= 0")
    rot = rotate if rotate is not None else max(1, validators // 3)
    pool_size = validators + (rot if sessions > 1 else 0)

    def make(*label) -> bytes:
        return derive_seed(seed, *label) if seed is not None else os.urandom(32)

    width = len(str(pool_size))
    pool = [PrivateKey(make("validator", i), f"validator-{i + 1:0{width}d}", VALIDATOR) for i in range(pool_size)]
    fns = [PrivateKey(make("fullnode", i), "fullnode" if full_nodes == 1 else f"fullnode-{i + 1}", FULLNODE) for i in range(full_nodes)]
    out = Path(out_dir)
    (out / "keys").mkdir(parents=True, exist_ok=True)
    for k in pool + fns:
        write_private_key(out / "keys" / f"{k.name}.json", k)
    lines = ["# REMP validator set written by `rmkit keys gen` (format: spec/remp/keys.md).",
             "# Private keys are in keys/, one file per node; test keys only.",
             f"format: {VALSET_FORMAT}"]

    def entry(k: PrivateKey) -> str:
        return f"{{name: {k.name}, public_key: {k.public_key.hex()}, id: {k.id}}}"

    lines.append("full_nodes:" + ("" if fns else " []"))
    lines += [f"  - {entry(k)}" for k in fns]
    lines.append("sessions:")
    for s in range(sessions):
        lines.append(f"  - seqno: {s + 1}")
        lines.append("    validators:")
        lines += [f"      - {entry(pool[(i + s * rot) % pool_size])}" for i in range(validators)]
    (out / "validators.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out / "validators.yaml"


def load_key_set(key_dir: str | Path) -> KeySet:
    """Read ``DIR/validators.yaml`` and every ``DIR/keys/*.json``; each node of the validator set
    must have its private key there."""
    from rmkit.protocols.remp.keys import load_validator_set

    d = Path(key_dir)
    vpath = d / "validators.yaml"
    if not vpath.is_file():
        raise InputError(f"--keys {d}: expected {vpath} (written by `rmkit keys gen`)")
    vs = load_validator_set(str(vpath))
    if not vs.has_keys:
        raise InputError(f"--keys {d}: {vpath} lists source ids only; a key set needs public keys")
    private: dict[str, PrivateKey] = {}
    for p in sorted((d / "keys").glob("*.json")):
        k = load_private_key(p)
        private[k.id] = k
    missing = [vs.names.get(k, k) for k in vs.keys if k not in private]
    if missing:
        raise InputError(f"--keys {d}: no private key in {d / 'keys'} for {len(missing)} node(s) of {vpath}: "
                         f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    return KeySet(vs, private)
