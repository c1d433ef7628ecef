"""Read the ``--validators`` file: which source ids are validators and which are full nodes."""

from __future__ import annotations

import re

import yaml

from rmkit.errors import InputError

_ID = re.compile(r"^[0-9a-fA-F]{64}$")
_KEYS = {"validators": "validator", "full_nodes": "fullnode", "fullnodes": "fullnode"}


def load_roles(path: str) -> dict[str, str]:
    """``source_id -> role`` from a JSON or YAML mapping ``{validators: [...], full_nodes: [...]}``."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise InputError(f"--validators {path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise InputError(f"--validators {path}: not valid JSON or YAML: {exc}") from None
    if not isinstance(data, dict) or not any(k in data for k in _KEYS):
        raise InputError(f"--validators {path}: expected a mapping with 'validators' and/or 'full_nodes' lists of "
                         f"64-hex source ids, found {type(data).__name__}")
    roles: dict[str, str] = {}
    for key, role in _KEYS.items():
        items = data.get(key) or []
        if not isinstance(items, list):
            raise InputError(f"--validators {path}: field {key}: expected a list of source ids, found {type(items).__name__}")
        for i, sid in enumerate(items):
            if not isinstance(sid, str) or not _ID.match(sid):
                raise InputError(f"--validators {path}: {key}[{i}]: expected 64 hex digits, found {sid!r}")
            sid = sid.lower()
            if roles.get(sid, role) != role:
                raise InputError(f"--validators {path}: {sid} is listed both as a validator and as a full node")
            roles[sid] = role
    if not roles:
        raise InputError(f"--validators {path}: no source ids listed")
    return roles
