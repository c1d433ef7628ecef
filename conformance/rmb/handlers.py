# cython: annotation_typing=False
"""The RMB log rules, one handler per rule, registered by rule id.

A request (the records of one uid, :class:`.logjudge.Group`) is judged once the log's clock has
passed its horizon: every handler of :data:`JUDGES` is called with the group, in registration
order, and reports findings on the rules it is registered for, and on no other. A handler judges
the few rules one look at the records decides together (the messages on the wire: their schema,
their signature, who sent them; the attempts of one request to one destination); each rule id
of ``spec/rmb/rules.yaml`` has exactly one handler, or is one ``spec/rmb/logcheck.yaml`` lists
as not loggable with the reason (``tests/rmb/test_rmb_handlers.py``). RMB-SIG-007 is judged across
the whole log (a signature on two messages anywhere, in any share), by :func:`reused_signatures`
at the merge of the shares.

To change a rule: its entry in rules.yaml and logcheck.yaml, its handler here, its fixture and
planted violation (``fixtures/rmb/make_rule_fixtures.py``, which writes fixtures/rmb/rules).
"""

from __future__ import annotations

import base64
import binascii
import operator
from typing import Any, Callable, Iterable

import orjson

from rmkit.protocols.rmb.model import message_problems
from rmkit.protocols.rmb.records import Rec
from rmkit.rulehandlers import RuleRegistry

from rmkit.conformance.rmb.logjudge import _int, _peer_twin, _twins, backlog_ttl, fingerprint, same_reply

try:
    import cython
except ImportError:  # not compiled, and Cython not installed
    from rmkit import _cython_shadow as cython

if cython.compiled:  # the group's and the profile's C types (logjudge.pxd): their fields read as struct fields
    from cython.cimports.rmkit.conformance.rmb.logjudge import Ctx as CtxT, Group as GroupT
else:
    CtxT = GroupT = None

REGISTRY = RuleRegistry()  # rule id -> the handler that judges it
JUDGES: list[Callable] = []  # the handlers a request is judged by, in registration order
ACROSS_LOG: list[Callable] = []  # the handlers that judge the whole log at the merge of the shares


def handles(*rules: str, across_log: bool = False):
    """Register the decorated function as the one judge of ``rules``: called with a request's
    group (:class:`.logjudge.Group`), or at the merge with every share (``across_log``)."""

    def register(fn: Callable) -> Callable:
        REGISTRY.handles(*rules)(fn)
        fn.rules = frozenset(rules)
        (ACROSS_LOG if across_log else JUDGES).append(fn)
        return fn

    return register


@handles("RMB-SIG-007", across_log=True)
def reused_signatures(shares: Iterable) -> list[tuple[str, str, list]]:
    """One signature on messages whose signed fields differ, anywhere in the log: the shares'
    signature indexes (:mod:`.sigreuse`) joined."""
    from rmkit.conformance.rmb.sigreuse import reused

    return reused(s.signed for s in shares if s.signed is not None)


@handles("RMB-MSG-001", "RMB-MSG-002", "RMB-MSG-003", "RMB-MSG-004", "RMB-MSG-005", "RMB-MSG-006",
         "RMB-SIG-001", "RMB-SIG-002", "RMB-SIG-003", "RMB-SIG-004", "RMB-NODE-001")
@cython.locals(g=GroupT, c=CtxT)
def messages(g) -> None:
    """The messages daemons put on the wire (MSG-*, SIG-*, NODE-001), each judged once."""
    c, seen = g.c, set()
    low, ahead = c.settings["plausible_unix_s"]
    for r in g.events("http-post", "recorded-request"):
        if type(r.msg) is not dict:
            continue
        msg = r.msg
        key = g.key(msg)
        if key in seen:
            continue
        seen.add(key)
        for rule, fld, what in g.problems(msg):
            g.out.add(rule, f"{r.event} {r.endpoint}: field {fld or '(message)'}: {what}", r)
        now, exp = msg.get("now"), msg.get("exp")
        if type(now) is int and not (low <= now <= r.time + ahead):  # (type: a bool is no int here)
            g.out.add("RMB-MSG-003", f"now {now} is not Unix seconds near the line's time {int(r.time)}", r)
        if type(exp) is int and exp >= low:
            g.out.add("RMB-MSG-004", f"exp {exp} is a Unix time, not seconds relative to now", r)
        rule, why = g.sig_verdict(msg)
        if rule:
            g.out.add(rule, f"{r.event} {r.endpoint}: {why}", r)
        if r.event == "http-post" and r.twin is not None:
            uid, src = msg.get("uid"), msg.get("src")
            if not isinstance(uid, str) or not uid:
                g.out.add("RMB-MSG-005", f"twin {r.twin} posted a message without a uid", r)
            elif src != r.twin:
                owner = next((b for b in g.recs if b.event in ("backlog-set", "forward-job") and b.twin == src and src != r.twin), None)
                if owner is not None:
                    g.out.add("RMB-NODE-001", f"twin {r.twin} posted request {uid}, which twin {src} stored in its backlog: "
                                 "two daemons share one Redis", owner, r)
                else:
                    g.out.add("RMB-MSG-005", f"twin {r.twin} posted a message with src {src!r}, not its own twin", r)


