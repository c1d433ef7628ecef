"""Check one log with several processes, each given the lines of the messages whose id hashes into
its share (:mod:`rmkit.conformance.remp.shares`), so per-message state never crosses processes.
Plain files are read by the shares themselves, chunk by chunk, each chunk's reader dealing the
others their lines of it (:mod:`rmkit.peerread`); standard input and gzip are read once by this
process, which deals each share its lines. Either way no share decodes another's lines.

The log's clock is global too: every share is given, with its lines, the clock events of the
others' lines (:mod:`rmkit.conformance.remp.clocktrack`: a line's time, writer and Kafka
partition, read by whoever reads the line), and runs the one process's clock over them, so that
it judges every record on the log's clock as one process does (docs/check-jobs.md).

Three more things are global and are reconciled here: the log's clock at the end (workers agree
on it before judging the messages still open), the role each source plays (the role it showed
first in the whole log judges the messages a share held back for a role it had not seen; a source
seen as a full node by one worker and as a validator by another is a REMP-ROLE-001 violation),
and the report (counts add, examples are merged in line order, histograms add).

The same shares run on Spark (:class:`rmkit.conformance.remp.sharded.RempShards`, ``rmkit audit``):
there a share is the set of messages of one partition instead of one process's hash share.
"""

from __future__ import annotations

import pickle
import queue
import threading
import time
from collections import Counter
from functools import partial
from multiprocessing import connection
from itertools import compress
from typing import Any

from rmkit.gctune import paused_collections
from rmkit.processes import start_processes, stop_processes
from rmkit.rules import OFF
from rmkit.verdict import Evidence, Report, Violation

from rmkit.conformance.remp.figures import latency_entry, latest_receipt, per_source_metrics, violation_order

from rmkit.conformance.remp.clocktrack import chunk_events, chunk_summary, others, pack, unpack
from rmkit.conformance.remp.shares import LINE_MASK, deal_text, share_picks
from rmkit.logread import REF_LINE_BITS as LINE_BITS
from rmkit.logread import MIN_PARALLEL_BYTES, auto_jobs, numbered_chunks, split_lines  # noqa: F401 (one rule for every protocol's --jobs)
from rmkit.peerread import Links, PeerStopped, peer_batches, readable, size_of


def _worker(conn, checker_class, kwargs: dict[str, Any], inputs: list[str], peers: tuple | None) -> None:
    """A share: its lines dealt by the parent (``peers`` None), or read by the shares themselves
    (``peers``: (this share's number, the shares' links, whether to count bytes read))."""
    try:
        with paused_collections():  # one pause from the first line to the report (see rmkit.gctune)
            checker = checker_class(**kwargs)
            checker.begin(inputs, shared=True)  # this share's lines only
            checker.feed(_received(conn, checker) if peers is None else _read_by_peers(conn, checker, inputs, *peers))
            conn.send(("hwm", checker.end_mark, checker.top_mark, checker._roles))
            end_hwm, latest_ref, roles = conn.recv()
            checker.settle_roles(roles)
            report = checker.finish(end_hwm, latest_ref)
            conn.send(("done", report, checker.lat, checker._roles, checker.per_source, checker.seconds_first))
    except BaseException as exc:  # report any failure to the parent instead of hanging it
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}", getattr(exc, "exit_code", None), exc))
        except OSError:
            pass  # the parent is gone (it stopped the run): nobody to tell
    finally:
        conn.close()


def _received(conn, checker):
    """The share's (refs, lines) batches as the parent sends them, until the end of the inputs;
    an input that broke off is reported where it broke, in log order."""
    while True:
        msg = conn.recv()
        if msg[0] == "lines":  # the batch's first ref, which of its lines are this share's, those lines, every line's clock event
            _, first, pick, joined, events = msg
            yield (list(compress(range(first, first + len(pick)), pick)), split_lines(joined, terminated=True)[0] if joined else [],
                   others(events, first, pick))
        elif msg[0] == "read_error":
            checker._read_error(*msg[1:])
        else:
            return


def _read_by_peers(conn, checker, inputs: list[str], k: int, links, counting: bool):
    """Share k's batches, read by the shares themselves (:mod:`rmkit.peerread`); the bytes of
    each chunk it read go to the parent's progress when ``counting``."""
    net = links.keep(k)
    on_read = (lambda idx, nbytes: conn.send(("read", idx, nbytes))) if counting else None
    fold = checker.model.ids_fold_case
    yield from peer_batches(k, links.n, inputs, net, partial(share_picks, terminated=True), LINE_BITS,
                            on_break=checker._read_error, on_read=on_read, deal_text=deal_text,
                            summary=(lambda text, lines, pick: chunk_summary(text, fold, lines), pack, unpack, others))


