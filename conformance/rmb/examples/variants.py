"""The variants: each a subclass of the reference daemon with one change, said in its docstring."""

from __future__ import annotations

import asyncio
import itertools
import os
import random

from rmkit.reference_impl.rmb.daemon import RmbDaemon


# ---- faulty ----------------------------------------------------------------------------------
class _WrongFieldsKey:
    """Signs the challenge with ret left out: the signature covers the wrong fields."""

    def __init__(self, kp):
        self.kp = kp

    def sign(self, msg: dict) -> dict:
        return {**msg, "sig": self.kp.sign({**msg, "ret": ""})["sig"]}


class SignsWrongFields(RmbDaemon):
    """Signs every outgoing message over the wrong fields (ret left out of the challenge)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.cfg.keypair = _WrongFieldsKey(cfg.keypair)


class _BrokenSrKey:
    """An sr25519 key that signs the digest's hex text instead of its 16 bytes; ed25519 signs right."""

    def __init__(self, kp):
        self.kp = kp

    def __getattr__(self, name):
        return getattr(self.kp, name)

    def sign(self, msg: dict) -> dict:
        from rmkit.protocols.rmb.signing import digest

        if self.kp.key_type != "sr25519":
            return self.kp.sign(msg)
        return {**msg, "sig": (b"s" + self.kp.sign_digest(digest(msg).hex().encode())).hex()}


class BrokenSr25519(RmbDaemon):
    """Signs right with an ed25519 key, wrong with an sr25519 one (the digest's hex text signed)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.cfg.keypair = _BrokenSrKey(cfg.keypair)


class RetriesOn4xx(RmbDaemon):
    """Retries on any failure, an HTTP 4xx/5xx answer too, requests and replies alike (only connection
    errors are retried)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["retry_on"] = "any"


class RetriesPastTry(RmbDaemon):
    """Makes one attempt more than try allows, for requests and replies alike."""

    def _attempts(self, msg: dict) -> int:
        return super()._attempts(msg) + 1


class _NoTtlPipeline:
    def __init__(self, pipe):
        self._pipe = pipe

    def set(self, key, value, ex=None, **kw):
        return self._pipe.set(key, value, **kw)  # the fault: the TTL (exp) is dropped

    def __getattr__(self, name):
        return getattr(self._pipe, name)


class _NoTtlRedis:
    def __init__(self, r):
        self._r = r

    def pipeline(self, *a, **kw):
        return _NoTtlPipeline(self._r.pipeline(*a, **kw))

    def __getattr__(self, name):
        return getattr(self._r, name)


class IgnoresExp(RmbDaemon):
    """Stores the backlog entry without its TTL (exp ignored): requests never expire."""

    async def start(self) -> None:
        await super().start()
        self.redis = _NoTtlRedis(self.redis)


class _ShortTtlPipeline(_NoTtlPipeline):
    def set(self, key, value, ex=None, **kw):
        return self._pipe.set(key, value, ex=2, **kw)  # the fault: 2 s whatever exp says


class _ShortTtlRedis(_NoTtlRedis):
    def pipeline(self, *a, **kw):
        return _ShortTtlPipeline(self._r.pipeline(*a, **kw))


class ShortTtl(RmbDaemon):
    """Stores the backlog entry with a TTL of 2 s whatever exp says: replies after 2 s are lost."""

    async def start(self) -> None:
        await super().start()
        self.redis = _ShortTtlRedis(self.redis)


class KeepsNow(RmbDaemon):
    """Posts every attempt with the client's now and exp as they came (rmb-rs-v1 re-stamps now
    before each attempt)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["restamp_per_attempt"] = False


class AcceptsOldNow(RmbDaemon):
    """Accepts requests whatever their now (no age limit; caught where the profile has one, rmb-rs-v1)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["age_limit_s"] = None
        self.b["refuse_expired"] = False


