"""The shadow judge: is one step's output something the protocol allows from the current state?

Why a judge and not an equality: the documents leave choices to an implementation
(``spec/remp/freedoms.yaml``): which validators get a message, when further ones do, the collation
order, what a hand-over may leave out, and in ever-node which receipts may be skipped or paced.
At each step the implementation answers first; the judge reads its choice from those outputs, checks
it with the freedom's predicate against the reference machine's state (never by enumerating the
allowed outputs), and, when it is legal, steps the reference *with that choice* (its validators, its
order), so that the reference continues from the state the implementation is in.

Why the judge allows by default: the freedoms are the kit's enumeration of what the documents leave
open, and no enumeration is complete. So an output that still differs from the reference's after
every freedom was applied fails only where a requirement of the documents names the difference (a
receipt missing, a block refused or not, a status, a block or a count a receipt reports falsely, a
record that says what did not happen): each such obligation is one entry of
``spec/remp/conformance.yaml`` or ``rules.yaml`` whose source sentences have force *requirement*
(``traceability.yaml``). A difference no requirement names is informational: the report shows it
(expected and actual) and the run goes on. A step that is not allowed gets a :class:`Breach` or the
rules its difference breaks.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field

from rmkit.conformance.remp.driven.catalogue import requirements
from rmkit.conformance.remp.driven.compare import Difference, _key, compare, normalize
from rmkit.protocols.remp.model import model_for
from rmkit.specload import load_protocol_spec

FREEDOM_FOR_DUPLICATE = "duplicate_receipt"


@functools.lru_cache(maxsize=None)
def freedoms(profile: str, role: str) -> dict:
    """name -> freedom entry of ``spec/remp/freedoms.yaml`` that applies to ``role`` in ``profile``."""
    return {f["name"]: f for f in load_protocol_spec("remp")["freedoms"]["freedoms"]
            if profile in f["profiles"] and role in f["roles"]}


@functools.lru_cache(maxsize=None)
def fanout_floor(profile: str, n: int) -> int:
    """The fewest validators of a set of ``n`` a new message must go to (REMP-FREE-001's floor)."""
    f = freedoms(profile, "fullnode").get("fanout")
    kind = (f or {}).get("floor", {}).get(profile, "fanout_min")
    k = 1 if kind == "one" else model_for(profile).threshold("fanout_min", n)
    return max(1, min(k, n))


@functools.lru_cache(maxsize=None)
def pacing_bound_ms(profile: str) -> int:
    """The longest a paced receipt may wait (the largest of the profile's send spacings)."""
    spacing = load_protocol_spec("remp")["behaviours"]["behaviours"]["send_spacing_ms"].get(profile)
    return max(spacing) if spacing else 0


@functools.lru_cache(maxsize=None)
def binds(rule: str, profile: str) -> bool:
    """Whether requirement ``rule`` of ``spec/remp/conformance.yaml`` binds in ``profile`` (one that
    rests on a profile's reference facts binds only there); a log rule's modes say where it is on."""
    req = requirements().get(rule)
    return req is None or profile in req.get("profiles", (profile,))


@dataclass
class Breach:
    """A step the protocol does not allow: ``rule`` broken, ``found`` (what the implementation did),
    ``allowed`` (what it could have done)."""

    rule: str
    found: str
    allowed: str = ""

    def __str__(self) -> str:
        return f"{self.rule}: {self.found}" + (f"; allowed: {self.allowed}" if self.allowed else "")


@dataclass
class Judgement:
    """One step judged: the reference's outputs (after following the implementation's legal
    choices), the difference left after every freedom was applied, breaches of freedoms' bounds,
    the freedoms used, and the rules the difference is attributed to."""

    expected: list
    diff: Difference
    breaches: list = field(default_factory=list)
    used: set = field(default_factory=set)
    rules: list = field(default_factory=list)
    # the rules of ``rules`` named only because a receipt differs (the log rules of the same receipts
    # name such a fault better: a report that has those leaves these out)
    receipt_rules: set = field(default_factory=set)

    def __bool__(self) -> bool:  # True when the step is NOT allowed: a requirement names what it did
        return bool(self.breaches) or bool(self.rules)

    @property
    def informational(self) -> bool:
        """The outputs differ from the reference's, but no requirement names the difference."""
        return bool(self.diff) and not self

    def summary(self) -> str:
        parts = [str(b) for b in self.breaches]
        if self.diff:
            parts.append(self.diff.summary())
        return "; ".join(parts)


@dataclass
class _Prepared:
    """A step the reference has taken and the judge has not judged yet: the event, the reference's
    outputs (and their values), what the implementation's choices already showed, and what judging a
    session switch needs of the state before it."""

    event: dict
    expected: list
    values: list | None
    breaches: list
    used: set
    switched: _Switched | None = None
    settled: str | None = None  # validator: the rule queuing this copy of a settled message again breaks


@dataclass
class _Switched:
    """A validator's session switch as the judge needs it after later steps: the ids received via
    the catchain before it, those it made obsolete, the session window's liveness right after it,
    and the ids the machine still held."""

    cc_before: set
    obsolete: set
    live: object
    held_after: frozenset
    sessions: dict = field(default_factory=dict)  # msg_id -> origin session of the messages held before it


def _short(ids) -> str:
    return "[" + ", ".join(str(x)[:8] for x in ids) + "]"


class Judge:
    """Judges one role's steps against the reference adapter ``ref`` (its machine is followed)."""

    def __init__(self, role: str, profile: str, ref):
        self.role, self.profile, self.ref = role, profile, ref
        self.free = freedoms(profile, role)
        model = model_for(profile)
        self.final_kinds = frozenset(k for k, ki in model.kinds.items() if ki.final)
        self.bound = pacing_bound_ms(profile)
        self.paced = "paced_sending" in self.free
        self.skip = "skip_intermediate" in self.free
        self.pending: list = []  # paced receipts not sent yet: [key, step, time made, msg_id, kind, final, rank]
        self.made = 0
        self.seq = 0
        self.used_total: dict = {}
        self.ignored: set = set()  # validator: ids of the messages whose block (or collator) ignored them
        self.obsolete: set = set()  # validator: ids of the messages that became obsolete at a switch
        self._totals = None  # full node: (current set's size, both sets' size) of a Submit during an announced switch
        self._due: dict = {}  # full node: msg_id -> (last send, answered, total, validators left) of resends due
        self.starts: dict = {}  # validator: master session seqno -> its start time (001's short-session exception)
        self.session = None
        self.lifetime_ms = getattr(getattr(ref, "machine", None), "lifetime_ms", None)
        self._held_sessions: dict = {}  # validator: msg_id -> origin session of the messages held before the latest switch
        # full node: resends are owed only where REMP-CLIENT-001 binds (the running node's fact)
        self.resends_bind = binds("REMP-CLIENT-001", profile)

    # ---- the step --------------------------------------------------------------------------------
    def step(self, event: dict, actual: list) -> Judgement:
        return self.finish(self.prepare(event, actual), actual)

    def deferrable(self, event: dict) -> bool:
        """Whether ``event`` may be judged later, after further events were stepped: the reference's
        answer to it does not depend on the implementation's (no freedom of the step steers the
        reference) and judging it reads no state of the machine that later steps change. Asked
        before the event is stepped. Such steps can travel to the implementation together (one
        request for several events); the others end such a request."""
        et = event.get("type")
        if self.role == "validator":  # a switch's judging reads the state right after it: kept in prepare
            return et != "CollationRound"
        if self.role == "fullnode":
            fn = self.ref.machine
            if et == "Submit":  # as _fullnode_choice: only a new message with a body is sent out
                return event.get("msg_id") in fn.msgs or event.get("error") is not None or not event.get("has_body")
            if et == "Tick":  # no message held: nothing to resend
                return not fn.msgs
        return True

    def prepare(self, event: dict, actual: list | None) -> _Prepared:
        """The reference stepped with ``event``, following the implementation's legal choices in
        ``actual``; ``actual`` None: a :meth:`deferrable` event, whose outputs come later."""
        machine = self.ref.machine
        breaches: list = []
        used: set = set()
        et = event.get("type")
        cc_before = held = switched = settled = None
        if self.role == "fullnode" and et in ("Submit", "Tick"):
            self._fullnode_choice(event, actual or [], breaches, used)
        elif self.role == "validator" and et == "CollationRound":
            self._collation_choice(event, actual or [], breaches, used)
        elif self.role == "validator" and et in ("ShardBlockIgnored", "MasterchainIgnore"):
            self.ignored.update(event.get("msg_ids") or ())
        elif self.role == "validator" and et == "CollatorResult" and event.get("result") == "ignored":
            self.ignored.add(event.get("msg_id"))
        elif self.role == "validator" and (et == "MessageFromFullNode" or (et == "CatchainRecord" and event.get("kind") in ("new", "forward"))):
            settled = _settled_rule(machine.msgs.get(event.get("msg_id")))
        elif self.role == "validator" and et == "SessionSwitch":
            cc_before = {mid for mid, m in machine.msgs.items() if m.from_cc}
            held = list(machine.msgs.values())
            self.starts[event.get("seqno")] = event.get("start_time")
            self.session = event.get("seqno")
        try:
            expected = self.ref.step(event)
        finally:
            if self.role == "fullnode":
                machine.choose = None
            elif self.role == "validator":
                machine.choose_order = None
        if held is not None:  # what judging the hand-over needs of the state right after the switch
            window = copy.copy(machine.window)
            switched = _Switched(cc_before, {m.id for m in held if m.expired or not window.is_live(m.session)},
                                 window.is_live, frozenset(machine.msgs), {m.id: m.session for m in held})
        return _Prepared(event, expected, getattr(self.ref, "last_values", None), breaches, used, switched, settled)

    def finish(self, p: _Prepared, actual: list) -> Judgement:
        """The judgement of a prepared step on the implementation's outputs ``actual`` (steps are
        finished in the order they were prepared; a step that is not :meth:`deferrable` at once)."""
        self.seq += 1
        event, expected, breaches, used = p.event, p.expected, p.breaches, p.used
        exp, act = expected, actual
        if self.role == "validator":
            if p.switched is not None:
                self.obsolete.update(p.switched.obsolete)
                self._held_sessions = p.switched.sessions
                exp, act = self._handover(exp, act, p.switched, breaches, used)
            exp, act = self._receipts(event, exp, act, breaches, used)
            exp, act = self._records(exp, act, used)
        if self.role == "fullnode" and self._totals is not None:
            exp = self._total_read(exp, act, used)
        elif self.role == "consumer":
            exp = self._intermediate_outcome(exp, act, used)
        diff = compare(exp, act)
        if self._due:
            diff = self._resend_breaches(event, diff, breaches)
        j = Judgement(expected, diff, breaches, used)
        j.rules = self._attribute(j, event, p.settled)
        for u in used:
            self.used_total[u] = self.used_total.get(u, 0) + 1
        return j

    # ---- full node: fan-out and resends ------------------------------------------------------------
    def _fullnode_choice(self, event, actual, breaches, used) -> None:
        fn = self.ref.machine
        sends: dict = {}
        for o in actual:
            if o.get("type") == "SendToValidator":
                sends.setdefault(o.get("msg_id"), []).append(o.get("validator"))
        sets = fn.sets()
        union = {v for vs in sets for v in vs}
        choose: dict = {}
        if event["type"] == "Submit":
            mid = event["msg_id"]
            known = mid in fn.msgs
            if known or event.get("error") is not None or not event.get("has_body"):
                return  # nothing is sent: compared exactly
            picked = sends.get(mid, [])
            problems = []
            if len(set(picked)) != len(picked):
                problems.append(Breach("REMP-FANOUT-002", f"sent {mid[:8]} twice to the same validator ({', '.join(picked)})",
                                       "each validator once"))
            strangers = [v for v in picked if v not in union]
            if strangers:
                problems.append(Breach("REMP-FANOUT-002", f"sent {mid[:8]} to {', '.join(strangers)}, not in the current "
                                       "or announced validator set", f"validators of {_sets_text(sets)}"))
            for i, vs in enumerate(sets):
                k = fanout_floor(self.profile, len(vs))
                got = [v for v in picked if v in vs]
                if len(set(got)) < k:
                    rule = "REMP-FANOUT-002" if i == 0 else "REMP-CLIENT-003"
                    which = "the current set" if i == 0 else "the announced next set"
                    problems.append(Breach(rule, f"sent {mid[:8]} to {len(set(got))} of the {len(vs)} validators of {which} "
                                           f"({', '.join(got) or 'none'}); at least {k} required",
                                           f"any {k} or more of {', '.join(vs)}"))
            if problems:
                breaches.extend(problems)
                return
            choose[mid] = picked
            used.add("fanout")
            if len(sets) > 1:
                self._totals = (len(sets[0]), len(union))
        else:
            now = event["time"]
            for mid, picked in sends.items():
                m = fn.msgs.get(mid)
                if m is None:
                    continue  # compared exactly (the reference sends nothing for it)
                if m.final:
                    breaches.append(_final_send(mid, picked, m.answered, fn._pos.get(mid)))
                    return
                bad = [v for v in picked if v not in union]
                if bad:
                    breaches.append(Breach("REMP-CLIENT-004", f"resent {mid[:8]} to {', '.join(bad)}, not in the current or "
                                           "announced set", f"validators of {_sets_text(sets)}"))
                    return
                choose[mid] = picked
            for mid in fn.watch:  # the resends due now: if the implementation makes none, the reference's is missing
                if self.resends_bind and mid not in choose and fn.resend_due(mid, now):
                    m = fn.msgs[mid]
                    self._due[mid] = (m.last_send, len(m.answered), m.total,
                                      [v for vs in sets for v in vs if v not in m.targets])
            if choose:
                used.add("resend_pacing")
        fn.choose = choose or None

    def _total_read(self, exp: list, act: list, used: set) -> list:
        """SentToValidators during an announced switch: the documents do not say whether
        total_validators counts the announced next set (000: "total_validators": 5, next to "It
        sends the message to each validator in the current shard, or to each validator in the
        current shard and to each validator in the next shard"). A total from the current set's
        size up to both sets' passes, its sent_to unchanged (REMP-FANOUT-001 still holds it to
        sent_to <= total_validators in the log)."""
        low, high = self._totals
        self._totals = None
        mine = [o for o in act if o.get("type") == "Publish" and (o.get("receipt") or {}).get("kind") == "SentToValidators"]
        if len(mine) != 1:
            return exp
        total = mine[0]["receipt"].get("total_validators")
        if not isinstance(total, int) or not low <= total <= high:
            return exp
        out = []
        for o in exp:
            r = o.get("receipt") if o.get("type") == "Publish" else None
            if r and r.get("kind") == "SentToValidators" and r.get("total_validators") != total:
                o = dict(o, receipt=dict(r, total_validators=total))
                used.add("fanout")
            out.append(o)
        return out

    def _intermediate_outcome(self, exp: list, act: list, used: set) -> list:
        """A consumer's conclusion before a final outcome: REMP-CLIENT-002 fixes when 'rejected',
        'finalized' and 'lost' may be concluded; which intermediate one to report is the client's
        (outcomes.yaml: what a consumer "may conclude"; 001: "one may trade efficiency for
        reliability ... choosing not to trace further processing results"). Any non-final outcome
        whose condition the receipts seen so far meet passes ('pending' always does)."""
        e = [o for o in exp if o.get("type") == "Outcome"]
        a = [o for o in act if o.get("type") == "Outcome"]
        if len(e) != 1 or len(a) != 1 or e[0] == a[0]:
            return exp
        want, got = e[0], a[0]
        if want.get("final") or want.get("lost") or got.get("final") is not False or got.get("lost") is not False:
            return exp
        if not _outcome_holds(self.ref.machine.c, got.get("name")):
            return exp
        used.add("intermediate_outcome")
        return [got if o is want else o for o in exp]

    def _resend_breaches(self, event, diff: Difference, breaches) -> Difference:
        """A resend the reference made and the implementation did not, told as the requirement says."""
        due, self._due = self._due, {}
        missing = []
        for o in diff.missing:
            info = due.get(o.get("msg_id")) if o.get("type") == "SendToValidator" else None
            if info is None:
                missing.append(o)
                continue
            last, answered, total, left = info
            breaches.append(Breach("REMP-CLIENT-001",
                                   f"{o['msg_id'][:8]} was last sent at {last}, {event['time'] - last} ms ago, and {answered} of "
                                   f"{total} validators answered, yet no validator more got it",
                                   f"send it to one or more of {', '.join(left)} (every "
                                   f"{self.ref.machine.config.retry_interval_ms} ms at the latest)"))
        return Difference(tuple(missing), diff.extra, diff.order)

    # ---- validator: collation order ---------------------------------------------------------------
    def _collation_choice(self, event, actual, breaches, used) -> None:
        v = self.ref.machine
        handed = [o for o in actual if o.get("type") == "HandToCollator"]
        if len(handed) != 1:
            return  # compared exactly: a round hands one list (possibly empty) to the collator
        ids = list(handed[0].get("msg_ids") or [])
        limit = event["max_messages"]
        oldest = v.collation_plan(limit)
        if ids == oldest:
            return
        accepted = v.collation_plan(limit, accepted_first=True)
        plain = v.collation_plan(limit, hold_back=False)
        if ids in (accepted, plain) and "collation_order" in self.free:
            v.choose_order = ids
            used.add("collation_order")
            return
        breaches.append(Breach(self._collation_rule(v, ids, oldest, accepted), f"handed the collator {_short(ids)}",
                               f"{_short(oldest)} (oldest first)"
                               + (f" or {_short(accepted)} (accepted first)" if accepted != oldest else "")
                               + (f" or {_short(plain)} (oldest first, none held back)" if plain not in (oldest, accepted) else "")))

    def _collation_rule(self, v, ids, oldest, accepted) -> str:
        """The requirement a wrong collation breaks, from what the reference knows of the messages."""
        plain = v.collation_plan(len(ids) or 1, hold_back=False)
        for mid in ids:
            if mid in oldest or mid in accepted or mid in plain:
                continue
            m = v.msgs.get(mid)
            if m is None:
                return "REMP-EXPIRY-001" if mid in self.obsolete else "REMP-COLL-001"
            if m.acc is not None or m.done:
                return "REMP-REPLAY-003"
            if m.own_rej:
                return "REMP-COLL-003"
            if m.stopped:
                return "REMP-COLL-002"
            if m.expired or not v._live(m.session):
                return "REMP-EXPIRY-001"  # an obsolete message handed to the collator: to be included after expiry
        for mid in oldest:
            if mid not in ids:
                if mid in self.ignored:  # left out after it was ignored: it did not return to the queue
                    return "REMP-IGN-001"
        return "REMP-COLL-001"

    # ---- validator: hand-over ---------------------------------------------------------------------
    def _handover(self, exp, act, switched, breaches, used):
        cc = switched.cc_before
        ef = [o for o in exp if o.get("type") == "Forwarded"]
        af = [o for o in act if o.get("type") == "Forwarded"]
        if len(ef) != 1 or len(af) > 1:
            return exp, act
        e = ef[0]
        may_leave = "handover_catchain" in self.free
        need_full = [x for x in e["full"] if not (may_leave and x["msg_id"] in cc)]
        need_dig = [x for x in e["digests"] if not (may_leave and x["msg_id"] in cc)]
        rest_e = [o for o in exp if o.get("type") != "Forwarded"]
        rest_a = [o for o in act if o.get("type") != "Forwarded"]
        if not af:
            if need_full or need_dig:
                breaches.append(Breach("REMP-FWD-001", "no hand-over at the session's end",
                                       f"a Forwarded holding {_short(x['msg_id'] for x in need_full)} whole and "
                                       f"{_short(x['msg_id'] for x in need_dig)} as ids"))
            elif "handover_empty" in self.free:
                used.add("handover_empty")
            return rest_e, rest_a
        a = af[0]
        head = ("sender", "session", "to_session")
        if any(a.get(k) != e.get(k) for k in head):
            return exp, act  # compared exactly
        key = lambda x: _key(x)  # noqa: E731
        e_full, e_dig = {key(x) for x in e["full"]}, {key(x) for x in e["digests"]}
        a_full, a_dig = [key(x) for x in a.get("full") or []], [key(x) for x in a.get("digests") or []]
        # the base protocol forwards processed messages as they are; sending them as ids is one of
        # 000's proposals ("Only currently processed messages should be delivered in full"): a
        # processed message handed over whole stands for its digest
        whole = set()
        if "handover_whole" in self.free:
            full_ids = {x.get("msg_id") for x in a.get("full") or [] if isinstance(x, dict)}
            whole = {x["msg_id"] for x in e["digests"] if key(x) not in a_dig and x.get("status") == "accepted" and x["msg_id"] in full_ids}
        extra = ([k for x, k in zip(a.get("full") or [], a_full) if k not in e_full and not (isinstance(x, dict) and x.get("msg_id") in whole)]
                 + [k for k in a_dig if k not in e_dig])
        missing = ([x["msg_id"] for x in need_full if key(x) not in a_full]
                   + [x["msg_id"] for x in need_dig if key(x) not in a_dig and x["msg_id"] not in whole])
        if whole:
            used.add("handover_whole")
        stale, kept = self._obsolete_entries(a, e_full | e_dig, switched)
        if kept:  # copied on under 001's short-session exception
            used.add("short_sessions")
            extra = [k for k in extra if k not in kept.values()]
        if stale:
            breaches.append(Breach("REMP-LIFE-001", f"the hand-over to session {a.get('to_session')} copies on {_short(stale)}, "
                                   "obsolete (received two or more sessions before)",
                                   "leave obsolete messages out of the hand-over"))
            extra = [k for k in extra if k not in stale.values()]
        if extra or missing:
            found = []
            if missing:
                found.append(f"left out {_short(missing)}")
            if extra:
                found.append(f"{len(extra)} entries the reference does not hand over")
            breaches.append(Breach("REMP-FWD-001", "the hand-over " + " and ".join(found),
                                   f"pending {_short(x['msg_id'] for x in e['full'])} whole, processed "
                                   f"{_short(x['msg_id'] for x in e['digests'])} as ids (those received via the catchain may be left out)"))
        elif len(a_full) + len(a_dig) < len(e_full) + len(e_dig):
            used.add("handover_catchain")
        return rest_e, rest_a

    def _obsolete_entries(self, forwarded: dict, expected_keys: set, switched: _Switched) -> tuple[dict, dict]:
        """msg_id -> key of the hand-over's entries the reference leaves out because the message is
        obsolete (its origin session is out of the window, or it turned obsolete at this switch):
        those stale, and those 001's short-session exception still lets it remember."""
        live = switched.live
        out, kept = {}, {}
        for x in list(forwarded.get("full") or []) + list(forwarded.get("digests") or []):
            k = _key(x)
            if k in expected_keys or not isinstance(x, dict):
                continue
            origin = x.get("origin_session")
            mid = x.get("msg_id")
            if (isinstance(origin, int) and not live(origin)) or (mid in self.obsolete and mid not in switched.held_after):
                (kept if self.remembered_longer(origin if isinstance(origin, int) else None) else out)[mid] = k
        return out, kept

    def _kept_past_n2(self, o: dict, side: str, event: dict) -> bool:
        """A Timeout the reference makes at a switch and the implementation does not, for a message
        001's short-session exception still lets it remember."""
        if side != "missing" or o.get("type") != "Receipt" or event.get("type") != "SessionSwitch":
            return False
        r = o.get("receipt") or {}
        if r.get("kind") != "Timeout":
            return False
        return self.role == "validator" and self.remembered_longer(self._held_sessions.get(r.get("msg_id")))

    def remembered_longer(self, origin: int | None) -> bool:
        """001's exception to "obsolete at N+2": "when master sessions are shorter than specified in
        config, then the message is remembered longer, until total session lifetime exceeds twice
        of mc_catchain_lifetime". True when a message received in session ``origin`` is still within
        that total at the current session (both readings pass: obsolete at N+2, or remembered)."""
        if "short_sessions" not in self.free or origin is None or self.session is None or not self.lifetime_ms:
            return False
        first, now = self.starts.get(origin), self.starts.get(self.session)
        return first is not None and now is not None and now - first < 2 * self.lifetime_ms

    # ---- validator: catchain records the documents let it add or leave out --------------------------
    def _records(self, exp, act, used):
        """Copies and votes in the catchain: a further "new" record of a message is the base protocol
        (000: "There are N^2 messages in catchain per external message"; not re-broadcasting is one
        of the "Proposals for speeding up"), and accept or reject records "may be removed or
        limited without any great damage to the protocol" (000). Such a record the reference does
        not make, or makes and the implementation leaves out, is taken out of the comparison."""
        free = self.free
        if "catchain_copies" not in free and "vote_records" not in free:
            return exp, act

        def rec(o):
            return o.get("record") if o.get("type") == "CatchainBroadcast" else None

        keys = lambda outs: [_key(normalize(o)) for o in outs]  # noqa: E731
        ek, ak = keys(exp), keys(act)
        if "catchain_copies" in free:
            extra = [i for i, o in enumerate(act) if (rec(o) or {}).get("kind") == "new" and ak[i] not in ek]
            if extra:
                used.add("catchain_copies")
                act = [o for i, o in enumerate(act) if i not in extra]
                ak = [k for i, k in enumerate(ak) if i not in extra]
        if "vote_records" in free:
            left = [i for i, o in enumerate(exp) if (rec(o) or {}).get("kind") in ("accept", "reject") and ek[i] not in ak]
            if left:
                used.add("vote_records")
                exp = [o for i, o in enumerate(exp) if i not in left]
        return exp, act

    # ---- validator: receipts (ever-node pacing, skipping; Duplicate reported or not) ------------------
    def _receipts(self, event, exp, act, breaches, used):
        may_omit_dup = FREEDOM_FOR_DUPLICATE in self.free
        if not (self.paced or self.skip or may_omit_dup):
            return exp, act
        if not self.pending and exp == act:  # each receipt made was sent as made, none is waiting
            self.made += sum(1 for o in exp if o.get("type") == "Receipt")
            return exp, act
        er = [o for o in exp if o.get("type") == "Receipt"]
        ar = [o for o in act if o.get("type") == "Receipt"]
        rest_e = [o for o in exp if o.get("type") != "Receipt"]
        rest_a = [o for o in act if o.get("type") != "Receipt"]
        a_keys = [_key(normalize(o)) for o in ar]
        a_left = list(a_keys)
        unmatched_e = []
        for o in er:
            k = _key(normalize(o))
            r = o["receipt"]
            self.made += 1
            if k in a_left:
                a_left.remove(k)
                self._overtake(r["msg_id"], self.made)
                continue
            unmatched_e.append((k, r, self.made))
        keep_a = []
        for k, o in zip(a_keys, ar):
            if k not in a_left:
                continue
            a_left.remove(k)
            # the latest waiting receipt equal to it: a coalescing sender sends the last one made, which
            # replaces every older one of the message (an equal older one included)
            hit = max((p for p in self.pending if p[0] == k), key=lambda p: p[6], default=None)
            if hit is None:
                keep_a.append(o)
                continue
            self.pending.remove(hit)
            self._overtake(hit[3], hit[6])
            used.add("paced_sending")
        keep_e = []
        time = event.get("time", event.get("start_time"))
        for k, r, made in unmatched_e:
            final = r["kind"] in self.final_kinds
            if self.paced:
                self.pending.append([k, self.seq, time if time is not None else r.get("time", 0), r["msg_id"], r["kind"], final, made])
                continue
            if may_omit_dup and r["kind"] == "Duplicate":
                used.add(FREEDOM_FOR_DUPLICATE)
                continue
            if self.skip and not final:
                used.add("skip_intermediate")
                continue
            keep_e.append({"type": "Receipt", "receipt": r})
        if self.paced and event.get("type") == "Tick":
            now = event["time"]
            for p in list(self.pending):
                if p[2] + self.bound <= now:
                    self.pending.remove(p)
                    if p[5]:
                        breaches.append(Breach("REMP-SEND-001", f"Receipt {p[4]} of {p[3][:8]} made at step {p[1]} "
                                               f"(time {p[2]}) was not sent by the Tick at {now}",
                                               f"send it by {p[2] + self.bound} (the pacing bound, {self.bound} ms), "
                                               "or replace it by a later receipt of the message"))
                    else:
                        used.add("skip_intermediate")
        return rest_e + keep_e, rest_a + keep_a

    def _overtake(self, mid: str, made: int) -> None:
        """A receipt of ``mid`` made at ``made`` was sent: the older ones still waiting were replaced."""
        for p in [p for p in self.pending if p[3] == mid and p[6] < made]:
            self.pending.remove(p)
            if not p[5]:
                self.used_total["skip_intermediate"] = self.used_total.get("skip_intermediate", 0) + 1
            else:
                self.used_total["paced_sending"] = self.used_total.get("paced_sending", 0) + 1

    # ---- attribution ------------------------------------------------------------------------------
    def _attribute(self, j: Judgement, event: dict, settled: str | None) -> list:
        return [r for r in self._attribute_all(j, event, settled) if binds(r, self.profile)]

    def _attribute_all(self, j: Judgement, event: dict, settled: str | None) -> list:
        """The requirements a step's departure breaks (empty: the difference is informational).

        A breach the judge found names its rule; the outputs that then differ from the reference's
        are its consequence (the reference was not stepped with the refused choice), so naming the
        rule of each such output's type would blame rules the implementation kept. Without a
        breach, each missing output is paired with an extra one about the same thing, and the pair
        is judged by the fields that differ (:func:`_rule_of_pair`); an unpaired output by what it
        is and on which side (:func:`_rule_of_output`: a missing output breaks a requirement only
        where the documents oblige it, an extra one only where they forbid it). A receipt that is
        missing counts against REMP-SEND-001 only when nothing else explains the step. The rules
        named for receipts alone are kept in ``j.receipt_rules``. ``settled``: for a validator's
        step on a copy of a message it knew as settled (processed, or finally rejected) before it
        came, the rule queuing it again breaks (:func:`_requeued`)."""
        rules = [b.rule for b in j.breaches]
        if rules:
            return list(dict.fromkeys(rules))
        own, by_receipt, sent = [], [], []
        missing, extra = list(j.diff.missing), list(j.diff.extra)
        for e, a in _paired(missing, extra):
            r = _requeued(e, settled) or _rule_of_pair(e, a)
            if r:
                (by_receipt if e.get("type") in RECEIPT_OUTPUTS else own).append(r)
        for o, side in [(o, "missing") for o in missing] + [(o, "extra") for o in extra]:
            if self._kept_past_n2(o, side, event):
                j.used.add("short_sessions")
                continue
            r = _requeued(o, settled) or _rule_of_output(self.role, o, event, side) or _other_status(o, side, j.expected)
            if r == "REMP-SEND-001":
                sent.append(r)
            elif r:
                (by_receipt if o.get("type") in RECEIPT_OUTPUTS else own).append(r)
        if j.diff.order and self.role == "validator":
            own.append("REMP-COLL-001")
        if not own and not by_receipt and sent:
            by_receipt = sent
        j.receipt_rules = set(by_receipt) - set(own)
        return list(dict.fromkeys(own + by_receipt))


def _other_status(o: dict, side: str, expected: list) -> str | None:
    """An extra receipt of a validator where the reference made another one for the same message at
    this step (left out of the comparison where the profile lets receipts be skipped or paced): of
    another kind, the validator reports a status the message does not have there (REMP-STATUS-001);
    of the same kind naming another block, the block is not the one holding it (REMP-INCL-001)."""
    if side != "extra" or o.get("type") != "Receipt":
        return None
    r = o.get("receipt") or {}
    for e in expected:
        er = e.get("receipt") if e.get("type") == "Receipt" else None
        if not er or er.get("msg_id") != r.get("msg_id") or er.get("source_id") != r.get("source_id"):
            continue
        if er.get("kind") != r.get("kind"):
            return "REMP-STATUS-001"
        if er.get("block") != r.get("block"):
            return "REMP-INCL-001"
    return None


def _requeued(o: dict, settled: str | None) -> str | None:
    """What a validator makes of a copy (from the full node or the catchain) of a message it knew
    as settled, when that differs from the reference's: it took the copy for a new message, on
    its way to the collator again. Processed (in an accepted block, or an "accepted" digest of a
    hand-over, kept for replay protection): REMP-REPLAY-003; finally rejected (2/3 of the
    validators, or a "rejected" digest): REMP-COLL-002."""
    if settled is None or o.get("type") not in ("Receipt", "CatchainBroadcast"):
        return None
    return settled


def _settled_rule(m) -> str | None:
    """The rule a validator breaks by queuing a copy of message ``m`` (the reference's record of it)
    again: REMP-REPLAY-003 when it was processed, REMP-COLL-002 when finally rejected by others;
    None when it is open (or unknown)."""
    if m is None:
        return None
    if m.acc is not None or m.done:
        return "REMP-REPLAY-003"
    if m.stopped and not m.own_rej:
        return "REMP-COLL-002"
    return None


def _outcome_holds(consumer, name) -> bool:
    """Whether the non-final outcome ``name`` of outcomes.yaml is true of what ``consumer`` (the
    reference's receipt consumer) has seen: its condition alone, evaluated as the consumer does."""
    from rmkit.reference_impl.remp.outcome import evaluate_outcome

    rules = [(n, final, when) for n, final, when in consumer._model.outcomes if n == name and not final]
    if name == "pending":
        return True
    if not rules:
        return False
    queued = consumer._queued()
    # a validator that queued the message (outcomes.yaml queued_by: an Ignored status returns it to
    # its "New" state, 000) counts as its PutIntoQueue, as for the outcome rules' positions
    kinds = set(consumer.kinds) | ({"PutIntoQueue"} if queued else set())
    return evaluate_outcome(rules, kinds, [st.position for st in queued])[0] == name


def _final_send(mid: str, picked: list, answered, position) -> Breach:
    """A send of a message whose story is over for the full node. Rejected at pre-evaluation: 001
    "it's a final decision, message will not be resent again" (REMP-FN-001: never sent to
    validators). Finalized: 001 "the statuses that are final (that is, nothing is happening after
    it)", and a resend is due only while too few validators answered (REMP-CLIENT-001, ever-node); the
    validators it reached would queue a committed message and report on it after its Finalized."""
    to = ", ".join(str(v) for v in picked)
    if position == "rejected":
        return Breach("REMP-FN-001", f"sent {mid[:8]} to {to} after rejecting it (RejectedByFullnode)",
                      "never send a message the full node rejected")
    return Breach("REMP-CLIENT-004", f"sent {mid[:8]} to {to} after it was finalized",
                  "no further sends once the message is final")


def _sets_text(sets) -> str:
    return " and ".join("{" + ", ".join(vs) + "}" for vs in sets)


RECEIPT_OUTPUTS = ("Receipt", "Publish")
# the fields of a receipt whose difference is the schema's: present in the reference's, absent (or
# present where it has none) in the implementation's
SCHEMA_FIELDS = ("receipt.error", "record.error")
# the fields of a receipt that name the block holding the message (001's receipt examples: "shard
# block the message was included to"; master block fields of Finalized are REMP-FIN-002's)
BLOCK_FIELDS = ("receipt.block",)
# what each kind of catchain record tells the others, and the requirement that obliges it to be true
RECORD_RULES = {"new": "REMP-QUEUE-001", "accept": "REMP-VOTE-001", "reject": "REMP-VOTE-001",
                "forward": "REMP-FWD-001", "digest": "REMP-FWD-001"}


def _subject(o: dict) -> tuple:
    """What an output is about, to pair a missing output with the extra one that came instead."""
    t = o.get("type")
    if t in ("Receipt", "Publish"):
        r = o.get("receipt") or {}
        return t, r.get("kind"), r.get("msg_id"), r.get("source_id")
    if t == "CatchainBroadcast":
        r = o.get("record") or {}
        return t, r.get("kind"), r.get("msg_id")
    if t == "Forwarded":
        return t, o.get("session")
    if t == "SendToValidator":
        return t, o.get("msg_id"), o.get("validator")
    return (t,)


def _paired(missing: list, extra: list) -> list:
    """(expected, actual) pairs of outputs about the same thing that differ in their fields; taken
    out of ``missing`` and ``extra``."""
    pairs = []
    for same in (_subject, _loose_subject):  # the same thing first, then a receipt of another kind
        for e in list(missing):
            a = next((x for x in extra if same(x) == same(e)), None)
            if a is not None:
                missing.remove(e)
                extra.remove(a)
                pairs.append((e, a))
    return pairs


def _loose_subject(o: dict) -> tuple:
    """A receipt's message and source (not its kind): a receipt of another kind came instead."""
    t = o.get("type")
    if t in RECEIPT_OUTPUTS:
        r = o.get("receipt") or {}
        return t, r.get("msg_id"), r.get("source_id")
    return _subject(o)


def _flat(o, prefix="") -> dict:
    out = {}
    if isinstance(o, dict):
        for k, v in o.items():
            out.update(_flat(v, f"{prefix}{k}."))
    else:
        out[prefix[:-1]] = o
    return out


def _rule_of_pair(expected: dict, actual: dict) -> str | None:
    """The requirement a pair of outputs about the same thing breaks, by the fields that differ;
    None when none names the difference (it is informational). A field the schema requires left out
    (or one added) is REMP-SCHEMA-001's; a receipt of another kind than the events call for says a
    status the message does not have at that validator (REMP-STATUS-001), unless the log rules
    name it better; a validator's receipt naming another block than the one holding the message is
    REMP-INCL-001's; a SentToValidators whose sent_to is not the number of validators the message
    went to is REMP-COUNT-001's (REMP-FANOUT-001 where it exceeds total_validators); a catchain
    record that tells another story is the requirement of its kind (:data:`RECORD_RULES`)."""
    e, a = _flat(expected), _flat(actual)
    fields = {k for k in set(e) | set(a) if e.get(k) != a.get(k)}
    t = expected.get("type")
    if not fields:
        return None
    if fields <= set(SCHEMA_FIELDS):
        return "REMP-SCHEMA-001"
    er, ar = expected.get("receipt") or {}, actual.get("receipt") or {}
    if "receipt.kind" in fields:
        if t == "Receipt":
            return "REMP-STATUS-001"
        return "REMP-RELAY-001" if expected.get("role") == "validator" else None
    if t == "Publish" and er.get("kind") == "SentToValidators":
        sent, total = ar.get("sent_to"), ar.get("total_validators")
        if isinstance(sent, int) and isinstance(total, int) and sent > total:
            return "REMP-FANOUT-001"
        if "receipt.sent_to" in fields:
            return "REMP-COUNT-001"
        return None
    if t == "Publish" and er.get("kind") == "Finalized" and any(
            f.startswith(("receipt.block", "receipt.mc_block")) for f in fields):
        return "REMP-FIN-002"  # Finalized names another block than the one the masterchain committed
    if t in RECEIPT_OUTPUTS and any(f.startswith(BLOCK_FIELDS) for f in fields):
        return "REMP-INCL-001"
    if t == "Publish" and expected.get("role") == "validator" and any(f.startswith("receipt.") for f in fields):
        return "REMP-RELAY-001"  # a validator's receipt passed on changed
    if t == "CatchainBroadcast":
        return RECORD_RULES.get((expected.get("record") or {}).get("kind"))
    if t == "Forwarded":
        return "REMP-FWD-001"
    if t == "HandToCollator":
        return "REMP-COLL-001"
    if t == "Outcome":
        return "REMP-CLIENT-002"
    if t == "BlockRefused":
        return "REMP-VALID-001"
    return None


def _rule_of_output(role: str, o: dict, event: dict, side: str = "missing") -> str | None:
    """The requirement an output the judge could not accept breaks, when no output of the other
    side is about the same thing (``side``: the reference's output is ``missing``, or the
    implementation's is ``extra``); None: no requirement names it (the log rules the receipts break
    are added by :mod:`.rulecheck`). Only what the documents oblige counts when missing, and only
    what they forbid when extra: a further copy of a message in the catchain is the base protocol
    (000: "There are N^2 messages in catchain per external message"; not re-broadcasting a copy
    received via the catchain is one of its "Proposals for speeding up"), and accept or reject
    records "may be removed or limited" (000)."""
    t = o.get("type")
    if t == "BlockRefused":
        # declining is required where a message of the block was already accepted (000); a further
        # refusal is no requirement's to judge (the liveness of a shard is the log's, REMP-LIVE-001)
        return "REMP-VALID-001" if side == "missing" else None
    if t == "Forwarded":
        return "REMP-FWD-001"
    if t == "CatchainBroadcast":
        kind = (o.get("record") or {}).get("kind")
        if kind == "new":
            return "REMP-QUEUE-001" if side == "missing" else None
        if kind in ("accept", "reject"):
            return "REMP-VOTE-001" if side == "extra" else None  # a record of a verdict the collator did not give
        return RECORD_RULES.get(kind)
    if t == "HandToCollator":
        return "REMP-COLL-001"
    if t == "Receipt":
        kind = (o.get("receipt") or {}).get("kind")
        if kind == "Timeout":  # a Timeout missing (or made) at a switch: the message's lifetime (obsolete at N+2)
            return "REMP-LIFE-001"
        return "REMP-SEND-001" if side == "missing" else None  # an extra one: the log rules say what it breaks
    if t == "SendToValidator":
        return "REMP-CLIENT-001" if event.get("type") == "Tick" else "REMP-FANOUT-002"
    if t == "Outcome":
        return "REMP-CLIENT-002"
    if t == "Publish":
        kind = (o.get("receipt") or {}).get("kind")
        if kind in ("Finalized", "RejectedByFullnode"):
            return {"Finalized": "REMP-FIN-001", "RejectedByFullnode": "REMP-FN-001"}[kind]
        if o.get("role") == "validator":
            return "REMP-RELAY-001" if side == "missing" else None  # a validator's receipt not passed on
        return None
    return None
