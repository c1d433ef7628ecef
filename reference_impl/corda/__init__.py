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

On a real broker and database (processes):

- :mod:`.activemq`: an ActiveMQ Classic broker started, killed and restarted by the PID of its JVM;
- :mod:`.stomp_link`: one STOMP 1.2 connection (heart-beats, individual acks, receipts);
- :mod:`.node`: the reference node process (sending and receiving flows, SQLite, faulty variants);
- :mod:`.bridge_node`: the bridge process (local ack after the peer broker's receipt);
- :mod:`.crashpoints`: the crash-point hooks of those processes;
- :mod:`.records`: the node's event records and processed-id export;
- :mod:`.cluster`: brokers, bridges and nodes on loopback (``rmkit corda up``, the harness).
"""

from rmkit.lazy import lazy_attributes

# Imported on first use, so that the node and bridge processes (``python -m ...corda.node``) start
# without loading the spec and the machines they do not run.
_EXPORTS = {"Bridge": "bridge", "Link": "bridge", "Delivery": "broker", "Queue": "broker", "Message": "message",
            "error_id": "message", "flow_id": "message", "random_id": "message", "Answer": "receiver",
            "ReceivingNode": "receiver", "Flow": "sender", "SendingNode": "sender", "SqliteStore": "store",
            "StepRefused": "system", "System": "system"}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, {name: (f".{module}", name) for name, module in _EXPORTS.items()})
