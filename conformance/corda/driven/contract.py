"""The implementer's contract as the kit reads it: spec/corda/adapter.yaml (explained in
spec/corda/adapter.md). Every number the driven suite waits, drains and draws by comes from here,
so the document and the kit cannot disagree."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rmkit.specload import load_protocol_spec


@functools.lru_cache(maxsize=None)
def adapter() -> dict:
    return load_protocol_spec("corda")["adapter"]


def number(*path: str):
    """The value of the number at ``path`` (e.g. ``"receiver", "drain", "bound_ticks"``)."""
    node = adapter()
    for key in path:
        node = node[key]
    return node["value"]


@dataclass(frozen=True)
class Topology:
    """Who sends to the node under test in one scenario: ``peers`` peers, ``sessions`` sessions each,
    ``messages`` messages per session, sent by ``senders`` sending processes per peer in turn."""

    peers: int
    sessions: int
    messages: int
    senders: int

    def fields(self) -> tuple[int, int, int, int]:
        return self.peers, self.sessions, self.messages, self.senders


FIELDS = ("peers", "sessions", "messages", "senders")


def topology_range(name: str) -> tuple[int, int]:
    r = adapter()["receiver"]["topology"][name]
    return r["min"], r["max"]


def default_topology() -> Topology:
    return Topology(**adapter()["receiver"]["topology"]["default"])


def peer_names() -> list[str]:
    return list(adapter()["receiver"]["peers"])
