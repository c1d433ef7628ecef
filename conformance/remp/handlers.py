# cython: annotation_typing=False
"""The REMP log rules, one handler per rule, registered by rule id.

The checker (:mod:`.checker`) is the engine: it reads the lines (files, Kafka envelopes), interns
ids, keeps the log's clock, sweeps closed messages, and records what each receipt tells about its
message (:mod:`.state`). At each moment a rule can be decided it raises an event; the handler
that listens to that event judges the rule and reports a finding. A handler is a small class
registered with :func:`handles` for the rule ids it judges; its ``on_<event>`` methods are its
listeners. Every rule id of ``spec/remp/rules.yaml`` has exactly one handler
(``tests/remp/test_remp_handlers.py``), and one handler may judge a few rules that one moment decides
together (REMP-SEQ-001 and REMP-SRC-001/002: a receipt its source's state machine does not allow).

Why events and not a call of every handler per receipt: the checker reads a million receipts in a
few seconds, and a call costs about a tenth of a microsecond; so the engine calls a handler only at
the moment its rule can be decided (a first inclusion into a block, a second Finalized, a message
closing), with cheap tests of the receipt's facts (is there a schema problem, is the kind outside
the profile's table) as the guards. Each event has one listener (:class:`Hooks` checks that).

To change a rule: its entry in rules.yaml, its handler here, its fixture (fixtures/remp/rules), its
injector (:mod:`.faults`) or the rule's ``not_planted`` reason, and its traceability
(CONTRIBUTING.md "Changing a REMP rule").
"""

from __future__ import annotations

import time

from rmkit.protocols.remp.model import VALIDATOR
from rmkit.rulehandlers import EventHooks, RuleRegistry
from rmkit.rules import OFF

REGISTRY = RuleRegistry()  # rule id -> the handler class that judges it
handles = REGISTRY.handles
INCLUSION_KINDS = ("IncludedIntoBlock", "IncludedIntoAcceptedBlock")
RELEASE_KINDS = ("IgnoredByMasterchain", "RejectedByMasterchain")  # the masterchain frees an accepted block's messages
REJECT_POSITIONS = ("rejected", "timed_out")


class Handler:
    """A rule handler: built once per run with the checker it judges for (``ck``), whose
    ``_violate`` reports a finding in the profile's mode (nothing when the rule is off)."""

    rules: tuple[str, ...] = ()

    def __init__(self, ck):
        self.ck = ck
        self.model = ck.model
        self.violate = ck._violate


class Hooks(EventHooks):
    """The engine's events bound to this protocol's handlers (:class:`rmkit.rulehandlers.EventHooks`)."""

    def __init__(self, ck):
        super().__init__(REGISTRY, ck)


def _name(kind) -> str | None:
    return kind if type(kind) is str else None


# ---- reading ----------------------------------------------------------------------------------
@handles("REMP-INPUT-001")
class UnreadableLine(Handler):
    """A line that is not a receipt (not JSON, not an object, a broken Kafka record): counted,
    and listed up to the report's limit; the rest of the log is still read."""

    def on_unreadable(self, ref: int, error: str, field: str | None = None) -> None:
        ck = self.ck
        rep = ck._rep
        rep.unreadable += 1
        if len(rep.input_problems) < max(ck.max_examples, 1) or not ck.max_examples:
            rep.input_problems.append(ck._input_problem(ref, error, field))
        mode = ck.modes["REMP-INPUT-001"]
        if mode != OFF:
            rep.count("REMP-INPUT-001", mode)


@handles("REMP-INPUT-002")
class KafkaKey(Handler):
    """A Kafka record's key is its receipt's message id."""

    def on_kafka_key(self, key, mid, kind, src, ref: int) -> None:
        """``mid``, ``kind``, ``src``: the receipt's fields as the record holds them."""
        if type(mid) is not str:
            return  # no id to compare with: REMP-SCHEMA-001 reports it
        fold = self.model.ids_fold_case
        if type(key) is str and (key.lower() == mid.lower() if fold else key == mid):
            return
        found = "no key" if key is None else repr(key)[:80]
        self.violate("REMP-INPUT-002", mid.lower() if fold else mid, f"Kafka record key: expected the message id {mid[:16]}…, found {found}",
                     [(ref, _name(kind), src if type(src) is str else None)])