@cython.locals(g=GroupT)
def _answers(g, remote: bool) -> list[tuple[Rec, int | None]]:
    """The exchanges at one endpoint (http-answer, or a recorder's recorded-response), each
    distinct one once: (record, twin answering or None for a recorder)."""
    got = g.memo.get("answers")
    if got is None:
        got = g.memo["answers"] = _all_answers(g)
    return got[0] if remote else got[1]


@cython.locals(g=GroupT, c=CtxT)
def _all_answers(g) -> tuple[list, list]:
    c = g.c
    out: tuple[list, list] = ([], [])
    seen: tuple[set, set] = (set(), set())
    for r in g.events("http-answer", "recorded-response"):
        if r.event == "http-answer":
            twin = r.twin
        elif r.status != 502:  # 502: the recorder's own "unreachable"
            twin = None
        else:
            continue
        if r.endpoint == c.remote:
            side = 0
        elif r.endpoint == c.reply:
            side = 1
        else:
            continue
        key = (g.key(r.msg), r.status)
        if key in seen[side]:
            continue
        seen[side].add(key)
        out[side].append((r, twin))
    return out


@cython.locals(g=GroupT)
def _bad_body(g, msg) -> bool:
    return msg is None or bool(g.problems(msg))


@handles("RMB-REMOTE-001", "RMB-REMOTE-002", "RMB-REMOTE-003", "RMB-REMOTE-004", "RMB-REMOTE-006", "RMB-REMOTE-007")
@cython.locals(g=GroupT)
def answers(g) -> None:
    """What the remote endpoint answered, against the statuses the profile allows for that
    message at that time; and a body that is no v1 message, at either endpoint, answered with
    the bad-body status (RMB-REMOTE-002)."""
    for r, twin in _answers(g, True):
        _exchange(g, r, "remote", twin)
    for r, twin in _answers(g, False):
        if _bad_body(g, r.msg):
            _exchange(g, r, "reply", twin)


@handles("RMB-REMOTE-005")
@cython.locals(g=GroupT, c=CtxT, b=dict)
def handed(g) -> None:
    """An accepted request is pushed to its command queue with ret the reply queue (RMB-REMOTE-005)."""
    c, b = g.c, g.c.b
    px = b["proxy"]
    for a in g.of("http-answer"):
        if a.endpoint != c.remote or a.status != c.accepted or a.twin is None or not isinstance(a.msg, dict):
            continue
        if g.problems(a.msg) or a.msg["dst"][0] != a.twin:
            continue
        pushed = [h for h in g.ev.get("to-handler", ()) if h.twin == a.twin and abs(h.time - a.time) <= c.tol + 1
                  and isinstance(h.msg, dict) and h.msg.get("sig") == a.msg.get("sig")]
        if not pushed:
            g.out.add("RMB-REMOTE-005", "request accepted but never pushed to a command queue", a)
            continue
        h = pushed[0]
        cmd = a.msg.get("cmd")
        want = px["request_queue"] if px and cmd == px["cmd"] else c.command_queue(cmd)
        bad = []
        if h.queue != want and not (px and cmd == px["cmd"]):  # a wrong proxy queue is RMB-PROXY-001
            bad.append(f"queue {h.queue!r}, expected {want!r}")
        if not isinstance(h.msg, dict) or h.msg.get("ret") != b["reply_queue"]:
            bad.append(f"ret {h.msg.get('ret') if isinstance(h.msg, dict) else None!r}, expected {b['reply_queue']!r}")
        if bad:
            g.out.add("RMB-REMOTE-005", "accepted request pushed with " + "; ".join(bad), h)