# the batches dealt to the shares: small, so that little waits in memory, large enough that a
# message per share and batch costs nothing to speak of
DEAL_BYTES = 1 << 20


def _deal(out: "_Outbox", inputs: list[str], progress, fold: bool) -> None:
    """Read every input once and send each share its lines (by :func:`shares.share_picks`, the
    message id's share) and every line's clock event (``fold``: whether ids are compared
    case-folded), batch by batch."""
    n = len(out.pipes)
    for idx, path in enumerate(inputs):

        def broke_off(at: int, why: str, idx=idx) -> None:  # one problem, reported by one share
            out.put(0, ("read_error", idx, at, why))

        for refs, batch, text in numbered_chunks(idx, path, chunk_bytes=DEAL_BYTES, on_error=broke_off, progress=progress,
                                                 terminated=True):
            # a share gets its lines one after the other (each ends with its newline) and a byte
            # per line of the batch to number them by: a few large objects to pickle instead of
            # two per line
            events = chunk_events(batch, fold)
            for k, pick in enumerate(share_picks(refs, batch, n, text, terminated=True)):
                out.put(k, ("lines", refs.start, pick, b"".join(compress(batch, pick)), events))
    out.close()


class _Outbox:
    """The messages to the shares, each share's written by a thread of its own from a short queue:
    reading and dealing the next batches overlaps the writing (which waits while a share is
    checking), and a share that is slower for a while does not stop the others. Memory: at most
    ``DEPTH`` batches per share wait here."""

    DEPTH = 3

    def __init__(self, pipes):
        self.pipes = pipes
        self.queues = [queue.Queue(self.DEPTH) for _ in pipes]
        self.failed: list[BaseException | None] = [None] * len(pipes)
        self.stopping = False
        self.threads = [threading.Thread(target=self._write, args=(k,), daemon=True) for k in range(len(pipes))]
        for t in self.threads:
            t.start()

    def _write(self, k: int) -> None:
        pipe, q = self.pipes[k], self.queues[k]
        while True:
            try:
                data = q.get(timeout=0.5)
            except queue.Empty:
                if self.stopping:
                    return
                continue
            if data is None:
                return
            if self.failed[k] is None and not self.stopping:
                try:
                    pipe.send_bytes(data)
                except OSError as exc:  # the share stopped: its own report says why (see _fail)
                    self.failed[k] = exc

    def put(self, k: int, msg) -> None:
        if self.failed[k] is not None:
            self._fail(k)
        self.queues[k].put(pickle.dumps(msg, pickle.HIGHEST_PROTOCOL))

    def close(self) -> None:
        """Send the end of the inputs to every share and wait until everything is written."""
        for k in range(len(self.pipes)):
            self.put(k, ("end",))
            self.queues[k].put(None)
        for t in self.threads:
            t.join()
        for k in range(len(self.pipes)):
            if self.failed[k] is not None:
                self._fail(k)

    def stop(self) -> None:
        """Drop what is still queued (the run failed) and let the writers end."""
        self.stopping = True

    def _fail(self, k: int) -> None:
        _raise_error(self.pipes[k])
        # no report: the process died (killed, out of memory). Not an OSError of the run's own
        # output (a closed stdout ends a run quietly): the run could not do its job.
        raise RuntimeError(f"share {k} of the --jobs run stopped without a report ({self.failed[k]})")


def _raise_error(pipe) -> None:
    """Raise the failure a share reported, if it reported one."""
    try:
        while pipe.poll(1):
            msg = pipe.recv()
            if msg[0] == "error":
                raise msg[3]
    except (EOFError, OSError):
        pass


def run_parallel(checker_class, kwargs: dict[str, Any], inputs: list[str], jobs: int, progress=None) -> Report:
    """Same result as ``checker_class(**kwargs).run(inputs)`` (up to which examples are kept), the
    class being :class:`rmkit.conformance.remp.checker.RempLogChecker` (which calls this, so it is
    handed over rather than imported).
    Plain files are read by the shares themselves, which deal each other their lines
    (:mod:`rmkit.peerread`); otherwise (standard input, gzip) this process reads the inputs once
    and deals each share its lines. ``progress(input index, bytes of it read)`` is called as the
    inputs are read, when given."""
    with paused_collections():  # the shares' reports, unpickled, and their merge hold no cycles (see rmkit.gctune)
        return _run_parallel(checker_class, kwargs, inputs, jobs, progress)


