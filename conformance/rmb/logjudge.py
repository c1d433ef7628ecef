# cython: annotation_typing=False
"""The RMB log rules' common ground: one request (the records of one uid, in time order) as the
handlers judge it (:mod:`.handlers`, one per rule id), and the profile's values they read.

Each check names its rule (spec/rmb/logcheck.yaml lists what each rule reads); values come from
the profile's behaviour (behaviour.yaml). A finding is ``(rule, explanation, records)``; a finding
that depends on the log going on (an expected follow-up that never came) is *pending* until the
log's end is known (:mod:`.checker` decides it against the whole log's last time).

Where the log cannot decide (a TTL ending within the clock tolerance of an exchange, a signature
without the directory), both outcomes are allowed: the checker stays quiet on legal behaviour.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any

import orjson

try:
    import cython
except ImportError:  # (not installed: the module runs as plain Python)
    from rmkit import _cython_shadow as cython

from rmkit.protocols.rmb.keys import Directory
from rmkit.protocols.rmb.model import message_problems
from rmkit.protocols.rmb.signing import BadSignature, parse_sig, signature_verdict
from rmkit.protocols.rmb.records import TWIN_DIGITS, Rec, shown, twin_number

# a TTL is a 64-bit count of seconds (Redis's): at most 19 digits, far below a float's range
TTL_DIGITS = 19
# the note of a backlog-set: the TTL the daemon set, in whole seconds, and nothing else
TTL_NOTE = re.compile(rf"ttl ([0-9]{{1,{TTL_DIGITS}}}) s")


def ttl_note_problem(note: str | None) -> str | None:
    """Why a backlog-set's note is not a TTL (None: it is one, or there is no note, which says
    nothing of the TTL). The one place the note's form is judged: a note in another form (a sign,
    a fraction, more words) is a line the checker cannot read, never taken for a TTL of exp."""
    if note is None or TTL_NOTE.fullmatch(note):
        return None
    return (f"expected 'ttl N s' (the TTL set, N whole seconds: at most {TTL_DIGITS} digits 0-9) or no note, "
            f"found {shown(note)}")


# a log's notes and peers are few distinct strings on many lines: each is read once (up to a bound)
_KNOWN_TEXTS = 10_000
_TTLS: dict[str, int | None] = {}
_PEERS: dict[str, int | None] = {}


def backlog_ttl(note: str | None) -> int | None:
    """The TTL a backlog-set's note states (None: no note). Lines whose note
    :func:`ttl_note_problem` refuses never reach the judgments."""
    if note is None:
        return None
    try:
        return _TTLS[note]
    except KeyError:
        m = TTL_NOTE.fullmatch(note)
        ttl = int(m.group(1)) if m else None
        if len(_TTLS) < _KNOWN_TEXTS:
            _TTLS[note] = ttl
        return ttl


def open_refusals(profile: str) -> tuple[float | None, bool]:
    """(age limit, expired) a receiver may refuse a request by although ``profile`` does not ask it
    to: where RMB-REMOTE-006 / 007 are off (the profile does not have the behaviour), refusing a
    request older than another profile's age limit, or one past its deadline, is the daemon's choice
    (allowed, never required)."""
    from rmkit.protocols.rmb.model import rmb_spec

    spec = rmb_spec()
    others = [spec.behaviour(p) for p in spec.profiles]
    limits = [b["age_limit_s"] for b in others if b["age_limit_s"] is not None]
    age = min(limits) if limits and spec.mode("RMB-REMOTE-006", profile) == "off" else None
    expired = any(b["refuse_expired"] for b in others) and spec.mode("RMB-REMOTE-007", profile) == "off"
    return age, expired


class Ctx:
    """What every judgment needs: the profile's behaviour (``b``) and the checker's settings, the
    twin directory (None: signatures judged by their form), the profile's name and the check's wall
    clock at its start (no line was written a day after it)."""

    def __init__(self, b: dict[str, Any], settings: dict[str, Any], directory: Directory | None, profile: str,
                 started: float = math.inf):
        self.b, self.settings, self.directory, self.profile, self.started = b, settings, directory, profile, started
        self.accepted = b["accepted"]["status"]
        self.remote, self.reply = b["remote_endpoint"], b["reply_endpoint"]
        self.tol = float(self.settings["clock_tolerance_s"])
        self.horizon = float(self.settings["horizon_s"])
        self.after_post = b["backlog_written"] == "after-post"
        sep = b["forward_job"].replace("{uid}", "\x00").replace("{dst}", "\x01")
        self.job_re = re.compile("^" + re.escape(sep).replace("\x00", "(.+)").replace("\x01", r"(\d+)") + "$")
        self.open_age_limit, self.open_expired = open_refusals(self.profile)
        self.well_formed_sig = well_formed_sig()
        bounds = b["try_bounds"]
        self.try_min, self.try_max = bounds["min"], bounds["max"]
        self.retry_any = b["retry_on"] == "any"
        self._queues = {}

    def line_problem(self, obj: dict) -> tuple[str, str] | None:
        """(error, field) of a decoded record the judgments cannot read: a backlog-set's note that
        is not a TTL (:func:`ttl_note_problem`), a forward job's destination that no twin id is
        (other digits than 0-9, or more of them than such a number has).
        The checker refuses the line as it refuses one decode refuses: named, counted, not judged.
        So is a time no log line has (before 2000, or more than a day after the check began): it
        would end the log past every follow-up's horizon and judge what the log never showed."""
        low, ahead = self.settings["plausible_unix_s"]
        if not low <= obj["time"] <= self.started + ahead:
            return (f"expected Unix seconds from {low} to {ahead} s after the check began, found {obj['time']!r}"[:200],
                    "time")
        return self.note_problem(obj["event"], obj["note"])

    def time_ok(self, t: float) -> bool:
        """Whether a line's time is one :meth:`line_problem` takes."""
        low, ahead = self.settings["plausible_unix_s"]
        return low <= t <= self.started + ahead

    def note_problem(self, event: str, note: Any) -> tuple[str, str] | None:
        """The part of :meth:`line_problem` that reads the note."""
        if not isinstance(note, str):
            return None
        if event == "backlog-set":
            problem = ttl_note_problem(note)
            if problem is not None:
                return problem, "note"
        elif event == "forward-job":
            m = self.job_re.match(note)
            if m and twin_number(m.group(2)) is None:
                return (f"expected a forward job {self.b['forward_job']!r} with dst a twin id (at most {TWIN_DIGITS} "
                        f"digits 0-9), found {shown(note)}"), "note"
        return None

    def attempts(self, msg: dict) -> int:
        """The attempts a worker makes for ``msg``: try clamped to the profile's bounds."""
        t = msg.get("try")
        n = max(t if type(t) is int else 0, self.try_min)
        return min(n, self.try_max) if self.try_max else n

    def retryable(self, status: int | None) -> bool:
        return status is None or self.retry_any

    def command_queue(self, cmd: Any) -> str:
        if type(cmd) is not str:
            return self.b["command_queue"].format(cmd=cmd)
        got = self._queues.get(cmd)
        if got is None:
            got = self.b["command_queue"].format(cmd=cmd)
            if len(self._queues) < 10_000:  # (a log's commands are few)
                self._queues[cmd] = got
        return got


