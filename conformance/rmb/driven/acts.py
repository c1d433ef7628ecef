"""The acts of a scenario: what the kit does as the daemon's other parties, and what it then
judges. An act is a JSON object (saved scenarios hold them as written):

- ``send``: a local client pushes a request to msgbus.system.local for ``dst`` (kit twins ``p2``
  (ed25519) and ``p3`` (sr25519), ``down`` (connection refused), ``unknown`` (not in the
  directory), ``self``); each kit twin answers its attempts as ``answers`` says and then replies
  as ``replies`` says (``good``, ``forged``, ``wrong_dst``, ``late``: after the backlog expired;
  the other replies of the act are posted first). ``age`` (seconds, default 0): the client's
  ``now`` is that much older than the push (the deadline ``now + exp`` with it), so a daemon that
  must re-stamp ``now`` before each attempt (RMB-RETRY-004) shows whether it does.
- ``remote``: a kit twin posts a request to the daemon's remote endpoint, well formed or broken as
  ``variant`` says; an accepted one is answered by the kit as the command's handler, and the kit
  twin answers the daemon's reply POSTs as ``reply_answers`` says.
- ``stale_job``: a forward job whose backlog entry does not exist (it expired).
- ``bad_local``: a client message that breaks the schema.

Acts use fresh command names and queues, so acts (and scenarios) never see each other's traffic.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid

from rmkit.conformance.rmb.driven.harness import DOWN, IUT, PEER_ED, PEER_SR, UNKNOWN, Harness
from rmkit.conformance.rmb.driven.judge import (ActResult, attempts_allowed, b64, planned_attempts, retryable,
                                                schema_rule, sig_rule)

TARGETS = {"p2": PEER_ED, "p3": PEER_SR, "down": DOWN, "unknown": UNKNOWN, "self": IUT}
REMOTE_VARIANTS = ("good", "bad_sig", "unknown_src", "wrong_key_type", "tampered_unsigned", "tampered_signed", "not_json",
                   "bad_schema", "bad_dat", "empty_dst", "wrong_dst", "old_now", "expired", "future_now")
REPLY_VARIANTS = ("good", "forged", "wrong_dst", "late")
_counter = itertools.count(1)


class Ctx:
    """What acts of one run share: fresh names, every uid the daemon gave, the start time."""

    def __init__(self, h: Harness):
        self.h = h
        self.run = uuid.uuid4().hex[:6]
        self.uids = h.uids  # uid -> the cmd of the request it was given to, over the whole run
        self.t0 = time.monotonic()

    def fresh(self, what: str) -> str:
        return f"kit.{self.run}.{what}{next(_counter)}"


def _evidence(ctx: Ctx, res: ActResult, keys: set[str], since: float) -> None:
    """The HTTP exchanges and the daemon's Redis operations that mention one of ``keys``."""
    h = ctx.h
    keys = {k for k in keys if k}
    for ex in h.twins.exchanges:
        if ex.t >= since and (ex.cmd in keys or ex.uid in keys):
            res.evidence.append(ex.describe(ctx.t0))
    for op in h.ops:
        if op.t >= since and not h.kit_client(op.client) and any(k in op.command for k in keys):
            res.evidence.append(op.describe(ctx.t0))
    res.evidence.sort(key=lambda line: float(line.split("s", 1)[0].strip("+ ")) if line.startswith("+") else 0.0)


def _kit(ctx: Ctx, res: ActResult, what: str) -> None:
    res.evidence.append(f"+{time.monotonic() - ctx.t0:6.2f}s kit: {what}")


async def _drain(h: Harness, queue: str, into: list, stop: asyncio.Event) -> None:
    while not stop.is_set():
        got = await h.pop(queue, 0.05)
        if got is not None:
            into.append((time.monotonic(), got))


def backlog_ttl(state: str) -> float | None:
    """The seconds left of a backlog entry, from :meth:`Harness.backlog_state`'s words
    (``present, TTL 29.87 s (...)``); None when it has no TTL or is not there."""
    if not state.startswith("present, TTL "):
        return None
    return float(state[len("present, TTL "):].split(" s", 1)[0])


def client_message(cmd: str, dst: list[int], exp: int, tries: int, ret: str, payload: str, age: int = 0, tag: str | None = None) -> dict:
    msg = {"ver": 1, "uid": "", "cmd": cmd, "exp": exp, "try": tries, "dat": b64(payload), "src": 0, "dst": dst, "ret": ret,
           "shm": "", "now": int(time.time()) - age, "err": "", "sig": ""}
    if tag is not None:
        msg["tag"] = tag  # optional (message.yaml): a daemon must take it; rmb-rs-v1 restores it on the reply
    return msg


# ---- send ------------------------------------------------------------------------------------------
async def run_send(ctx: Ctx, act: dict) -> ActResult:
    h, b = ctx.h, ctx.h.b
    res = ActResult(act)
    cmd, ret = ctx.fresh("cmd"), ctx.fresh("ret")
    targets = list(dict.fromkeys(act["dst"]))
    dst = [TARGETS[t] for t in targets]
    msg = client_message(cmd, dst, act["exp"], act["try"], ret, f"request {cmd}", act.get("age", 0), tag=f"tag of {cmd}")
    peers = [TARGETS[t] for t in targets if t in ("p2", "p3")]
    for t in targets:
        if t in ("p2", "p3"):
            h.twins.plans[(TARGETS[t], cmd)] = list(act.get("answers", {}).get(t) or ["accept"])
    since = time.monotonic()
    got: list = []
    stop = asyncio.Event()
    drain = asyncio.create_task(_drain(h, ret, got, stop))
    await h.push(b["local_queue"], msg)
    pushed = time.monotonic()
    _kit(ctx, res, f"client pushed to {b['local_queue']}: cmd={cmd} dst={dst} now={msg['now']} exp={msg['exp']} try={msg['try']} "
                   f"ret={ret}")
    try:
        if "unknown" in targets:
            await _judge_unknown(ctx, res, msg, got)
        elif targets == ["self"]:
            await _judge_self(ctx, res, msg, got)
        else:
            await _judge_forward(ctx, res, act, msg, peers, got, pushed)
    finally:
        stop.set()
        await drain
        _evidence(ctx, res, {cmd, ret} | {u for u, c in ctx.uids.items() if c == cmd}, since)
    return res


