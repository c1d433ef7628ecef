"""The steps of a Corda scenario, apart from playing them: the messages a topology sends
(:func:`universe`, :func:`message`), the actions each role takes, and the check of a saved or
named scenario's steps before any implementation is started (:func:`step_problem`). Below the
catalogue, the suite and the coverage measurement, which all read steps.
"""

from __future__ import annotations

import functools
import json

from rmkit.reference_impl.corda.message import Message, flow_id

from .contract import FIELDS, Topology, default_topology, peer_names, topology_range


@functools.lru_cache(maxsize=None)
def universe(t: Topology) -> tuple[tuple, ...]:
    """The original copies of a topology's messages, in send order: round k sends each session's
    k-th message, peer after peer. A peer's messages are sent by its sending processes in turn (the
    process of round k is ``(k - 1) * senders // messages``), each with its own sender UUID
    (``PEER-N``) and sequence numbers from 1. The ids are a flow's N- ids, one flow per session, so a
    session's send order shows in them too (judge.sent_before)."""
    out, counters = [], {}
    for k in range(1, t.messages + 1):
        for peer in peer_names()[:t.peers]:
            uuid = f"{peer}-{(k - 1) * t.senders // t.messages}"
            for j in range(1, t.sessions + 1):
                session = f"{peer}:s{j}"
                seed = f"f{'' if peer == 'A' else peer}s{j}"
                counters[uuid] = counters.get(uuid, 0) + 1
                out.append((flow_id(seed, k, 0), session, k == 1, f"{session}/m{k}", uuid, counters[uuid], peer))
    return tuple(out)


def message(i: int, recovery: bool, topology: Topology | None = None) -> Message:
    """Message ``i`` of the topology's universe: the original copy, or a re-send during recovery
    (without sender UUID and sequence number)."""
    dedup_id, session, init, payload, uuid, seq, peer = universe(topology or default_topology())[i]
    if recovery:
        uuid, seq = None, None
    return Message(dedup_id, session, init, payload, uuid, seq, peer=peer)


def topology_of(acts) -> Topology:
    """The topology a scenario's first step sets, else the default one."""
    if acts and acts[0][0] == "topology":
        return Topology(*acts[0][1:])
    return default_topology()


# the actions without an argument, repeated by weight; arrive takes MESSAGE, RECOVERY; topology
# (first step only) PEERS, SESSIONS, MESSAGES, SENDERS
_SIMPLE = ("deliver", "deliver", "tick", "crash", "broker_restart")
ACTIONS = ("topology", "arrive") + tuple(dict.fromkeys(_SIMPLE))


def step_problem(role: str, steps: list) -> tuple[str, str] | None:
    """(field, what is wrong) of the first step ``role`` cannot play, or None: an action the role
    does not take, a wrong number of arguments, a message number out of range. Saved scenarios and
    the catalogue's are checked alike, before any implementation is started."""
    from .bridge import ACTIONS as BRIDGE_ACTIONS

    known = ACTIONS if role == "receiver" else BRIDGE_ACTIONS
    n = len(universe(default_topology()))
    for i, step in enumerate(steps):
        if not isinstance(step, (list, tuple)) or not step:
            return f"steps[{i}]", f"expected a list [ACTION, ARGUMENTS...], found {step!r:.80}"
        name = step[0]
        if name not in known:
            return f"steps[{i}][0]", f"expected an action of the {role} role ({', '.join(known)}), found {name!r:.80}"
        if name == "topology":
            if i != 0:
                return f"steps[{i}]", "expected topology as the first step only"
            if len(step) != 1 + len(FIELDS):
                return f"steps[{i}]", f"expected [\"topology\", {', '.join(f.upper() for f in FIELDS)}], found {list(step)!r:.80}"
            for j, f in enumerate(FIELDS, 1):
                low, high = topology_range(f)
                if type(step[j]) is not int or not low <= step[j] <= high:
                    return f"steps[{i}][{j}]", f"expected {f} from {low} to {high}, found {step[j]!r:.80}"
            n = len(universe(Topology(*step[1:])))
        elif name == "arrive":
            if len(step) != 3:
                return f"steps[{i}]", f"expected [\"arrive\", MESSAGE, RECOVERY], found {list(step)!r:.80}"
            if type(step[1]) is not int or not 0 <= step[1] < n:
                return f"steps[{i}][1]", f"expected a message number 0 to {n - 1}, found {step[1]!r:.80}"
            if type(step[2]) is not bool:
                return f"steps[{i}][2]", (f"expected true (a recovery re-send) or false (the original copy), "
                                          f"found {step[2]!r:.80}")
        elif len(step) != 1:
            return f"steps[{i}]", f"expected [{json.dumps(name)}]: {name} takes no argument, found {list(step)!r:.80}"
    return None
