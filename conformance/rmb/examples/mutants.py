"""One mutant of the reference daemon per RMB rule the driven suite judges: each breaks the promise
of its rule (and as little else as it can), so that a scenario is said to cover the rule only when
it fails that mutant by that rule (:mod:`rmkit.conformance.rmb.driven.coverage`).

Rules whose breach a faulty example of :mod:`.variants` already is take that example; the others
are written here. ``RULE_MUTANTS`` maps each rule to (variant name, the profile it is measured in).
"""

from __future__ import annotations

import base64
import json
import time

from aiohttp import web

from rmkit.protocols.rmb.signing import BadSignature, verify
from rmkit.reference_impl.rmb.daemon import RmbDaemon


class ExpAsText(RmbDaemon):
    """Posts exp as a string ("30"): the message breaks the v1 schema (exp is not signed)."""

    async def _post(self, twin, endpoint, msg, attempt):
        if endpoint == self.b["remote_endpoint"]:
            msg = {**msg, "exp": str(msg["exp"])}
        return await super()._post(twin, endpoint, msg, attempt)


class AbsoluteExp(RmbDaemon):
    """Posts exp as the absolute deadline now + exp instead of seconds relative to now."""

    async def _post(self, twin, endpoint, msg, attempt):
        if endpoint == self.b["remote_endpoint"]:
            msg = {**msg, "exp": msg["now"] + msg["exp"]}
        return await super()._post(twin, endpoint, msg, attempt)


class SigWithoutPrefix(RmbDaemon):
    """Writes sig as the bare 64-byte signature, without the key type's prefix byte."""

    async def _post(self, twin, endpoint, msg, attempt):
        if msg.get("sig"):
            msg = {**msg, "sig": msg["sig"][2:]}
        return await super()._post(twin, endpoint, msg, attempt)


class ChangesDat(RmbDaemon):
    """Forwards a request with its dat changed (and signed so): the destination gets other data."""

    async def _post(self, twin, endpoint, msg, attempt):
        if endpoint == self.b["remote_endpoint"]:
            msg = self.cfg.keypair.sign({**msg, "dat": base64.b64encode(b"changed by the sender's daemon").decode()})
        return await super()._post(twin, endpoint, msg, attempt)


class DropsInvalidLocal(RmbDaemon):
    """Drops an invalid client message without telling the client on its ret."""

    async def _push(self, queue, msg, event):
        if event == "error-to-ret" and str(msg.get("err", "")).startswith("invalid message"):
            return
        await super()._push(queue, msg, event)


class SendsExpiredJobs(RmbDaemon):
    """Posts a forward job whose backlog entry is gone (as a message rebuilt from the job)."""

    async def _forward_job(self, job, attempt):
        parsed = self._split_job(job)
        if parsed is not None and await self._load_request(parsed[0]) is None:
            uid, dst = parsed
            twin = self.cfg.directory.get(dst)
            if twin is not None:
                msg = {"ver": 1, "uid": uid, "cmd": "expired", "exp": 1, "try": 1, "dat": "", "src": self.twin, "dst": [dst],
                       "ret": "expired", "shm": "", "now": int(time.time()), "err": ""}
                await self._post(twin, self.b["remote_endpoint"], self.cfg.keypair.sign(msg), attempt)
            return
        await super()._forward_job(job, attempt)


class _Lenient(RmbDaemon):
    """An endpoint (``PATH``) that takes a message the checks refused with ``FORGIVEN``'s status."""

    PATH = "remote_endpoint"
    FORGIVEN = "status_bad_body"

    async def _checked(self, request):
        msg, refused = await super()._checked(request)
        if refused is not None and request.path == self.b[self.PATH] and refused.status == self.b[self.FORGIVEN]:
            try:
                msg = json.loads(await request.read())
            except ValueError:
                msg = None
            if isinstance(msg, dict) and isinstance(msg.get("dst"), list) and msg["dst"] and isinstance(msg.get("uid"), str):
                return msg, None
        return msg, refused


class AcceptsBadBody(RmbDaemon):
    """Answers a remote request whose body is not JSON as accepted (and drops it)."""

    async def _remote(self, request):
        try:
            json.loads(await request.read())
        except ValueError:
            return self._answer(request, self.b["accepted"]["status"], None, "accepted (not JSON)")
        return await super()._remote(request)


class AcceptsWrongDst(_Lenient):
    """The remote endpoint takes a request whose dst is another twin."""

    FORGIVEN = "status_wrong_destination"


class AcceptsWrongDstReply(_Lenient):
    """The reply endpoint takes a reply whose dst is another twin."""

    PATH, FORGIVEN = "reply_endpoint", "status_wrong_destination"


class AcceptsForgedReplies(_Lenient):
    """The reply endpoint takes a reply whose signature does not verify."""

    PATH, FORGIVEN = "reply_endpoint", "status_bad_signature"


class VerifiesUncoveredFields(RmbDaemon):
    """Takes shm into its idea of what is signed: refuses a request whose shm changed in transit
    (shm is not covered by the signature, so a daemon must accept it)."""

    async def _remote(self, request):
        try:
            msg = json.loads(await request.read())
        except ValueError:
            msg = None
        if isinstance(msg, dict) and msg.get("shm"):
            return self._answer(request, self.b["status_bad_signature"], msg, "signature does not cover shm as sent")
        return await super()._remote(request)


