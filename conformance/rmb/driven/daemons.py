"""The daemons under test of one run (``rmkit conform --protocol rmb --jobs N``): N harnesses, each
its own redis-server, kit twins and daemon process, fed scenarios side by side.

Why several daemons: a scenario spends most of its time waiting (for a POST, for a quiet window in
which nothing may happen, for a backlog entry to expire), so scenarios overlap. One daemon already
takes :data:`PER_DAEMON` scenarios at once (each act has its own names, so acts never see each
other's traffic); more at once would load a daemon with few workers beyond the judge's patience.
More daemons take more at once without that load, and a daemon that dies takes only its own
scenarios with it. A scenario's verdict never depends on which daemon ran it or beside what: the
same scenarios give the same verdicts at any ``--jobs`` (a daemon that cannot run as several
instances at once, e.g. one holding a fixed port or file, is run with ``--jobs 1``).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Awaitable, Callable

from rmkit.conformance.rmb.driven.harness import Harness, daemon_contract

_SIDE = daemon_contract()["side_by_side"]  # spec/rmb/daemon.yaml
PER_DAEMON = int(_SIDE["per_daemon"]["value"])  # scenarios one daemon runs at once
MAX_JOBS = int(_SIDE["max_jobs"]["value"])  # daemons at once: beyond, a typo, not a machine


def default_jobs() -> int:
    """One daemon per core and one more: the kit, the daemons and their redis-servers mostly wait,
    so a core is shared by more than one daemon's scenarios (2 cores: 3 daemons)."""
    return min(MAX_JOBS, (os.cpu_count() or 1) + 1)


class Daemons:
    """Harnesses started and stopped together; :meth:`deal` runs scenarios on them."""

    def __init__(self, harnesses: list[Harness]):
        if not harnesses:
            raise ValueError("at least one harness")
        self.harnesses = harnesses
        first = harnesses[0]
        self.profile, self.b, self.timing, self.name = first.profile, first.b, first.timing, first.name

    @classmethod
    def create(cls, impl_cmd: str, profile: str, jobs: int, response_s: float | None = None,
               workdir: str | None = None) -> "Daemons":
        """``jobs`` harnesses; with ``workdir`` each keeps its files in ``workdir/job-K`` (one job:
        ``workdir`` itself)."""
        def where(k: int) -> str | None:
            if workdir is None or jobs == 1:
                return workdir
            return str(Path(workdir) / f"job-{k}")
        return cls([Harness(impl_cmd, profile, response_s=response_s, workdir=where(k)) for k in range(1, jobs + 1)])

    @property
    def jobs(self) -> int:
        return len(self.harnesses)

    async def start(self) -> None:
        """Start every harness at once; when one cannot start, the others are stopped and its
        error is raised (the first in job order)."""
        got = await asyncio.gather(*(h.start() for h in self.harnesses), return_exceptions=True)
        failed = [e for e in got if isinstance(e, BaseException)]
        if failed:
            raise failed[0]

    async def stop(self) -> None:
        await asyncio.gather(*(h.stop() for h in self.harnesses), return_exceptions=True)

    def alive(self) -> bool:
        return all(h.alive() for h in self.harnesses)

    def dead(self) -> list[Harness]:
        return [h for h in self.harnesses if not h.alive()]

    async def deal(self, scenarios: list, run: Callable[[Harness, object], Awaitable],
                   stop: Callable[[int], bool] | None = None) -> list:
        """``run(harness, scenario)`` for every scenario, :data:`PER_DAEMON` at once per daemon,
        each daemon taking the next scenario of its key type (in the order given) when one of its
        own ends; the results in the order of ``scenarios``. Scenario ``i`` is not taken once
        ``stop(i)`` holds (those under way end); a daemon that died takes no more: the scenarios
        no daemon took are left out (the run that saw the death says so).

        Scenarios give the daemon a key type (:func:`key_type_of`): with several daemons, some
        hold an sr25519 key (as many as that share of the scenarios asks, at least one) and run
        those scenarios beside the others; one daemon runs each key type's scenarios in turn,
        restarted between them."""
        out: list = [None] * len(scenarios)
        stop = stop or (lambda i: False)
        groups = {kt: [(i, sc) for i, sc in enumerate(scenarios) if key_type_of(sc) == kt] for kt in KEY_ORDER}
        groups = {kt: items for kt, items in groups.items() if items}
        for phase in self._plan(groups):
            await asyncio.gather(*(h.restart(kt) for hs, kt, _ in phase for h in hs if _key(h) != kt and h.alive()))
            await asyncio.gather(*(_run_on(hs, items, run, out, stop) for hs, kt, items in phase))
        return [r for r in out if r is not None]

    def _plan(self, groups: dict) -> list:
        """Phases of (daemons, key type, scenarios): the groups of one phase run side by side."""
        live = [h for h in self.harnesses if h.alive()] or self.harnesses[:1]
        if len(groups) <= 1:
            return [[(([h for h in live if _key(h) == kt]) or live, kt, items)] for kt, items in groups.items()]
        if len(live) == 1:
            return [[(live, kt, items)] for kt, items in groups.items()]
        total = sum(len(items) for items in groups.values())
        n_sr = min(len(live) - 1, max(1, round(len(live) * len(groups["sr25519"]) / total)))
        ordered = [h for h in live if _key(h) != "sr25519"] + [h for h in live if _key(h) == "sr25519"]
        return [[(ordered[:-n_sr], "ed25519", groups["ed25519"]), (ordered[-n_sr:], "sr25519", groups["sr25519"])]]


async def _run_on(harnesses: list, items: list, run, out: list, stop) -> None:
    queue = list(reversed(items))

    async def slot(h) -> None:
        while queue and h.alive():
            i, sc = queue[-1]
            if stop(i):
                return
            queue.pop()
            out[i] = await run(h, sc)

    await asyncio.gather(*(slot(h) for h in harnesses for _ in range(PER_DAEMON)))


def _key(h) -> str:
    return getattr(h, "key_type", DEFAULT_KEY)


DEFAULT_KEY = "ed25519"
KEY_ORDER = ("ed25519", "sr25519")  # a run deals each key type's scenarios in turn: one restart between


def key_type_of(scenario) -> str:
    return getattr(scenario, "key_type", DEFAULT_KEY)


def daemons_of(target: "Harness | Daemons") -> Daemons:
    """A harness alone is a run with one job."""
    return target if isinstance(target, Daemons) else Daemons([target])