async def _wait_ret(h: Harness, got: list, pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not pred(got):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.03)
    return True


def _errors(got: list, src=None) -> list[dict]:
    return [m for _, m in got if isinstance(m, dict) and m.get("err") and (src is None or m.get("src") == src)]


async def _judge_unknown(ctx: Ctx, res: ActResult, msg: dict, got: list) -> None:
    h, T = ctx.h, ctx.h.timing
    await _wait_ret(h, got, lambda g: _errors(g), T["response_s"])
    await asyncio.sleep(T["quiet_s"])
    errs = _errors(got)
    res.check("RMB-DIR-001", len(errs) == 1, f"{len(errs)} error message(s) on ret for a request naming unknown twin {UNKNOWN} "
              f"(expected exactly one, err non-empty); ret received {len(got)} message(s)")
    posted = [ex for ex in h.twins.exchanges if ex.cmd == msg["cmd"]]
    res.check("RMB-DIR-001", not posted, f"{len(posted)} POST(s) of a request that names an unknown twin (it must not be processed)")


async def _judge_self(ctx: Ctx, res: ActResult, msg: dict, got: list) -> None:
    h, b, T = ctx.h, ctx.h.b, ctx.h.timing
    queue = b["command_queue"].format(cmd=msg["cmd"])
    req = await h.pop(queue, T["response_s"])
    if b["local_shortcut"]:
        ok = isinstance(req, dict) and req.get("ret") == msg["ret"] and req.get("cmd") == msg["cmd"]
        res.check("RMB-LOCAL-003", ok, f"a request for the local twin only: {queue} got "
                  f"{'nothing' if req is None else json.dumps(req)[:200]} (expected the message itself, ret {msg['ret']})")
        if not isinstance(req, dict):
            return
        uid = req.get("uid")
        res.check("RMB-MSG-005", isinstance(uid, str) and uid != "" and req.get("src") == IUT,
                  f"the daemon set uid {uid!r} and src {req.get('src')!r} (expected a new uid and src {IUT})")
        bl = await h.backlog_state(uid)
        res.check("RMB-LOCAL-003", bl.startswith("absent") or bl == "no uid", f"the short-cut request has a backlog entry: {bl}")
        return
    # no short-cut: the daemon posts to its own remote endpoint, and the reply comes back over HTTP
    ok = isinstance(req, dict) and req.get("ret") == b["reply_queue"] and req.get("cmd") == msg["cmd"]
    res.check("RMB-REMOTE-005", ok, f"a request to itself: {queue} got {'nothing' if req is None else json.dumps(req)[:200]} "
              f"(expected it with ret {b['reply_queue']}, having gone over HTTP)")
    if not ok:
        return
    answer = {**req, "src": IUT, "dst": [IUT], "dat": b64("answer"), "err": "", "sig": "", "now": int(time.time())}
    await h.push(b["reply_queue"], answer)
    _kit(ctx, res, f"handler pushed its answer to {b['reply_queue']}")
    await _wait_ret(h, got, lambda g: any(m.get("dat") == answer["dat"] for _, m in g if isinstance(m, dict)), T["response_s"])
    replies = [m for _, m in got if isinstance(m, dict) and m.get("dat") == answer["dat"]]
    restored = b["reply_ret_restored"]  # spec/rmb/behaviour.yaml: the reply's ret field set to the request's
    res.check("RMB-REPLY-005", len(replies) == 1 and (not restored or replies[0].get("ret") == msg["ret"]),
              f"{len(replies)} reply(ies) on the client's ret (expected 1"
              + (f" with ret {msg['ret']}, profile {h.profile})" if restored else ")"))


