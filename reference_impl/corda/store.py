"""The receiving node's database, in SQLite: processed ids, checkpoints and the flows' effects,
written in one transaction per commit (spec/corda/system.yaml ``suspend_actions``: checkpoint,
deduplication facts, commit). A node process that is killed and started again on the same file
finds exactly what was committed."""

from __future__ import annotations

import sqlite3
import time

from .message import Message

_SCHEMA = """
CREATE TABLE IF NOT EXISTS processed (dedup_id TEXT PRIMARY KEY, sender_uuid TEXT, peer TEXT, session_init INTEGER,
                                      sequence_number INTEGER, inserted_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (session_id TEXT PRIMARY KEY, consumed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS effects (n INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, payload TEXT, dedup_id TEXT);
"""


class SqliteStore:
    def __init__(self, path: str):
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.executescript(_SCHEMA)

    def commit(self, m: Message) -> None:
        """Checkpoint, deduplication facts and effect of one consumed message, atomically."""
        key = m.sender_key
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            c.execute("INSERT INTO checkpoints VALUES (?, 1) ON CONFLICT(session_id) DO UPDATE SET consumed = consumed + 1",
                      (m.session_id,))
            c.execute("INSERT INTO processed VALUES (?, ?, ?, ?, ?, ?)",
                      (m.dedup_id, m.sender_uuid, key[1] if key else None, int(m.session_init), m.sequence_number, time.time()))
            c.execute("INSERT INTO effects (session_id, payload, dedup_id) VALUES (?, ?, ?)", (m.session_id, m.payload, m.dedup_id))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def processed(self) -> dict[str, tuple]:
        """dedup id -> (sender key or None, sequence number)."""
        out = {}
        for did, uuid, peer, init, seq in self.conn.execute(
                "SELECT dedup_id, sender_uuid, peer, session_init, sequence_number FROM processed"):
            out[did] = ((uuid, peer, bool(init)) if uuid is not None else None, seq)
        return out

    def effects(self) -> list[tuple[str, str, str]]:
        return list(self.conn.execute("SELECT session_id, payload, dedup_id FROM effects ORDER BY n"))

    def close(self) -> None:
        self.conn.close()