@cython.locals(g=GroupT, c=CtxT, b=dict)
def _exchange(g, r: Rec, kind: str, twin: int | None) -> None:
    c, b, msg, t = g.c, g.c.b, r.msg, r.time
    remote = kind == "remote"
    reasons: list[tuple[str, set]] = []  # refusals that apply: (rule, statuses)
    maybe: set = {b["status_storage_failure"]}  # statuses the log cannot rule out
    problems = g.problems(msg) if msg is not None else [("RMB-MSG-001", "", "body is not JSON")]
    if problems:
        reasons.append(("RMB-REMOTE-002", {b["status_bad_body"]}))
    else:
        if twin is not None and msg["dst"][0] != twin:
            reasons.append(("RMB-REMOTE-004" if remote else "RMB-REPLY-003", {b["status_wrong_destination"]}))
        elif twin is None:
            maybe.add(b["status_wrong_destination"])  # a recorder does not know whose door it is
        rule, _ = g.sig_verdict(msg)
        if c.directory is None:
            maybe.add(b["status_bad_signature"])
        elif rule is not None:
            reasons.append(("RMB-REMOTE-003" if remote else "RMB-REPLY-007", {b["status_bad_signature"]}))
        if remote:
            for rule_id, limit in (("RMB-REMOTE-006", b["age_limit_s"] is not None and msg["now"] + b["age_limit_s"]),
                                   ("RMB-REMOTE-007", b["refuse_expired"] and msg["now"] + msg["exp"])):
                if limit is False or limit is None:
                    continue
                if t > limit + c.tol:
                    reasons.append((rule_id, {b["status_bad_body"]}))
                elif t > limit - c.tol:
                    maybe.add(b["status_bad_body"])
            if (c.open_age_limit is not None and t > msg["now"] + c.open_age_limit - c.tol) or \
                    (c.open_expired and t > msg["now"] + msg["exp"] - c.tol):
                maybe.add(b["status_bad_body"])  # a refusal the profile leaves open (open_refusals)
    allowed = set(maybe).union(*(s for _, s in reasons)) if reasons else set(maybe)
    default = "RMB-REMOTE-001"
    if not reasons:
        if remote:
            allowed.add(c.accepted)
        else:
            default = _reply_expectation(g, r, twin, allowed)
    if r.status in allowed:
        return
    rule = reasons[0][0] if reasons else default
    want = " or ".join(str(s) for s in sorted(allowed - maybe) or sorted(allowed))
    why = (f"{r.endpoint} answered {r.status} where the profile answers {want}"
           + (f" ({', '.join(x for x, _ in reasons)})" if reasons else ""))
    g.out.add(rule, why, g.life(twin)[2] if rule == "RMB-REPLY-006" and g.life(twin) else None, r)


@cython.locals(g=GroupT, c=CtxT, b=dict)
def _reply_expectation(g, r: Rec, twin: int | None, allowed: set) -> str:
    """Fill the statuses allowed for a valid reply by whether its request is live; return the
    rule a different answer breaks."""
    c, b = g.c, g.c.b
    life = g.life(twin)
    if life is None:
        allowed.update({c.accepted, b["reply_without_backlog"]})
        return "RMB-REPLY-005"
    start, end, _, _ = life
    if start + (c.tol if c.after_post else 0) < r.time < end - c.tol:  # rmb-go: a reply may outrun its backlog write
        allowed.add(c.accepted)
        if r.status != b["reply_without_backlog"]:  # (the common case: no need to look for an earlier reply routed)
            return "RMB-REPLY-005"
        routed = any(x.twin == twin and x.time < r.time for x in g.ev.get("reply-to-ret", ()))
        return "RMB-REPLY-006" if routed else "RMB-REPLY-005"
    if r.time > end + c.tol or r.time < start - c.tol:
        allowed.add(b["reply_without_backlog"])
        return "RMB-REPLY-004"
    allowed.update({c.accepted, b["reply_without_backlog"]})
    return "RMB-REPLY-005"


@handles("RMB-BACKLOG-001", "RMB-BACKLOG-002", "RMB-LOCAL-003", "RMB-DIR-001", "RMB-FANOUT-001", "RMB-FWD-001",
         "RMB-RETRY-001", "RMB-RETRY-002", "RMB-RETRY-003", "RMB-RETRY-004")