async def _judge_forward(ctx: Ctx, res: ActResult, act: dict, msg: dict, peers: list[int], got: list, pushed: float) -> None:
    h, b, T = ctx.h, ctx.h.b, ctx.h.timing
    cmd = msg["cmd"]
    plans = {p: h.twins.plans[(p, cmd)] for p in peers}
    expect = {p: planned_attempts(b, plans[p], msg["try"]) for p in peers}
    failing = {p for p, (_, ok) in expect.items() if not ok} | ({DOWN} if DOWN in msg["dst"] else set())
    gap = h.freedoms["retry_pacing"]["bounds"][h.profile]["max_gap_s"]

    def mine(p=None):
        return [ex for ex in h.twins.exchanges if ex.cmd == cmd and (p is None or ex.twin == p)]

    def done(g) -> bool:
        return all(len([e for e in mine(p) if e.path == b["remote_endpoint"]]) >= expect[p][0] for p in peers) and \
            all(_errors(g, p) for p in failing)

    budget = T["response_s"] + max([expect[p][0] for p in peers] + [attempts_allowed(b, msg["try"])]) * (gap + T["slow_answer_s"])
    await _wait_ret(h, got, done, budget)
    await asyncio.sleep(T["quiet_s"] + (gap if any(retryable(b, a) for p in peers for a in plans[p]) else 0))
    deadline = msg["now"] + msg["exp"]
    for ex in mine():
        if ex.path != b["remote_endpoint"]:
            res.check("RMB-FWD-001", False, f"POST to {ex.path} (expected {b['remote_endpoint']})")
    for p in peers:
        posts = [e for e in mine(p) if e.path == b["remote_endpoint"]]
        n, accepted = expect[p]
        plan_txt = ", ".join(plans[p])
        if not posts:
            res.check("RMB-FWD-001", False, f"no POST reached twin {p} within {budget:.1f} s")
            continue
        res.check("RMB-FWD-001", True, f"{len(posts)} POST(s) to twin {p}")
        for k, ex in enumerate(posts, 1):
            m = ex.msg
            bad = schema_rule(m)
            if bad:
                res.check(bad[0], False, f"attempt {k} to twin {p}: {bad[1]}")
                continue
            res.check("RMB-MSG-001", True, "the POSTed message fits the v1 schema")
            if ex.sig_problem:
                res.check(sig_rule(ex.sig_problem), False, f"attempt {k} to twin {p}: {ex.sig_problem}")
            else:
                res.check("RMB-SIG-001", True, "sig is hex(prefix + 64 bytes)")
                res.check("RMB-SIG-006", True, "signed by the daemon's key")
            res.check("RMB-MSG-005", m["uid"] != "" and m["src"] == IUT,
                      f"attempt {k} to twin {p}: uid {m['uid']!r}, src {m['src']} (expected a uid set by the daemon and src {IUT})")
            res.check("RMB-FANOUT-001", m["dst"] == [p], f"attempt {k} to twin {p}: dst {m['dst']} (expected [{p}]: a copy per destination)")
            same = all(m.get(f) == msg[f] for f in ("cmd", "dat", "ret", "ver"))
            res.check("RMB-FWD-001", same, f"attempt {k} to twin {p}: cmd/dat/ret "
                      f"{(m.get('cmd'), m.get('dat'), m.get('ret'))} (expected the client's {(msg['cmd'], msg['dat'], msg['ret'])})")
            drift = abs(m["now"] + m["exp"] - deadline)
            # the deadline now + exp is the client's in every profile (exp relative to now); a profile
            # that re-stamps is judged on the fresh now as well (RMB-RETRY-004, below)
            res.check("RMB-MSG-004", drift <= T["clock_slack_s"], f"attempt {k} to twin {p}: now {m['now']} + exp {m['exp']} = "
                      f"{m['now'] + m['exp']} (expected the client's deadline {deadline})")
            if b["restamp_per_attempt"]:
                res.check("RMB-RETRY-004", m["now"] >= int(ex.wall) - T["clock_slack_s"],
                          f"attempt {k} to twin {p} at {ex.wall:.1f} carries now {m['now']} (expected it re-stamped)")
            if b["backlog_written"] == "before-forward":
                bl = ex.backlog
                # the TTL is exp from when the entry was written (the document), or what is left to the deadline
                # now + exp (a sender that counts from now): it must cover the request's remaining life
                low = max(deadline - ex.wall - T["clock_slack_s"], 0.0)
                high = msg["exp"] + T["clock_slack_s"]
                ttl = backlog_ttl(bl)
                ok = ttl is not None and 0 < ttl and low <= ttl <= high
                res.check("RMB-BACKLOG-001", ok, f"attempt {k} to twin {p}: the backlog entry was {bl} (expected it with a TTL "
                          f"between {low:.2f} s, what is left of the request's life, and exp {msg['exp']} s, within "
                          f"{T['clock_slack_s']} s)")
            uid = m["uid"]
            prev = ctx.uids.get(uid)
            res.check("RMB-MSG-005", prev in (None, cmd), f"uid {uid!r} was given before to another request ({prev})")
            ctx.uids[uid] = cmd
            if k > 1:
                g = ex.t - posts[k - 2].t
                res.check("RMB-RETRY-003", g <= gap + T["slow_answer_s"] + 0.5,
                          f"attempt {k} to twin {p} came {g:.2f} s after the previous one (the profile allows at most {gap} s)")
                res.check("RMB-BACKLOG-002", ex.wall <= deadline + T["clock_slack_s"],
                          f"attempt {k} to twin {p} at {ex.wall:.1f}, after the request's deadline {deadline}")
        if len(posts) != n:
            answers = [e.answer for e in posts]
            if len(posts) > attempts_allowed(b, msg["try"]):
                rule = "RMB-RETRY-001"
            elif len(posts) > n:
                rule = "RMB-RETRY-003"
            else:
                rule = "RMB-RETRY-001"
            res.check(rule, False, f"{len(posts)} attempt(s) to twin {p} answered {answers} (expected {n}: try {msg['try']}, "
                      f"answers planned {plan_txt}, {b['retry_on']} failures retried)")
        else:
            res.check("RMB-RETRY-001", True, f"{n} attempt(s) to twin {p}")
            if n > 1 or not accepted:
                res.check("RMB-RETRY-003", True, f"retried only what {b['retry_on']} allows")
    for p in sorted(failing):
        errs = _errors(got, p)
        res.check("RMB-RETRY-002", len(errs) == 1, f"{len(errs)} error message(s) from twin {p} on ret after the request could "
                  f"not be delivered to it (expected exactly one, src {p}, err set)")
        for m in errs[:1]:
            res.check("RMB-RETRY-002", *error_shape(m, p, msg))
    for p in peers:
        if p in failing:
            continue
        errs = [m for m in _errors(got, p) if not scrubbed(h, m, msg, got)]
        res.check("RMB-RETRY-002", not errs, f"{len(errs)} error message(s) from twin {p} although it accepted the request: "
                  + "; ".join(str(m.get("err"))[:80] for m in errs))
    effects = mine() or got
    if peers:  # a kit twin among the destinations: taking the request from the local queue shows as a POST
        res.check("RMB-LOCAL-001", bool(effects), "the request the kit pushed onto the daemon's local queue "
                  + ("was taken: a POST or an answer on ret followed" if effects
                     else "was not taken: nothing followed it (no POST, nothing on ret)"))
    delivered = []
    replies = {p: (act.get("replies") or {}).get({PEER_ED: "p2", PEER_SR: "p3"}[p]) for p in peers}
    # a late reply waits until the backlog entry expired: every other reply of the act goes first
    for p in sorted(peers, key=lambda p: replies[p] == "late"):
        variant = replies[p]
        posts = [e for e in mine(p) if e.path == b["remote_endpoint"] and isinstance(e.msg, dict) and e.msg.get("uid")]
        if variant and p not in failing and posts:
            outcome = await _reply(ctx, res, msg, p, posts[-1].msg, variant, got, pushed)
            if variant == "good":
                delivered.append((p, outcome))
    if len(delivered) > 1 and any(ok for _, ok in delivered):
        res.check("RMB-REPLY-006", all(ok for _, ok in delivered), "replies of a request to several twins reaching ret: "
                  + ", ".join(f"twin {p}: {'yes' if ok else 'no'}" for p, ok in delivered) + " (every one must: the backlog stays)")
    if act.get("expire"):
        await _judge_expiry(ctx, res, msg, [p for p in peers if p not in failing], got)


