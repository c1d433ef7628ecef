"""Read the ``--validators`` file: who the sources are, their roles and, when given, their keys.

Two forms (documented in ``spec/remp/keys.md``, JSON Schema ``spec/schema/remp-validator-set.schema.json``):

- keyed: per master catchain session (``seqno``, optionally ``start_ms``) the validators' Ed25519
  public keys, and the full nodes' keys. Each key's id (a receipt's ``source_id``) is derived
  from the key (SHA-256 of the boxed TL ``pub.ed25519``); signatures can be verified and
  membership of a session's validator set checked;
- roles-only: ``{validators: [source ids], full_nodes: [source ids]}``; roles only, no keys.

JSON or YAML. Every error names the file, the line, the entry (session and index) and what was
expected and found.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import re
from dataclasses import dataclass, field

from rmkit.errors import InputError
from rmkit.specload import check_user_document, read_user_document, yaml_line

FULLNODE, VALIDATOR = "fullnode", "validator"
FORMAT = "rmkit.remp.validator-set/1"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_B64_32 = re.compile(r"[A-Za-z0-9+/]{43}=")
_LEGACY_KEYS = {"validators": VALIDATOR, "full_nodes": FULLNODE, "fullnodes": FULLNODE}
KEY_EXPECTED = "an Ed25519 public key: 32 bytes as 64 hex digits or 44 base64 characters"


def decode_public_key(text) -> bytes:
    """32 key bytes from 64 hex digits or 44 base64 characters; ValueError saying what was found."""
    if not isinstance(text, str):
        raise ValueError(f"expected {KEY_EXPECTED}, found {type(text).__name__} {text!r}")
    if _HEX64.fullmatch(text):
        return bytes.fromhex(text)
    if _B64_32.fullmatch(text):
        return base64.b64decode(text, validate=True)
    shown = text if len(text) <= 80 else text[:77] + "..."
    detail = f"{len(text)} characters"
    try:
        raw = base64.b64decode(text, validate=True)
        detail += f", base64 of {len(raw)} bytes"
    except (binascii.Error, ValueError):
        if re.fullmatch(r"[0-9a-fA-F]*", text) and len(text) % 2 == 0:
            detail += f", hex of {len(text) // 2} bytes"
    raise ValueError(f"expected {KEY_EXPECTED}, found {shown!r} ({detail})")


@dataclass(frozen=True)
class Session:
    seqno: int
    start_ms: int | None
    order: tuple[str, ...]  # the validators' key ids (lowercase hex), in file order

    @functools.cached_property
    def validators(self) -> frozenset[str]:
        return frozenset(self.order)


@dataclass
class ValidatorSet:
    """The sources a log may come from. ``keys`` is empty for the roles-only form."""

    path: str
    roles: dict[str, str]  # key id -> fullnode | validator
    keys: dict[str, bytes] = field(default_factory=dict)  # key id -> 32-byte Ed25519 public key
    names: dict[str, str] = field(default_factory=dict)  # key id -> the entry's name, when given
    sessions: list[Session] = field(default_factory=list)  # ordered by seqno
    full_nodes: frozenset[str] = frozenset()

    def __post_init__(self):
        self.starts = [s.start_ms for s in self.sessions]
        self.timed = bool(self.sessions) and all(t is not None for t in self.starts)
        all_validators = frozenset().union(*(s.validators for s in self.sessions)) if self.sessions else frozenset()
        self._anytime = all_validators | self.full_nodes
        self._windows: dict[int, frozenset[str]] = {}

    @property
    def has_keys(self) -> bool:
        return bool(self.keys)

    def session_index_at(self, t_ms: int | None) -> int | None:
        """Index into ``sessions`` of the session in force at ``t_ms`` (-1: before the first);
        None when the sessions carry no start times or the time is unknown."""
        if not self.timed or t_ms is None:
            return None
        return bisect.bisect_right(self.starts, t_ms) - 1

    def members(self, index: int | None) -> frozenset[str]:
        """Who may issue a receipt while session ``index`` is in force: the full nodes, and the
        validators of that session, the previous one (the REMP catchain also holds the previous
        set, which hands its queue over) and the next one (a full node sends to the next set
        during a switch). ``index`` None: every validator of every session."""
        if index is None:
            return self._anytime
        w = self._windows.get(index)
        if w is None:
            lo, hi = max(index - 1, 0), min(index + 1, len(self.sessions) - 1)
            w = self.full_nodes.union(*(self.sessions[i].validators for i in range(lo, hi + 1))) if index >= 0 else \
                self.full_nodes | self.sessions[0].validators
            self._windows[index] = w
        return w

    def describe_window(self, index: int | None) -> str:
        if index is None:
            return "any session of the validator set"
        if index < 0:
            return f"the first session of the validator set (seqno {self.sessions[0].seqno}, not started yet)"
        lo, hi = max(index - 1, 0), min(index + 1, len(self.sessions) - 1)
        seqnos = ", ".join(str(self.sessions[i].seqno) for i in range(lo, hi + 1))
        return f"session {self.sessions[index].seqno} (validators of sessions {seqnos})"

    def session_of(self, key_id: str) -> list[int]:
        return [s.seqno for s in self.sessions if key_id in s.validators]


def load_validator_set(path: str) -> ValidatorSet:
    """Load and check a validator-set file in either form (see the module's doc)."""
    data, node = read_user_document(path, "--validators")
    if not isinstance(data, dict):
        raise InputError(f"--validators {path}: expected a mapping with 'sessions' (validators' public keys per "
                         f"session) or 'validators'/'full_nodes' lists of source ids, found {type(data).__name__}")
    check_user_document(data, "remp-validator-set", node, path, "--validators")
    if "sessions" in data:
        return _keyed(path, data, node)
    return _roles_only(path, data, node)


def _roles_only(path: str, data: dict, node) -> ValidatorSet:
    roles: dict[str, str] = {}
    for key, role in _LEGACY_KEYS.items():
        for i, sid in enumerate(data.get(key) or []):
            sid = sid.lower()
            if roles.get(sid, role) != role:
                line = yaml_line(node, [key, i])
                raise InputError(f"--validators {path}:{line}: {sid} is listed both as a validator and as a full node")
            roles[sid] = role
    if not roles:
        raise InputError(f"--validators {path}: no source ids listed")
    return ValidatorSet(path, roles, full_nodes=frozenset(s for s, r in roles.items() if r == FULLNODE),
                        sessions=[Session(0, None, tuple(s for s, r in roles.items() if r == VALIDATOR))])


def _keyed(path: str, data: dict, node) -> ValidatorSet:
    from rmkit.protocols.remp.tlreceipt import pub_key_id

    keys: dict[str, bytes] = {}
    names: dict[str, str] = {}
    roles: dict[str, str] = {}
    where_seen: dict[str, str] = {}

    def entry(fpath: list, what: str, item, role: str) -> str:
        text, name, want_id = (item, None, None) if isinstance(item, str) else \
            (item["public_key"], item.get("name"), item.get("id"))
        line = yaml_line(node, fpath + ([] if isinstance(item, str) else ["public_key"]))
        try:
            pk = decode_public_key(text)
        except ValueError as exc:
            raise InputError(f"--validators {path}:{line}: {what}: {exc}") from None
        kid = pub_key_id(pk).hex()
        if want_id is not None and want_id.lower() != kid:
            raise InputError(f"--validators {path}:{yaml_line(node, fpath + ['id'])}: {what}: the key's id is {kid}, "
                             f"but the entry says id {want_id}")
        if roles.get(kid, role) != role:
            raise InputError(f"--validators {path}:{line}: {what}: the same key is listed as a {roles[kid]} at "
                             f"{where_seen[kid]}; a source plays one role")
        roles[kid] = role
        keys[kid] = pk
        where_seen.setdefault(kid, what)
        if name:
            names.setdefault(kid, name)
        return kid

    full_nodes = frozenset(entry(["full_nodes", i], f"full_nodes[{i}]", item, FULLNODE)
                           for i, item in enumerate(data.get("full_nodes") or []))
    sessions: list[Session] = []
    prev = None
    for si, s in enumerate(data["sessions"]):
        label = f"sessions[{si}] (seqno {s['seqno']})"
        if prev is not None:
            if s["seqno"] <= prev.seqno:
                raise InputError(f"--validators {path}:{yaml_line(node, ['sessions', si, 'seqno'])}: {label}: expected "
                                 f"sessions in increasing seqno order, found seqno {s['seqno']} after {prev.seqno}")
            if (s.get("start_ms") is None) != (prev.start_ms is None):
                raise InputError(f"--validators {path}:{yaml_line(node, ['sessions', si])}: {label}: give start_ms for "
                                 f"every session or for none (sessions[{si - 1}] {'has' if prev.start_ms is not None else 'has no'} start_ms)")
            if s.get("start_ms") is not None and s["start_ms"] < prev.start_ms:
                raise InputError(f"--validators {path}:{yaml_line(node, ['sessions', si, 'start_ms'])}: {label}: expected "
                                 f"start_ms >= {prev.start_ms} (the previous session's start), found {s['start_ms']}")
        ids = [entry(["sessions", si, "validators", vi], f"{label} validators[{vi}]", item, VALIDATOR)
               for vi, item in enumerate(s["validators"])]
        prev = Session(s["seqno"], s.get("start_ms"), tuple(ids))
        sessions.append(prev)
    return ValidatorSet(path, roles, keys, names, sessions, full_nodes)


def load_roles(path: str) -> dict[str, str]:
    """``source_id -> role`` from a validator-set file of either form."""
    return dict(load_validator_set(path).roles)

