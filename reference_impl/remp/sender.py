"""How a running node paces the receipts a validator sends to one full node (remp-as-built §3).

Why it exists: the node keeps only the *last* pending receipt per (destination, message) and
spaces the sends for one message 0 / 1000 / 2000 / 5000 ms apart, dropping entries idle for 30 s.
A status that is overtaken before its send slot is never sent: that is how intermediate receipts
go missing from the ever-node receipt stream. The documents' profile sends every receipt at once
and does not use this machine.

Deterministic and clock-free like the other machines: :class:`Offer` and :class:`~rmkit.protocols.remp.events.Tick`
carry the time; :meth:`ReceiptSender.next_due` tells the driver when to tick next.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Optional

from rmkit.protocols.remp.events import Tick


@dataclass(frozen=True, slots=True)
class Offer:
    """Receipts the validator made at ``time``, in order, for the sender to pace."""

    receipts: tuple
    time: int


class _Entry:
    __slots__ = ("sends", "last_send", "pending", "due", "touched")

    def __init__(self):
        self.sends = 0
        self.last_send = 0
        self.pending = None
        self.due: Optional[int] = None
        self.touched = 0


class ReceiptSender:
    """The paced, coalescing receipt queue of one validator towards one full node."""

    def __init__(self, spacing_ms: tuple = (0, 1000, 2000, 5000), idle_ms: int = 30_000):
        if not spacing_ms:
            raise ValueError("spacing_ms needs at least one interval")
        self.spacing = tuple(spacing_ms)
        self.idle_ms = idle_ms
        self.entries: dict[str, _Entry] = {}
        self.timers: list = []  # heap of (time, seq, msg_id)
        self._seq = 0
        self._purge_at = idle_ms
        self.coalesced = 0  # receipts overtaken before they were sent

    def _slot(self, e: _Entry) -> int:
        sp = self.spacing
        return e.last_send + sp[e.sends if e.sends < len(sp) else -1] if e.sends else 0

    def _timer(self, t: int, mid: str) -> None:
        self._seq += 1
        heapq.heappush(self.timers, (t, self._seq, mid))

    def step(self, event) -> list:
        """Offer: receipts to send now (the rest wait); Tick: the waiting receipts now due."""
        if isinstance(event, Offer):
            return self._offer(event.receipts, event.time)
        if isinstance(event, Tick):
            return self._flush(event.time)
        raise TypeError(f"a receipt sender does not take {type(event).__name__} events")

    def _offer(self, receipts, now: int) -> list:
        out = []
        entries = self.entries
        for r in receipts:
            mid = r.msg_id
            e = entries.get(mid)
            if e is None:
                e = entries[mid] = _Entry()
            elif e.pending is None and now - e.touched >= self.idle_ms:
                e.sends = 0  # idle long enough to have been dropped: starts afresh
            e.touched = now
            if e.pending is None and now >= self._slot(e):
                e.sends += 1
                e.last_send = now
                out.append(r)
                continue
            if e.pending is not None:
                self.coalesced += 1
            e.pending = r
            slot = self._slot(e)
            if e.due is None or e.due > slot:
                e.due = slot
                self._timer(slot, mid)
        return out

    def _flush(self, now: int) -> list:
        out = []
        timers, entries = self.timers, self.entries
        while timers and timers[0][0] <= now:
            t, _, mid = heapq.heappop(timers)
            e = entries.get(mid)
            if e is None:
                continue
            if e.pending is not None:
                if e.due is not None and e.due <= now:
                    out.append(e.pending)
                    e.pending = None
                    e.due = None
                    e.sends += 1
                    e.last_send = now
                    e.touched = now
        if now >= self._purge_at:
            self._purge(now)
        return out

    def _purge(self, now: int) -> None:
        """Drop the entries idle for ``idle_ms`` (nothing pending): their next receipt goes at once."""
        idle = self.idle_ms
        gone = [mid for mid, e in self.entries.items() if e.pending is None and now - e.touched >= idle]
        for mid in gone:
            del self.entries[mid]
        self._purge_at = now + idle

    def next_due(self) -> Optional[int]:
        """The time of the next due receipt, if any (idle entries are dropped as the flushes go)."""
        return self.timers[0][0] if self.timers else None
