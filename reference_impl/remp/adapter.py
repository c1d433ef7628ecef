"""The reference machines behind the adapter protocol of driven conformance: the example for
implementers, and the kit's own oracle.

Run as a process, it speaks JSON Lines on stdin/stdout exactly as an implementation under test must
(``spec/remp/adapter.md``)::

    python -m rmkit.reference_impl.remp.adapter validator     # or fullnode, consumer
    rmkit conform --role validator --impl-cmd "python -m rmkit.reference_impl.remp.adapter ROLE"

In-process (``rmkit conform --impl rmkit.reference_impl.remp.adapter:factory``), ``factory(role)``
returns an object with ``hello(params) -> dict``, ``step(event) -> list`` and ``bye()``, taking and
giving the same JSON objects as the wire. An implementation in Python can copy this shape.
"""

from __future__ import annotations

import sys
import traceback

import orjson

from rmkit.protocols.remp import adapterwire as codec
from rmkit.reference_impl.remp.consumer import ReceiptConsumer
from rmkit.protocols.remp.events import ConsumeReceipt, ConsumerOutcome, Query
from rmkit.reference_impl.remp.fullnode import FullNode, FullNodeConfig
from rmkit.reference_impl.remp.validator import Validator, ValidatorConfig

ROLES = ("validator", "fullnode", "consumer")
NAME = "rmkit reference machines"


class _Consumer:
    """The receipt consumer behind the adapter vocabulary: each receipt or query gives the outcome."""

    def __init__(self, profile: str, params: dict):
        self.c = ReceiptConsumer(profile, horizon_ms=params.get("horizon_ms"),
                                 fullnode_ids=frozenset(params.get("fullnode_ids") or ()),
                                 set_size=len(params.get("validators") or ()) or None)

    def step(self, event) -> list:
        if isinstance(event, ConsumeReceipt):
            o = self.c.step(event.receipt, event.at)
        elif isinstance(event, Query):
            o = self.c.outcome(event.now)
        else:
            raise TypeError(f"a consumer does not take {type(event).__name__} events")
        return [ConsumerOutcome(o.name, o.final, o.lost)]


def make_machine(role: str, params: dict, machine=None, **config):
    """The reference machine of ``role`` configured by the hello's parameters. ``machine``: a
    subclass of the role's machine to build instead, ``config``: config fields to override (the
    faulty examples are built so: one change, everything else as the hello says)."""
    profile = params.get("profile", "spec")
    if role == "validator":
        conf = ValidatorConfig(**{"profile": profile, "lifetime_ms": params.get("lifetime_ms"),
                                  "report_duplicates": params.get("report_duplicates", True),
                                  "paced": params.get("paced", False), **config})
        return (machine or Validator)(params["own_id"], conf)
    if role == "fullnode":
        conf = FullNodeConfig(**{"profile": profile, "fanout": params.get("fanout"),
                                 "retry_interval_ms": params.get("retry_interval_ms", 2000),
                                 "forget_grace_ms": params.get("forget_grace_ms", 60_000),
                                 "lifetime_ms": params.get("lifetime_ms"), **config})
        return (machine or FullNode)(params["own_id"], conf)
    if role == "consumer":
        return (machine or _Consumer)(profile, params)
    raise ValueError(f"role: expected one of {', '.join(ROLES)}, found {role!r}")


class ReferenceAdapter:
    """One role's reference machine behind JSON events and outputs (the in-process interface)."""

    name = NAME

    def __init__(self, role: str):
        if role not in ROLES:
            raise ValueError(f"role: expected one of {', '.join(ROLES)}, found {role!r}")
        self.role = role
        self.machine = None

    def hello(self, params: dict) -> dict:
        self.machine = make_machine(self.role, params)
        return {"type": "ready", "implementation": self.name}

    def step(self, event: dict) -> list:
        value = codec.from_json(event, part="events")
        self.last_values = self.machine.step(value)  # kept for the kit's receipt log (no second decoding)
        return [codec.to_json(o) for o in self.last_values]

    def bye(self) -> None:
        self.machine = None


def factory(role: str) -> ReferenceAdapter:
    return ReferenceAdapter(role)


def _outputs(adapter, seq, event) -> tuple[dict, bool]:
    """The answer to one event, and whether it is an error."""
    try:
        return {"type": "outputs", "seq": seq, "outputs": adapter.step(event)}, False
    except Exception as exc:  # the kit reports it as this implementation's failure
        traceback.print_exc(file=sys.stderr)
        return {"type": "error", "seq": seq, "message": f"{type(exc).__name__}: {exc}"}, True


def serve(adapter, stdin=None, stdout=None) -> int:
    """The JSON Lines loop: hello, events, bye, repeated until stdin closes. Several events in one
    request (``"events"``) are answered one line each, in order, up to the first error."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    for line in stdin:
        if not line.strip():
            continue
        msg = orjson.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            params = dict(msg.get("params") or {}, profile=msg.get("profile", "spec"))
            reply = {**adapter.hello(params), "batch": True}
        elif kind == "event":
            reply, _ = _outputs(adapter, msg.get("seq"), msg.get("event"))
        elif kind == "events":  # each answer written as soon as it is made: a crash loses none before it
            for i, event in enumerate(msg.get("events") or ()):
                reply, failed = _outputs(adapter, msg["seq"] + i, event)
                stdout.write(orjson.dumps(reply) + b"\n")
                stdout.flush()
                if failed:
                    break
            continue
        elif kind == "bye":
            adapter.bye()
            reply = {"type": "bye"}
        else:
            reply = {"type": "error", "message": f"unknown request type {kind!r}"}
        stdout.write(orjson.dumps(reply) + b"\n")
        stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in ROLES:
        print(f"usage: python -m rmkit.reference_impl.remp.adapter {{{'|'.join(ROLES)}}}", file=sys.stderr)
        return 2
    return serve(ReferenceAdapter(argv[0]))


if __name__ == "__main__":
    sys.exit(main())