async def _judge_expiry(ctx: Ctx, res: ActResult, msg: dict, accepted: list[int], got: list) -> None:
    """The act waits past the request's deadline (``expire``: a short exp) and judges what follows:
    with a scrubber (rmb-go) exactly one timeout error per destination that took the request,
    answered or not, known by structure and time, its words free (RMB-BACKLOG-003, RMB-FREE-005);
    without one, nothing more on ret (RMB-RETRY-002: no error for a request that was delivered)."""
    h, T = ctx.h, ctx.h.timing
    sc = h.b["scrubber"]
    deadline = msg["now"] + msg["exp"]
    settle = (sc["interval_s"] if sc else 0) + T["clock_slack_s"]
    if sc:
        def timed_out(g) -> bool:
            return any(scrubbed(h, m, msg, g) for p in accepted for m in _errors(g, p))
        if await _wait_ret(h, got, timed_out, max(0.0, deadline - time.time()) + settle):
            await asyncio.sleep(T["quiet_s"])  # a second timeout of one entry would come now
    else:
        await asyncio.sleep(max(0.0, deadline - time.time()) + settle + T["quiet_s"])
    _kit(ctx, res, f"waited past the request's deadline {deadline} (now {msg['now']} + exp {msg['exp']})")
    if sc and accepted:
        # one backlog entry per uid: a fan-out whose copies share the uid (rmb-go's "$dst.$n") is
        # one entry, timed out once; copies with uids of their own are timed out each
        late = [(p, m) for p in accepted for m in _errors(got, p) if scrubbed(h, m, msg, got)]
        res.check("RMB-BACKLOG-003", 1 <= len(late) <= len(accepted),
                  f"{len(late)} timeout error(s) on ret after the deadline from twin(s) {sorted({p for p, _ in late})} (expected "
                  f"one per backlog entry, 1 to {len(accepted)}: the scrubber times out every request it holds, answered or not; "
                  "its words are free)")
        for p, m in late:
            res.check("RMB-BACKLOG-003", *error_shape(m, p, msg))
    for p in accepted:
        if not sc:
            errs = _errors(got, p)
            res.check("RMB-RETRY-002", not errs, f"{len(errs)} error message(s) from twin {p} on ret by the time the request "
                      "expired, although twin {p} took it (expected none)")


def error_shape(err: dict, p: int, msg: dict) -> tuple[bool, str]:
    """(ok, detail) of an error message on ret against RMB-RETRY-002's "src and dst swapped, err
    set, dat empty": src the destination that failed, dst the request's source (the daemon's
    twin, or 0, the client's own src), dat empty; its err text is free (RMB-FREE-005)."""
    wrong = []
    if err.get("src") != p:
        wrong.append(f"src {err.get('src')!r} (expected {p}, the destination)")
    if err.get("dst") not in ([IUT], [0]):
        wrong.append(f"dst {err.get('dst')!r} (expected [{IUT}], the request's source, or [0], the client's)")
    if err.get("dat") not in ("", None):
        wrong.append(f"dat {str(err.get('dat'))[:40]!r} (expected empty: the request's payload is not the error's)")
    if not err.get("err"):
        wrong.append("err empty")
    return not wrong, (f"the error message from twin {p} on ret {msg['ret']}: " + ("; ".join(wrong) if wrong else
                                                                                 "src and dst swapped, err set, dat empty"))


def scrubbed(h: Harness, err: dict, msg: dict, got: list) -> bool:
    """Whether an error on ret is the profile's scrubber timing out the request (rmb-go): known by
    structure and time, never by its words (RMB-FREE-005): an error from the destination, pushed
    once the request's deadline (now + exp) has passed."""
    if not h.b["scrubber"]:
        return False
    when = next((t for t, m in got if m is err), None)
    deadline_wall = msg["now"] + (msg["exp"] or h.b["scrubber"]["default_exp_s"])
    return when is not None and _wall(when) >= deadline_wall - h.timing["clock_slack_s"]


def _wall(t_monotonic: float) -> float:
    return time.time() - (time.monotonic() - t_monotonic)


