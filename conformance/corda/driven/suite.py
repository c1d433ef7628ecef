"""Scenarios for a receiving node, the lock-step runner, the search with shrinking, and reports.

A scenario is a list of harness actions over the messages of a topology (its first step
``topology``, else the default one: spec/corda/adapter.yaml ``receiver.topology``; several peers,
sessions and sending processes), each of which may arrive as the original copy, with sender UUID
and sequence number, or as a re-send during recovery, without them, any number of times and in any
order (duplicates, redeliveries and reordering are all the documents' adversary): ``arrive``,
``deliver`` (the broker hands the next copy to the node), ``tick``, ``crash`` (the node's process
dies and restarts; the broker redelivers what it had not acknowledged) and ``broker_restart``.
The catalogue's named scenarios (:mod:`.catalogue`) run first; then Hypothesis generates scenarios
and shrinks a failing one.

After the scenario comes the drain, and with it the one bound the adapter protocol sets on a
node's rhythm: the harness delivers every copy and ticks, round after round, until the node owes
nothing (every copy it answered NEW committed; every live copy of a committed id it answered NEW
or DUPLICATE acknowledged) and :data:`QUIET_TICKS` ticks in a row moved nothing, or until
:data:`DRAIN_BOUND` ticks have passed. A node may commit and acknowledge on any rhythm within
that bound; what it still owes after it is reported as no progress within DRAIN_BOUND ticks,
under the rule that asks for it (CORDA-DEDUP-008 a commit, CORDA-ACK-002 or CORDA-DEDUP-003 an
acknowledgement). While copies are left on the broker the harness then restarts the node (so
copies it discarded as IN_FLIGHT come back), at most :data:`DRAIN_RESTARTS` times, draining after
each; at the end nothing may be lost and nothing left unacknowledged. In the fast path's profile
a committed id answered NEW at or below its sender's mark may be the fast path's error, a table
that lost the id, or an id written after its commit: a ``durability check`` then restarts the
node once more and delivers a re-send of that message without sender UUID (which only the table
recognises) and the same copy again. The exchange and the violations label drain rounds
``drain tick K`` and the drain's restarts ``drain restart R``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings, strategies as st

from rmkit.protocols.corda.model import corda_spec
from rmkit.errors import UsageError
from rmkit.reference_impl.corda.broker import Queue

from . import report
from .adapters import ROLES, ImplementationFailed, harnessed, message_to
from .contract import FIELDS, Topology, default_topology, number, topology_range
from .judge import Judge, Outcome, Stopped, failed
from .steps import _SIMPLE, message, step_problem, topology_of, universe

DRAIN_BOUND = number("receiver", "drain", "bound_ticks")   # the rhythm a node must keep (see above)
QUIET_TICKS = number("receiver", "drain", "quiet_ticks")
DRAIN_RESTARTS = number("receiver", "drain", "restarts")
MAX_STEPS = number("receiver", "max_steps")


def topologies():
    """The default topology a quarter of the time (its four messages meet again and again), else any
    within the spec's ranges (several peers, sessions and senders); a failure shrinks towards the
    default one."""
    drawn = st.builds(Topology, *(st.integers(*topology_range(f)) for f in FIELDS))
    return st.integers(0, 3).flatmap(lambda i: drawn if i else st.just(default_topology()))


def actions(n: int = 4):
    """One step of a scenario over ``n`` messages."""
    arrive = st.tuples(st.just("arrive"), st.integers(0, n - 1), st.booleans())
    simple = st.sampled_from([(a,) for a in _SIMPLE])
    return st.one_of(arrive, simple, simple)


def scenarios(max_steps: int = MAX_STEPS):
    """A topology, as the first step unless it is the default one, then the steps."""
    def steps(t: Topology):
        first = [] if t == default_topology() else [("topology", *t.fields())]
        return st.lists(actions(len(universe(t))), max_size=max_steps).map(lambda acts: first + acts)
    return topologies().flatmap(steps)


def run(impl, profile: str, acts: list, role: str = "receiver") -> Outcome:
    """Play ``acts`` against the implementation (``hello`` starts it afresh), then drain (see the
    module's docstring); judge every reply. Log lines and violations say where they happened: the
    scenario's step number, or the drain's tick or restart."""
    judge = Judge(corda_spec(profile), Queue("p2p.inbound.B"))
    inbound, log = judge.inbound, []

    def note(what: str) -> None:
        log.append(f"{judge.where.removeprefix('step ')}: {what}")

    def deliver() -> bool:
        d = inbound.deliver()
        if d is None:
            return False
        reply = impl.handle({"type": "deliver", "tag": d.tag, "conn": d.connection, "message": message_to(d.message)})
        note(f"deliver {d.message.dedup_id} (tag {d.tag}) -> {reply}")
        judge.on_answer(d.tag, d.connection, d.message, reply.get("answer"))
        judge.on_reply(reply)
        return True

    def tick() -> bool:
        reply = impl.handle({"type": "tick"})
        moved = bool(reply.get("commits") or reply.get("acks") or reply.get("done"))
        if moved:
            note(f"tick -> {reply}")
        judge.on_reply(reply)
        return moved

    def crash(kind: str) -> None:
        reply = impl.handle({"type": kind})
        note(kind)
        if kind == "crash":
            judge.on_crash()
        judge.on_reply(reply)
        inbound.disconnect()

    drained = [0]   # drain ticks so far, numbered across the drain's phases

    def drain_phase() -> None:
        """Deliver and tick until nothing is owed and QUIET_TICKS ticks moved nothing, at most
        DRAIN_BOUND ticks; past the bound, what is owed is no progress."""
        quiet = 0
        for _ in range(DRAIN_BOUND):
            drained[0] += 1
            judge.where = f"drain tick {drained[0]}"
            moved = False
            while deliver():
                moved = True
            moved = tick() or moved
            quiet = 0 if moved else quiet + 1
            if quiet >= QUIET_TICKS and judge.settled():
                return
        judge.stalled(DRAIN_BOUND)

    def durability_check() -> None:
        """A committed id answered NEW that the answer alone does not pin on one mechanism (see
        judge.readmission): the fast path skipped the database, the table lost the id, the id was
        not in it yet, or the table is keyed by more than the id. Restarts and copies under other
        sender keys tell (judge.probes); the violation is certain already, only its rule is not."""
        for round_ in (1, 2):
            probes = judge.probes(round_)
            if not probes:
                break
            judge.where = "durability check"
            crash("crash")
            for kind, m in probes:
                judge.probe_tags[inbound.produce(m)] = (m.dedup_id, kind)
                note(f"arrive {m.dedup_id} ({'recovery re-send' if m.sender_uuid is None else 'from ' + m.sender_uuid}, "
                     f"to ask the {kind})")
            while deliver():
                pass
            if round_ == 1:   # the kit's own probes leave the broker: redelivered, they would hold the id in flight
                inbound.entries[:] = [e for e in inbound.entries if e.tag not in judge.probe_tags]
        drain_phase()

    try:
        impl.handle({"type": "hello", "role": role, "profile": profile})
        topology = topology_of(acts)
        for act in acts:
            judge.step += 1
            judge.where = f"step {judge.step}"
            if act[0] == "topology":
                note(f"topology: {topology.peers} peers, {topology.sessions} sessions each, {topology.messages} "
                     f"messages per session, {topology.senders} sending processes per peer")
            elif act[0] == "arrive":
                m = message(act[1], act[2], topology)
                inbound.produce(m)
                judge.sent.add(m.dedup_id)
                note(f"arrive {m.dedup_id} from {m.sending_peer} ("
                     + ("recovery re-send" if act[2] else f"original, sender {m.sender_uuid} #{m.sequence_number}") + ")")
            elif act[0] == "deliver":
                deliver()
            elif act[0] == "tick":
                tick()
            else:
                crash(act[0])
        drain_phase()
        for restart in range(1, DRAIN_RESTARTS + 1):
            if not inbound.entries:
                break
            judge.where = f"drain restart {restart}"
            crash("crash")
            drain_phase()
        if judge.unsure:
            durability_check()
        judge.at_end()
    except ImplementationFailed as exc:
        raise ImplementationFailed(f"at {_place(judge.where, _act_name(acts, judge.step))}: {exc}") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise ImplementationFailed(f"a malformed reply at {judge.where}: {exc!r}") from None
    return Outcome(profile, list(acts), judge.violations, log)


def _act_name(acts: list, step: int) -> str | None:
    return acts[step - 1][0] if 0 < step <= len(acts) else None


def _place(where: str, act: str | None) -> str:
    """Where an implementation that cannot be driven stopped the run, as the error names it."""
    if where.startswith("step ") and act:
        return f"{where} ({act})"
    if where.startswith("drain"):
        return f"{where}, in the drain after the scenario"
    return where


def close(impl) -> None:
    done = getattr(impl, "close", None)
    if done:
        done()


SHRINK_BUDGET_S = number("search", "shrink_budget_s")   # then the shortest failing scenario seen is reported

STOPPED_ADVICE = ("answer every event with one JSON object (for a process: one line on stdout) within --timeout, "
                  "and keep running until stdin closes; the adapter protocol is in spec/corda/adapter.md")
FLAKY_NOTE = ("not reproducible: it passed when run again, so it is shown as first found, not shrunk (the "
              "implementation's answers depend on more than the scenario: its history, the time, chance)")


@dataclass
class SearchResult:
    profile: str
    examples: int
    seconds: float
    failure: Outcome | None
    findings: dict = field(default_factory=dict)   # rule -> first Outcome showing a non-strict violation
    role: str = "receiver"
    regression: str | None = None   # the saved scenario that failed again (then nothing was generated)
    saved: str | None = None        # where the failure was saved
    budget_spent: bool = False      # generating stopped at the time budget, before max_examples
    delivered: int | None = None    # deliveries the implementation answered (0: a pass would have checked nothing)
    reproducible: bool = True       # False: the failure did not come back when rerun (shown unshrunk)
    named: list = field(default_factory=list)   # ids of the named scenarios played (catalogue, then measured)
    named_failure: str | None = None   # the named scenario that failed (its failure shrunk by step removal)
    played: list = field(default_factory=list)  # (id, Outcome) of each named scenario played: the per-rule evidence

    @property
    def verdict(self) -> str:
        if self.failure:
            return "fail"
        return "nothing checked" if self.delivered == 0 else "pass"


class _Stop(BaseException):
    """Ends the search from inside the Hypothesis test. A BaseException, which Hypothesis lets
    through at once: an exception would be taken for a failing example, replayed, shrunk, and end
    as a FlakyFailure hiding the cause."""


def play_once(play, impl, profile: str, acts: list) -> Outcome:
    """One run of ``acts`` (``play``: :func:`run` or the bridge's): an implementation that breaks
    down after its hello fails the scenario (a :class:`Stopped` outcome with the exchange so far);
    one that never answered the hello raises :class:`ImplementationFailed`: it could not be driven."""
    try:
        return play(impl, profile, acts)
    except ImplementationFailed as exc:
        if not impl.past_hello:
            raise
        return Stopped(profile, list(acts), [], list(impl.transcript), cause=str(exc))


def shrink_steps(out: Outcome, attempt, budget_s: float) -> Outcome:
    """A failing scenario made shorter by removing one step at a time while it still fails on one of
    the same strict rules (or breaks the implementation down again), for at most ``budget_s``: the
    catalogue's scenarios are short, so this finds what of them the failure needs."""
    rules = {v.rule for v in out.strict}
    start, best, changed = time.monotonic(), out, True

    def same(o: Outcome) -> bool:
        return isinstance(o, Stopped) if isinstance(best, Stopped) else bool(rules & {v.rule for v in o.strict})

    while changed and time.monotonic() - start < budget_s:
        changed = False
        for i in range(len(best.actions)):
            shorter = best.actions[:i] + best.actions[i + 1:]
            o = attempt(shorter)
            if same(o):
                best, changed = o, True
                break
    return best


def named_scenarios(role: str, profile: str) -> list[tuple[str, list]]:
    """(id, steps) of the named scenarios a run plays first: the catalogue's, then the generated ones
    :mod:`.coverage` keeps for a rule's mutant that no catalogue scenario catches."""
    from .catalogue import catalogue
    from .coverage import generated

    return [(sc.id, list(sc.steps)) for sc in catalogue(role, profile)] + generated(role, profile)


def search(factory, profile: str, *, max_examples: int = 200, derandomize: bool = True, seed: int | None = None,
           max_steps: int | None = None, role: str = "receiver", regressions=(), time_budget: float | None = None,
           named: bool = True) -> SearchResult:
    """Replay the saved ``regressions`` (``(path, steps)`` pairs), then play the catalogue's named
    scenarios of ``role`` (``named``; spec/corda/catalogue.yaml: each crash point and window, with
    a copy on the broker; a failure there is shrunk by removing steps) and the generated ones kept
    because they catch a rule's mutant no catalogue scenario catches (:mod:`.coverage`; their clean
    runs are, with the catalogue's, the per-rule table's evidence), then generate scenarios for
    ``role`` until one fails (then shrink it, for at most :data:`SHRINK_BUDGET_S`), ``max_examples``
    pass (0: the saved ones only), or ``time_budget`` seconds have passed (a failure found by then
    is still shrunk; one scenario at least, or a pass would be a verdict on nothing). A saved
    failure that fails again ends the search at once: a bug found once is reported again before any
    time goes to looking for new ones; so does a named scenario that fails (after every named one
    has been played).

    A scenario fails when it breaks a strict rule or when the implementation breaks down in it
    after a hello (:class:`Stopped`); :class:`ImplementationFailed` is raised only when no hello
    was ever answered (it could not be driven at all). A failure that does not come back when
    Hypothesis replays it is reported as first found (``reproducible`` False), not as a Flaky
    error of the kit. ``factory`` is wrapped as ``--impl`` is when it is a plain Python one, so a
    crash is always a real restart on the scenario's database (see :mod:`.adapters`)."""
    from hypothesis.errors import Flaky

    from .bridge import actions as bridge_actions, run_bridge
    from .catalogue import catalogue

    if role == "bridge":
        drawn = st.lists(bridge_actions(), max_size=max_steps or number("bridge", "max_steps"))
    else:
        drawn = scenarios(max_steps or MAX_STEPS)
    play = run_bridge if role == "bridge" else run
    failures: list[Outcome] = []
    findings: dict[str, Outcome] = {}
    not_driven: list[ImplementationFailed] = []   # no hello ever answered: no verdict
    count = [0]
    stopped_by = [None]   # "time budget" or "shrink budget"
    start = time.monotonic()
    found = [0.0]         # when the first failure was found (shrinking has SHRINK_BUDGET_S from then)
    impl = harnessed(factory)(role)   # one implementation for every scenario, started again at each crash

    def attempt(acts) -> Outcome:
        try:
            return play_once(play, impl, profile, acts)
        except ImplementationFailed as exc:
            not_driven.append(exc)
            raise _Stop from None

    @settings(max_examples=max(1, max_examples), derandomize=False, deadline=None,
              database=None, phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck),
              report_multiple_bugs=False, verbosity=Verbosity.quiet)
    @given(drawn)
    def scenario(acts):
        now = time.monotonic()
        if time_budget is not None and (count[0] or played) and not failures and now - start >= time_budget:
            stopped_by[0] = "time budget"
            raise _Stop
        if failures and now - found[0] >= SHRINK_BUDGET_S:
            stopped_by[0] = "shrink budget"
            raise _Stop
        count[0] += 1
        out = attempt(acts)
        for v in out.violations:
            if v.mode != "strict" and (v.rule not in findings or len(acts) < len(findings[v.rule].actions)):
                findings[v.rule] = out
        if failed(out):
            if not failures:
                found[0] = time.monotonic()
            failures.append(out)
            raise AssertionError(out.strict[0].render() if out.strict else out.cause)

    # derandomized: seed 0, as remp's runs; Hypothesis's own derandomizing seeds from this function's
    # source, so that any edit of it would change the scenarios every CI run draws
    fixed = seed if seed is not None else 0 if derandomize else None
    if fixed is not None:
        from hypothesis import seed as hseed

        scenario = hseed(fixed)(scenario)
    reproducible = True
    played: list[str] = []
    outcomes: list[tuple[str, Outcome]] = []
    try:
        for path, acts in regressions:
            out = attempt(acts)
            if failed(out):
                return SearchResult(profile, 0, time.monotonic() - start, out, {}, role, regression=str(path),
                                    delivered=impl.delivered)
        for name, acts in named_scenarios(role, profile) if named else ():
            played.append(name)
            out = attempt(acts)
            outcomes.append((name, out))
            for v in out.violations:
                if v.mode != "strict" and v.rule not in findings:
                    findings[v.rule] = out
            if failed(out):
                out = shrink_steps(out, attempt, SHRINK_BUDGET_S)
                return SearchResult(profile, 0, time.monotonic() - start, out, findings, role, delivered=impl.delivered,
                                    named=played, named_failure=name, played=outcomes)
        if max_examples > 0:
            scenario()
    except (AssertionError, _Stop):
        pass
    except Flaky:
        reproducible = False
    finally:
        close(impl)
    if not_driven:
        raise not_driven[0]
    if not failures:
        failure = None
    elif not reproducible:
        failure = failures[0]
    elif stopped_by[0] == "shrink budget":
        failure = min(failures, key=lambda f: len(f.actions))
    else:   # the last failing run is the shrunk one (Hypothesis replays the minimal example last)
        failure = failures[-1]
    return SearchResult(profile, count[0], time.monotonic() - start, failure, findings, role,
                        budget_spent=stopped_by[0] == "time budget", delivered=impl.delivered,
                        reproducible=reproducible, named=played, played=outcomes)


def steps_text(actions) -> str:
    return ", ".join(":".join(map(str, a)) for a in actions) or "(none)"


def problems(profile: str, out: Outcome) -> list[str]:
    """What went wrong in ``out``, each with what to do: the rules broken, in the order they happened
    (the first names the failure), or the implementation's breakdown."""
    lines = []
    if isinstance(out, Stopped):
        lines.append(f"the implementation failed {out.cause}")
        lines.append(f"  what to do: {STOPPED_ADVICE}")
    for v in report.ordered(out.violations, out.log):
        lines.append(v.render())
        lines.append(f"  what to do: {corda_spec(profile).rules[v.rule].advice}")
    return lines


def exchange(out: Outcome, limit: int = 40) -> list[str]:
    """The exchange to show: its start, or for a breakdown its end (where the failure is)."""
    if len(out.log) <= limit:
        return list(out.log)
    if isinstance(out, Stopped):
        return [f"... ({len(out.log) - limit} lines before)"] + out.log[-limit:]
    return out.log[:limit] + [f"... ({len(out.log) - limit} lines more)"]


def outcome_json(profile: str, out: Outcome) -> dict:
    return {"steps": [list(a) for a in out.actions],
            "violations": [{**v.__dict__, "advice": corda_spec(profile).rules[v.rule].advice} for v in out.violations],
            "implementation_failed": {"cause": out.cause, "advice": STOPPED_ADVICE} if isinstance(out, Stopped) else None,
            "exchange": list(out.log)}


def _named_source(name: str) -> str:
    from .coverage import FILE, load

    return f"conformance/corda/driven/{FILE.name}" if name in load()["scenarios"] else "spec/corda/catalogue.yaml"


def _breakdown(r: SearchResult) -> str | None:
    return f"the implementation failed {r.failure.cause}" if isinstance(r.failure, Stopped) else None


def _outcome_text(r: SearchResult) -> list[str]:
    """A role's failing scenario for a report: its steps, its problems, its exchange."""
    f = r.failure
    return [f"steps: {steps_text(f.actions)}", *problems(r.profile, f), "exchange:", *exchange(f)]


def typed(results: list[SearchResult], impl: list[str], settings: dict | None = None, exit: int | None = None):
    """The run as every protocol's conform report is typed (:func:`.report.core_report`), which
    :mod:`rmkit.render.conform` writes as text, JSON, JUnit and HTML."""
    return report.core_report(results, _breakdown, impl, _outcome_text, settings, exit,
                              failure_parts=(steps_text, _what_failed, outcome_json))


def _what_failed(r: SearchResult) -> str:
    """Which failing scenario a role's failure is: a saved one again, a named one shrunk, a
    generated one shrunk, or one not reproducible (shown as first found)."""
    return (f"saved scenario {r.regression}, failing again" if r.regression
            else f"named scenario {r.named_failure} of {_named_source(r.named_failure)}, shrunk" if r.named_failure
            else "shrunk" if r.reproducible else f"first found ({FLAKY_NOTE})")


def to_html(results: list[SearchResult], impl: list[str]) -> str:
    """A standalone page: the verdict and the rules broken first, each role's failing scenario
    with the command that reproduces it, its problems and exchange, then the per-rule matrix
    (:func:`rmkit.render.conform.render_html`)."""
    from rmkit.render.conform import render_html

    return render_html(typed(results, impl))


def to_junit(results: list[SearchResult], impl: list[str] | None = None) -> str:
    """JUnit XML: per role, one test case per rule it judges (see :mod:`.report`); ``impl`` is the
    implementation as given, for the command that reproduces a failure."""
    from rmkit.render.conform import render_junit

    return render_junit(typed(results, impl or []))


def overall(results: list[SearchResult]) -> str:
    """fail if any role failed, else "nothing checked" if a role checked nothing, else pass."""
    verdicts = {r.verdict for r in results}
    return next((v for v in ("fail", "nothing checked") if v in verdicts), "pass")


def save(result: SearchResult, folder: Path) -> Path:
    """Write a failing scenario so that ``rmkit replay --protocol corda`` reruns it and the next
    ``rmkit conform`` replays it first. The name ends in a digest of the steps: two failures of
    the same length no longer overwrite each other, and the same one found again is one file."""
    steps = [list(a) for a in result.failure.actions]
    digest = hashlib.sha256(json.dumps(steps).encode()).hexdigest()[:12]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"corda-{result.role}-{result.profile}-{digest}.json"
    path.write_text(json.dumps({"protocol": "corda", "role": result.role, "profile": result.profile,
                                "steps": steps}) + "\n")
    return path


def load_regressions(folder: Path) -> list[tuple[str, str, Path, list]]:
    """(role, profile, path, steps) of every ``corda-*.json`` saved in ``folder``; a damaged one is a
    usage error naming it (see :func:`read_saved`)."""
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("corda-*.json")):
        role, profile, steps = read_saved(path)
        out.append((role, profile, path, steps))
    return out