class DropsReplies(RmbDaemon):
    """Acknowledges a reply but never pushes it to the client's ret."""

    async def _reply(self, request):
        msg, refused = await self._checked(request)
        if refused:
            return refused
        if await self._backlog_get(msg["uid"]) is None:
            return self._answer(request, self.b["reply_without_backlog"], msg, "no backlog entry")
        return self._answer(request, self.b["accepted"]["status"], msg, "accepted (and dropped)")


class LateReply(RmbDaemon):
    """Keeps every forwarded request in memory too, so a reply is delivered after its backlog expired."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self._mem: dict[str, dict] = {}

    async def _post(self, twin, endpoint, msg, attempt):
        if endpoint == self.b["remote_endpoint"]:
            self._mem[msg["uid"]] = msg
        return await super()._post(twin, endpoint, msg, attempt)

    async def _backlog_get(self, uid):
        return await super()._backlog_get(uid) or self._mem.get(uid)


class WrongQueue(RmbDaemon):
    """Pushes requests (and proxied payloads) for a command to msgbus.system.$cmd instead of msgbus.$cmd."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["command_queue"] = "msgbus.system.{cmd}"


class ForgetsTag(RmbDaemon):
    """Restores a reply's ret from the backlog but not its tag (rmb-rs-v1 restores both)."""

    async def _reply(self, request):
        import json

        msg, refused = await self._checked(request)
        if refused:
            return refused
        original = await self._backlog_get(msg["uid"])
        if original is None:
            return self._answer(request, self.b["reply_without_backlog"], msg, "no backlog entry (timed out): reply dropped")
        out = {k: v for k, v in msg.items() if k != "tag"}
        await self.redis.lpush(original["ret"], json.dumps({**out, "ret": original["ret"]}, ensure_ascii=False))
        return self._answer(request, self.b["accepted"]["status"], msg, "accepted")


class ErrorKeepsDat(RmbDaemon):
    """Tells the client a request could not be delivered with an error that still carries the
    request's dat (the error's dat must be empty)."""

    def _error_for(self, msg, err, from_twin=None):
        return {**super()._error_for(msg, err, from_twin), "dat": msg.get("dat", "")}


class NoScrubber(RmbDaemon):
    """rmb-go without its scrubber: expired requests are never timed out on ret."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["scrubber"] = None


# ---- legal -------------------------------------------------------------------------------------
class OwnErrorWords(RmbDaemon):
    """Words of its own in every error on ret, its scrubber's timeout too (the words are free)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["send_error_text"] = "twin {dst} is out of reach ({reason})"
        if self.b["scrubber"]:
            self.b["scrubber"] = {**self.b["scrubber"], "error": "deadline passed without completion"}


class CounterUids(RmbDaemon):
    """Another uid scheme: a per-process prefix and a counter (unique, not uuid4)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self._n = itertools.count(1)
        self._prefix = f"t{cfg.twin}-{os.getpid()}-{random.getrandbits(32):08x}"

    async def _new_uid(self, msg):
        return f"{self._prefix}-{next(self._n)}"


class OneWorker(RmbDaemon):
    """One forward worker (the reference runs four)."""

    def __init__(self, cfg):
        cfg.workers = 1
        super().__init__(cfg)


class ManyWorkers(RmbDaemon):
    """Sixteen forward workers."""

    def __init__(self, cfg):
        cfg.workers = 16
        super().__init__(cfg)


class ReorderedReplies(RmbDaemon):
    """Replies are held a random while (up to 0.3 s) before they are routed, so the replies of a
    fan-out reach ret in another order than they arrived."""

    async def _reply(self, request):
        await asyncio.sleep(random.uniform(0, 0.3))
        return await super()._reply(request)


class Restamps(RmbDaemon):
    """Re-stamps now before every attempt, keeping the deadline (the profile need not)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["restamp_per_attempt"] = True