def _reply_message(h: Harness, request: dict, p: int, text: str) -> dict:
    return {"ver": 1, "uid": request["uid"], "cmd": str(request.get("cmd", "")), "exp": request.get("exp", 30),
            "try": request.get("try", 1), "dat": b64(text),
            "src": p, "dst": [IUT], "ret": h.b["reply_queue"], "shm": "", "now": int(time.time()), "err": ""}


async def _reply(ctx: Ctx, res: ActResult, msg: dict, p: int, request: dict, variant: str, got: list, pushed: float) -> bool:
    """Kit twin ``p`` answers ``request`` by POSTing a reply to the daemon's reply endpoint; True
    when a good reply reached the client's ret. A good reply is judged by when it was posted: one
    that leaves once the backlog entry may have expired (exp after the push, within the clock
    slack) may be answered either way, but consistently (routed when accepted, dropped when not)."""
    h, b, T = ctx.h, ctx.h.b, ctx.h.timing
    if b["backlog_written"] == "after-post":  # rmb-go: the hash entry is written after the POST
        ok = await _poll(lambda: h.backlog_state(request["uid"]), "present", T["response_s"])
        res.check("RMB-BACKLOG-003", ok, f"the backlog hash {b['backlog_key']} {'has' if ok else 'never got'} uid {request['uid']}")
    if variant == "late":
        gone = await _poll(lambda: h.backlog_state(request["uid"]), "absent", msg["exp"] + T["response_s"])
        if not gone:
            res.check("RMB-BACKLOG-001", False, f"the backlog entry of {request['uid']} still exists {msg['exp']} s (exp) later: "
                      f"{await h.backlog_state(request['uid'])}")
            return False
        await asyncio.sleep(0.05)
    expiring = False
    if variant == "good":
        state = await h.backlog_state(request["uid"])
        ttl = backlog_ttl(state)
        expiring = time.monotonic() >= pushed + msg["exp"] - T["clock_slack_s"] and not (ttl is not None and ttl > T["clock_slack_s"])
    reply = _reply_message(h, request, p, f"reply {variant} from {p} to {request['uid']}")
    if variant == "wrong_dst":
        reply["dst"] = [PEER_SR if p == PEER_ED else PEER_ED]
    signer = h.keys[PEER_SR if p == PEER_ED else PEER_ED] if variant == "forged" else h.keys[p]
    signed = signer.sign(reply)
    status, text = await h.post(b["reply_endpoint"], json.dumps(signed).encode(), T["response_s"])
    _kit(ctx, res, f"twin {p} POSTed a {variant} reply to {b['reply_endpoint']} -> {status} {text[:80]!r}")
    want = {"good": b["accepted"]["status"], "forged": b["status_bad_signature"], "wrong_dst": b["status_wrong_destination"],
            "late": b["reply_without_backlog"]}[variant]
    rule = {"good": "RMB-REPLY-005", "forged": "RMB-REPLY-007", "wrong_dst": "RMB-REPLY-003", "late": "RMB-REPLY-004"}[variant]
    delivered = lambda g: [m for _, m in g if isinstance(m, dict) and m.get("dat") == reply["dat"]]  # noqa: E731
    if variant == "good":
        await _wait_ret(h, got, delivered, T["quiet_s"] if expiring else T["response_s"])
        await asyncio.sleep(0.1)
        d = delivered(got)
        if expiring and not d and status == b["reply_without_backlog"]:
            res.check("RMB-REPLY-004", True, f"the good reply from twin {p} left {time.monotonic() - pushed:.2f} s after the push "
                      f"(exp {msg['exp']} s), when its backlog entry may have expired: answered {status} and dropped")
            return False
        res.check(rule, status == want, f"a {variant} reply from twin {p} was answered {status} (expected {want})")
        if not b["reply_ret_restored"]:  # spec/rmb/behaviour.yaml
            return res.check("RMB-REPLY-005", len(d) == 1, f"{len(d)} copy(ies) of twin {p}'s reply on the client's ret {msg['ret']} "
                             "(expected one)")
        tag = msg.get("tag")
        return res.check("RMB-REPLY-005", len(d) == 1 and d[0].get("ret") == msg["ret"] and (tag is None or d[0].get("tag") == tag),
                         f"{len(d)} copy(ies) of twin {p}'s reply on the client's ret {msg['ret']}"
                         + (f", its ret field {d[0].get('ret')!r}, its tag {d[0].get('tag')!r}" if len(d) == 1 else "")
                         + f" (expected one, its ret field restored to {msg['ret']}"
                         + (f" and its tag to {tag!r}" if tag is not None else "") + f": profile {h.profile})")
    else:
        res.check(rule, status == want, f"a {variant} reply from twin {p} was answered {status} (expected {want})")
        await asyncio.sleep(T["quiet_s"])
        d = delivered(got)
        res.check(rule, not d, f"the {variant} reply from twin {p} reached the client's ret {len(d)} time(s) (expected never)")
        return False


async def _poll(get, prefix: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if (await get()).startswith(prefix):
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)