@handles("REMP-SCHEMA-001")
class Schema(Handler):
    """A receipt whose fields break its kind's schema (the engine collects the problems as it
    reads the fields: ``bad``)."""

    def on_schema(self, mid, kind, bad: list[str], ref: int, src) -> None:
        self.violate("REMP-SCHEMA-001", mid, f"{kind if type(kind) is str else 'receipt'}: " + "; ".join(bad),
                     [(ref, _name(kind), src)])

    def on_no_message(self, kind, bad: list[str], ref: int, src) -> None:
        self.violate("REMP-SCHEMA-001", None, "receipt names no readable message: " + "; ".join(bad), [(ref, _name(kind), src)])


@handles("REMP-KIND-001")
class UnknownKind(Handler):
    def on_unknown_kind(self, mid, kind, ref: int, src) -> None:
        self.violate("REMP-KIND-001", mid, self.ck._kind_hint(kind), [(ref, _name(kind), src)])


@handles("REMP-KIND-002")
class KindOutsideTable(Handler):
    def on_kind_outside_table(self, mid, kind: str, ref: int, src) -> None:
        self.violate("REMP-KIND-002", mid, f"{kind} is not in the {self.ck.profile} profile's status table", [(ref, kind, src)])


# ---- time -------------------------------------------------------------------------------------
@handles("REMP-TIME-001")
class ZeroTime(Handler):
    """A receipt stamped 0 by a role that must stamp its receipts; and the log's latest time, held
    by one source alone far ahead of every other (a wrong clock, which the log's clock ignored)."""

    def __init__(self, ck):
        super().__init__(ck)
        self.zero_roles = self.model.zero_time_roles

    def on_zero_time(self, mid, kind: str, role, issuers, src, ref: int) -> None:
        if role not in self.zero_roles if role else not issuers & self.zero_roles:
            self.violate("REMP-TIME-001", mid, f"{kind} from {role} {src} has timestamp 0", [(ref, kind, src)])

    def on_clock_outlier(self, top: tuple, hwm: int) -> None:
        t, ref, mid, kind, key = top
        ahead = (t - hwm) / 1000
        src = key if key != mid else None
        self.violate("REMP-TIME-001", mid if isinstance(mid, str) else None,
                     f"timestamp {t} is {ahead:,.0f} s ahead of every other source's; the log's clock did not follow it",
                     [(ref, _name(kind), src)])


@handles("REMP-TIME-002")
class SecondsTimestamp(Handler):
    """A timestamp that reads as unix seconds, reported once per source. A share of a sharded run
    keeps its first finding per source (``ck.seconds_first``), and the merge the earliest one."""

    def __init__(self, ck):
        super().__init__(ck)
        self.on = ck.modes["REMP-TIME-002"] != OFF

    def on_seconds(self, ts: int, kind, mid, src, ref: int) -> None:
        if not self.on:
            return
        key = src if type(src) is str else None
        first = self.ck.seconds_first
        if key in first:
            return
        mid = mid if type(mid) is str else None
        kind = _name(kind)
        why = (f"timestamp {ts} reads as unix seconds ({time.strftime('%Y-%m-%d', time.gmtime(ts))}); "
               f"as milliseconds it would be {time.strftime('%Y-%m-%d', time.gmtime(ts // 1000))}")
        first[key] = (ref, mid, why, kind)
        self.violate("REMP-TIME-002", mid, why, [(ref, kind, key)])


