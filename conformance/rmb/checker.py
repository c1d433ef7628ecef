"""``rmkit check --protocol rmb``: the RMB log rules over message logs (a daemon's own log, or a
recorder's between daemons; several files are one log).

Records are grouped by the request's uid (:func:`.logrecords.record_key`); each group is judged as
a whole, in time order (:mod:`.logjudge`), so one share of the groups is checked exactly as the
whole log is. The same code runs in one process, in ``--jobs`` processes (each keeps the groups
whose key hashes into its share) and on Spark (``rmkit audit --protocol rmb``, :class:`RmbShards`):
the shares' findings merge into one report; a finding that waits for the log to go on is decided
against the whole log's last time.

Memory follows the records of the log (a group is judged once every record of it was read).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from rmkit.logread import auto_jobs, numbered_batches
from rmkit.processes import key_share, run_in_processes
from rmkit.protocol import REF_LINE_BITS
from rmkit.rules import OFF
from rmkit.verdict import Evidence, InputProblem, Report, Violation

from rmkit.conformance.rmb.logrecords import RECORD_KEY, Rec, decode, record_key

LINE_MASK = (1 << REF_LINE_BITS) - 1
NO_DIRECTORY = "no --directory file: give the twin directory (its public keys) to verify signatures"


@dataclass
class Share:
    """One share's partial result: picklable, small (findings, not records)."""

    records: int = 0
    groups: int = 0
    max_time: float | None = None
    min_time: float | None = None
    found: list[tuple] = field(default_factory=list)  # (rule, uid, why, [(ref, event, who)])
    pending: list[tuple] = field(default_factory=list)  # (rule, uid, why, [(ref, event, who)], due)
    problems: list[tuple] = field(default_factory=list)  # (ref, error, field)
    events: Counter = field(default_factory=Counter)
    signed: Any = None  # sigreuse.SignatureIndex: the signed messages seen, for RMB-SIG-007 across shares


class RmbShards:
    """The RMB log checker as a :class:`rmkit.protocol.ShardedChecker`."""

    key = RECORD_KEY

    def __init__(self, profile: str = "spec", directory: str | None = None, max_examples: int = 1000,
                 horizon_s: float | None = None):
        self.profile, self.directory_path, self.max_examples, self.horizon_s = profile, directory, max_examples, horizon_s
        self.started = time.time()  # one clock for every share (pickled with the checker): a line's time is judged alike
        self._ctx = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_ctx"} | {"_ctx": None}

    def ctx(self):
        if self._ctx is None:
            from rmkit.conformance.rmb.directory import Directory
            from rmkit.conformance.rmb.logjudge import Ctx
            from rmkit.conformance.rmb.model import rmb_spec

            spec = rmb_spec()
            settings = dict(spec.raw["logcheck"]["settings"])
            if self.horizon_s is not None:
                settings["horizon_s"] = self.horizon_s
            directory = Directory.load(self.directory_path) if self.directory_path else None
            self._ctx = Ctx(spec.behaviour(self.profile), settings, directory, self.profile, self.started)
        return self._ctx

    # -- a share ----------------------------------------------------------------------------
    def check_share(self, inputs: list[str], batches: Iterable) -> Share:
        from rmkit.conformance.rmb.logjudge import Group

        from rmkit.conformance.rmb.model import rmb_spec
        from rmkit.conformance.rmb.sigreuse import SignatureIndex

        ctx = self.ctx()
        share = Share(signed=SignatureIndex(rmb_spec().raw["signature"]["challenge"]["pieces"]))
        groups: dict[str | None, list[Rec]] = {}
        for refs, lines in batches:
            for ref, line in zip(refs, lines):
                if not line.strip():
                    continue
                obj, error, fld = decode(line)
                if obj is not None:
                    error, fld = ctx.line_problem(obj) or (None, None)
                    if error is not None:
                        obj = None
                if obj is None:
                    share.problems.append((ref, error, fld))
                    continue
                share.records += 1
                rec = Rec(ref, obj)
                share.events[rec.event] += 1
                share.signed.add(ref, rec.event, rec.msg)
                if share.max_time is None or rec.time > share.max_time:
                    share.max_time = rec.time
                if share.min_time is None or rec.time < share.min_time:
                    share.min_time = rec.time
                groups.setdefault(record_key(obj), []).append(rec)
        share.groups = sum(1 for k in groups if k is not None)
        for recs in groups.values():
            recs.sort(key=lambda r: (r.time, r.ref))
            uid = next((r.uid if r.uid is not None else r.msg.get("uid") for r in recs
                        if r.uid is not None or isinstance(r.msg, dict)), None)
            out = Group(ctx, recs).judge()
            for rule, why, evid in out.found:
                share.found.append((rule, uid, why, [(r.ref, r.event, r.who) for r in evid]))
            for rule, why, evid, due in out.pending:
                share.pending.append((rule, uid, why, [(r.ref, r.event, r.who) for r in evid], due))
        return share

    # -- the report -------------------------------------------------------------------------
    def merge(self, inputs: list[str], shares: list[Share]) -> Report:
        from rmkit.conformance.rmb.model import rmb_spec

        spec = rmb_spec()
        lc = spec.raw["logcheck"]
        modes = {r.id: r.mode(self.profile) for r in spec.rules}
        not_checked = {rid: f"no log shows it: {why}" for rid, why in lc["not_loggable"].items() if modes[rid] != OFF}
        if self.directory_path is None:
            not_checked.update({rid: NO_DIRECTORY for rid in lc["needs_directory"] if modes[rid] != OFF})
        rep = Report(protocol="rmb", profile=self.profile, inputs=list(inputs), rules=modes,
                     shown_per_rule=self.max_examples, not_checked=not_checked)
        times = [s.max_time for s in shares if s.max_time is not None]
        end = max(times) if times else None
        found = [f for s in shares for f in s.found]
        from rmkit.conformance.rmb.sigreuse import reused

        found += [(rule, None, why, evid) for rule, why, evid in reused(s.signed for s in shares if s.signed is not None)]
        waited: Counter[str] = Counter()
        for s in shares:
            for rule, uid, why, evid, due in s.pending:
                if end is not None and due <= end:
                    found.append((rule, uid, why, evid))
                else:
                    waited[rule] += 1
        found.sort(key=lambda f: (min((e[0] for e in f[3]), default=0), f[0], f[2]))
        kept: Counter[str] = Counter()
        for rule, uid, why, evid in found:
            mode = modes.get(rule, OFF)
            if mode == OFF or rule in not_checked:
                continue
            rep.count(rule, mode)
            if self.max_examples and kept[rule] >= self.max_examples:
                continue
            kept[rule] += 1
            ev = [Evidence(ref & LINE_MASK, event, who, inputs[ref >> REF_LINE_BITS]) for ref, event, who in _unique(evid)]
            rep.violations.append(Violation(rule, spec.rules[rule].severity, mode, uid, why, ev))
        for rule, n in sorted(waited.items()):
            if modes.get(rule, OFF) != OFF and rule not in not_checked:
                rep.add_not_judged(rule, n, f"the log ends less than {self.ctx().horizon:g} s after the cause")
        problems = sorted(p for s in shares for p in s.problems)
        rep.unreadable = len(problems)
        rep.input_problems = [InputProblem(inputs[ref >> REF_LINE_BITS], ref & LINE_MASK, err, fld)
                              for ref, err, fld in problems[: self.max_examples or None]]
        rep.records = sum(s.records for s in shares)
        rep.subjects = sum(s.groups for s in shares)
        events: Counter = Counter()
        for s in shares:
            events.update(s.events)
        starts = [s.min_time for s in shares if s.min_time is not None]
        span = round(end - min(starts), 3) if starts and end is not None else None
        rep.metrics = {"records_per_event": dict(events.most_common()), "log_time_span_s": span, "jobs": len(shares),
                       "loggable_rules": len(lc["checked"]), "not_loggable_rules": len(lc["not_loggable"])}
        rep.decide()
        return rep


