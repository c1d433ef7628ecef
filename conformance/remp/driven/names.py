"""The deterministic names scenarios use: message ids, blocks, the test configuration per role.

Why one place: the catalogue (``spec/remp/conformance.yaml``) writes messages as ``m1``, blocks as
``b1`` and master blocks as ``mc1``; the generators draw the same names, so a shrunk scenario
reads like a catalogue one.
"""

from __future__ import annotations

import functools
import hashlib
import re

from rmkit.protocols.remp.model import model_for

FULLNODE_ID = "fn"
OWN_VALIDATOR = "v1"
SHARD = 0xA000000000000000
TEST_LIFETIME_MS = 60_000
_MSG = re.compile(r"^m\d+$")
_BLOCK = re.compile(r"^(mc|b)(\d+)$")


@functools.lru_cache(maxsize=4096)
def msg_id(name: str) -> str:
    """``m3`` -> 64 hex digits (sha256 of the name); an id stays itself. (Cached: generators ask for
    the same few names at every step.)"""
    return hashlib.sha256(name.encode()).hexdigest() if _MSG.match(name) else name


def block(name_or_n, master: bool = False) -> dict:
    """``b2`` (or 2) -> the JSON block of shard block 2; ``mc2`` -> master block 2."""
    if isinstance(name_or_n, str):
        m = _BLOCK.match(name_or_n)
        if not m:
            raise ValueError(f"block name: expected bN or mcN, found {name_or_n!r}")
        master, n = m.group(1) == "mc", int(m.group(2))
    else:
        n = int(name_or_n)
    return dict(_block(n, master))  # a dict of its own: a caller may change it


@functools.lru_cache(maxsize=4096)
def _block(n: int, master: bool) -> dict:
    """(Cached: generators ask for the same few blocks at every step.)"""
    seqno = n + (10_000 if master else 0)
    root = hashlib.sha256(f"{'mc' if master else 'b'}{n}".encode()).hexdigest()
    return {"wc": -1 if master else 0, "shard": 0x8000000000000000 if master else SHARD, "seqno": seqno,
            "root_hash": root, "file_hash": hashlib.sha256(f"file:{root}".encode()).hexdigest()}


def validators(n: int) -> list:
    return [f"v{i}" for i in range(1, n + 1)]


def default_params(role: str, profile: str, n: int = 4) -> dict:
    """The hello parameters of a role: the test configuration the implementation must honour. The
    choices the documents leave free (fan-out, pacing, Duplicate receipts) are not among them: the
    judge accepts any legal one (spec/remp/freedoms.yaml)."""
    model = model_for(profile)
    vals = validators(n)
    p = {"validators": vals, "lifetime_ms": TEST_LIFETIME_MS}
    if role == "validator":
        p.update(own_id=OWN_VALIDATOR)
    elif role == "fullnode":
        p.update(own_id=FULLNODE_ID, retry_interval_ms=2000, forget_grace_ms=60_000)
    elif role == "consumer":
        p.update(own_id="consumer", horizon_ms=int(model.default_horizon_s(TEST_LIFETIME_MS / 1000) * 1000),
                 fullnode_ids=[FULLNODE_ID])
    return p
