"""The RMB v1 signature (spec/rmb/signature.yaml): the challenge, the MD5 digest, ed25519 and
sr25519 keys from a raw seed or a polkadot-style mnemonic, signing and verifying.

ed25519 is libsodium (pynacl); sr25519 is schnorrkel through py-sr25519-bindings (signing
context "substrate", fixed in the binding); the mnemonic's mini-secret is tiny-bip39's (through
py-bip39-bindings), which is how @polkadot/keyring derives it: PBKDF2 over the entropy bytes.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

import nacl.exceptions
import nacl.signing

from rmkit.protocols.rmb.model import rmb_spec
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


def _sig_bytes(sig_hex: str) -> bytes | None:
    """The bytes of a sig written as signature.yaml's sig_text says (lower-case hex digits, two
    per byte, nothing else), or None. ``bytes.fromhex`` alone would take spaces, a newline and
    upper case: text no v1 signer writes."""
    digits = _sig_spec()["sig_text"]["digits"]
    if len(sig_hex) % 2 or sig_hex.strip(digits):
        return None
    return bytes.fromhex(sig_hex)


def parse_sig(msg: dict[str, Any]) -> tuple[str, bytes]:
    """(key type, 64-byte signature) of ``msg``'s sig; :class:`BadSignature` (RMB-SIG-001) when it
    is missing or malformed. Needs no key: the log checker judges the form of every sig with it."""
    sig_hex = msg.get("sig")
    if not isinstance(sig_hex, str) or not sig_hex:
        raise BadSignature("RMB-SIG-001", "the message is not signed (sig empty or missing)")
    raw = _sig_bytes(sig_hex)
    if raw is None:
        raise BadSignature("RMB-SIG-001", "sig is not lower-case hex (two digits 0-9a-f per byte, nothing else)")
    spec = _sig_spec()
    if len(raw) != spec["signature_hex_bytes"]:
        raise BadSignature("RMB-SIG-001", f"sig is {len(raw)} bytes, expected {spec['signature_hex_bytes']} (prefix + 64)")
    by_prefix = {kt["prefix"].encode("ascii")[0]: name for name, kt in spec["key_types"].items()}
    used = by_prefix.get(raw[0])
    if used is None:
        raise BadSignature("RMB-SIG-001", f"unknown key type prefix {raw[:1]!r} (expected one of {sorted(chr(b) for b in by_prefix)})")
    return used, raw[1:]


# An sr25519 signature of the right form (zero scalars, schnorrkel's marker bit set): schnorrkel
# reads it without complaint, so that verifying it fails on the key alone when the key is no point.
_PROBE_SIGNATURE = bytes(63) + b"\x80"


@functools.lru_cache(maxsize=1024)
def public_key_problem(public: bytes, key_type: str) -> str | None:
    """Why ``public`` cannot be a ``key_type`` public key, or None. An sr25519 key must be the
    encoding of a Ristretto point; libsodium takes any 32 bytes as an ed25519 key (one that is
    no point verifies nothing), so only their number is judged."""
    if len(public) != 32:
        return f"expected 32 bytes, found {len(public)}"
    if key_type != SR25519:
        return None
    import sr25519

    try:
        sr25519.verify(_PROBE_SIGNATURE, b"", public)
    except ValueError as exc:
        return f"not an sr25519 public key ({exc})"
    return None


def verifies(data: bytes, signature: bytes, public: bytes, key_type: str) -> bool:
    """Whether ``signature`` (64 bytes) is ``key_type``'s signature of ``data`` under ``public``.
    A signature schnorrkel cannot even read (a scalar out of range, no marker bit) is simply not
    a valid one. A ``public`` that is no key (:func:`public_key_problem`) is a ValueError: no
    signature could verify under it, and saying so is the caller's."""
    if key_type == ED25519:
        try:
            nacl.signing.VerifyKey(public).verify(data, signature)
        except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
            return False
        return True
    problem = public_key_problem(public, key_type)
    if problem:
        raise ValueError(problem)
    import sr25519

    try:
        return bool(sr25519.verify(signature, data, public))
    except ValueError:
        return False


def signature_verdict(msg: dict[str, Any], public: bytes, key_type: str, whose: str) -> tuple[str | None, str, str | None]:
    """(rule, why, key type used) of ``msg``'s signature under ``public``, a ``key_type`` key
    (``whose``: how the reason names the key, "twin 5's"): rule None when it verifies; RMB-SIG-001
    malformed; RMB-SIG-002 wrong, signed with another key type, or a key that is no key; -003 / -004
    when it verifies over a known wrong challenge. Never raises: every value is a verdict. The one
    judgement of ``rmkit check`` and ``rmkit rmb verify``."""
    try:
        used, sig = parse_sig(msg)
    except BadSignature as bad:
        return bad.rule, bad.reason, None
    if used != key_type:
        return "RMB-SIG-002", f"signed with {used} but {whose} key is {key_type}", used
    problem = public_key_problem(public, key_type)
    if problem:
        return "RMB-SIG-002", f"{whose} key is no {key_type} public key, nothing verifies under it: {problem}", used
    try:
        if verifies(digest(msg), sig, public, used):
            return None, "", used
        if msg.get("pxy") is True and verifies(hashlib.md5(challenge({**msg, "pxy": False})).digest(), sig, public, used):
            return "RMB-SIG-003", "the signature verifies over a challenge ending with false, but pxy is true", used
        if verifies(hashlib.md5(challenge(msg)).hexdigest().encode("ascii"), sig, public, used):
            return "RMB-SIG-004", "the signature verifies over the digest's hex text, not its 16 raw bytes", used
    except (TypeError, ValueError, UnicodeError) as exc:
        return "RMB-SIG-002", f"the challenge cannot be built: {exc}", used
    return "RMB-SIG-002", f"the {used} signature does not verify under {whose} key", used


def verify(msg: dict[str, Any], public: bytes, key_type: str | None = None) -> str:
    """Return the key type the signature used; raise :class:`BadSignature` when it does not
    verify under ``public`` (and, when given, is not of ``key_type``). The daemons' check: one
    verification, no search for the wrong challenge a failure was made with
    (:func:`signature_verdict` names it)."""
    used, signature = parse_sig(msg)
    if key_type and used != key_type:
        raise BadSignature("RMB-SIG-002", f"signed with {used} but the key is {key_type}")
    problem = public_key_problem(public, used)
    if problem:
        raise BadSignature("RMB-SIG-002", f"the key is no {used} public key: {problem}")
    if not verifies(digest(msg), signature, public, used):
        raise BadSignature("RMB-SIG-002", f"{used} signature does not verify over the challenge's MD5")
    return used
