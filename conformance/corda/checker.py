"""Checker of a Corda node's records (``rmkit check --protocol corda``, ``rmkit audit --protocol corda``).

The records (spec/corda/records.yaml) are the node's events file(s) and its processed-ids export.
The checker runs in two steps, so that one process, ``--jobs`` processes and a Spark job run the
same code (:class:`CordaLogChecker` is a :class:`rmkit.protocol.ShardedChecker`):

1. :meth:`CordaLogChecker.check_share` reads every record of some message ids (all of each id's
   records, in log order) and judges what one id's records show: its copies on each node, their
   deduplicator verdicts, commits, acknowledgements and drops, and its rows in the processed-ids
   export. It keeps a few compact facts per id for step 2.
2. :meth:`CordaLogChecker.merge` adds the shares up and judges what spans ids from those facts: a
   sender's sequence numbers, a session's order, the fast path's high-water marks, and whether a
   node's export (or events file) was given at all.

Every finding names its rule from spec/corda/rules.yaml; the profile's mode decides whether it is
checked and whether it fails the run. Records the checker cannot read are input problems naming
file, line and field; they are counted and make the run exit 2, the rest is still checked. A bad
line affects only itself: where it names its node and message, the records that follow it are read
without it (its dedup, commit and acknowledgement are not unreadable for lack of it), and what only
that line could show is not judged either way.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Iterable, Sequence

from rmkit.gctune import paused_collections
from rmkit.logread import BrokenLine, auto_jobs, numbered_batches
from rmkit.malloctune import release_freed_memory
from rmkit.protocol import REF_LINE_BITS, RecordKey
from rmkit.rules import OFF
from rmkit.verdict import Evidence, InputProblem, Report, Violation

from rmkit.conformance.corda.handlers import not_in_records
from rmkit.conformance.corda.share import LINE_MASK, Share, _ShareRun
from rmkit.protocols.corda.records import record_format
from rmkit.protocols.corda.model import corda_spec
# Rules a node's records cannot show (no bridge, queue or sender-replay events), with why: listed as
# not checked, never as passing (their ``not_loggable`` in rules.yaml; where each is judged instead: its
# `driven` and `judged_elsewhere` in spec/corda/rules.yaml).
NOT_IN_RECORDS = not_in_records()
# Rules that judge what never happened: only when the log ends after everything settled.
SETTLED_RULES = ("CORDA-DEDUP-002", "CORDA-REDELIVER-001")
NOT_SETTLED = ("the log may end while messages are still in transit: give --settled when every node's "
               "records were taken after all sent messages had time to arrive")


class CordaLogChecker:
    """Check a Corda node's records against one profile. ``settled``: the records were taken after
    every sent message had time to arrive, so what never happened (a loss, a missing redelivery) is
    judged (otherwise those rules are listed as not checked). ``horizon_s``: the deployment's declared
    bound, in seconds, on how far apart a message's records come (:mod:`.stream`); None takes
    records.yaml ``horizon`` (the documents set none: everything is kept to the end of the log)."""

    # the smallest block glibc serves with a mapping of its own in ``rmkit check`` (its
    # :func:`rmkit.malloctune.keep_freed_memory`): above the reader's chunks, below the exact check's
    # largest columns (the key store's arena, table and offsets, the packed tracks' rows: 4 to 15 MB
    # each at ten million records), which grow by reallocation: in place where mapped, by a copy
    # held beside the old where in the heap (about 20 MB of the summed peak at ten million records
    # of the short shape with two shares)
    mmap_threshold = 4 << 20

    def __init__(self, profile: str = "spec", *, settled: bool = False, max_examples: int = 1000, jobs: int | None = 1,
                 horizon_s: float | None = None):
        self.profile = profile
        self.settled = settled
        self.horizon_s = spec_horizon_s() if horizon_s is None else horizon_s
        self.max_examples = max_examples
        self.jobs = jobs
        self.key = RecordKey(((record_format().key,),), fold_case=False)
        self.progress = None  # called with (input index, bytes read so far) while one process reads
        self._modes: dict[str, str] | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["progress"] = None
        return state

    @property
    def spec(self):
        return corda_spec(self.profile)

    @property
    def modes(self) -> dict[str, str]:
        if self._modes is None:
            self._modes = {r.id: r.mode(self.profile) for r in self.spec.rules}
        return self._modes

    # -- whole runs ----------------------------------------------------------------------------
    def run(self, inputs: list[str]) -> Report:
        """Check ``inputs`` (paths, or ``-``) as one log; with ``jobs`` > 1, in that many processes."""
        from rmkit.conformance.corda.parallel import run_parallel

        jobs = default_jobs(inputs) if self.jobs is None else self.jobs
        if jobs > 1 and "-" not in inputs:
            return run_parallel(self, inputs, jobs)
        with paused_collections():  # from the first record to the report: nothing in between makes cycles
            if self.bound_ms is not None:
                streams = [self.input_batches(i, p) for i, p in enumerate(inputs)]
                return self.merge(inputs, [self.check_streams(inputs, streams, spanning=True)])
            return self.merge(inputs, [self.check_share(inputs, self.file_batches(inputs))])

    @property
    def bound_ms(self) -> int | None:
        """The declared bound in the records' unit (milliseconds, at least one), None without one."""
        return None if self.horizon_s is None else max(1, int(round(self.horizon_s * 1000)))

    def file_batches(self, inputs: list[str]):
        """Every line of ``inputs`` as (refs, lines) batches; where an input breaks off (a truncated
        gzip), a :class:`BrokenLine` at the line that could not be read, which the share reports."""
        for idx, path in enumerate(inputs):
            yield from self.input_batches(idx, path)

    def input_batches(self, idx: int, path: str):
        """:meth:`file_batches` of one input."""
        base = idx << REF_LINE_BITS
        broken = []
        yield from numbered_batches(idx, path, on_error=lambda n, why: broken.append((base | n, why)), progress=self.progress)
        for ref, why in broken:
            yield [ref], [BrokenLine(why)]

    # -- step 1: one share ---------------------------------------------------------------------
    def check_share(self, inputs: list[str], batches: Iterable[tuple[Sequence[int], Sequence[bytes | str]]]) -> Share:
        if self.bound_ms is not None:
            # under a bound the inputs are read in step (merged by time), which needs each input's
            # records apart: a share given them one input after another (``rmkit audit``) holds its
            # lines until the last input comes
            per: dict[int, list] = {}
            for refs, lines in batches:
                for ref, line in zip(refs, lines):
                    got = per.setdefault(ref >> REF_LINE_BITS, ([], []))
                    got[0].append(ref)
                    got[1].append(line)
            return self.check_streams(inputs, [[per[i]] for i in sorted(per)], spanning=False)
        with paused_collections():  # the tracks hold no reference cycles (see rmkit.gctune)
            out = _ShareRun(self, inputs).feed(batches)
        release_freed_memory()  # (the packed tracks, freed: the merge's peak comes after)
        return out

    def check_streams(self, inputs: list[str], streams: list, spanning: bool) -> Share:
        """A share under the declared bound: ``streams`` holds each input's (refs, lines) batches,
        read in step by time (:mod:`.stream`); ``spanning``: judge the checks across ids in the
        share (one process), else leave their facts to the merge."""
        from rmkit.conformance.corda.stream import bounded_run

        with paused_collections():
            return bounded_run(self, inputs, self.bound_ms, spanning).feed_inputs(streams)

    # -- step 2: merge ---------------------------------------------------------------------------
    def merge(self, inputs: list[str], shares: list[Share]) -> Report:
        from rmkit.conformance.corda.handlers import judge_spanning

        started = time.perf_counter()
        modes = self.modes
        rep = Report(protocol="corda", profile=self.profile, inputs=list(inputs), rules=dict(modes),
                     shown_per_rule=self.max_examples)
        rep.not_checked = {r: why for r, why in NOT_IN_RECORDS.items() if modes.get(r, OFF) != OFF}
        if not self.settled:
            rep.not_checked.update({r: NOT_SETTLED for r in SETTLED_RULES if modes[r] != OFF})
        found: list[Violation] = []
        found_at: list[tuple] = []
        problems: list[InputProblem] = []
        events: Counter = Counter()
        verdicts: Counter = Counter()
        event_nodes: set = set()
        export_nodes: set = set()
        rows = 0
        for s in shares:
            rep.records += s.records
            rep.subjects += s.ids
            rep.unreadable += s.unreadable
            for rule, n in s.counts.items():
                rep.count(rule, modes[rule], n)
            found_at += s.violations
            problems += s.problems
            events.update(s.events)
            verdicts.update(s.verdicts)
            event_nodes |= s.event_nodes
            export_nodes |= s.export_nodes
            rows += s.rows
        # each share kept its first examples per rule in the order one process finds them: merged in
        # that order and capped, they are the examples one process keeps, however the log was split
        stored: Counter = Counter()
        for _, v in sorted(found_at, key=lambda f: f[0]):
            if self.max_examples and stored[v.rule] >= self.max_examples:
                continue
            stored[v.rule] += 1
            found.append(v)
        for need, node, v in (p for s in shares for p in s.pending):
            if node in (event_nodes if need == "events" else export_nodes):
                rep.count(v.rule, v.mode)
                found.append(v)
        for v in [*judge_spanning(self, inputs, shares), *(v for s in shares for v in s.spanned)]:
            rep.count(v.rule, v.mode)
            found.append(v)
        kept: Counter = Counter()
        for v in sorted(found, key=lambda v: (_first(v, inputs), v.rule, v.subject or "")):
            if self.max_examples and kept[v.rule] >= self.max_examples:
                continue
            kept[v.rule] += 1
            rep.violations.append(v)
        problems.sort(key=lambda p: (inputs.index(p.file) if p.file in inputs else 0, p.line))
        rep.input_problems = problems[: self.max_examples or None]
        per_kind = dict(sorted(events.items())) | ({"processed-ids row": rows} if rows else {})
        elapsed = time.perf_counter() - started + sum(s.seconds for s in shares)
        rep.metrics = {"receipts_per_kind": per_kind, "verdicts": dict(sorted(verdicts.items())),
                       "nodes_with_events": sorted(event_nodes), "nodes_with_export": sorted(export_nodes),
                       "shares": len(shares), "elapsed_s": round(elapsed, 3),
                       **({"horizon_s": self.horizon_s, "late_records": sum(s.late for s in shares),
                           "peak_open": sum(s.peak_open for s in shares)} if self.horizon_s is not None else {}),
                       "receipts_per_s": round(rep.records / elapsed) if elapsed > 0 else None}
        rep.decide()
        return rep

    # -- helpers shared by both steps ------------------------------------------------------------
    def violation(self, inputs: list[str], rule: str, mid: str | None, explanation: str,
                  refs: Iterable[tuple[int, str | None, str | None]]) -> Violation:
        seen: dict[int, tuple] = {}
        for ref, kind, node in refs:
            if ref is not None and ref not in seen:
                seen[ref] = (kind, node)
        ev = [Evidence(ref & LINE_MASK, kind, node, inputs[ref >> REF_LINE_BITS]) for ref, (kind, node) in sorted(seen.items())]
        return Violation(rule, self.spec.rules[rule].severity, self.modes[rule], mid, explanation, ev)


def spec_horizon_s() -> float | None:
    """records.yaml ``horizon.bound`` in seconds where it declares one kept until the horizon, else None."""
    h = corda_spec_records()["horizon"]
    return float(h["bound"]) if h["kept_until"] == "horizon" and h["bound"] != "none" else None


def corda_spec_records() -> dict:
    from rmkit.specload import load_protocol_spec

    return load_protocol_spec("corda")["records"]


def default_jobs(inputs: list[str]) -> int:
    """The processes ``rmkit check --protocol corda`` uses when ``--jobs`` is not given: as
    :func:`rmkit.logread.auto_jobs` decides (one per idle core, one where fewer than two are idle),
    as RMB's checker. Every share reads and deals every line of the log before it checks its own, so
    two shares spend about 1.3 times one process's CPU; on two idle cores they still take about
    three quarters of one process's wall time. With the parent checking share 0 (:mod:`.parallel`),
    two processes hold under the exact check's 300 MB at ten million records of the short shape
    (docs/corda-check-streaming.md)."""
    return auto_jobs(inputs)


def _first(v: Violation, inputs: list[str]) -> tuple:
    return min(((inputs.index(e.file) if e.file in inputs else 0, e.line) for e in v.evidence), default=(0, 0))