def read_saved(path) -> tuple[str, str, list]:
    """The role, profile and steps of a saved scenario, checked before any implementation is
    started: the runner sends a step it does not know to the implementation as an event, whose
    refusal would then be blamed on the implementation, and a bad argument would end in the kit's
    own IndexError. Bad content is a usage error naming the file and the field."""
    def bad(where: str, what: str) -> UsageError:
        return UsageError(f"FILE {path}: {where}: {what}")

    from rmkit.jsondoc import DocumentError, document_problem, read_json_document

    try:
        doc, text = read_json_document(path)
    except DocumentError as exc:
        raise UsageError(f"FILE {path}: not a saved corda scenario ({exc})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"FILE {path}: not a saved corda scenario (expected a JSON object, found {type(doc).__name__})")
    problem = document_problem(doc, "corda-scenario", text)  # types and ranges: the checks below meet only the values they expect
    if problem is not None:
        raise bad(problem[0] or "(top)", problem[1])
    if doc.get("protocol", "corda") != "corda":
        raise bad("protocol", f"expected 'corda', found {doc['protocol']!r}")
    role = doc.get("role", "receiver")
    if not isinstance(role, str) or role not in ROLES:
        raise bad("role", f"expected one of {', '.join(ROLES)}, found {role!r}")
    if "profile" not in doc:
        raise bad("profile", "missing")
    profile = doc["profile"]
    if not isinstance(profile, str):
        raise bad("profile", f"expected a profile name, found {profile!r}")
    try:
        corda_spec(profile)
    except UsageError as exc:
        raise bad("profile", str(exc)) from None
    steps = doc.get("steps")
    if not isinstance(steps, list):
        raise bad("steps", f"expected a list of steps, found {steps!r:.80}")
    problem = step_problem(role, steps)
    if problem is not None:
        raise bad(*problem)
    return role, profile, [tuple(s) for s in steps]