class KeepsReplyRet(RmbDaemon):
    """Pushes a reply to the request's ret queue as the replying twin sent it: its ret field is not
    rewritten (document 004 asks for the queue only; rmb-rs-v1 rewrites it)."""

    async def _reply(self, request):
        import json

        msg, refused = await self._checked(request)
        if refused:
            return refused
        original = await self._backlog_get(msg["uid"])
        if original is None:
            return self._answer(request, self.b["reply_without_backlog"], msg, "no backlog entry (timed out): reply dropped")
        await self.redis.lpush(original["ret"], json.dumps(msg, ensure_ascii=False))
        self.log.record("reply-to-ret", direction="out", queue=original["ret"], msg=msg)
        return self._answer(request, self.b["accepted"]["status"], msg, "accepted")


class RefusesStale(RmbDaemon):
    """Refuses with 400 a request whose now is over 60 s old or whose now + exp has passed, as
    rmb-rs-v1 does: a choice the spec and rmb-go profiles leave open (RMB-REMOTE-006/007 off there)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["age_limit_s"] = 60
        self.b["refuse_expired"] = True


class TakesAnyDat(RmbDaemon):
    """Forwards dat as given: a non-base64 dat from the local client is posted, one at the remote
    endpoint is taken (202) and handed to its command. The documents leave it open whether a valid
    body decodes dat (behaviour.yaml non_base64_dat); the reference refuses it."""

    def __init__(self, cfg):
        super().__init__(cfg)
        from rmkit.reference_impl.rmb import daemon

        checks = daemon.message_problems
        daemon.message_problems = lambda msg: [p for p in checks(msg) if p[0] != "RMB-MSG-002"]


class DropsBadDat(RmbDaemon):
    """Drops a local message whose dat is not base64 silently: neither forwarded nor answered on ret."""

    async def _push(self, queue, msg, event):
        if event == "error-to-ret" and "RMB-MSG-002" in str(msg.get("err")):
            self.log.record("local-invalid-dropped", direction="none", queue=queue, msg=msg)
            return
        await super()._push(queue, msg, event)


# ---- rule mutants: one promise broken each, to show the scenario that judges a rule can fail it --
class NoErrorOnFailure(RmbDaemon):
    """Never tells the client that a request could not be delivered."""

    async def _request_failed(self, msg, dst, reason):
        self.log.record("error-swallowed", direction="none", msg=msg, note=reason)


class AcceptsForgedRequests(RmbDaemon):
    """Takes any signature as valid (the source twin is still looked up in the directory)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        import rmkit.reference_impl.rmb.daemon as daemon_module

        daemon_module.verify = lambda msg, public, key_type=None: key_type


class DeletesBacklogOnReply(RmbDaemon):
    """Deletes the backlog entry on the first reply (the V daemon's way), losing the others of a fan-out."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.b["backlog_deleted_on_reply"] = True


class WholeDstPerCopy(RmbDaemon):
    """Posts every destination the whole dst list, not a copy for itself."""

    async def _post(self, twin, endpoint, msg, attempt):
        if endpoint == self.b["remote_endpoint"] and hasattr(self, "_full"):
            full = self._full.get(msg["uid"])
            if full and full != msg["dst"]:
                msg = self.cfg.keypair.sign({**msg, "dst": full})
        return await super()._post(twin, endpoint, msg, attempt)

    async def _load_request(self, uid):
        msg = await super()._load_request(uid)
        if msg:
            self.__dict__.setdefault("_full", {})[uid] = msg["dst"]
        return msg


class ForgetsUnknownTwins(RmbDaemon):
    """Drops a request naming an unknown twin without telling the client."""

    async def _push(self, queue, msg, event):
        if event == "error-to-ret" and str(msg.get("err", "")).startswith("unknown destination"):
            return
        await super()._push(queue, msg, event)


class ConstantUid(RmbDaemon):
    """Gives every request the same uid."""

    async def _new_uid(self, msg):
        return "the-uid"


class NoProxyCheck(RmbDaemon):
    """Hands a proxied payload to its command without checking its signature or destination."""

    async def _proxy_refuse(self, envelope, why):
        import base64
        import json

        payload = json.loads(base64.b64decode(envelope["dat"]))
        payload = {**payload, "uid": envelope["uid"], "ret": self.b["proxy"]["reply_queue"]}
        await self._push(self.b["command_queue"].format(cmd=payload["cmd"]), payload, "proxy-payload-unchecked")


class RepliesNeverPosted(RmbDaemon):
    """Pops the handlers' answers but never posts them back."""

    async def _send_reply(self, msg, attempt):
        self.log.record("reply-swallowed", direction="none", msg=msg)