# ---- sources: roles, signatures, state machines -----------------------------------------------
@handles("REMP-ROLE-001")
class Roles(Handler):
    """A source that is neither validator nor full node of the --validators file, or issues a
    kind its role may not issue (declared, or shown by an earlier receipt). A sharded run's merge
    adds the sources whose roles differ between shares (:func:`.parallel._role_conflict`)."""

    def __init__(self, ck):
        super().__init__(ck)
        # with keys, a source outside the validator set is REMP-SIG-003's finding, not a role problem
        self.unknown_is_role = not (ck.keyed and ck.modes["REMP-SIG-003"] != OFF)

    def on_unknown_source(self, mid, kind: str, src: str, ref: int) -> None:
        if self.unknown_is_role:
            self.violate("REMP-ROLE-001", mid, f"source {src} is neither a validator nor a full node of the --validators file",
                         [(ref, kind, src)])

    def on_role_breach(self, mid, kind: str, issuers, src: str, role: str, ref: int, shown_ref: int | None) -> None:
        """``shown_ref``: the receipt the role was inferred from (None: the role was declared)."""
        may = " or ".join(sorted(issuers))
        if shown_ref is None:
            self.violate("REMP-ROLE-001", mid, f"{kind} may be issued by {may}, but {src} is a {role}", [(ref, kind, src)])
        else:
            self.violate("REMP-ROLE-001", mid, f"{kind} may be issued by {may}, but {src} acted as a {role} before",
                         [(shown_ref, None, src), (ref, kind, src)])


@handles("REMP-SIG-001")
class SignatureFormat(Handler):
    """A receipt's signature is there (where the profile requires it of the role) and well-formed."""

    def __init__(self, ck):
        super().__init__(ck)
        m = self.model
        self.sig_ok = m.signature_check
        self.required = m.signature_required
        self.unsigned_roles = m.unsigned_roles

    def on_signature_format(self, sig, mid, kind: str, role, issuers, src, ref: int) -> bool | None:
        """The signature's format: True good, False bad, None missing."""
        if sig is None or sig == "":
            if self.required and (role not in self.unsigned_roles if role else not issuers & self.unsigned_roles):
                self.violate("REMP-SIG-001", mid, f"{kind} from {src} carries no signature", [(ref, kind, src)])
            return None
        if not self.sig_ok(sig):
            self.malformed(sig, mid, kind, src, ref)
            return False
        return True

    def on_late_signature_format(self, sig, mid, kind: str, src, ref: int) -> bool | None:
        """A late receipt's (its message judged): only a malformed signature is reported."""
        fmt = None if sig is None or sig == "" else bool(type(sig) is str and self.sig_ok(sig))
        if fmt is False and self.ck.modes["REMP-SIG-001"] != OFF:
            self.malformed(sig, mid, kind, src, ref)
        return fmt

    def malformed(self, sig, mid, kind: str, src, ref: int) -> None:
        self.violate("REMP-SIG-001", mid, f"signature: expected {self.model.signature_expected}, found {str(sig)[:40]!r}",
                     [(ref, kind, src)])


_decode_signature = _signed_bytes = _ConversionError = _open = _BadSignature = None  # set by _signature_tools


def _signature_tools():
    """The TL serializer and libsodium, imported only when signatures are checked."""
    global _decode_signature, _signed_bytes, _ConversionError, _open, _BadSignature
    from nacl.bindings import crypto_sign_open as _open
    from nacl.exceptions import BadSignatureError as _BadSignature

    from rmkit.protocols.remp.signing import signature_bytes as _decode_signature
    from rmkit.protocols.remp.tlreceipt import signed_bytes as _signed_bytes

    _ConversionError = ValueError  # the receipt's conversion error and the TL codec's error both are


def _session_window(vs, t: int) -> tuple:
    """(from, until, members, index) of the session of validator set ``vs`` in force at ``t``."""
    idx = vs.session_index_at(t)
    starts = vs.starts
    lo = starts[idx] if idx >= 0 else -(1 << 63)
    hi = starts[idx + 1] if idx + 1 < len(starts) else 1 << 63
    return lo, hi, vs.members(idx), idx


