"""REMP reference machines: deterministic state machines driven by the spec, and a simulator.

- :mod:`.lifetime`: the session rules (documents' N+2, the node's window);
- :mod:`.validator`: one validator's REMP engine; :mod:`.sender`: the node's paced receipt sending;
- :mod:`.fullnode`: the full node as REMP client; :mod:`.consumer`: the SDK-side outcome;
- :mod:`.simulator` with :mod:`.network`: a seeded shard; :mod:`.wire`: the receipts' JSON form;
  :mod:`.dump`: JSON Lines and Kafka dump writers; :mod:`.outcome`: the outcome rules evaluated.

Names are imported from their modules on first use (PEP 562): the log checker needs only
:mod:`.outcome`, and importing every machine and the simulator with it cost each run of
``rmkit check`` tens of milliseconds before it read a line.
"""

from __future__ import annotations

from rmkit.lazy import lazy_attributes

# exported name -> (module of this package, its name there)
_WHERE = {
    "Outcome": (".consumer", "Outcome"),
    "ReceiptConsumer": (".consumer", "ReceiptConsumer"),
    "fold": (".consumer", "fold"),
    "write_jsonl": (".dump", "write_jsonl"),
    "write_kafka_dump": (".dump", "write_kafka_dump"),
    "BlockRef": ("rmkit.protocols.remp.events", "BlockRef"),
    "BlockRefused": ("rmkit.protocols.remp.events", "BlockRefused"),
    "CatchainBroadcast": ("rmkit.protocols.remp.events", "CatchainBroadcast"),
    "CatchainRecord": ("rmkit.protocols.remp.events", "CatchainRecord"),
    "CollationRound": ("rmkit.protocols.remp.events", "CollationRound"),
    "CollatorResult": ("rmkit.protocols.remp.events", "CollatorResult"),
    "Forwarded": ("rmkit.protocols.remp.events", "Forwarded"),
    "ForwardedDigests": ("rmkit.protocols.remp.events", "ForwardedDigests"),
    "HandToCollator": ("rmkit.protocols.remp.events", "HandToCollator"),
    "MasterchainCommit": ("rmkit.protocols.remp.events", "MasterchainCommit"),
    "MasterchainIgnore": ("rmkit.protocols.remp.events", "MasterchainIgnore"),
    "MessageFromFullNode": ("rmkit.protocols.remp.events", "MessageFromFullNode"),
    "Publish": ("rmkit.protocols.remp.events", "Publish"),
    "Receipt": ("rmkit.protocols.remp.events", "Receipt"),
    "ReceiptsFromValidator": ("rmkit.protocols.remp.events", "ReceiptsFromValidator"),
    "SendToValidator": ("rmkit.protocols.remp.events", "SendToValidator"),
    "SessionSwitch": ("rmkit.protocols.remp.events", "SessionSwitch"),
    "ShardBlockAccepted": ("rmkit.protocols.remp.events", "ShardBlockAccepted"),
    "ShardBlockIgnored": ("rmkit.protocols.remp.events", "ShardBlockIgnored"),
    "ShardBlockRejected": ("rmkit.protocols.remp.events", "ShardBlockRejected"),
    "Submit": ("rmkit.protocols.remp.events", "Submit"),
    "Tick": ("rmkit.protocols.remp.events", "Tick"),
    "UpcomingValidators": ("rmkit.protocols.remp.events", "UpcomingValidators"),
    "FullNode": (".fullnode", "FullNode"),
    "FullNodeConfig": (".fullnode", "FullNodeConfig"),
    "fullnode_step": (".fullnode", "step"),
    "DocumentsRule": (".lifetime", "DocumentsRule"),
    "SessionWindow": (".lifetime", "SessionWindow"),
    "documents_obsolete": (".lifetime", "documents_obsolete"),
    "expiry_rule": (".lifetime", "expiry_rule"),
    "NetworkConfig": (".network", "NetworkConfig"),
    "evaluate_outcome": (".outcome", "evaluate_outcome"),
    "Traits": (".profile", "Traits"),
    "traits": (".profile", "traits"),
    "Offer": (".sender", "Offer"),
    "ReceiptSender": (".sender", "ReceiptSender"),
    "SimConfig": (".simulator", "SimConfig"),
    "Simulation": (".simulator", "Simulation"),
    "simulate": (".simulator", "simulate"),
    "simulate_timed": (".simulator", "simulate_timed"),
    "Validator": (".validator", "Validator"),
    "ValidatorConfig": (".validator", "ValidatorConfig"),
    "validator_step": (".validator", "step"),
    "renderer": (".wire", "renderer"),
}

__all__ = [
    "BlockRef", "BlockRefused", "CatchainBroadcast", "CatchainRecord", "CollationRound", "CollatorResult",
    "DocumentsRule", "Forwarded", "ForwardedDigests", "FullNode", "FullNodeConfig", "HandToCollator",
    "MasterchainCommit", "MasterchainIgnore", "MessageFromFullNode", "NetworkConfig", "Offer", "Outcome",
    "Publish", "Receipt", "ReceiptConsumer", "ReceiptSender", "ReceiptsFromValidator", "SendToValidator",
    "SessionSwitch", "SessionWindow", "ShardBlockAccepted", "ShardBlockIgnored", "ShardBlockRejected",
    "SimConfig", "Simulation", "Submit", "Tick", "Traits", "UpcomingValidators", "Validator", "ValidatorConfig",
    "documents_obsolete", "evaluate_outcome", "expiry_rule", "fold", "renderer", "simulate", "simulate_timed",
    "traits", "write_jsonl", "write_kafka_dump", "validator_step", "fullnode_step",
]


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
