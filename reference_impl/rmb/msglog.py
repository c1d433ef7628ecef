"""The message log: one JSON line per message and HTTP exchange a daemon (or the recorder) sees:
time, twin, direction, channel (redis queue or HTTP endpoint), status, uid and the message.
The input of the RMB log rules; each line passes spec/schema/rmb-log.schema.json, which also lists
every event name and its meaning."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

FORMAT = "rmkit-rmb-log/1"


class MessageLog:
    """Append-only JSON Lines; thread-safe; ``None`` path: records nothing."""

    def __init__(self, path: str | Path | None, who: str):
        self.path, self.who = (Path(path) if path else None), who
        self._f = open(self.path, "a", encoding="utf-8", buffering=1) if self.path else None
        self._lock = threading.Lock()

    def record(self, event: str, *, direction: str, queue: str | None = None, endpoint: str | None = None,
               status: int | None = None, peer: str | None = None, msg: Any = None, note: str | None = None,
               uid: str | None = None) -> None:
        if self._f is None:
            return
        if uid is None:  # a line without a message (a forward job) names its request's uid itself
            uid = msg.get("uid") if isinstance(msg, dict) else None
        line = {"format": FORMAT, "time": round(time.time(), 6), "who": self.who, "event": event, "direction": direction,
                "queue": queue, "endpoint": endpoint, "status": status, "peer": peer, "uid": uid, "message": msg, "note": note}
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._f.write(text + "\n")

    def close(self) -> None:
        if self._f:
            self._f.close()
            self._f = None
