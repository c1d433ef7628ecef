"""The RMB v1 signature (spec/rmb/signature.yaml): the challenge, the MD5 digest, ed25519 and
sr25519 keys from a raw seed or a polkadot-style mnemonic, signing and verifying.

ed25519 is libsodium (pynacl); sr25519 is schnorrkel through py-sr25519-bindings (signing
context "substrate", fixed in the binding); the mnemonic's mini-secret is tiny-bip39's (through
py-bip39-bindings), which is how @polkadot/keyring derives it: PBKDF2 over the entropy bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import nacl.exceptions
import nacl.signing

from rmkit.conformance.rmb.model import rmb_spec
from rmkit.errors import UsageError

ED25519, SR25519 = "ed25519", "sr25519"


def _sig_spec() -> dict[str, Any]:
    return rmb_spec().signature


def key_types() -> dict[str, dict]:
    return _sig_spec()["key_types"]


def _piece(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "".join(_piece(name, v) for v in value)
    return str(value)


def challenge(msg: dict[str, Any]) -> bytes:
    """The signed text: the pieces of signature.yaml in order, no separator, UTF-8. The last piece
    is the message's own pxy (absent: false), as every public v1 signer writes it."""
    spec = _sig_spec()["challenge"]
    parts = [_piece(name, msg.get(name, False if name == "pxy" else "")) for name in spec["pieces"]]
    return spec["separator"].join(parts).encode(spec["encoding"])


def digest(msg: dict[str, Any]) -> bytes:
    """The 16 raw MD5 bytes that are signed (RMB-SIG-004: not the hex text)."""
    return hashlib.md5(challenge(msg)).digest()


@dataclass(frozen=True)
class KeyPair:
    key_type: str
    public: bytes
    _secret: Any  # ed25519: SigningKey; sr25519: the 64-byte schnorrkel secret

    def sign_digest(self, data: bytes) -> bytes:
        if self.key_type == ED25519:
            return self._secret.sign(data).signature
        import sr25519

        return bytes(sr25519.sign((self.public, self._secret), data))

    def sign(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``msg`` with ``sig`` set: hex(prefix + signature)."""
        prefix = key_types()[self.key_type]["prefix"].encode("ascii")
        out = dict(msg)
        out["sig"] = (prefix + self.sign_digest(digest(msg))).hex()
        return out


def seed_from_mnemonic(mnemonic: str) -> bytes:
    """The 32-byte seed @polkadot/keyring's addFromMnemonic uses: ``0x`` + 64 hex digits is the
    seed itself; words are a BIP39 mnemonic whose mini-secret (PBKDF2 over the entropy) is it."""
    text = " ".join(mnemonic.split())
    if text.startswith("0x"):
        return seed_from_hex(text)
    if "/" in text:
        raise UsageError("--mnemonic: derivation paths (//hard, /soft) are not supported; give the plain mnemonic")
    import bip39

    try:
        return bytes(bip39.bip39_to_mini_secret(text, ""))
    except ValueError as exc:
        raise UsageError(f"--mnemonic: not a valid BIP39 mnemonic ({exc})") from None


def _hex32(text: str, what: str) -> bytes:
    """32 bytes written as 64 hex digits (``0x`` optional); :class:`UsageError` naming ``what``."""
    raw = text[2:] if text.startswith("0x") else text
    try:
        value = bytes.fromhex(raw)
    except ValueError:
        raise UsageError(f"{what}: expected 64 hex digits, found {text!r}") from None
    if len(value) != 32:
        raise UsageError(f"{what}: expected 32 bytes (64 hex digits), found {len(value)} bytes")
    return value


def seed_from_hex(text: str) -> bytes:
    return _hex32(text, "seed")


def keypair(seed: bytes, key_type: str) -> KeyPair:
    if key_type == ED25519:
        sk = nacl.signing.SigningKey(seed)
        return KeyPair(ED25519, sk.verify_key.encode(), sk)
    if key_type == SR25519:
        import sr25519

        public, secret = sr25519.pair_from_seed(seed)
        return KeyPair(SR25519, bytes(public), bytes(secret))
    raise UsageError(f"key type: expected one of {', '.join(key_types())}, found {key_type!r}")


def public_key_from_hex(text: str) -> bytes:
    return _hex32(text, "public key")


class BadSignature(Exception):
    """Why a signature does not verify (RMB-SIG-001 malformed, RMB-SIG-002 wrong)."""

    def __init__(self, rule: str, reason: str):
        super().__init__(reason)
        self.rule, self.reason = rule, reason


def parse_sig(msg: dict[str, Any]) -> tuple[str, bytes]:
    """(key type, 64-byte signature) of ``msg``'s sig; :class:`BadSignature` (RMB-SIG-001) when it
    is missing or malformed. Needs no key: the log checker judges the form of every sig with it."""
    sig_hex = msg.get("sig")
    if not isinstance(sig_hex, str) or not sig_hex:
        raise BadSignature("RMB-SIG-001", "the message is not signed (sig empty or missing)")
    try:
        raw = bytes.fromhex(sig_hex)
    except ValueError:
        raise BadSignature("RMB-SIG-001", "sig is not hex") from None
    spec = _sig_spec()
    if len(raw) != spec["signature_hex_bytes"]:
        raise BadSignature("RMB-SIG-001", f"sig is {len(raw)} bytes, expected {spec['signature_hex_bytes']} (prefix + 64)")
    by_prefix = {kt["prefix"].encode("ascii")[0]: name for name, kt in spec["key_types"].items()}
    used = by_prefix.get(raw[0])
    if used is None:
        raise BadSignature("RMB-SIG-001", f"unknown key type prefix {raw[:1]!r} (expected one of {sorted(chr(b) for b in by_prefix)})")
    return used, raw[1:]


def verifies(data: bytes, signature: bytes, public: bytes, key_type: str) -> bool:
    """Whether ``signature`` (64 bytes) is ``key_type``'s signature of ``data`` under ``public``."""
    if key_type == ED25519:
        try:
            nacl.signing.VerifyKey(public).verify(data, signature)
        except (nacl.exceptions.BadSignatureError, ValueError):
            return False
        return True
    import sr25519

    return bool(sr25519.verify(signature, data, public))


def verify(msg: dict[str, Any], public: bytes, key_type: str | None = None) -> str:
    """Return the key type the signature used; raise :class:`BadSignature` when it does not
    verify under ``public`` (and, when given, is not of ``key_type``)."""
    used, signature = parse_sig(msg)
    if key_type and used != key_type:
        raise BadSignature("RMB-SIG-002", f"signed with {used} but the key is {key_type}")
    if not verifies(digest(msg), signature, public, used):
        raise BadSignature("RMB-SIG-002", f"{used} signature does not verify over the challenge's MD5")
    return used