def _unique(evid: list[tuple]) -> list[tuple]:
    seen, out = set(), []
    for e in sorted(evid):
        if e[0] not in seen:
            seen.add(e[0])
            out.append(e)
    return out


class RmbLogChecker:
    """``rmkit check --protocol rmb``: :class:`RmbShards` over local files, in one or more processes."""

    def __init__(self, shards: RmbShards, jobs: int | None = 1):
        self.shards, self.jobs = shards, jobs
        self.progress = None

    def run(self, inputs: list[str]) -> Report:
        started = time.perf_counter()
        jobs = auto_jobs(inputs) if self.jobs is None else self.jobs
        if jobs > 1 and "-" not in inputs:
            shares = _run_processes(self.shards, inputs, jobs)
        else:
            problems: list[tuple] = []
            share = self.shards.check_share(inputs, _file_batches(inputs, problems))
            share.problems += problems
            shares = [share]
        rep = self.shards.merge(inputs, shares)
        elapsed = time.perf_counter() - started
        rep.metrics["elapsed_s"] = round(elapsed, 3)
        rep.metrics["records_per_s"] = round(rep.records / elapsed) if elapsed > 0 else None
        return rep


def _file_batches(inputs: list[str], problems: list, k: int = 0, n: int = 1):
    """(refs, lines) of every input in order; with a share ``k`` of ``n``, only its groups' lines
    (a line that is not JSON goes to share 0, which reports it)."""
    import orjson

    for idx, path in enumerate(inputs):
        base = idx << REF_LINE_BITS

        def broke(line: int, why: str, base=base) -> None:
            if k == 0:
                problems.append((base | line, why, None))

        for refs, batch in numbered_batches(idx, path, on_error=broke):
            if n == 1:
                yield refs, batch
                continue
            keep_refs, keep = [], []
            for ref, line in zip(refs, batch):
                try:
                    key = record_key(orjson.loads(line)) if line.strip() else None
                except orjson.JSONDecodeError:
                    key = None
                if key_share(key, n) == k:
                    keep_refs.append(ref)
                    keep.append(line)
            yield keep_refs, keep


def _check_share(shards: RmbShards, inputs: list[str], k: int, n: int) -> Share:
    problems: list[tuple] = []
    share = shards.check_share(inputs, _file_batches(inputs, problems, k, n))
    share.problems += problems
    return share


def _run_processes(shards: RmbShards, inputs: list[str], jobs: int) -> list[Share]:
    return run_in_processes(_check_share, [(shards, inputs, k, jobs) for k in range(jobs)])


def make_checker(profile: str, args: Any) -> RmbLogChecker:
    return RmbLogChecker(sharded_checker(profile, args), jobs=getattr(args, "jobs", None))


def sharded_checker(profile: str, args: Any) -> RmbShards:
    from rmkit.errors import UsageError

    directory = getattr(args, "directory", None)
    if directory is not None and directory != "-" and not os.path.isfile(directory):
        raise UsageError(f"--directory {directory!r}: no such file")
    horizon = getattr(args, "horizon", None)
    if horizon is not None and not horizon > 0:
        raise UsageError(f"--horizon: expected a number of seconds > 0, found {horizon}")
    shards = RmbShards(profile, directory, max_examples=getattr(args, "max_examples", 1000), horizon_s=horizon)
    shards.ctx()  # a broken directory file is a usage error before any reading
    return shards