@cython.locals(g=GroupT, c=CtxT, b=dict)
def sender(g) -> None:
    """A daemon's requests: backlog, forward jobs, POSTs, attempts and the error on ret."""
    c, b = g.c, g.c.b
    ev = g.ev
    twins = {r.twin for e in ("backlog-set", "forward-job", "http-post") for r in ev.get(e, ()) if r.twin is not None}
    for w in sorted(twins):
        backlog = next((r for r in g.ev.get("backlog-set", ()) if r.twin == w), None)
        life = g.life(w)
        request = backlog.msg if backlog is not None and isinstance(backlog.msg, dict) else None
        dsts = _twins(request.get("dst")) if request else None  # (a malformed dst is RMB-MSG-006's)
        if backlog is not None and request is not None:
            ttl, exp = backlog_ttl(backlog.note), request.get("exp")
            if ttl is not None and _int(exp) and ttl != max(exp, 1):
                g.out.add("RMB-BACKLOG-001", f"backlog TTL {ttl} s, but exp is {exp}", backlog)
            if dsts == [w]:
                g.out.add("RMB-LOCAL-003", f"a request for twin {w} itself went to the backlog instead of msgbus.$cmd", backlog)
            if c.directory is not None and dsts:
                unknown = [d for d in dsts if c.directory.get(d) is None]
                if unknown:
                    g.out.add("RMB-DIR-001", f"destination twin(s) {unknown} are not in the directory, yet the request was stored "
                                 "for forwarding instead of answered with an error", backlog)
        jobs = [r for r in g.ev.get("forward-job", ()) if r.twin == w]
        posts = [r for r in g.ev.get("http-post", ()) if r.twin == w and isinstance(r.msg, dict)
                 and r.msg.get("src") == w and r.endpoint != c.reply and (jobs or backlog or r.endpoint == c.remote)]
        if backlog is None and not jobs and not posts:
            continue  # (a twin that only answered: it sent no request of this uid)
        if not c.after_post:
            for r in jobs + posts:
                if backlog is None or r.ref < backlog.ref and r.time <= backlog.time:
                    g.out.add("RMB-BACKLOG-001", f"{r.event} for request {r.uid} with no backlog entry stored before it", r)
                    break
        _jobs(g, w, jobs, dsts, backlog)
        by_dst: dict[Any, list[Rec]] = {}
        for p in posts:
            d = p.msg.get("dst")
            if p.endpoint != c.remote:
                g.out.add("RMB-FWD-001", f"request posted to {p.endpoint}, the profile's remote endpoint is {c.remote}", p)
            if _twins(d) is None or len(d) != 1 or (dsts is not None and d[0] not in dsts):
                g.out.add("RMB-FANOUT-001", f"a POST carries dst {d!r}, expected one destination of the request's {dsts}", p)
                continue
            peer = _peer_twin(p.peer)
            if peer is not None and peer != d[0]:
                g.out.add("RMB-FWD-001", f"the copy for twin {d[0]} was posted to twin {peer}", p)
            elif c.directory is not None and c.directory.get(d[0]) is not None and isinstance(p.peer, str) \
                    and p.peer.split("@", 1)[-1] != c.directory.get(d[0]).address:
                g.out.add("RMB-FWD-001", f"posted to {p.peer}, the directory gives twin {d[0]} {c.directory.get(d[0]).address}", p)
            if life is not None and not c.after_post and p.time > life[1] + c.tol:
                g.out.add("RMB-BACKLOG-002", f"request posted {p.time - life[1]:.1f} s after its backlog TTL ran out", life[2], p)
            by_dst.setdefault(d[0], []).append(p)
        for d, attempts in by_dst.items():
            _attempts(g, w, d, attempts, request)


@cython.locals(g=GroupT, c=CtxT)
def _jobs(g, w: int, jobs: list[Rec], dsts: list | None, backlog: Rec | None) -> None:
    c, seen = g.c, {}
    for j in jobs:
        m = c.job_re.match(j.note or "")
        if m is None:
            g.out.add("RMB-FANOUT-001", f"forward job {j.note!r} is not of the profile's form {c.b['forward_job']!r}", j)
            continue
        d = int(m.group(2))
        if c.directory is not None and c.directory.get(d) is None and not (backlog is not None and dsts and d in dsts):
            g.out.add("RMB-DIR-001", f"a forward job for twin {d}, which the directory does not know: the request should have "
                         "been answered with an error", j)
        if d in seen:
            g.out.add("RMB-FANOUT-001", f"a second forward job for twin {d}", seen[d], j)
            continue
        seen[d] = j
        if dsts is not None and d not in dsts:
            g.out.add("RMB-FANOUT-001", f"a forward job for twin {d}, which is not a destination of {dsts}", j)
        since, ev, reply = j.time - c.tol, g.ev, c.reply  # (a plain local: Cython's generators cannot close over the typed c)
        done = (any(r.twin == w and r.time >= since and type(r.msg) is dict and r.msg.get("dst") == [d] and r.endpoint != reply
                    for r in ev.get("http-post", ()))
                or any(r.twin == w and r.time >= since and r.note == j.note for r in ev.get("forward-expired-skipped", ()))
                or any(r.twin == w and r.time >= since and type(r.msg) is dict and r.msg.get("src") == d
                       for r in ev.get("error-to-ret", ())))
        if not done:
            g.out.later("RMB-FWD-001", f"forward job {j.note!r} never led to a POST, a skip or an error", j.time + c.horizon, j)
    if dsts is not None and backlog is not None:
        for d in dsts:
            if d not in seen and not (c.b["local_shortcut"] and dsts == [w]):
                g.out.add("RMB-FANOUT-001", f"no forward job for destination twin {d} of {dsts}", backlog)


