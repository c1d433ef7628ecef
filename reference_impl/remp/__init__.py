"""REMP reference machines: deterministic state machines driven by the spec, and a simulator.

- :mod:`.lifetime`: the session rules (documents' N+2, the node's window);
- :mod:`.validator`: one validator's REMP engine; :mod:`.sender`: the node's paced receipt sending;
- :mod:`.fullnode`: the full node as REMP client; :mod:`.consumer`: the SDK-side outcome;
- :mod:`.simulator` with :mod:`.network`: a seeded shard; :mod:`.wire`: the receipts' JSON form;
  :mod:`.dump`: JSON Lines and Kafka dump writers; :mod:`.outcome`: the outcome rules evaluated.
"""

from .consumer import Outcome, ReceiptConsumer, fold
from .dump import write_jsonl, write_kafka_dump
from .events import (BlockRef, BlockRefused, CatchainBroadcast, CatchainRecord, CollationRound, CollatorResult,
                     Forwarded, ForwardedDigests, HandToCollator, MasterchainCommit, MasterchainIgnore,
                     MessageFromFullNode, Publish, Receipt, ReceiptsFromValidator, SendToValidator, SessionSwitch,
                     ShardBlockAccepted, ShardBlockIgnored, ShardBlockRejected, Submit, Tick, UpcomingValidators)
from .fullnode import FullNode, FullNodeConfig
from .fullnode import step as fullnode_step
from .lifetime import DocumentsRule, SessionWindow, documents_obsolete, expiry_rule
from .network import NetworkConfig
from .outcome import evaluate_outcome
from .profile import Traits, traits
from .sender import Offer, ReceiptSender
from .simulator import SimConfig, Simulation, simulate, simulate_timed
from .validator import Validator, ValidatorConfig
from .validator import step as validator_step
from .wire import renderer

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
