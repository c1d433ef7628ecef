"""Signs of life for long runs: a line on stderr every few seconds at a terminal, every half
minute otherwise (a CI log gets a heartbeat, not a flood), never on stdout, where reports go.

Why one module: ``rmkit simulate`` of 600k receipts printed nothing for eight minutes; each long
command (simulate, conform, audit, torture, tlc) says how far it is the same way.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator


def interval() -> float:
    """Seconds between lines: 2 at a terminal, 30 otherwise."""
    return 2.0 if sys.stderr.isatty() else 30.0


class Ticker:
    """``tick(text)`` prints ``label: text`` when the interval has passed since the last line."""

    def __init__(self, label: str, every: float | None = None):
        self.label = label
        self.every = interval() if every is None else every
        self.started = self.last = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every

    def tick(self, text: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= self.every:
            self.last = now
            print(f"{self.label}: {now - self.started:.0f} s: {text}", file=sys.stderr, flush=True)


def counted(items: Iterable, label: str, unit: str, total: int | None = None, every: float | None = None) -> Iterator:
    """``items`` unchanged, with a line now and then saying how many went by (of ``total``)."""
    ticker = Ticker(label, every)
    n = 0
    for item in items:
        n += 1
        if not n & 4095 and ticker.due():  # the clock read once per 4096 items: no cost per item
            ticker.tick(f"{n:,}{f' of {total:,}' if total else ''} {unit}")
        yield item