@cython.locals(g=GroupT, c=CtxT, b=dict)
def _attempts(g, w: int, d: int, attempts: list[Rec], request: dict | None) -> None:
    c, b = g.c, g.c.b
    first = attempts[0]
    total = c.attempts(first.msg)
    if len(attempts) > total:
        g.out.add("RMB-RETRY-001", f"{len(attempts)} attempts to twin {d}, try allows {total}", *attempts[total:total + 1], first)
    for a, nxt in zip(attempts, attempts[1:]):
        if a.status == c.accepted or (a.status is not None and 200 <= a.status < 300):
            g.out.add("RMB-RETRY-003", f"posted again after twin {d} accepted it ({a.status})", a, nxt)
            break
        if not c.retryable(a.status):
            g.out.add("RMB-RETRY-003", f"retried after HTTP {a.status}; the profile retries {b['retry_on']} failures only", a, nxt)
            break
    if b["restamp_per_attempt"]:
        deadline = (request["now"] + request["exp"]) if request and _int(request.get("now")) and _int(request.get("exp")) else None
        for a in attempts:
            now, exp = a.msg.get("now"), a.msg.get("exp")
            if not (_int(now) and _int(exp)):
                continue
            late = a.time - now > float(c.settings["restamp_tolerance_s"]) + 1
            moved = deadline is not None and now + exp != deadline
            if late or moved:
                g.out.add("RMB-RETRY-004", f"attempt with now {now}, exp {exp} at {a.time:.0f}: "
                             + ("not re-stamped" if late else f"deadline {now + exp} is not the request's {deadline}"), a)
                break
    last = attempts[-1]
    if last.status in (c.accepted, 200, 202):
        return
    deadline = None
    if _int(last.msg.get("now")) and _int(last.msg.get("exp")):
        deadline = last.msg["now"] + last.msg["exp"]
    errors = [r for r in g.ev.get("error-to-ret", ()) if r.twin == w and isinstance(r.msg, dict)
              and r.msg.get("src") == d and r.time >= last.time - c.tol]
    until = errors[0].time if errors else last.time
    final = not c.retryable(last.status) or len(attempts) >= total or (deadline is not None and until >= deadline - c.tol)
    if not final:
        if errors:
            g.out.add("RMB-RETRY-003", f"gave up on twin {d} after {len(attempts)} of {total} attempts on a retryable failure",
                         last, errors[0])
        return
    if not errors:
        g.out.later("RMB-RETRY-002", f"the request failed for twin {d} (status {last.status}) but no error reached its ret",
                       last.time + c.horizon, last)
        return
    e = errors[0]
    ret = request.get("ret") if request else last.msg.get("ret")
    bad = []
    if not (isinstance(e.msg.get("err"), str) and e.msg["err"]):
        bad.append("err is empty")
    if e.msg.get("dat") not in ("", None):
        bad.append("dat is not empty")
    if ret and e.queue != ret:
        bad.append(f"pushed to {e.queue!r}, the request's ret is {ret!r}")
    if bad:
        g.out.add("RMB-RETRY-002", "the error message for twin {}: {}".format(d, "; ".join(bad)), e)


@handles("RMB-REPLY-001", "RMB-REPLY-002", "RMB-REPLY-003", "RMB-REPLY-004", "RMB-REPLY-005", "RMB-REPLY-006",
         "RMB-REPLY-007")
@cython.locals(g=GroupT, c=CtxT, b=dict)
def replies(g) -> None:
    """Receiver side of replies: routed to the request's ret (REPLY-005), never after the TTL
    (REPLY-004); sender side: every handler reply posted (REPLY-001) and its attempts (REPLY-002)."""
    for r, twin in _answers(g, False):
        if not _bad_body(g, r.msg):
            _exchange(g, r, "reply", twin)
    c, b = g.c, g.c.b
    for r in g.of("reply-to-ret"):
        life = g.life(r.twin)
        if life is None:
            g.out.add("RMB-REPLY-004", f"twin {r.twin} pushed a reply for {r.uid} with no request of its own in the log", r)
            continue
        start, end, rec, req = life
        if r.time > end + c.tol:
            g.out.add("RMB-REPLY-004", f"reply pushed to ret {r.time - end:.1f} s after the request's backlog TTL ran out", rec, r)
        ret = req.get("ret")
        if ret and r.queue != ret:
            g.out.add("RMB-REPLY-005", f"reply pushed to {r.queue!r}, the request's ret is {ret!r}", rec, r)
        elif b["reply_ret_restored"] and isinstance(r.msg, dict):
            # the profile's facts restore the reply's ret and tag fields (rmb-rs-v1); document 004
            # names the queue only and has no tag (behaviour.yaml reply_ret_restored)
            if ret and r.msg.get("ret") != ret:
                g.out.add("RMB-REPLY-005", f"reply ret field {r.msg.get('ret')!r}, the request's ret is {ret!r}", rec, r)
            elif "tag" in req and r.msg.get("tag") != req["tag"]:
                g.out.add("RMB-REPLY-005", f"reply tag {r.msg.get('tag')!r}, the request's is {req['tag']!r}", rec, r)
    for a in g.of("http-answer"):
        if a.endpoint != c.reply or a.status != c.accepted or not isinstance(a.msg, dict) or g.problems(a.msg):
            continue
        life = g.life(a.twin)
        if life is None or not life[0] + (c.tol if c.after_post else 0) < a.time < life[1] - c.tol or a.msg["dst"][0] != a.twin:
            continue
        if g.sig_verdict(a.msg)[0] is not None:
            continue  # a forged reply accepted is RMB-REPLY-007
        src = a.msg.get("src")
        routes = [r for r in g.ev.get("reply-to-ret", ()) if r.twin == a.twin]
        near = c.tol + 1  # (a plain local: Cython's generators cannot close over the typed c)
        if not any(isinstance(r.msg, dict) and r.msg.get("src") == src and abs(r.time - a.time) <= near for r in routes):
            routed = any(r.time < a.time for r in routes)
            if routed:
                g.out.add("RMB-REPLY-006", "a reply accepted while the request's TTL runs was dropped after an earlier reply "
                             "was routed: the backlog entry was removed", life[2], a)
            else:
                g.out.add("RMB-REPLY-005", "a reply to a live request was accepted but never pushed to the request's ret", life[2], a)
    for (w, _), replies in _handler_replies(g).items():
        if not _reply_attempts(g, w, replies):
            return