class Findings:
    __slots__ = ("found", "pending")

    def __init__(self):
        self.found: list[tuple] = []  # (rule, explanation, [recs])
        self.pending: list[tuple] = []  # (rule, explanation, [recs], due time)

    def add(self, rule: str, why: str, *recs: Rec) -> None:
        self.found.append((rule, why, [r for r in recs if r is not None]))

    def later(self, rule: str, why: str, due: float, *recs: Rec) -> None:
        self.pending.append((rule, why, [r for r in recs if r is not None], due))


def well_formed_sig():
    """``fullmatch`` of a sig :func:`parse_sig` takes (signature.yaml: lower-case hex of a known
    key type's prefix byte and the signature): the common case, told without decoding the hex."""
    from rmkit.protocols.rmb.signing import _sig_spec

    spec = _sig_spec()
    digits = re.escape(spec["sig_text"]["digits"])
    prefixes = "|".join(kt["prefix"].encode("ascii").hex() for kt in spec["key_types"].values())
    return re.compile(f"(?:{prefixes})[{digits}]{{{2 * (spec['signature_hex_bytes'] - 1)}}}").fullmatch


_time_ref = operator.attrgetter("time", "ref")  # a record's place in the log: time, then position


def fingerprint(msg: Any) -> bytes:
    return orjson.dumps(msg, option=orjson.OPT_SORT_KEYS)


_ABSENT = object()  # (a key one object has and the other lacks)