class Answers200(RmbDaemon):
    """Answers an accepted remote request with 200 where the profile's status is another (202)."""

    async def _remote(self, request):
        resp = await super()._remote(request)
        if resp.status == self.b["accepted"]["status"] and resp.status != 200:
            return web.Response(status=200, text="ok")
        if resp.status == self.b["accepted"]["status"]:
            return web.Response(status=202, text="accepted")
        return resp


class NeverRetriesReplies(RmbDaemon):
    """Makes one attempt to post a reply, whatever try says and however the attempt failed."""

    async def _send_reply(self, msg, attempt):
        if isinstance(msg, dict):
            msg = {**msg, "try": 1}
        await super()._send_reply(msg, attempt)


class PayloadKeepsItsUid(RmbDaemon):
    """Hands a proxied payload to its command under the payload's own uid, not the envelope's."""

    async def _push(self, queue, msg, event):
        if event == "proxy-payload-to-handler":
            msg = {**msg, "uid": f"payload-{msg['uid']}"}
        await super()._push(queue, msg, event)


class PayloadKeepsItsRet(RmbDaemon):
    """Hands a proxied payload to its command with ret msgbus.system.reply, not the proxy's queue."""

    async def _push(self, queue, msg, event):
        if event == "proxy-payload-to-handler":
            msg = {**msg, "ret": self.b["reply_queue"]}
        await super()._push(queue, msg, event)


class UnsignedProxyAnswer(RmbDaemon):
    """Wraps the handler's answer to a proxied payload without signing it."""

    async def _push(self, queue, msg, event):
        if event == "proxy-reply":
            inner = json.loads(base64.b64decode(msg["dat"]))
            inner["sig"] = ""
            msg = {**msg, "dat": base64.b64encode(json.dumps(inner).encode()).decode()}
        await super()._push(queue, msg, event)


MUTANT_CLASSES = {
    "exp-as-text": ExpAsText,
    "absolute-exp": AbsoluteExp,
    "sig-without-prefix": SigWithoutPrefix,
    "changes-dat": ChangesDat,
    "drops-invalid-local": DropsInvalidLocal,
    "sends-expired-jobs": SendsExpiredJobs,
    "accepts-bad-body": AcceptsBadBody,
    "accepts-wrong-dst": AcceptsWrongDst,
    "accepts-wrong-dst-reply": AcceptsWrongDstReply,
    "accepts-forged-replies": AcceptsForgedReplies,
    "verifies-uncovered-fields": VerifiesUncoveredFields,
    "answers-200": Answers200,
    "never-retries-replies": NeverRetriesReplies,
    "payload-keeps-its-uid": PayloadKeepsItsUid,
    "payload-keeps-its-ret": PayloadKeepsItsRet,
    "unsigned-proxy-answer": UnsignedProxyAnswer,
}

RULE_MUTANTS = {  # rule -> (variant name, the profile its coverage is measured in)
    "RMB-MSG-001": ("exp-as-text", "spec"),
    "RMB-MSG-004": ("absolute-exp", "spec"),
    "RMB-MSG-005": ("constant-uid", "spec"),
    "RMB-SIG-001": ("sig-without-prefix", "spec"),
    "RMB-SIG-005": ("verifies-uncovered-fields", "spec"),
    "RMB-SIG-006": ("signs-wrong-fields", "spec"),
    "RMB-DIR-001": ("forgets-unknown-twins", "spec"),
    "RMB-LOCAL-002": ("drops-invalid-local", "spec"),
    "RMB-LOCAL-003": ("wrong-queue", "spec"),
    "RMB-BACKLOG-001": ("ignores-exp", "spec"),
    "RMB-BACKLOG-002": ("sends-expired-jobs", "spec"),
    "RMB-BACKLOG-003": ("no-scrubber", "rmb-go"),
    "RMB-FANOUT-001": ("whole-dst-per-copy", "spec"),
    "RMB-FWD-001": ("changes-dat", "spec"),
    "RMB-RETRY-001": ("retries-past-try", "spec"),
    "RMB-RETRY-002": ("no-error-on-failure", "spec"),
    "RMB-RETRY-003": ("retries-on-4xx", "spec"),
    "RMB-RETRY-004": ("keeps-now", "rmb-rs-v1"),
    "RMB-REMOTE-001": ("answers-200", "spec"),
    "RMB-REMOTE-002": ("accepts-bad-body", "spec"),
    "RMB-REMOTE-003": ("accepts-forged-requests", "spec"),
    "RMB-REMOTE-004": ("accepts-wrong-dst", "spec"),
    "RMB-REMOTE-005": ("wrong-queue", "spec"),
    "RMB-REMOTE-006": ("accepts-old-now", "rmb-rs-v1"),
    "RMB-REMOTE-007": ("accepts-old-now", "rmb-rs-v1"),
    "RMB-REPLY-001": ("replies-never-posted", "spec"),
    "RMB-REPLY-002": ("never-retries-replies", "spec"),
    "RMB-REPLY-003": ("accepts-wrong-dst-reply", "spec"),
    "RMB-REPLY-004": ("late-reply", "spec"),
    "RMB-REPLY-005": ("drops-replies", "spec"),
    "RMB-REPLY-006": ("deletes-backlog-on-reply", "spec"),
    "RMB-REPLY-007": ("accepts-forged-replies", "spec"),
    "RMB-PROXY-001": ("wrong-queue", "spec"),
    "RMB-PROXY-002": ("no-proxy-check", "spec"),
    "RMB-PROXY-003": ("payload-keeps-its-uid", "spec"),
    "RMB-PROXY-004": ("payload-keeps-its-ret", "spec"),
    "RMB-PROXY-005": ("unsigned-proxy-answer", "spec"),
}