# ---- remote -----------------------------------------------------------------------------------------
def remote_request(h: Harness, variant: str, p: int, cmd: str) -> tuple[bytes, dict | None]:
    """The body a kit twin posts, broken as ``variant`` says, and the message it stands for."""
    now = int(time.time())
    m = {"ver": 1, "uid": str(uuid.uuid4()), "cmd": cmd, "exp": 30, "try": 2, "dat": b64(f"remote {cmd}"), "src": p, "dst": [IUT],
         "ret": str(uuid.uuid4()), "shm": "", "now": now, "err": ""}
    key = h.keys[p]
    if variant == "old_now":
        m.update(now=now - 120, exp=3600)
    elif variant == "expired":
        m.update(now=now - 40, exp=10)
    elif variant == "future_now":
        m.update(now=now + 30)
    elif variant == "wrong_dst":
        m["dst"] = [PEER_SR if p == PEER_ED else PEER_ED]
    elif variant == "unknown_src":
        m["src"] = UNKNOWN
    elif variant == "empty_dst":
        m["dst"] = []
    elif variant == "bad_dat":
        m["dat"] = "not base64!"
    elif variant == "bad_schema":
        del m["cmd"]
    signed = key.sign(m)
    if variant == "bad_sig":
        raw = bytearray(bytes.fromhex(signed["sig"]))
        raw[5] ^= 0xFF
        signed["sig"] = raw.hex()
    elif variant == "wrong_key_type":  # twin 3's directory key is sr25519; this is signed with an ed25519 key
        signed = {**h.keys[PEER_ED].sign({**m, "src": PEER_SR})}
    elif variant == "tampered_unsigned":
        signed.update({"exp": signed["exp"] + 5, "try": 3, "shm": "changed in transit"})
    elif variant == "tampered_signed":
        signed["dat"] = b64("changed in transit")
    if variant == "not_json":
        return b"{not json", None
    return json.dumps(signed).encode(), signed


def remote_expectation(b: dict, variant: str) -> tuple[int, str]:
    """(status, rule) a daemon answers a request of ``variant`` with, in this profile."""
    bad_sig = (b["status_bad_signature"], "RMB-REMOTE-003")
    table = {"bad_sig": bad_sig, "unknown_src": bad_sig, "wrong_key_type": bad_sig, "tampered_signed": bad_sig,
             "not_json": (b["status_bad_body"], "RMB-REMOTE-002"), "bad_schema": (b["status_bad_body"], "RMB-REMOTE-002"),
             "bad_dat": (b["status_bad_body"], "RMB-REMOTE-002"), "empty_dst": (b["status_bad_body"], "RMB-REMOTE-002"),
             "wrong_dst": (b["status_wrong_destination"], "RMB-REMOTE-004"),
             "tampered_unsigned": (b["accepted"]["status"], "RMB-SIG-005"),
             "future_now": (b["accepted"]["status"], "RMB-REMOTE-001"), "good": (b["accepted"]["status"], "RMB-REMOTE-001")}
    if variant == "old_now":
        return (b["status_bad_body"], "RMB-REMOTE-006") if b["age_limit_s"] is not None else (b["accepted"]["status"], "RMB-REMOTE-006")
    if variant == "expired":
        return (b["status_bad_body"], "RMB-REMOTE-007") if b["refuse_expired"] else (b["accepted"]["status"], "RMB-REMOTE-007")
    return table[variant]


OPEN_REFUSALS = ("old_now", "expired")  # refused by rmb-rs-v1 (RMB-REMOTE-006/007); the others say nothing


def refusal_is_open(profile: str, variant: str, rule: str) -> bool:
    """Whether a daemon may refuse a ``variant`` request with the bad-body status although the
    profile's reference accepts it: the rule that would ask for the refusal is off in the profile
    (it does not have the behaviour), so either answer is the daemon's choice."""
    from rmkit.protocols.rmb.model import rmb_spec

    return variant in OPEN_REFUSALS and rmb_spec().mode(rule, profile) == "off"


