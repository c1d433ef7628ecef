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
    "BlockRef": (".events", "BlockRef"),
    "BlockRefused": (".events", "BlockRefused"),
    "CatchainBroadcast": (".events", "CatchainBroadcast"),
    "CatchainRecord": (".events", "CatchainRecord"),
    "CollationRound": (".events", "CollationRound"),
    "CollatorResult": (".events", "CollatorResult"),
    "Forwarded": (".events", "Forwarded"),
    "ForwardedDigests": (".events", "ForwardedDigests"),
    "HandToCollator": (".events", "HandToCollator"),
    "MasterchainCommit": (".events", "MasterchainCommit"),
    "MasterchainIgnore": (".events", "MasterchainIgnore"),
    "MessageFromFullNode": (".events", "MessageFromFullNode"),
    "Publish": (".events", "Publish"),
    "Receipt": (".events", "Receipt"),
    "ReceiptsFromValidator": (".events", "ReceiptsFromValidator"),
    "SendToValidator": (".events", "SendToValidator"),
    "SessionSwitch": (".events", "SessionSwitch"),
    "ShardBlockAccepted": (".events", "ShardBlockAccepted"),
    "ShardBlockIgnored": (".events", "ShardBlockIgnored"),
    "ShardBlockRejected": (".events", "ShardBlockRejected"),
    "Submit": (".events", "Submit"),
    "Tick": (".events", "Tick"),
    "UpcomingValidators": (".events", "UpcomingValidators"),
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