@handles("REMP-SIG-002", "REMP-SIG-003", "REMP-SIG-004")
class SignatureOrigin(Handler):
    """With a validator set that has keys: the source is a member of the validator set of its
    session (003), its signature verifies (002), and a role that relays unsigned receipts cannot
    prove their origin (004). One handler, as one verification decides all three."""

    def __init__(self, ck):
        super().__init__(ck)
        self.win = None  # (from t, until t, members, session index) of the last receipt's session
        if ck.keyed:
            _signature_tools()

    def on_signature(self, obj: dict, src: str, role, issuers, t, ref: int, kind: str, mid, sig_fmt, schema_bad) -> None:
        ck = self.ck
        counts = ck.sig_counts
        vs = ck.validator_set
        kid = src.lower()
        pk = vs.keys.get(kid)
        if t is not None and vs.timed:
            win = self.win
            if win is None or not win[0] <= t < win[1]:
                win = self.win = _session_window(vs, t)
            members, idx = win[2], win[3]
        else:
            members, idx = vs.members(None), None
        outside = kid not in members
        if outside:  # counted here, once: the signature below may still be reported, not counted
            counts["unknown_source" if pk is None else "outside_session"] += 1
            if pk is None:
                why = f"source {src} is not the key id of any validator or full node of the validator set {vs.path}"
            else:
                why = (f"{kind} from validator {src} (of session(s) {', '.join(map(str, vs.session_of(kid)))}) at time {t}, "
                       f"when it is not in the validator set: {vs.describe_window(idx)}")
            self.violate("REMP-SIG-003", mid, why, [(ref, kind, src)])
        if pk is None:
            return  # no key: the signature cannot be checked
        sig = obj.get("signature")
        if sig is None or sig == "":
            if not outside:
                counts["unsigned"] += 1
            if role in self.model.unsigned_roles if role else issuers & self.model.unsigned_roles:
                self.violate("REMP-SIG-004", mid, f"{kind} from {role or 'source'} {src} is unsigned: its origin cannot be verified",
                             [(ref, kind, src)])
            return  # otherwise REMP-SIG-001 reports the missing signature
        if sig_fmt is False:
            if not outside:
                counts["malformed"] += 1
            return  # REMP-SIG-001 reports the signature's format
        try:
            raw = _decode_signature(obj)
            data = _signed_bytes(obj)
        except _ConversionError as exc:
            if not outside:
                counts["malformed"] += 1
            if not schema_bad:  # a receipt that breaks the schema is REMP-SCHEMA-001's finding
                self.violate("REMP-SIG-002", mid, f"{kind} from {src} cannot be verified: {exc}", [(ref, kind, src)])
            return
        try:
            _open(raw + data, pk)
        except _BadSignature:
            if not outside:
                counts["invalid"] += 1
            self.violate("REMP-SIG-002", mid, f"the signature of {kind} does not verify with the key of its source {src}: "
                                              "the receipt was changed after signing, or another key signed it", [(ref, kind, src)])
            return
        if not outside:
            counts["valid"] += 1


@handles("REMP-SEQ-001", "REMP-SRC-001", "REMP-SRC-002")
class SourceTransitions(Handler):
    """A receipt its source's state machine does not allow where the source stands: after the
    source's final receipt (SRC-001 a validator, SRC-002 the full node), else out of order (SEQ-001)."""

    def on_transition_breach(self, mid, kind: str, role: str, src: str, st, allowed, ref: int) -> None:
        pos = st.pos
        if pos in self.model.roles[role].final:
            rule = "REMP-SRC-001" if role == VALIDATOR else "REMP-SRC-002"
            self.violate(rule, mid, f"{kind} from {role} {src} after its final {st.last_kind}",
                         [(st.last_ref, st.last_kind, src), (ref, kind, src)])
        else:
            what = "as its first receipt" if pos == "none" else f"after {st.last_kind}"
            self.violate("REMP-SEQ-001", mid, f"{kind} from {role} {src} {what}; the {self.ck.profile} profile allows it only "
                                              f"in positions: {', '.join(sorted(allowed)) or 'none'}",
                         [(st.last_ref, st.last_kind, src), (ref, kind, src)] if pos != "none" else [(ref, kind, src)])


# ---- one message's receipts as they arrive ------------------------------------------------------
@handles("REMP-FANOUT-001", "REMP-FANOUT-002")
class Fanout(Handler):
    """SentToValidators: sent to no more validators than there are (001), and to at least the
    profile's floor of them (002). One handler: one comparison of sent_to with total_validators."""

    def on_sent(self, mid, n: int, total: int, ref: int, kind: str, src) -> None:
        if n > total:
            self.violate("REMP-FANOUT-001", mid, f"sent_to {n} > total_validators {total}", [(ref, kind, src)])
        else:
            need = self.model.threshold("fanout_min", total)
            if n < need:
                self.violate("REMP-FANOUT-002", mid, f"sent to {n} of {total} validators; at least {need} are needed", [(ref, kind, src)])