def _run_parallel(checker_class, kwargs: dict[str, Any], inputs: list[str], jobs: int, progress) -> Report:
    started = time.perf_counter()
    links = Links(jobs) if readable(inputs) else None
    sizes = [size_of(p) for p in inputs] if links is not None else []  # (for the progress of the shares' reading)
    try:
        pipes, procs = start_processes(_worker, [(checker_class, kwargs, inputs, None if links is None else (k, links, progress is not None))
                                                 for k in range(jobs)])
    finally:
        if links is not None:
            links.close()  # (the shares hold their own ends)
    finished = False
    out = None
    try:
        if links is None:
            out = _Outbox(pipes)
            _deal(out, inputs, progress, checker_class(**kwargs).model.ids_fold_case)
        first = _first_messages(pipes, progress, sizes)
        end = checker_class(**kwargs).end_clock([m[1] for m in first], [m[2] for m in first])
        latest_ref = latest_receipt([m[2] for m in first])
        roles = first_roles([m[3] for m in first])
        for p in pipes:
            p.send((end, latest_ref, roles))
        results = [p.recv() for p in pipes]
        for msg in results:
            if msg[0] == "error":
                raise msg[3]
        finished = True
    finally:
        if not finished:  # a failure (the parent's or a share's): the other shares need not finish
            if out is not None:
                out.stop()
            for proc in procs:
                proc.kill()
        stop_processes(procs)
    report = _merge(checker_class, kwargs, inputs, [r[1] for r in results], [r[2] for r in results], [r[3] for r in results],
                    [r[4] for r in results], [r[5] for r in results])
    elapsed = time.perf_counter() - started
    report.metrics["elapsed_s"] = round(elapsed, 3)
    report.metrics["receipts_per_s"] = round(report.records / elapsed) if elapsed > 0 else None
    return report


class _ReadSoFar:
    """The bytes the shares report read, passed on to ``progress(input, bytes of it)`` in the
    inputs' order as one reader would: the shares read chunks of several inputs at once, so an
    input is reported once every input before it is complete."""

    def __init__(self, sizes: list[int], progress):
        self.sizes, self.progress = sizes, progress
        self.done = [0] * len(sizes)
        self.at = 0  # the first input not yet complete

    def add(self, idx: int, nbytes: int) -> None:
        self.done[idx] += nbytes
        while self.at < len(self.sizes) and self.done[self.at] >= self.sizes[self.at]:
            if self.sizes[self.at]:
                self.progress(self.at, self.sizes[self.at])
            self.at += 1
        if self.at < len(self.sizes) and self.done[self.at]:
            self.progress(self.at, self.done[self.at])


def _first_messages(pipes: list, progress, sizes: list[int]) -> list:
    """Each share's first message after its lines (its clock and roles), passing on the bytes
    the shares report read to ``progress`` meanwhile (``sizes``: the inputs', as planned). A
    share's failure is raised; one that stopped only because another did
    (:class:`rmkit.peerread.PeerStopped`) gives way to that one's."""
    first: list = [None] * len(pipes)
    read = _ReadSoFar(sizes, progress) if progress is not None else None
    waiting = {p: k for k, p in enumerate(pipes)}
    while waiting:
        for p in connection.wait(list(waiting)):
            try:
                msg = p.recv()
            except EOFError:  # the process died (killed, out of memory): no report
                msg = ("error", "", None, RuntimeError(f"share {waiting[p]} of the --jobs run stopped without a report"))
            if msg[0] == "read":
                read.add(msg[1], msg[2])
                continue
            first[waiting.pop(p)] = msg
    errors = [m[3] for m in first if m[0] == "error"]
    if errors:
        raise next((e for e in errors if not isinstance(e, PeerStopped)), errors[0])
    return first


def first_roles(shares: list[dict]) -> dict[str, tuple]:
    """The role each source showed first in the whole log: source -> (role, ref, message), the
    earliest ref over the shares' inferred roles."""
    out: dict[str, tuple] = {}
    for share in shares:
        for src, entry in share.items():
            seen = out.get(src)
            if seen is None or entry[1] < seen[1]:
                out[src] = entry
    return out


# a rule a share reports once per source, kept for the source's earliest finding over the shares
ONCE_PER_SOURCE = "REMP-TIME-002"


