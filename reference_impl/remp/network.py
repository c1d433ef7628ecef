"""The simulated network between the REMP machines: latencies, loss, duplication, reordering.

Why a module: what the network may do is part of the scenario, not of the machines. Three kinds of
links, each with the failure modes REMP is designed for:

- full node -> validator: a send may be lost or duplicated and arrives after a random latency
  (so copies reorder); the full node's resending covers the losses;
- the REMP catchain: a record reaches every member (the catchain guarantees delivery), after a
  random latency, possibly twice;
- validator -> full node (receipts): an ordered channel, as a query stream over a connection is;
  a lost packet is retransmitted (late, and head-of-line blocking the ones behind it), a
  retransmission may duplicate a batch. Receipts of one validator therefore never overtake each
  other; receipts of different validators interleave freely.

Faulty validators: ``delay`` adds latency to everything they send, ``duplicate`` sends everything
twice, ``drop`` is silent (receives and sends nothing). All randomness comes from the one seeded
``random.Random`` the simulator owns.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DROP, DELAY, DUPLICATE = "drop", "delay", "duplicate"
FAULT_KINDS = (DROP, DELAY, DUPLICATE)


@dataclass(frozen=True)
class NetworkConfig:
    """Latencies in ms as (low, high) ranges; probabilities per send."""

    fullnode_latency_ms: tuple = (10, 60)
    catchain_latency_ms: tuple = (30, 150)
    receipt_latency_ms: tuple = (10, 60)
    faulty_delay_ms: tuple = (300, 1500)
    retransmit_ms: int = 500
    p_loss: float = 0.01
    p_duplicate: float = 0.01


class Network:
    """Decides when (and how often) something sent at ``now`` arrives."""

    def __init__(self, config: NetworkConfig, rng: random.Random, faults: dict):
        self.c = config
        self.rng = rng
        self.faults = faults  # validator id -> fault kind
        self.channel_free: dict[str, int] = {}  # validator -> time its receipt channel is free
        self.lost = 0
        self.duplicated = 0

    def _lat(self, rng_range: tuple) -> int:
        lo, hi = rng_range
        return lo + int(self.rng.random() * (hi - lo))

    def _extra(self, sender: str) -> int:
        if self.faults.get(sender) == DELAY:
            return self._lat(self.c.faulty_delay_ms)
        return 0

    def _copies(self, sender: str) -> int:
        if self.faults.get(sender) == DUPLICATE:
            return 2
        if self.rng.random() < self.c.p_duplicate:
            self.duplicated += 1
            return 2
        return 1

    def silent(self, node: str) -> bool:
        return self.faults.get(node) == DROP

    def to_validator(self, now: int, validator: str) -> list:
        """Arrival times of one full node -> validator send ([] when lost or the receiver is silent)."""
        if self.faults.get(validator) == DROP:
            return []
        rng = self.rng
        if rng.random() < self.c.p_loss:
            self.lost += 1
            return []
        first = now + self._lat(self.c.fullnode_latency_ms)
        if rng.random() < self.c.p_duplicate:
            self.duplicated += 1
            return [first, first + self._lat(self.c.fullnode_latency_ms)]
        return [first]

    def catchain(self, now: int, sender: str) -> list:
        """Arrival times of one catchain record at its members (all members at once)."""
        first = now + self._lat(self.c.catchain_latency_ms) + self._extra(sender)
        if self._copies(sender) == 2:
            return [first, first + self._lat(self.c.catchain_latency_ms)]
        return [first]

    def receipts(self, now: int, sender: str) -> list:
        """Arrival times at the full node of a batch of receipts sent at ``now`` (ordered channel)."""
        t = now + self._lat(self.c.receipt_latency_ms) + self._extra(sender)
        if self.rng.random() < self.c.p_loss:
            self.lost += 1
            t += self.c.retransmit_ms
        free = self.channel_free.get(sender, 0)
        if t < free:
            t = free
        self.channel_free[sender] = t
        if self._copies(sender) == 2:
            return [t, t + self._lat(self.c.receipt_latency_ms)]
        return [t]