@cython.ccall
def same_json(a: Any, b: Any) -> bool:
    """Whether two decoded JSON values are one JSON value, as their fingerprints tell it
    (:func:`fingerprint`, the sorted-key text): the same types (a bool is no integer, 1.0 no 1),
    equal values (a float's sign of zero included), objects with the same keys, arrays in the
    same order; without writing either out."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return _same_object(a, b)
    if kind is list:
        return _same_array(a, b)
    if kind is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


@cython.cfunc
@cython.locals(a=dict, b=dict)
def _same_object(a, b) -> bool:
    if len(a) != len(b):
        return False
    for key, value in a.items():
        if not _same_field(value, b.get(key, _ABSENT)):  # (_ABSENT: of a type no JSON value has)
            return False
    return True


@cython.cfunc
def _same_field(value, other) -> bool:
    """:func:`same_json` of two values of an object or an array, a string's or an integer's (most
    of a message's) told here."""
    if other is value:
        return True
    kind = type(value)
    if kind is str or kind is int:
        return type(other) is kind and value == other
    return same_json(value, other)


@cython.cfunc
@cython.locals(a=list, b=list, i=cython.Py_ssize_t)
def _same_array(a, b) -> bool:
    if len(a) != len(b):
        return False
    for i in range(len(a)):
        if not _same_field(a[i], b[i]):
            return False
    return True


@cython.ccall
@cython.locals(a=dict, b=dict, fields=cython.Py_ssize_t)
def same_reply(a, b) -> bool:
    """Whether two messages carry one reply: the same fields but the signature and src (the
    posting daemon signs the reply and sets src to itself; a retry carries the same reply),
    each field :func:`same_json`."""
    fields = 0
    for key, value in a.items():
        if key == "sig" or key == "src":
            continue
        fields += 1
        if not _same_field(value, b.get(key, _ABSENT)):
            return False
    return fields == len(b) - ("sig" in b) - ("src" in b)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _twins(value: Any) -> list | None:
    """A message's dst when it is a list of twin ids (integers), else None: a malformed dst is
    reported by the message rules (RMB-MSG-006), and judged no further as a destination."""
    return value if isinstance(value, list) and all(map(_int, value)) else None


def _peer_twin(peer: Any) -> int | None:
    """The twin a POST went to, from a peer ``N@address`` (decode refused an N that is no twin id)."""
    if type(peer) is not str:
        return None
    try:
        return _PEERS[peer]
    except KeyError:
        twin = twin_number(peer.split("@", 1)[0]) if "@" in peer else None
        if len(_PEERS) < _KNOWN_TEXTS:
            _PEERS[peer] = twin
        return twin


_SIG_FORM_OK = (None, "")  # the verdict of a well-formed sig without the directory


class Group:
    """Every record of one uid (sorted by time, then position) and the judgments over them."""

    __slots__ = ("c", "recs", "out", "_sig", "_alike", "_distinct", "_lives", "ev", "memo", "lasting")

    def __init__(self, ctx: Ctx, recs: list[Rec], lasting: dict | None = None):
        self.c = ctx
        self.recs = recs
        # what a handler found of one record that holds for every judgment of it (by the record's
        # ref): records without a uid are judged again as their window moves (checker.Loose)
        self.lasting = lasting if lasting is not None else {}
        self.out = Findings()
        self._sig: dict = {}  # a message's key (without the directory: its sig) -> its verdict
        # the group's distinct messages (one message is logged by its sender, its receiver and a
        # recorder: equal content, several objects), each [the first of them, its problems or None
        # until asked], by a part of their content (:meth:`_entry`)
        self._alike: dict = {}
        # id of a message of the group -> its distinct message's entry: one lookup per ask (the
        # handlers ask of each message several times)
        self._distinct: dict[int, list] = {}
        self._lives: dict = {}
        self.memo: dict = {}  # what several handlers read of the group, taken once (by the handlers' names)
        ev: dict[str, list[Rec]] = {}  # the records of each event, in order: the judgments ask by event
        for r in recs:
            got = ev.get(r.event)
            if got is None:
                ev[r.event] = [r]
            else:
                got.append(r)
        self.ev = ev

    def key(self, msg: Any) -> int:
        """A key of a message the group's records hold, equal for messages of equal content (as
        their fingerprints are, :func:`fingerprint`): the id of the group's first message of that
        content."""
        got = self._distinct.get(id(msg))
        if got is None:
            got = self._entry(msg)
        return id(got[0])

    def problems(self, msg: Any) -> list[tuple[str, str, str]]:
        """message_problems, once per distinct message of the group (one message is logged by
        its sender, its receiver and a recorder)."""
        known = self._distinct.get(id(msg))
        if known is None:
            known = self._entry(msg)
        got = known[1]
        if got is None:
            got = known[1] = message_problems(known[0])
        return got

    def _entry(self, msg: Any) -> list:
        """The entry of ``msg``'s distinct message (:attr:`_alike`), made at its first message.
        Messages are told apart by :func:`same_json` among those alike in a part of their content
        (a signed message's sig, else the number of its fields; another value's fingerprint)."""
        if type(msg) is dict:
            sig = msg.get("sig")
            part = sig if type(sig) is str else len(msg)  # (a str and an int are never one key)
        else:
            part = fingerprint(msg)  # (bytes)
        alike = self._alike.get(part)
        entry = None
        if alike is None:
            alike = self._alike[part] = []
        else:
            for known in alike:
                if same_json(known[0], msg):
                    entry = known
                    break
        if entry is None:
            entry = [msg, None]
            alike.append(entry)
        self._distinct[id(msg)] = entry
        return entry

    # -- helpers ----------------------------------------------------------------------------
    def events(self, *events: str) -> list[Rec]:
        """The records of ``events``, in the group's order (time, then position)."""
        ev = self.ev
        lists = [ev[e] for e in events if e in ev]
        if len(lists) == 1:
            return lists[0]
        return sorted([r for rs in lists for r in rs], key=_time_ref) if lists else []

    def of(self, event: str, twin: int | None = None) -> list[Rec]:
        """The records of ``event`` (of ``twin``), in the group's order: to read, not to change."""
        recs = self.ev.get(event, ())
        return recs if twin is None else [r for r in recs if r.twin == twin]

    def sig_verdict(self, msg: dict) -> tuple[str | None, str]:
        """(rule, why) of a message's signature: RMB-SIG-001 without a key; with the directory
        RMB-SIG-002, or -003 / -004 when the signature verifies over a known wrong challenge."""
        c = self.c
        if c.directory is None:  # the verdict is the sig's form alone: taken once per sig of the group
            sig = msg.get("sig")
            key = sig if type(sig) is str else None
            got = self._sig.get(key)
            if got is None:
                got = self._sig[key] = _SIG_FORM_OK if key is not None and c.well_formed_sig(key) else self._sig_verdict(msg)
            return got
        key = self.key(msg)
        got = self._sig.get(key)
        if got is None:
            got = self._sig[key] = self._sig_verdict(msg)
        return got

    def _sig_verdict(self, msg: dict) -> tuple[str | None, str]:
        try:
            parse_sig(msg)
        except BadSignature as bad:
            return bad.rule, bad.reason
        d = self.c.directory
        if d is None:
            return None, ""
        twin = d.get(msg.get("src"))
        if twin is None:
            return "RMB-SIG-002", f"src twin {msg.get('src')!r} is not in the directory"
        rule, why, _ = signature_verdict(msg, twin.public_key, twin.key_type, f"twin {twin.id}'s")
        return rule, why

    def life(self, twin: int | None) -> tuple[float, float, Rec, dict] | None:
        """(start, end, record, request) of the request's backlog entry on ``twin``: from its
        backlog-set (TTL exp), or in an after-post profile from its first accepted request POST."""
        got = self._lives.get(twin, self)  # (a miss is the common first call: no exception raised for it)
        if got is self:
            got = self._lives[twin] = self._life(twin)
        return got

    def _life(self, twin: int | None) -> tuple[float, float, Rec, dict] | None:
        if twin is None:
            return None
        c = self.c
        if not c.after_post:
            for r in self.ev.get("backlog-set", ()):
                if r.twin == twin and isinstance(r.msg, dict):
                    ttl, exp = backlog_ttl(r.note), r.msg.get("exp")
                    if ttl is None:  # no note: the TTL is taken as the rule wants it
                        ttl = max(exp, 1) if _int(exp) else None
                    return (r.time, r.time + ttl, r, r.msg) if ttl is not None else None
            return None
        sc = c.b["scrubber"] or {}
        for r in self.ev.get("http-post", ()):
            if r.twin == twin and r.endpoint == c.remote and r.status == c.accepted and isinstance(r.msg, dict):
                exp = r.msg.get("exp") if _int(r.msg.get("exp")) else 0
                return r.time, r.time + (exp or sc.get("default_exp_s", 3600)) + sc.get("interval_s", 0), r, r.msg
        return None

    # -- every judgment ---------------------------------------------------------------------
    def judge(self, judges) -> Findings:
        """Every handler's judgment of the request (``judges``: :data:`.handlers.JUDGES`, one
        handler per rule id)."""
        for handler in judges:
            handler(self)
        return self.out