def _merge(checker_class, kwargs, inputs, reports: list[Report], lats: list[dict], roles: list[dict],
           per_source: list[dict], seconds: list[dict]) -> Report:
    probe = checker_class(**kwargs)
    base = reports[0]
    out = Report(protocol=base.protocol, profile=base.profile, inputs=list(inputs), rules=dict(base.rules),
                 shown_per_rule=base.shown_per_rule, input_rule=base.input_rule, not_checked=dict(base.not_checked))
    for r in reports:
        out.records += r.records
        out.subjects += r.subjects
        out.unreadable += r.unreadable
        for rule, n in r.counts.items():
            if rule != ONCE_PER_SOURCE:
                out.count(rule, out.rules.get(rule), n)
        for rule, nj in r.not_judged.items():
            out.add_not_judged(rule, nj["messages"], nj["why"])
    # a source inferred as a full node in one share and as a validator in another
    first: dict[str, tuple] = {}
    extra: list[Violation] = []
    for share in roles:
        for src, (role, ref, mid) in share.items():
            seen = first.get(src)
            if seen is None or ref < seen[1]:
                if seen is not None and seen[0] != role:
                    extra.append(_role_conflict(probe, src, (role, ref, mid), seen, inputs))
                first[src] = (role, ref, mid)
            elif seen[0] != role:
                extra.append(_role_conflict(probe, src, seen, (role, ref, mid), inputs))
    mode = out.rules.get("REMP-ROLE-001")
    for v in extra:
        out.count(v.rule, mode)
    once = _once_per_source(probe, seconds, inputs)
    if once:
        out.count(ONCE_PER_SOURCE, out.rules.get(ONCE_PER_SOURCE), len(once))
    kept: Counter[str] = Counter()
    shares = [v for r in reports for v in r.violations if v.rule != ONCE_PER_SOURCE]
    for v in sorted(shares + once + [v for v in extra if mode and mode != OFF], key=violation_order):
        if out.shown_per_rule and kept[v.rule] >= out.shown_per_rule:
            continue
        kept[v.rule] += 1
        out.violations.append(v)
    problems = sorted((p for r in reports for p in r.input_problems), key=lambda p: (inputs.index(p.file), p.line))
    out.input_problems = problems[: out.shown_per_rule or None]
    out.metrics = _merge_metrics(probe, reports, lats, roles)
    declared = probe.declared_roles or {}
    out.metrics["per_source"] = per_source_metrics(
        per_source, lambda src, seen: declared.get(src) or (first[src][0] if src in first else seen))
    out.decide()
    return out


def _once_per_source(probe, shares: list[dict], inputs) -> list[Violation]:
    """REMP-TIME-002 as one process reports it: each source's earliest finding over the shares
    (a share knows only its own first; ``RempLogChecker.seconds_first``)."""
    mode = probe.modes[ONCE_PER_SOURCE]
    if mode == OFF:
        return []
    first: dict = {}
    for share in shares:
        for src, entry in share.items():
            if src not in first or entry[0] < first[src][0]:
                first[src] = entry
    severity = probe.model.rules[ONCE_PER_SOURCE].severity
    return [Violation(ONCE_PER_SOURCE, severity, mode, mid, why,
                      [Evidence(ref & LINE_MASK, kind, src, inputs[ref >> LINE_BITS])])
            for src, (ref, mid, why, kind) in first.items()]


def _role_conflict(probe, src, earlier, later, inputs) -> Violation:
    def ev(entry):
        return Evidence(entry[1] & LINE_MASK, None, src, inputs[entry[1] >> LINE_BITS])

    return Violation("REMP-ROLE-001", probe.model.rules["REMP-ROLE-001"].severity, probe.modes["REMP-ROLE-001"], later[2],
                     f"{src} acted as a {earlier[0]} and, for another message, as a {later[0]}", [ev(earlier), ev(later)])


def _merge_metrics(probe, reports, lats, roles) -> dict[str, Any]:
    ms = [r.metrics for r in reports]
    merged = dict(ms[0])
    for key in ("not_judged_for_liveness", "redelivered_receipts", "late_receipts", "receipts_without_time",
                "peak_open_messages", "kafka_tombstones"):
        merged[key] = sum(m[key] for m in ms)
    for key in ("receipts_per_kind", "outcomes"):
        total: Counter = Counter()
        for m in ms:
            total.update(m[key])
        merged[key] = dict(total.most_common())
    spans = [m["log_time_span_s"] for m in ms if m["log_time_span_s"] is not None]
    merged["log_time_span_s"] = max(spans) if spans else None
    lat = {}
    for name, spec in probe.model.latency.items():
        hist = lats[0][name]
        for other in lats[1:]:
            hist.merge(other[name])
        lat[name] = latency_entry(spec, hist)
    merged["latency_ms"] = lat
    if "signatures" in merged:
        merged["signatures"] = {k: sum(m["signatures"][k] for m in ms) for k in merged["signatures"]}
    sources = Counter()
    seen = {}
    for share in roles:
        for src, (role, _, _) in share.items():
            seen.setdefault(src, role)
    sources.update(seen.values())
    if probe.declared_roles is None:
        merged["sources"] = dict(sources)
    merged["jobs"] = len(reports)
    return merged