@cython.locals(g=GroupT)
def _handler_replies(g) -> dict[tuple, list[Rec]]:
    """The handler replies of the group by (twin, dst): the replies one twin posts to one
    destination, whose attempts :meth:`_reply_attempts` tells apart."""
    out: dict[tuple, list[Rec]] = {}
    for h in g.of("handler-reply"):
        if h.twin is None or not isinstance(h.msg, dict):
            continue
        d = h.msg.get("dst")
        if isinstance(d, list) and d:
            out.setdefault((h.twin, _dst_key(d)), []).append(h)
    return out


def _dst_key(dst: list) -> tuple | bytes:
    """A key of a dst, equal for dsts of equal content (as their fingerprints are): a list of
    twin ids as a tuple of them, another list by its fingerprint (a tuple and bytes are never equal)."""
    for twin in dst:
        if type(twin) is not int:  # (a bool is no twin id: True == 1, but their fingerprints differ)
            return fingerprint(dst)
    return tuple(dst)


@cython.locals(g=GroupT, c=CtxT)
def _reply_attempts(g, w: int, replies: list[Rec]) -> bool:
    """RMB-REPLY-001 / 002 for the replies twin ``w`` pushed to one destination (False: judged
    no further, a reply went to a wrong endpoint).

    A request may reach a receiver twice and both copies be accepted (a sender retries after a
    connection error though the first copy arrived; document 004 has no deduplication at the
    receiver): the handler then pushes a reply per copy, and each is posted. So attempts are
    told apart by the reply they carry (its fields but sig and src, which the sender signs and
    sets): a POST after HTTP 202 is a fault only when it carries a reply already accepted, with
    no pushed reply left for it. Identical replies (one handler answering both copies alike)
    are counted: as many may be posted as were pushed. A POST carrying no pushed reply's
    fields (a daemon that re-stamps its replies) is counted with the replies no POST carries."""
    c = g.c
    first = replies[0]
    d = first.msg["dst"]
    posts = [p for p in g.ev.get("http-post", ()) if p.twin == w and isinstance(p.msg, dict)
             and p.msg.get("dst") == d and p.time >= first.time - c.tol and p.endpoint != c.remote]
    for p in posts:
        if p.endpoint != c.reply:
            g.out.add("RMB-REPLY-001", f"reply posted to {p.endpoint}, the profile's reply endpoint is {c.reply}", p)
            return False
    pushed: list[list[Rec]] = []  # the replies pushed, by the reply they carry (same_reply), in order
    for h in replies:
        _reply_of(pushed, h.msg).append(h)
    carried: dict[int, list[Rec]] = {}  # the POSTs by the pushed reply they carry (its index; -1: none)
    for p in posts:
        carried.setdefault(_carried(pushed, p.msg), []).append(p)
    ev = g.ev
    dropped = _any_of(ev, ("reply-unknown-twin-dropped", "reply-invalid-dropped"), w)
    lost = _any_of(ev, ("reply-lost",), w)
    loose = [h for k, hs in enumerate(pushed) if k not in carried for h in hs]
    if loose:
        loose.sort(key=_time)
    for k, hs in enumerate(pushed):
        if k in carried:
            _judge_attempts(g, hs, carried[k], dropped, lost)
    if loose:
        _judge_attempts(g, loose, carried.get(-1, []), dropped, lost)
    return True


def _carried(pushed: list, msg: dict) -> int:
    """The index in ``pushed`` of the replies that carry the reply ``msg`` carries (-1: none)."""
    for i, hs in enumerate(pushed):
        if same_reply(hs[0].msg, msg):
            return i
    return -1


def _reply_of(pushed: list, msg: dict) -> list:
    """The replies of ``pushed`` that carry the reply ``msg`` carries (:func:`_carried`), a new
    list of them (added to ``pushed``) where none does."""
    i = _carried(pushed, msg)
    if i >= 0:
        return pushed[i]
    hs = []
    pushed.append(hs)
    return hs


_time = operator.attrgetter("time")


def _any_of(ev: dict, events: tuple, twin) -> bool:
    """Whether ``twin`` logged one of ``events`` (``ev``: the group's records by event)."""
    for e in events:
        recs = ev.get(e)
        if recs and any(r.twin == twin for r in recs):
            return True
    return False