def _base_t(msg):
    """When a validator first received the message (its first PutIntoQueue, else its first receipt)."""
    return msg.put_t if msg.put_t is not None else msg.first_t


@handles("REMP-EXPIRY-001")
class InclusionAfterExpiry(Handler):
    """The first inclusion into a block later than the expiry bound after a validator first
    received the message (the time proxy; with session start times REMP-EXPIRY-003 judges instead)."""

    def on_first_inclusion(self, msg, kind: str, block: str, ref: int, t, src) -> None:
        base_t = _base_t(msg)
        expiry_ms = self.ck.expiry_ms
        if t is not None and base_t is not None and t - base_t > expiry_ms:
            self.violate("REMP-EXPIRY-001", msg.id,
                         f"first included into block {block[:16]}… {(t - base_t) / 1000:.1f} s after a validator first received it; "
                         f"the {self.ck.profile} profile keeps a message at most {expiry_ms / 1000:.0f} s",
                         [(msg.first_ref, None, None), (ref, kind, src)])


@handles("REMP-EXPIRY-002")
class EarlyTimeout(Handler):
    """A Timeout earlier than the spec's floor (a share of one lifetime, since a session may close
    early) after the message was first queued (measured from the earliest queueing seen, so a
    validator that got it later is not wronged). With session start times REMP-EXPIRY-004 judges."""

    def on_timeout(self, msg, ref: int, t, src) -> None:
        base_t = _base_t(msg)
        ck = self.ck
        floor_ms = int(ck.lifetime_s * 1000 * self.model.timeout_floor_lifetimes)
        if t is not None and base_t is not None and t - base_t < floor_ms:
            self.violate("REMP-EXPIRY-002", msg.id,
                         f"Timeout from {src} {(t - base_t) / 1000:.1f} s after the message was first queued; a message is tracked at least "
                         f"one lifetime, and no session closes as early as {floor_ms / 1000:.0f} s",
                         [(msg.first_ref, None, None), (ref, "Timeout", src)])


class _Sessions(Handler):
    """Rules judged by master session (the --validators file's session start times)."""

    def session_of(self, t) -> int | None:
        """Index of the session in force at ``t``; None when unknown."""
        idx = self.ck.validator_set.session_index_at(t) if t is not None else None
        return idx if idx is not None and idx >= 0 else None

    def session_name(self, idx: int) -> str:
        return f"session {self.ck.validator_set.sessions[idx].seqno}"

    @property
    def after_sessions(self) -> int:
        return self.model.session_rules["documents"]["obsolete_after_sessions"]


@handles("REMP-EXPIRY-003")
class ObsoleteInclusion(_Sessions):
    """The first inclusion into a block in a session where the message is obsolete."""

    def obsolete_index(self, n: int) -> int | None:
        """The session index from which a message received in session ``n`` is obsolete: N+2
        (lifetimes.session_rules.documents), or later while the sessions since N started last
        less than twice mc_catchain_lifetime together (001's short-session exception). None when
        the file lists no such session."""
        starts = self.ck.validator_set.starts
        k = n + self.after_sessions
        span_ms = self.after_sessions * self.ck.lifetime_s * 1000
        while k < len(starts) and starts[k] - starts[n] < span_ms:
            k += 1
        return k if k < len(starts) else None

    def on_first_inclusion_by_session(self, msg, kind: str, block: str, ref: int, t, src) -> None:
        n, at = self.session_of(_base_t(msg)), self.session_of(t)
        if n is None or at is None:
            return
        gone = self.obsolete_index(n)
        if gone is not None and at >= gone:
            self.violate("REMP-EXPIRY-003", msg.id,
                         f"{kind} into block {block[:16]}… in {self.session_name(at)}; first queued in {self.session_name(n)}, "
                         f"the message is obsolete from {self.session_name(gone)} on",
                         [(msg.first_ref, None, None), (ref, kind, src)])


