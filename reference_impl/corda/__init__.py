"""Corda P2P reference machines: deterministic, driven by spec/corda (one profile each).

- :mod:`.message`: the message and its deduplication ids (R-, N-, E-);
- :mod:`.broker`: a broker queue with at-least-once delivery and redelivery of what was not
  acknowledged;
- :mod:`.sender`: the sending node (flows, checkpoints, suspends generating N- ids, replay);
- :mod:`.bridge`: the bridge and the link it pushes over (ack after remote ack, rollback,
  oversize drop);
- :mod:`.receiver`: the receiving node (deduplicator, processed-ids table, checkpoints, acks);
- :mod:`.store`: the receiving node's database in SQLite (one transaction per commit);
- :mod:`.system`: the whole path, one step at a time, with a crash at every named crash point.
"""

from .bridge import Bridge, Link
from .broker import Delivery, Queue
from .message import Message, error_id, flow_id, random_id
from .receiver import Answer, ReceivingNode
from .sender import Flow, SendingNode
from .store import SqliteStore
from .system import StepRefused, System

__all__ = ["Answer", "Bridge", "Delivery", "Flow", "Link", "Message", "Queue", "ReceivingNode", "SendingNode",
           "SqliteStore", "StepRefused", "System", "error_id", "flow_id", "random_id"]