async def run_remote(ctx: Ctx, act: dict) -> ActResult:
    h, b, T = ctx.h, ctx.h.b, ctx.h.timing
    res = ActResult(act)
    p = TARGETS[act.get("from", "p2")]
    cmd = ctx.fresh("cmd")
    variant = act["variant"]
    body, m = remote_request(h, variant, p, cmd)
    since = time.monotonic()
    status, text = await h.post(b["remote_endpoint"], body, T["response_s"])
    _kit(ctx, res, f"twin {p} POSTed a {variant} request to {b['remote_endpoint']} -> {status} {text[:80]!r}")
    want, rule = remote_expectation(b, variant)
    accepted = want == b["accepted"]["status"]
    if accepted and status == b["status_bad_body"] and refusal_is_open(h.profile, variant, rule):
        accepted, want = False, status  # the daemon took the refusal the profile leaves open
    if variant == "bad_dat" and b["non_base64_dat"] != "refuse" and (status == b["accepted"]["status"] or b["non_base64_dat"] == "forward"):
        accepted, want = True, b["accepted"]["status"]  # it takes dat as given (behaviour.yaml non_base64_dat)
    res.check(rule, status == want, f"a {variant} request was answered {status} (expected {want})")
    queue = b["command_queue"].format(cmd=cmd)
    uid = m.get("uid") if m else None
    try:
        if not accepted:
            req = await h.pop(queue, T["quiet_s"])
            rule_seen = "RMB-REMOTE-003" if rule == "RMB-REMOTE-003" else rule
            res.check(rule_seen, req is None, f"the refused {variant} request reached the handler queue {queue}: {req is not None}")
            return res
        req = await h.pop(queue, T["response_s"])
        if not isinstance(req, dict):
            res.check("RMB-REMOTE-005", False, f"the accepted request never reached {queue} as a message: "
                      f"{'nothing came' if req is None else repr(req)[:120]}")
            return res
        covered = all(req.get(f) == m.get(f) for f in ("uid", "cmd", "dat", "src", "dst", "now"))
        res.check("RMB-REMOTE-005", req.get("ret") == b["reply_queue"] and covered,
                  f"{queue} got ret {req.get('ret')!r} and the request's fields intact: {covered} "
                  f"(expected ret {b['reply_queue']})")
        plan = list(act.get("reply_answers") or [])
        if not plan:
            return res
        h.twins.plans[(p, uid)] = plan
        answer = {**req, "src": IUT, "dst": [p], "dat": b64(f"answer to {uid}"), "err": "", "sig": "",
                  "now": int(time.time())}
        await h.push(b["reply_queue"], answer)
        _kit(ctx, res, f"handler pushed its answer to {b['reply_queue']} (twin {p} will answer {', '.join(plan)})")
        n = planned_attempts(b, plan, answer["try"])[0]
        gap = h.freedoms["retry_pacing"]["bounds"][h.profile]["max_gap_s"]

        def posts():
            return [e for e in h.twins.exchanges if e.uid == uid and e.twin == p]
        await h.twins.wait(lambda: len(posts()) >= n, T["response_s"] + n * (gap + T["slow_answer_s"]))
        await asyncio.sleep(T["quiet_s"] + (gap if any(a == "close" for a in plan) else 0))
        got = posts()
        if not got:
            res.check("RMB-REPLY-001", False, f"the handler's answer was never posted to twin {p}'s {b['reply_endpoint']}")
            return res
        for k, ex in enumerate(got, 1):
            ok = ex.path == b["reply_endpoint"] and isinstance(ex.msg, dict) and ex.msg.get("dst") == [p] and ex.msg.get("src") == IUT
            res.check("RMB-REPLY-001", ok, f"reply attempt {k}: {ex.path} src {ex.msg.get('src') if isinstance(ex.msg, dict) else '?'} "
                      f"dst {ex.msg.get('dst') if isinstance(ex.msg, dict) else '?'} (expected {b['reply_endpoint']}, src {IUT}, dst [{p}])")
            if ex.sig_problem:
                res.check(sig_rule(ex.sig_problem), False, f"reply attempt {k}: {ex.sig_problem}")
            else:
                res.check("RMB-SIG-006", True, "reply signed by the daemon's key")
        most = attempts_allowed(b, answer["try"])
        if any(a == "close" for a in plan[:n]) and not any(a not in ("close",) for a in plan[:n]):
            ok = 1 <= len(got) <= most
            res.check("RMB-REPLY-002", ok, f"{len(got)} attempt(s) to post a reply twin {p} never took (expected 1..{most})")
        else:
            res.check("RMB-REPLY-002", len(got) == n, f"{len(got)} attempt(s) to post a reply answered {[e.answer for e in got]} "
                      f"(expected {n}: {b['retry_on']} failures retried)")
        return res
    finally:
        _evidence(ctx, res, {cmd, uid or ""}, since)


# ---- stale job and bad local message ----------------------------------------------------------------
async def run_stale_job(ctx: Ctx, act: dict) -> ActResult:
    h, b, T = ctx.h, ctx.h.b, ctx.h.timing
    res = ActResult(act)
    uid = ctx.fresh("expired-uid")
    job = b["forward_job"].format(uid=uid, dst=PEER_ED)
    since = time.monotonic()
    await h.push(b["forward_queue"], job)
    _kit(ctx, res, f"pushed forward job {job!r} for a request whose backlog entry expired")
    await asyncio.sleep(T["quiet_s"])
    posted = [e for e in h.twins.exchanges if e.uid == uid]
    res.check("RMB-BACKLOG-002", not posted, f"{len(posted)} POST(s) for a forward job whose backlog entry is gone (expected none)")
    _evidence(ctx, res, {uid}, since)
    return res


async def run_bad_local(ctx: Ctx, act: dict) -> ActResult:
    h, b, T = ctx.h, ctx.h.b, ctx.h.timing
    res = ActResult(act)
    cmd, ret = ctx.fresh("cmd"), ctx.fresh("ret")
    msg = client_message(cmd, [PEER_ED], 30, 1, ret, "bad")
    variant = act["variant"]
    if variant == "bad_dat":
        msg["dat"] = "%%%"
    elif variant == "empty_dst":
        msg["dst"] = []
    elif variant == "no_cmd":
        del msg["cmd"]
    elif variant == "string_exp":
        msg["exp"] = "30"
    since = time.monotonic()
    await h.push(b["local_queue"], msg)
    _kit(ctx, res, f"client pushed a message with {variant} to {b['local_queue']}")
    reading = b["non_base64_dat"] if variant == "bad_dat" else "refuse"
    if reading != "refuse":  # a daemon may forward a non-base64 dat as given (behaviour.yaml non_base64_dat)
        def sent_or_refused():
            return any(e.cmd == cmd for e in h.twins.exchanges)
        err = None
        deadline = time.monotonic() + T["response_s"]
        while err is None and not sent_or_refused() and time.monotonic() < deadline:
            err = await h.pop(ret, 0.1)
        posted = [e for e in h.twins.exchanges if e.cmd == cmd]
        if posted or reading == "forward":
            intact = [e for e in posted if isinstance(e.msg, dict) and e.msg.get("dat") == msg["dat"]]
            res.check("RMB-LOCAL-002", bool(intact) and err is None,
                      f"{len(posted)} POST(s), {len(intact)} with dat as given, and ret got "
                      f"{'nothing' if err is None else json.dumps(err)[:120]} (expected the message forwarded with its dat as given, "
                      "or refused with an error on ret and no POST)")
            _evidence(ctx, res, {cmd, ret}, since)
            return res
    else:
        err = await h.pop(ret, T["response_s"])
    res.check("RMB-LOCAL-002", isinstance(err, dict) and bool(err.get("err")),
              f"ret got {'nothing' if err is None else json.dumps(err)[:160]} for an invalid message (expected an error message)")
    await asyncio.sleep(T["quiet_s"] if reading != "refuse" else 0)
    posted = [e for e in h.twins.exchanges if e.cmd == cmd]
    res.check("RMB-LOCAL-002", not posted, f"{len(posted)} POST(s) of an invalid message (expected none)")
    _evidence(ctx, res, {cmd, ret}, since)
    return res