@cython.locals(g=GroupT, c=CtxT)
def _judge_attempts(g, replies: list[Rec], posts: list[Rec], dropped: bool, lost: bool) -> None:
    """The attempts of one reply, or of alike replies: in time order an attempt goes on an
    attempt sequence still open, else starts the next pushed reply's; an attempt with neither
    is a retry the profile does not make (RMB-REPLY-002, once)."""
    c = g.c
    total = c.attempts(replies[0].msg)
    runs: list[list[Rec]] = []
    retried = False
    for p in posts:
        run = None  # (a loop: Cython's generators cannot close over the typed g)
        for r in runs:
            if _open(g, r[-1], len(r), total):
                run = r
                break
        if run is not None:
            run.append(p)
        elif len(runs) < len(replies):
            runs.append([p])
        elif not retried:
            retried = True
            prev = max(runs, key=lambda r: r[-1].time)
            a = prev[-1]
            if c.retryable(a.status) and a.status not in (c.accepted, 200, 202):
                g.out.add("RMB-REPLY-002", f"{len(prev) + 1} reply attempts, try allows {total}", p)
            else:
                g.out.add("RMB-REPLY-002", f"reply retried after HTTP {a.status}; replies are retried on connection errors only", a, p)
    for h in replies[len(runs):]:
        if not dropped:
            g.out.later("RMB-REPLY-001", f"handler reply for twin {h.msg['dst'][0]} was never posted", h.time + c.horizon, h)
    for run in runs:
        last = run[-1]
        if last.status not in (c.accepted, 200, 202) and (not c.retryable(last.status) or len(run) >= total) and not lost:
            g.out.later("RMB-REPLY-002", "a reply lost for good was not logged (reply-lost)", last.time + c.horizon, last)


@cython.locals(g=GroupT)
def _open(g, last: Rec, n: int, total: int) -> bool:
    """Whether an attempt sequence may go on: its last attempt failed in a way the profile
    retries, and try allows more."""
    return last.status not in (g.c.accepted, 200, 202) and g.c.retryable(last.status) and n < total


@handles("RMB-LOCAL-002")
@cython.locals(g=GroupT, c=CtxT)
def local(g) -> None:
    """A client's message that breaks the schema is answered on its ret (RMB-LOCAL-002)."""
    c, lasting = g.c, g.lasting
    for r in g.of("local-request"):
        msg = r.msg
        problems = lasting.get(("local", r.ref))
        if problems is None:
            probe = {**msg, "uid": msg.get("uid") or "", "src": 0} if isinstance(msg, dict) else msg
            problems = lasting[("local", r.ref)] = message_problems(probe)
        if not problems:
            continue
        ret = msg.get("ret") if isinstance(msg, dict) else None
        since = r.time - c.tol
        if ret:
            answered = any(x.twin == r.twin and x.time >= since and x.queue == ret for x in g.ev.get("error-to-ret", ()))
        else:
            answered = False
        if not answered and not (isinstance(ret, str) and ret):
            answered = any(x.twin == r.twin and x.time >= since for x in g.ev.get("local-invalid-dropped", ()))
        if not answered:
            g.out.later("RMB-LOCAL-002", f"invalid local message ({problems[0][0]}: field {problems[0][1]}) "
                           + (f"got no error on its ret {ret!r}" if ret else "was neither answered nor logged as dropped"),
                           r.time + c.horizon, r)