@handles("REMP-EXPIRY-004")
class TimeoutBeforeObsolete(_Sessions):
    """A Timeout while the session the message was first queued in, or the next one, is still in force."""

    def on_timeout_by_session(self, msg, ref: int, t, src) -> None:
        n, at = self.session_of(_base_t(msg)), self.session_of(t)
        if n is not None and at is not None and at < n + self.after_sessions:
            self.violate("REMP-EXPIRY-004", msg.id,
                         f"Timeout from {src} in {self.session_name(at)}; first queued in {self.session_name(n)}, the message "
                         f"is tracked until {self.session_name(n)} + 2",
                         [(msg.first_ref, None, None), (ref, "Timeout", src)])


@handles("REMP-BLOCK-001")
class SecondCollator(Handler):
    """A candidate block's IncludedIntoBlock from another source than its first one."""

    def on_second_collator(self, msg, entry, block: str, ref: int, src: str) -> None:
        self.violate("REMP-BLOCK-001", msg.id, f"IncludedIntoBlock for block {block[:16]}… from {src}, which {entry.collator} reported collating",
                     [(entry.collator_ref, "IncludedIntoBlock", entry.collator), (ref, "IncludedIntoBlock", src)])


@handles("REMP-FIN-001")
class FinalizedAgain(Handler):
    """A Finalized naming the same block as the message's first Finalized."""

    def on_finalized_again(self, msg, ref: int, src) -> None:
        fin = msg.fin
        self.violate("REMP-FIN-001", msg.id, f"Finalized reported {msg.fin_count} times",
                     [(fin.ref, "Finalized", fin.src), (ref, "Finalized", src)])


@handles("REMP-REPLAY-001", "REMP-REPLAY-002", "REMP-REPLAY-003")
class Replay(Handler):
    """A receipt naming another block than the one the message was finalized in, after that
    Finalized: a second Finalized (002), an acceptance (001) or a collation (003) into it —
    whether the message is still open or already judged (a late receipt). One handler: the three
    are one comparison with the first Finalized."""

    def on_replay(self, mid: str, fin, kind: str, block: str, ref: int, t, src) -> None:
        if block == fin.block:
            return
        if kind == "Finalized":
            self.violate("REMP-REPLAY-002", mid, f"finalized in block {fin.block[:16]}… and again in block {block[:16]}…",
                         [(fin.ref, "Finalized", fin.src), (ref, "Finalized", src)])
        elif kind in INCLUSION_KINDS and (t is None or fin.t is None or t > fin.t):  # after it: by time, else by log order
            rule = "REMP-REPLAY-001" if kind == "IncludedIntoAcceptedBlock" else "REMP-REPLAY-003"
            self.violate(rule, mid, f"{kind} into block {block[:16]}… after it was finalized in block {fin.block[:16]}…",
                         [(fin.ref, "Finalized", fin.src), (ref, kind, src)])


# ---- one message, judged when it closes -------------------------------------------------------
@handles("REMP-REPLAY-004", "REMP-REPLAY-005")
class ReplayBeforeFinal(Handler):
    """An inclusion into block B' at time t (before the message's Finalized) while another block B
    was accepted before t and not released (ignored or rejected by the masterchain) by t: into an
    accepted block (004) or a collated one (005). One finding per rule and message, the first in
    log order. One handler: one search of the message's block events answers both."""

    def on_replay_before_final(self, msg, events: list[tuple]) -> None:
        if len({e[1] for e in events if e[0] in INCLUSION_KINDS}) <= 1:
            return  # every inclusion names one block: no other block can have held the message
        accepted = [e for e in events if e[0] == "IncludedIntoAcceptedBlock"]
        if not accepted:
            return
        released = [(b, rt) for k, b, rt, _, _ in events if k in RELEASE_KINDS]
        fin_t = msg.fin.t if msg.fin is not None else None
        for rule, kind in (("REMP-REPLAY-004", "IncludedIntoAcceptedBlock"), ("REMP-REPLAY-005", "IncludedIntoBlock")):
            for k, b, t, ref, src in events:
                if k != kind or (fin_t is not None and t >= fin_t):
                    continue
                held = next((a for a in accepted if a[1] != b and a[2] < t
                             and not any((rb is None or rb == a[1]) and rt <= t for rb, rt in released)), None)
                if held is not None:
                    self.violate(rule, msg.id, f"{kind} into block {b[:16]}… while block {held[1][:16]}…, accepted {(t - held[2]) / 1000:.1f} s earlier, "
                                 "still held it (not ignored or rejected by the masterchain)", [(held[3], held[0], held[4]), (ref, kind, src)])
                    break