# ---- proxying -------------------------------------------------------------------------------------
PROXY_VARIANTS = ("good", "bad_payload_sig", "not_for_me")


async def run_proxy(ctx: Ctx, act: dict) -> ActResult:
    """Kit twin 2 (the proxy) posts an envelope (cmd system.proxy) whose dat is a payload signed by
    kit twin 3 (the sender); the daemon must check the payload, hand it to its command with the
    envelope's uid, park the envelope, and wrap the handler's answer back to twin 2."""
    h, b, T = ctx.h, ctx.h.b, ctx.h.timing
    res = ActResult(act)
    proxy = b["proxy"]
    if proxy is None:  # the profile has no proxy: nothing to judge
        return res
    cmd = ctx.fresh("cmd")
    variant = act["variant"]
    payload = client_message(cmd, [PEER_ED if variant == "not_for_me" else IUT], 30, 1, "", f"payload {cmd}")
    payload.update(src=PEER_SR, uid=str(uuid.uuid4()))
    payload = h.keys[PEER_SR].sign(payload)
    if variant == "bad_payload_sig":
        payload["dat"] = b64("changed by the proxy")
    envelope = client_message(proxy["cmd"], [IUT], 30, 1, ctx.fresh("ret"), "")
    envelope.update(uid=str(uuid.uuid4()), src=PEER_ED, dat=b64(json.dumps(payload)))
    uid = envelope["uid"]
    since = time.monotonic()
    try:
        status, text = await h.post(b["remote_endpoint"], json.dumps(h.keys[PEER_ED].sign(envelope)).encode(), T["response_s"])
        _kit(ctx, res, f"twin {PEER_ED} POSTed an envelope ({variant} payload of twin {PEER_SR}) -> {status} {text[:80]!r}")
        res.check("RMB-PROXY-001", status == b["accepted"]["status"], f"the envelope was answered {status} "
                  f"(expected {b['accepted']['status']}: it passes the normal checks)")
        queue = b["command_queue"].format(cmd=cmd)

        def back():
            return [e for e in h.twins.exchanges if e.uid == uid and e.twin == PEER_ED]
        if variant != "good":
            req = await h.pop(queue, T["quiet_s"])
            res.check("RMB-PROXY-002", req is None, f"a {variant} payload reached {queue}: {req is not None} (expected never)")
            await h.twins.wait(lambda: bool(back()), T["response_s"])
            errs = [e for e in back() if isinstance(e.msg, dict) and e.msg.get("err")]
            res.check("RMB-PROXY-002", bool(errs), f"{len(back())} message(s) back to the proxy twin, {len(errs)} with err set "
                      "(expected an error for the refused payload)")
            return res
        req = await h.pop(queue, T["response_s"])
        if not isinstance(req, dict):
            res.check("RMB-PROXY-001", False, f"the payload never reached {queue}")
            return res
        res.check("RMB-PROXY-001", True, f"the payload reached {queue}")
        res.check("RMB-PROXY-004", req.get("ret") == proxy["reply_queue"] and req.get("dat") == payload["dat"],
                  f"the payload on {queue} has ret {req.get('ret')!r} (expected {proxy['reply_queue']}) and its dat intact")
        parked = await h.redis.pttl(proxy["backlog_key"].format(uid=uid))
        res.check("RMB-PROXY-003", req.get("uid") == uid and parked > 0,
                  f"the payload took uid {req.get('uid')!r} (expected the envelope's {uid}); the envelope parked under "
                  f"{proxy['backlog_key'].format(uid=uid)} with PTTL {parked} (expected a TTL)")
        answer = {**req, "src": IUT, "dst": [PEER_SR], "dat": b64(f"proxied answer {cmd}"), "err": "", "sig": "", "now": int(time.time())}
        await h.push(req.get("ret") or proxy["reply_queue"], answer)
        _kit(ctx, res, f"handler pushed its answer to {req.get('ret')}")
        await h.twins.wait(lambda: bool(back()), T["response_s"])
        got = back()
        ok, why = False, "nothing came back to the proxy twin"
        for e in got:
            m = e.msg if isinstance(e.msg, dict) else {}
            try:
                inner = json.loads(__import__("base64").b64decode(m.get("dat", "")))
            except ValueError:
                inner = None
            inner_sig = h.signature_problem(inner) if isinstance(inner, dict) else "dat holds no message"
            ok = (e.path == b["reply_endpoint"] and m.get("dst") == [PEER_ED] and e.sig_problem is None and isinstance(inner, dict)
                  and inner.get("dat") == answer["dat"] and inner_sig is None)
            why = (f"{e.path} dst {m.get('dst')}, envelope sig {e.sig_problem or 'ok'}, wrapped answer "
                   f"{'dat intact' if isinstance(inner, dict) and inner.get('dat') == answer['dat'] else 'missing or changed'}, "
                   f"its sig {inner_sig or 'ok'}")
            if ok:
                break
        res.check("RMB-PROXY-005", ok, f"the reply envelope to twin {PEER_ED}: {why} (expected {b['reply_endpoint']}, dst "
                  f"[{PEER_ED}], signed, dat = the handler's answer signed by the daemon)")
        return res
    finally:
        _evidence(ctx, res, {cmd, uid}, since)


RUNNERS = {"proxy": run_proxy, "send": run_send, "remote": run_remote, "stale_job": run_stale_job, "bad_local": run_bad_local}


async def run_act(ctx: Ctx, act: dict) -> ActResult:
    return await RUNNERS[act["act"]](ctx, act)
