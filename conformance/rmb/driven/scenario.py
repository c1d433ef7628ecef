"""A scenario (acts the kit plays at once against one daemon), its file form, the catalogue of
named scenarios per profile, and the Hypothesis strategy of generated ones.

Why both: the catalogue reaches every rule a wire can show whatever the generator draws; the
generated scenarios combine destinations, answers, retries and replies in ways nobody listed, and
Hypothesis shrinks a failing one to the fewest, simplest acts. Files are JSON so that a failure
reruns exactly with ``rmkit replay --protocol rmb FILE --impl-cmd CMD``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from rmkit.conformance.rmb.driven.acts import PROXY_VARIANTS, REMOTE_VARIANTS, REPLY_VARIANTS, RUNNERS
from rmkit.errors import UsageError

FORMAT = "rmkit-rmb-scenario/1"
ANSWERS = ("accept", "slow", "close", "400", "401", "403", "500", "502")


def rmb_spec_daemon() -> dict:
    from rmkit.protocols.rmb.model import rmb_spec

    return rmb_spec().raw["daemon"]


# rules no act of a single daemon's wire shows, and why (spec/rmb/daemon.yaml: reported, never
# counted as passed)
NOT_DRIVEN = dict(rmb_spec_daemon()["not_driven"])


@dataclass
class Scenario:
    id: str
    profile: str
    acts: list
    title: str = ""
    origin: str = "generated"  # catalogue | generated | regression
    note: dict = field(default_factory=dict)
    key_type: str = "ed25519"  # the daemon's key in this scenario (it signs every POST with it)

    def digest(self) -> str:
        what = [self.profile, self.acts] + ([self.key_type] if self.key_type != "ed25519" else [])
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:12]


def write_scenario(path: Path, sc: Scenario, failure: dict | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"format": FORMAT, "protocol": "rmb", "id": sc.id, "profile": sc.profile, "title": sc.title, "key_type": sc.key_type,
           "acts": sc.acts}
    if failure:
        doc["failure"] = failure
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def read_scenario(path: str | Path) -> Scenario:
    """A saved scenario back; errors name the file and the field."""
    from rmkit.protocols.rmb.model import rmb_spec

    from rmkit.jsondoc import DocumentError, document_problem, read_json_document

    p = Path(path)
    try:
        doc, text = read_json_document(p)
    except DocumentError as exc:
        raise UsageError(f"{p}:{exc.line or 1}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise UsageError(f"{p}:1: field format: expected {FORMAT!r} (a file written by rmkit conform --protocol rmb), found {found!r:.80}")
    problem = document_problem(doc, "rmb-scenario", text)  # types and ranges: what follows meets only the values it expects
    if problem is not None:
        where, what, line = problem
        raise UsageError(f"{p}{':' + str(line) if line else ''}: field {where}: {what}")
    if doc.get("profile") not in rmb_spec().profiles:
        raise UsageError(f"{p}: field profile: expected one of {', '.join(rmb_spec().profiles)}, found {doc.get('profile')!r}")
    acts = doc.get("acts")
    if not isinstance(acts, list) or not acts:
        raise UsageError(f"{p}: field acts: expected a non-empty list of acts")
    for i, a in enumerate(acts):
        if not isinstance(a, dict) or a.get("act") not in RUNNERS:
            raise UsageError(f"{p}: field acts[{i}].act: expected one of {', '.join(RUNNERS)}, found {a.get('act') if isinstance(a, dict) else a!r}")
        problem = act_problem(a)
        if problem:
            raise UsageError(f"{p}: field acts[{i}].{problem}")
    key_type = doc.get("key_type", "ed25519")
    if key_type not in DAEMON_KEY_TYPES:
        raise UsageError(f"{p}: field key_type: expected one of {', '.join(DAEMON_KEY_TYPES)}, found {key_type!r}")
    return Scenario(str(doc.get("id") or p.stem), doc["profile"], acts, doc.get("title", ""), "regression", doc.get("failure") or {},
                    key_type)


def act_problem(a: dict) -> str | None:
    """What makes an act unusable (``field: why``), or None."""
    from rmkit.conformance.rmb.driven.acts import TARGETS

    if a["act"] == "send":
        dst = a.get("dst")
        if not isinstance(dst, list) or not dst or any(t not in TARGETS for t in dst):
            return f"dst: expected a non-empty list of {', '.join(TARGETS)}"
        for k in ("exp", "try"):
            if type(a.get(k)) is not int or a[k] < 0:  # not bool: true is no number of tries
                return f"{k}: expected an integer >= 0"
        if a.get("expire") not in (None, False, True):
            return "expire: expected true or false"
        if a.get("expire") and not 2 <= a["exp"] <= EXPIRE_MAX_EXP_S:
            return f"exp: expected 2 to {EXPIRE_MAX_EXP_S} seconds where the act waits for the request to expire (expire true)"
        age = a.get("age", 0)
        if type(age) is not int or age < 0 or age > a["exp"] // 2:
            return "age: expected an integer >= 0, at most half of exp (the request must be alive when it leaves)"
        for part in ("answers", "replies"):
            if not isinstance(a.get(part) or {}, dict):
                return f"{part}: expected an object keyed by destination ({', '.join(TARGETS)})"
            stray = [t for t in a.get(part) or {} if t not in TARGETS]
            if stray:
                return f"{part}.{stray[0]}: expected a destination of {', '.join(TARGETS)}"
        for t, plan in (a.get("answers") or {}).items():
            if not isinstance(plan, list) or not plan or any(x not in ANSWERS for x in plan):
                return f"answers.{t}: expected a non-empty list of {', '.join(ANSWERS)}"
        for t, v in (a.get("replies") or {}).items():
            if v is not None and v not in REPLY_VARIANTS:
                return f"replies.{t}: expected one of {', '.join(REPLY_VARIANTS)}"
    elif a["act"] == "remote":
        if a.get("variant") not in REMOTE_VARIANTS:
            return f"variant: expected one of {', '.join(REMOTE_VARIANTS)}"
        if a.get("from", "p2") not in ("p2", "p3"):
            return "from: expected p2 or p3 (the kit twins that post)"
        if not isinstance(a.get("reply_answers") or [], list) or any(x not in ANSWERS for x in a.get("reply_answers") or []):
            return f"reply_answers: expected answers of {', '.join(ANSWERS)}"
    elif a["act"] == "proxy" and a.get("variant") not in PROXY_VARIANTS:
        return f"variant: expected one of {', '.join(PROXY_VARIANTS)}"
    elif a["act"] == "bad_local" and a.get("variant") not in BAD_LOCAL:
        return f"variant: expected one of {', '.join(BAD_LOCAL)}"
    return None


def rmb_spec_daemon() -> dict:
    from rmkit.protocols.rmb.model import rmb_spec

    return rmb_spec().raw["daemon"]


DAEMON_KEY_TYPES = tuple(rmb_spec_daemon()["twins"]["daemon"]["key_types"])  # ed25519 first: shrinking goes there
BAD_LOCAL = ("bad_dat", "empty_dst", "no_cmd", "string_exp")
EXPIRE_MAX_EXP_S = int(rmb_spec_daemon()["expire"]["max_exp_s"]["value"])  # spec/rmb/daemon.yaml


def _send(dst, tries=2, exp=30, answers=None, replies=None, age=0, expire=False) -> dict:
    a = {"act": "send", "dst": dst, "exp": exp, "try": tries}
    if expire:
        a["expire"] = True
    if age:
        a["age"] = age
    if answers:
        a["answers"] = answers
    if replies:
        a["replies"] = replies
    return a


def has_proxy(profile: str) -> bool:
    from rmkit.protocols.rmb.model import rmb_spec

    return rmb_spec().behaviour(profile)["proxy"] is not None


def catalogue(profile: str, slow_retries: bool) -> list[Scenario]:
    """The named scenarios: every rule a daemon's wire shows, in this profile. ``slow_retries``:
    the profile pauses seconds between attempts (rmb-go), so retries are kept few. A profile
    without a proxy gets no proxy scenarios (they would check nothing)."""
    many = 2 if slow_retries else 7
    named = [
        ("request, reply", [_send(["p2"], replies={"p2": "good"})]),
        ("a client's now 5 s old, retried", [_send(["p3"], tries=3, answers={"p3": ["close", "accept"]}, replies={"p3": "good"},
                                                   age=5)]),
        ("fan-out to two twins, both reply", [_send(["p2", "p3"], replies={"p2": "good", "p3": "good"})]),
        ("a 4xx is final", [_send(["p2"], tries=3, answers={"p2": ["400"]})]),
        ("a 5xx (retried in rmb-go only)", [_send(["p3"], tries=2, answers={"p3": ["502"]})]),
        ("connection closed, then accepted", [_send(["p2"], tries=3, answers={"p2": ["close", "accept"]})]),
        ("connection closed every time: try bounds", [_send(["p2"], tries=many, answers={"p2": ["close"]})]),
        ("try 0 is one attempt", [_send(["p3"], tries=0, answers={"p3": ["close"]})]),
        ("connection refused", [_send(["down"], tries=2)]),
        ("a slow twin is not retried", [_send(["p2"], answers={"p2": ["slow"]}, replies={"p2": "good"})]),
        ("one destination fails, the other replies", [_send(["p2", "down"], tries=1, replies={"p2": "good"})]),
        ("unknown destination", [_send(["p2", "unknown"])]),
        ("local twin", [_send(["self"])]),
        ("forged reply", [_send(["p3"], replies={"p3": "forged"})]),
        ("reply for another twin", [_send(["p2"], replies={"p2": "wrong_dst"})]),
        ("reply after the backlog expired", [_send(["p2"], exp=2, replies={"p2": "late"})]),
        ("answered, then expired (rmb-go: its scrubber's timeout)", [_send(["p3"], exp=3, replies={"p3": "good"}, expire=True)]),
        ("not answered, expired", [_send(["p2", "p3"], exp=3, expire=True)]),
        ("forward job of an expired request", [{"act": "stale_job"}]),
    ]
    for v in REMOTE_VARIANTS:
        named.append((f"remote request: {v}", [{"act": "remote", "variant": v, "from": "p3" if v == "wrong_key_type" else "p2",
                                                 **({"reply_answers": ["accept"]} if v == "good" else {})}]))
    named += [("reply refused with 500", [{"act": "remote", "variant": "good", "from": "p3", "reply_answers": ["500"]}]),
              ("reply after a closed connection", [{"act": "remote", "variant": "good", "reply_answers": ["close", "accept"]}])]
    named += [(f"invalid local message: {v}", [{"act": "bad_local", "variant": v}]) for v in BAD_LOCAL]
    if has_proxy(profile):
        named += [(f"proxy envelope: {v} payload", [{"act": "proxy", "variant": v}]) for v in PROXY_VARIANTS]
    out = [Scenario(f"catalogue-{i:02d}", profile, acts, title, "catalogue") for i, (title, acts) in enumerate(named, 1)]
    # the daemon holding an sr25519 key: it signs its requests, its replies and its errors' way with it
    sr = [("sr25519 key: request, retried, reply", [_send(["p2"], tries=2, answers={"p2": ["close", "accept"]},
                                                             replies={"p2": "good"})]),
          ("sr25519 key: fan-out", [_send(["p2", "p3"], replies={"p2": "good", "p3": "good"})]),
          ("sr25519 key: the handler's answer posted back", [{"act": "remote", "variant": "good", "from": "p3",
                                                              "reply_answers": ["accept"]}])]
    if has_proxy(profile):
        sr.append(("sr25519 key: proxy envelope", [{"act": "proxy", "variant": "good"}]))
    out += [Scenario(f"catalogue-{len(out) + i:02d}", profile, acts, title, "catalogue", key_type="sr25519")
            for i, (title, acts) in enumerate(sr, 1)]
    return out


def acts_strategy(slow_retries: bool, proxy: bool = True):
    """Hypothesis: one act. Tries are kept small where retries are seconds apart (rmb-go); no
    proxy acts where the profile has no proxy (``proxy`` False: they would check nothing)."""
    tries = st.integers(0, 2 if slow_retries else 6)
    plan = st.one_of(st.just(["accept"]), st.lists(st.sampled_from(ANSWERS), min_size=1, max_size=3))
    peers = st.sampled_from(["p2", "p3"])

    @st.composite
    def send(draw):
        dst = draw(st.one_of(st.lists(st.sampled_from(["p2", "p3", "down"]), min_size=1, max_size=3, unique=True),
                             st.just(["self"]), st.just(["p2", "unknown"])))
        act = {"act": "send", "dst": dst, "exp": 30, "try": draw(tries)}
        answers, replies = {}, {}
        for t in dst:
            if t in ("p2", "p3"):
                answers[t] = draw(plan)
                replies[t] = draw(st.sampled_from(("good", None, "late", "forged", "wrong_dst")))
        short = draw(st.sampled_from((False, False, False, True)))  # a short exp, waited out within the act
        if "late" in replies.values() or short:
            # the backlog must expire within the act: exp 2, every kit twin accepts at once and no
            # destination is down (retried, a refused one could outlive the request); the act posts
            # the other replies before it waits out the late one
            act["exp"] = 2 if "late" in replies.values() else draw(st.integers(2, 4))
            answers = {t: ["accept"] for t in answers}
            act["dst"] = dst = [t for t in dst if t != "down"]
            if short and dst and all(t in ("p2", "p3") for t in dst):
                act["expire"] = True
        else:
            age = draw(st.sampled_from((0, 5)))  # a client's now older than the push: re-stamped or kept (RMB-RETRY-004)
            if age:
                act["age"] = age
        if answers:
            act["answers"] = answers
        if any(replies.values()):
            act["replies"] = {t: v for t, v in replies.items() if v}
        return act

    remote = st.builds(lambda v, p, r: {"act": "remote", "variant": v, "from": "p3" if v == "wrong_key_type" else p,
                                        **({"reply_answers": r} if r else {})},
                       st.sampled_from(REMOTE_VARIANTS), peers,
                       st.lists(st.sampled_from(("accept", "close", "500")), max_size=2))
    others = [st.just({"act": "stale_job"}), st.builds(lambda v: {"act": "bad_local", "variant": v}, st.sampled_from(BAD_LOCAL))]
    if proxy:
        others.insert(1, st.builds(lambda v: {"act": "proxy", "variant": v}, st.sampled_from(PROXY_VARIANTS)))
    return st.one_of(send(), send(), remote, st.one_of(*others))


def scenario_strategy(slow_retries: bool, max_acts: int = 3, proxy: bool = True):
    return st.lists(acts_strategy(slow_retries, proxy), min_size=1, max_size=max_acts)