@handles("RMB-PROXY-001", "RMB-PROXY-002", "RMB-PROXY-003", "RMB-PROXY-004", "RMB-PROXY-005")
@cython.locals(g=GroupT, c=CtxT, b=dict)
def proxy(g) -> None:
    """Envelopes (RMB-PROXY-001..005): the payload validated, handed over, answered back."""
    c, b = g.c, g.c.b
    px = b["proxy"]
    if not px:
        return
    for h in g.of("to-handler"):
        if isinstance(h.msg, dict) and h.msg.get("cmd") == px["cmd"] and h.queue != px["request_queue"]:
            g.out.add("RMB-PROXY-001", f"an envelope went to {h.queue!r}, the profile's proxy queue is {px['request_queue']!r}", h)
    for e in g.of("proxy-envelope"):
        env, w = e.msg, e.twin
        if not isinstance(env, dict):
            continue
        why = _payload_problem(g, env, w, e.time)
        handed = [r for r in g.recs if r.event == "proxy-payload-to-handler" and r.twin == w and r.time >= e.time - c.tol]
        refused = [r for r in g.recs if r.event == "proxy-refused" and r.twin == w and r.time >= e.time - c.tol]
        if why and handed:
            g.out.add("RMB-PROXY-002", f"payload handed to a command though {why}", e, handed[0])
        elif why is None and refused and c.directory is not None:
            g.out.add("RMB-PROXY-002", f"a valid payload was refused: {refused[0].msg.get('err') if isinstance(refused[0].msg, dict) else ''}",
                         e, refused[0])
        elif not handed and not refused:
            g.out.later("RMB-PROXY-002" if why else "RMB-PROXY-004", "envelope neither refused nor handed to a command",
                           e.time + c.horizon, e)
        for hd in handed[:1]:
            payload = hd.msg if isinstance(hd.msg, dict) else {}
            bad = []
            if hd.queue != c.command_queue(payload.get("cmd")):
                bad.append(f"queue {hd.queue!r}, expected {c.command_queue(payload.get('cmd'))!r}")
            if payload.get("ret") != px["reply_queue"]:
                bad.append(f"ret {payload.get('ret')!r}, expected {px['reply_queue']!r}")
            if payload.get("uid") != env.get("uid"):
                bad.append(f"uid {payload.get('uid')!r}, the envelope's is {env.get('uid')!r}")
            if bad:
                g.out.add("RMB-PROXY-004", "payload handed over with " + "; ".join(bad), hd)
        for rf in refused[:1]:
            if isinstance(rf.msg, dict) and (rf.msg.get("dst") != [env.get("src")] or not rf.msg.get("err")):
                g.out.add("RMB-PROXY-002", f"the refusal goes to {rf.msg.get('dst')!r}, not the envelope's sender {env.get('src')!r}", rf)
        for ans in [r for r in g.recs if r.event == "proxy-answer" and r.twin == w]:
            replies = [r for r in g.recs if r.event == "proxy-reply" and r.twin == w and r.time >= ans.time - c.tol]
            dropped = [r for r in g.recs if r.event == "proxy-answer-dropped" and r.twin == w and r.time >= ans.time - c.tol]
            if dropped and handed and _int(env.get("exp")) and dropped[0].time < handed[0].time + max(env["exp"], 1) - c.tol:
                g.out.add("RMB-PROXY-003", f"answer dropped as expired {dropped[0].time - handed[0].time:.1f} s after the envelope "
                             f"was parked with TTL {env['exp']} s", handed[0], dropped[0])
            if not replies:
                if not dropped:
                    g.out.later("RMB-PROXY-005", "a proxied answer was never wrapped back", ans.time + c.horizon, ans)
                continue
            rp = replies[0]
            want_q = env.get("ret") if px["reply_to"] == "envelope-ret" else b["reply_queue"]
            bad = []
            if not isinstance(rp.msg, dict) or rp.msg.get("dst") != [env.get("src")] or rp.msg.get("src") != w:
                bad.append(f"src/dst {rp.msg.get('src') if isinstance(rp.msg, dict) else None}/"
                           f"{rp.msg.get('dst') if isinstance(rp.msg, dict) else None}, expected {w}/[{env.get('src')}]")
            if rp.queue != want_q:
                bad.append(f"pushed to {rp.queue!r}, expected {want_q!r}")
            if bad:
                g.out.add("RMB-PROXY-005", "the wrapped answer: " + "; ".join(bad), rp)


@cython.locals(g=GroupT)
def _payload_problem(g, env: dict, w: int | None, t: float) -> str | None:
    """Why an envelope's payload must be refused, or None when it is valid (as far as the log
    and the directory tell). orjson reads it as the log's lines are read: an integer beyond 64
    bits comes as a float and nesting past its depth limit is no JSON, where the json module
    gives an integer no fingerprint can hold and recurses without bound."""
    try:
        payload = orjson.loads(base64.b64decode(env.get("dat") or "", validate=True))
    except (ValueError, binascii.Error, TypeError):
        return "the payload is not base64 JSON"
    problems = message_problems(payload)
    if problems:
        return f"the payload breaks the schema ({problems[0][0]}: field {problems[0][1]})"
    if w is not None and w not in payload["dst"]:
        return f"the payload is not for twin {w}"
    rule, why = g.sig_verdict(payload)
    if rule:
        return f"the payload's signature fails ({why})"
    age = g.c.b["age_limit_s"]
    if age is not None and payload["now"] < t - age - g.c.tol:
        return "the payload is too old"
    return None


@handles("RMB-BACKLOG-003")
@cython.locals(g=GroupT, c=CtxT)
def scrubber(g) -> None:
    """rmb-go: a request's timeout comes at epoch + exp (0: the default), not before (RMB-BACKLOG-003)."""
    c, sc = g.c, g.c.b["scrubber"]
    if not sc:
        return
    for s in g.of("scrubber-timeout"):
        life = g.life(s.twin)
        if life is not None and s.time < life[1] - sc.get("interval_s", 0) - c.tol:
            g.out.add("RMB-BACKLOG-003", f"request timed out {life[1] - s.time:.1f} s before epoch + exp", life[2], s)
        if isinstance(s.msg, dict) and s.msg.get("err") != sc["error"]:
            g.out.add("RMB-BACKLOG-003", f"scrubber error {s.msg.get('err')!r}, expected {sc['error']!r}", s)
    for w in {r.twin for r in g.recs if r.twin is not None}:
        life = g.life(w)
        if life is not None and not any(s.twin == w for s in g.of("scrubber-timeout")):
            g.out.later("RMB-BACKLOG-003", "no request timeout after epoch + exp", life[1] + c.horizon, life[2])