MUTANTS = {  # name -> (class, profile, the rule whose scenarios must catch it)
    "no-error-on-failure": (NoErrorOnFailure, "spec", "RMB-RETRY-002"),
    "accepts-forged-requests": (AcceptsForgedRequests, "spec", "RMB-REMOTE-003"),
    "deletes-backlog-on-reply": (DeletesBacklogOnReply, "spec", "RMB-REPLY-006"),
    "whole-dst-per-copy": (WholeDstPerCopy, "spec", "RMB-FANOUT-001"),
    "forgets-unknown-twins": (ForgetsUnknownTwins, "spec", "RMB-DIR-001"),
    "constant-uid": (ConstantUid, "spec", "RMB-MSG-005"),
    "no-proxy-check": (NoProxyCheck, "spec", "RMB-PROXY-002"),
    "replies-never-posted": (RepliesNeverPosted, "spec", "RMB-REPLY-001"),
}

# name -> (class, the profile it is judged in, the rules that must catch it (faulty) or None (legal))
FAULTY = {
    "signs-wrong-fields": (SignsWrongFields, "spec", {"RMB-SIG-006"}),
    "retries-on-4xx": (RetriesOn4xx, "spec", {"RMB-RETRY-003", "RMB-REPLY-002"}),
    "retries-past-try": (RetriesPastTry, "spec", {"RMB-RETRY-001", "RMB-REPLY-002"}),
    "ignores-exp": (IgnoresExp, "spec", {"RMB-BACKLOG-001"}),
    "accepts-old-now": (AcceptsOldNow, "rmb-rs-v1", {"RMB-REMOTE-006", "RMB-REMOTE-007"}),
    "drops-replies": (DropsReplies, "spec", {"RMB-REPLY-005"}),
    "late-reply": (LateReply, "spec", {"RMB-REPLY-004"}),
    "wrong-queue": (WrongQueue, "spec", {"RMB-REMOTE-005", "RMB-LOCAL-003", "RMB-PROXY-001"}),
    "short-ttl": (ShortTtl, "spec", {"RMB-BACKLOG-001"}),
    "keeps-now": (KeepsNow, "rmb-rs-v1", {"RMB-RETRY-004"}),
    "forgets-tag": (ForgetsTag, "rmb-rs-v1", {"RMB-REPLY-005"}),
    "broken-sr25519": (BrokenSr25519, "spec", {"RMB-SIG-006"}),
    "error-keeps-dat": (ErrorKeepsDat, "spec", {"RMB-RETRY-002"}),
    "no-scrubber": (NoScrubber, "rmb-go", {"RMB-BACKLOG-003"}),
    "drops-bad-dat": (DropsBadDat, "spec", {"RMB-LOCAL-002"}),
}
LEGAL = {
    "counter-uids": CounterUids,
    "one-worker": OneWorker,
    "many-workers": ManyWorkers,
    "reordered-replies": ReorderedReplies,
    "restamps": Restamps,
    "keeps-reply-ret": KeepsReplyRet,
    "refuses-stale": RefusesStale,
    "own-error-words": OwnErrorWords,
    "takes-any-dat": TakesAnyDat,
}
VARIANTS = {**{k: v[0] for k, v in FAULTY.items()}, **{k: v[0] for k, v in MUTANTS.items()}, **LEGAL}


def _rule_mutants() -> dict:
    from rmkit.conformance.rmb.examples.mutants import MUTANT_CLASSES

    return MUTANT_CLASSES


VARIANTS.update(_rule_mutants())