@handles("REMP-COLL-004")
class CollatedAfterRejects(Handler):
    """An IncludedIntoBlock later than the time by which ceil(2N/3) validators (N: total_validators
    of the first SentToValidators) had reported RejectedByCollator."""

    def on_collated_after_rejects(self, msg, events: list[tuple]) -> None:
        need = self.model.threshold("stop_collation_rejected", msg.total)
        first: dict = {}  # source -> (time, ref) of its first reject
        for k, _, t, ref, src in events:
            if k == "RejectedByCollator" and src is not None and (src not in first or t < first[src][0]):
                first[src] = (t, ref)
        if need < 1 or len(first) < need:
            return
        cut_t, cut_ref = sorted(first.values())[need - 1]
        for k, b, t, ref, src in events:
            if k == "IncludedIntoBlock" and t > cut_t:
                self.violate("REMP-COLL-004", msg.id, f"IncludedIntoBlock into block {b[:16]}… by {src} {(t - cut_t) / 1000:.1f} s after "
                             f"{need} of {msg.total} validators had rejected the message", [(cut_ref, "RejectedByCollator", None), (ref, k, src)])
                break


def _final_evidence(msg) -> tuple:
    return msg.fin.ref, "Finalized", msg.fin.src


@handles("REMP-OUTCOME-001")
class FinalizedThoughRejected(Handler):
    """Finalized, though every validator that queued the message ended in a reject or timeout."""

    def on_finalized_closed(self, msg, queued: list[tuple]) -> None:
        if queued and all(st.pos in REJECT_POSITIONS for _, st in queued):
            self.violate("REMP-OUTCOME-001", msg.id,
                         f"finalized, yet all {len(queued)} validators that queued it ended in a reject or timeout",
                         [_final_evidence(msg)] + [(st.last_ref, st.last_kind, s) for s, st in queued])


@handles("REMP-OUTCOME-002")
class FinalizedAfterFullnodeReject(Handler):
    def on_finalized_rejected(self, msg) -> None:
        self.violate("REMP-OUTCOME-002", msg.id, "finalized after the full node rejected it",
                     [(msg.fn_rej[0], "RejectedByFullnode", msg.fn_rej[1]), _final_evidence(msg)])


@handles("REMP-FIN-002")
class FinalizedUnaccepted(Handler):
    """A Finalized naming a shard block no validator reported as IncludedIntoAcceptedBlock."""

    def on_finalized_block(self, msg) -> None:
        fin = msg.fin
        entry = msg.blocks.get(fin.block) if msg.blocks else None
        if entry is None or not entry.accepted:
            self.violate("REMP-FIN-002", msg.id, f"Finalized names shard block {fin.block[:16]}…, which no validator reported as IncludedIntoAcceptedBlock",
                         [_final_evidence(msg)])


@handles("REMP-FN-001")
class ValidatorsAfterFullnodeReject(Handler):
    """Validators reported on a message the full node rejected (it should not have reached them)."""

    def on_fullnode_rejected(self, msg) -> None:
        role_of = self.ck._role_of
        vals = [(st.last_ref, st.last_kind, s) for s, st in msg.srcs.items() if role_of(s, st) == VALIDATOR]
        if vals:
            self.violate("REMP-FN-001", msg.id, f"rejected by the full node, yet {len(vals)} validator(s) reported on it",
                         [(msg.fn_rej[0], "RejectedByFullnode", msg.fn_rej[1])] + vals[:5])


@handles("REMP-LIVE-001")
class Lost(Handler):
    """No final outcome a horizon after the message's first receipt (the engine decides that the
    horizon has passed; messages without a time, or too near the log's end, are not judged)."""

    def on_lost(self, msg, outcome: str) -> None:
        last = [(st.last_ref, st.last_kind, s) for s, st in msg.srcs.items()]
        self.violate("REMP-LIVE-001", msg.id,
                     f"no final outcome {self.ck.horizon_s:.0f} s after its first receipt (last known: {outcome})",
                     [(msg.first_ref, None, None)] + last[:6])
