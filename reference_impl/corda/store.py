"""The node's database, in SQLite: processed ids, checkpoints and the flows' effects, written in one
transaction per step (spec/corda/system.yaml ``suspend_actions``: checkpoint, deduplication facts,
commit). A node process that is killed and started again on the same file finds exactly what was
committed.

The processed-id table is not unique on the id: the deduplicator alone keeps an id from being
committed twice, so a faulty one shows as two rows (and two effects) instead of being masked by the
database.

Each transaction that commits gets the next number of a per-database counter (``tx``), stored with
the rows it wrote: the node's records name it, and the processed-id export carries it, so a commit
can be matched across the records and the table."""

from __future__ import annotations

import sqlite3
import time

from .message import Message

_SCHEMA = """
CREATE TABLE IF NOT EXISTS processed (dedup_id TEXT NOT NULL, sender_uuid TEXT, peer TEXT, session_init INTEGER,
                                      sequence_number INTEGER, inserted_at REAL NOT NULL, tx INTEGER);
CREATE INDEX IF NOT EXISTS processed_id ON processed (dedup_id);
CREATE TABLE IF NOT EXISTS checkpoints (session_id TEXT PRIMARY KEY, consumed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS effects (n INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, payload TEXT, dedup_id TEXT, tx INTEGER);
CREATE TABLE IF NOT EXISTS flows (flow TEXT PRIMARY KEY, suspends INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tx_counter (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL);
INSERT OR IGNORE INTO tx_counter VALUES (1, 0);
"""


class SqliteStore:
    def __init__(self, path: str):
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.executescript(_SCHEMA)

    def _begin(self) -> int:
        """Open a write transaction and take its number."""
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn.execute("UPDATE tx_counter SET n = n + 1 RETURNING n").fetchone()[0]

    def commit(self, m: Message) -> int:
        """Checkpoint, deduplication facts and effect of one consumed message, atomically."""
        return self.commit_batch([m])

    def commit_batch(self, messages: list[Message]) -> int:
        """One step of the receiving flows: for every consumed message its session's checkpoint, its
        processed id (with sender key and sequence number) and its effect, in one transaction.
        Returns the transaction's number."""
        c = self.conn
        tx = self._begin()
        try:
            now = time.time()
            for m in messages:
                key = m.sender_key
                c.execute("INSERT INTO checkpoints VALUES (?, 1) ON CONFLICT(session_id) DO UPDATE SET consumed = consumed + 1",
                          (m.session_id,))
                c.execute("INSERT INTO processed VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (m.dedup_id, m.sender_uuid, key[1] if key else m.sending_peer, int(m.session_init),
                           m.sequence_number, now, tx))
                c.execute("INSERT INTO effects (session_id, payload, dedup_id, tx) VALUES (?, ?, ?, ?)",
                          (m.session_id, m.payload, m.dedup_id, tx))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return tx

    def checkpoint_flow(self, flow: str) -> tuple[int, int]:
        """A sending flow's suspend: persist its next checkpoint and commit. Returns (tx, suspends)."""
        c = self.conn
        tx = self._begin()
        try:
            suspends = c.execute("INSERT INTO flows VALUES (?, 1) ON CONFLICT(flow) DO UPDATE SET suspends = suspends + 1 "
                                 "RETURNING suspends", (flow,)).fetchone()[0]
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return tx, suspends

    def flows(self) -> dict[str, int]:
        """flow -> suspends checkpointed."""
        return dict(self.conn.execute("SELECT flow, suspends FROM flows"))

    def has(self, dedup_id: str) -> bool:
        """The deduplicator's database read."""
        return self.conn.execute("SELECT 1 FROM processed WHERE dedup_id = ?", (dedup_id,)).fetchone() is not None

    def marks(self) -> dict[tuple, int]:
        """The fast path's high-water marks: the largest sequence number per sender key."""
        return {(u, p, bool(i)): s for u, p, i, s in self.conn.execute(
            "SELECT sender_uuid, peer, session_init, MAX(sequence_number) FROM processed "
            "WHERE sender_uuid IS NOT NULL AND sequence_number IS NOT NULL GROUP BY sender_uuid, peer, session_init")}

    def processed(self) -> dict[str, tuple]:
        """dedup id -> (sender key or None, sequence number)."""
        out = {}
        for did, uuid, peer, init, seq in self.conn.execute(
                "SELECT dedup_id, sender_uuid, peer, session_init, sequence_number FROM processed"):
            out[did] = ((uuid, peer, bool(init)) if uuid is not None else None, seq)
        return out

    def processed_rows(self) -> list[tuple]:
        """(dedup id, sender UUID, peer, sequence number, tx, inserted at) in commit order."""
        return list(self.conn.execute("SELECT dedup_id, sender_uuid, peer, sequence_number, tx, inserted_at FROM processed "
                                      "ORDER BY tx, rowid"))

    def effects(self) -> list[tuple[str, str, str]]:
        return list(self.conn.execute("SELECT session_id, payload, dedup_id FROM effects ORDER BY n"))

    def close(self) -> None:
        self.conn.close()
