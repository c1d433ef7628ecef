"""A Corda P2P message as the deduplicator sees it, and the three deduplication id formats.

The formats come from spec/corda/messages.yaml; :func:`flow_id` is deterministic (seed, number of
suspends, index), which is what lets a replayed flow's messages be recognised as duplicates.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    dedup_id: str
    session_id: str
    session_init: bool
    payload: str                       # what the receiving flow acts on (the effect's identity)
    sender_uuid: str | None = None     # original sender only
    sequence_number: int | None = None
    size: int = 0                      # body size in bytes (oversize handling)
    peer: str | None = None            # the sending peer; None: the session id's prefix names it

    @property
    def sending_peer(self) -> str:
        return self.peer if self.peer is not None else self.session_id.split(":", 1)[0]

    @property
    def sender_key(self) -> tuple | None:
        """The fast path's key (sender UUID, peer, session-init); None without a sender UUID."""
        if self.sender_uuid is None:
            return None
        return (self.sender_uuid, self.sending_peer, self.session_init)


def flow_id(seed: str, suspends: int, index: int) -> str:
    return f"N-{seed}-{suspends}-{index}"


def random_id(rng: random.Random) -> str:
    return f"R-{rng.getrandbits(63) - (1 << 62)}"


def error_id(error: int, recipient_session: str) -> str:
    return f"E-{error}-{recipient_session}"
