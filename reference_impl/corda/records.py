"""The node's records: its message events as JSON Lines, and the export of its processed-id table
(the format is spec/corda/records.yaml; ``rmkit check --protocol corda`` reads both).

Events are appended and flushed one line at a time, in the order the node does things, so a node
killed with SIGKILL leaves every event up to its last completed action (an event is written after
the action it records: a ``committed`` line follows the database commit, so a kill between the two
leaves a commit without its line, never a line without its commit)."""

from __future__ import annotations

import time
from pathlib import Path

import orjson

from .message import Message

EVENTS = ("received", "dedup", "committed", "acked", "discarded", "sent")
VERDICTS = ("NEW", "DUPLICATE", "IN_FLIGHT")  # as the documents spell the answers (spec/corda/records.yaml)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def sender_identity(m: Message) -> str:
    """Who sent a copy: the sending node (the session's peer), with its process's sender UUID when
    the copy carries one (an original send); a re-send during recovery carries none."""
    peer = m.session_id.split(":", 1)[0]
    return f"{peer}/{m.sender_uuid}" if m.sender_uuid is not None else peer


class EventLog:
    """One node's events file, opened for appending (a restarted node goes on in the same file)."""

    def __init__(self, path: str | Path, node: str):
        self.node = node
        self.f = open(path, "ab")

    def write(self, event: str, m: Message, *, verdict: str | None = None, tx: int | None = None,
              delivery: str | None = None) -> None:
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}; expected one of {EVENTS}")
        rec = {"t": now_ms(), "node": self.node, "event": event, "id": m.dedup_id, "sender": sender_identity(m),
               "seq": m.sequence_number, "session": m.session_id}
        if event == "dedup":
            if verdict not in VERDICTS:
                raise ValueError(f"unknown verdict {verdict!r}; expected one of {VERDICTS}")
            rec["verdict"] = verdict
        if event == "committed":
            rec["tx"] = int(tx)
        if event in ("received", "acked", "discarded"):
            rec["delivery"] = str(delivery)
        self.f.write(orjson.dumps(rec) + b"\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def processed_records(node: str, store) -> list[dict]:
    """The processed-id table as records: one per row, in commit order."""
    out = []
    for did, uuid, peer, seq, tx, inserted_at in store.processed_rows():
        out.append({"node": node, "id": did, "sender": f"{peer}/{uuid}" if uuid is not None else peer, "seq": seq,
                    "tx": tx, "t": int(inserted_at * 1000)})
    return out


def export_processed(stores: dict, path: str | Path) -> int:
    """Write ``processed.jsonl``: one object per row of each node's table (node name -> its store);
    returns the number of rows."""
    n = 0
    with open(path, "wb") as f:
        for node, store in stores.items():
            for r in processed_records(node, store):
                f.write(orjson.dumps(r) + b"\n")
                n += 1
    return n


def read_events(path: str | Path) -> list[dict]:
    """Every complete event of a file (a line cut short by a kill at the end is left out)."""
    out = []
    with open(path, "rb") as f:
        for line in f:
            if line.endswith(b"\n"):
                out.append(orjson.loads(line))
    return out
