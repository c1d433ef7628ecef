"""The implementer's contract as the kit reads it: spec/corda/adapter.yaml (explained in
spec/corda/adapter.md). Every number the driven suite waits, drains and draws by comes from here,
so the document and the kit cannot disagree."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rmkit.errors import SpecError
from rmkit.specload import load_protocol_spec, spec_line


FIELDS = ("peers", "sessions", "messages", "senders")   # a topology's, in the order of the topology step


@functools.lru_cache(maxsize=None)
def adapter() -> dict:
    """adapter.yaml, its cross-references checked: every range of the topology holds its default,
    and there are names for as many peers as the range allows."""
    spec = load_protocol_spec("corda")
    doc = spec["adapter"]
    topology = doc["receiver"]["topology"]
    for name in FIELDS:
        r = topology[name]
        if not r["min"] <= topology["default"][name] <= r["max"]:
            shown, line = spec_line(spec, "adapter", ["receiver", "topology", "default", name])
            raise SpecError(shown, f"receiver.topology.default.{name}",
                            f"expected {r['min']} to {r['max']} (its range), found {topology['default'][name]}", line=line)
    if topology["peers"]["max"] > len(doc["receiver"]["peers"]):
        shown, line = spec_line(spec, "adapter", ["receiver", "peers"])
        raise SpecError(shown, "receiver.peers", f"expected a name for each of up to {topology['peers']['max']} peers "
                                                 f"(receiver.topology.peers.max), found {len(doc['receiver']['peers'])}", line=line)
    return doc


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


def topology_range(name: str) -> tuple[int, int]:
    r = adapter()["receiver"]["topology"][name]
    return r["min"], r["max"]


def default_topology() -> Topology:
    return Topology(**adapter()["receiver"]["topology"]["default"])


def peer_names() -> list[str]:
    return list(adapter()["receiver"]["peers"])
