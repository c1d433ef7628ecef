"""Planting violations into one part of a bulk simulated log, from a plan the checker never sees.

Why a module of its own: the injectors of :mod:`.faults` say how a buggy implementation could break
a rule on one message; this module decides *which* messages get *which* rule (a seeded rotation
over the rules the profile checks). What a plant must be found as is its ground truth, stated
before any check: the aimed rule and the companions its injector declares it always breaks too.
The checker is never asked whether to keep a plant, so a plant the checker misses (or a finding it
adds) is a failing test, not a plant quietly dropped. The one condition taken from the log is the
liveness horizon: REMP-LIVE-001 is planted only on messages whose horizon the log's clock passes.

A part is held as a list of ``(kafka_time_ms, receipt)`` items, as :meth:`Simulation.timed` yields
them; plants are edits of that list (:class:`~.faults.Plant`) applied when the part is written.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from typing import Optional

import orjson

from rmkit.conformance.remp.faults import FULLNODE_ROLE, PLANTERS, VALIDATOR_ROLE
from rmkit.protocols.remp.model import model_for

# rules a clean log of the profile breaks on (nearly) every message by design, when they are
# checked at all: never planted, left out of the manifest (ever-node relays validator receipts
# unsigned, which REMP-SIG-004 reports once keys are given)
BACKGROUND = {"ever-node": ("REMP-SIG-004",)}
KEYED_RULES = ("REMP-SIG-002", "REMP-SIG-003")  # need the validators' keys (--keys) to be checked
JUDGED_RULES = ("REMP-LIVE-001",)  # found only once the log's clock passes the message's horizon


def plantable_rules(profile: str, keyed: bool, timed_validators: bool) -> tuple[list[str], dict[str, str]]:
    """(rules to plant, in the rule file's order; rules left out with why) for a profile.

    ``timed_validators``: whether validator receipts carry a time the checker can use (not so for
    ever-node JSON Lines, whose validator receipts have timestamp 0 and no Kafka time)."""
    m = model_for(profile)
    todo, skipped = [], {}
    for r in m.rules:
        mode = r.mode(profile)
        if mode == "off":
            skipped[r.id] = f"off in the {profile} profile"
        elif r.id in BACKGROUND.get(profile, ()):
            skipped[r.id] = "broken by every clean message of this profile (validator receipts are relayed unsigned)" \
                if keyed else "needs --keys, and is then broken by every clean message of this profile"
        elif r.id in KEYED_RULES and not keyed:
            skipped[r.id] = "needs the validators' keys (--keys)"
        elif r.id not in PLANTERS:
            skipped[r.id] = f"no injector: {r.not_planted}" if r.not_planted else "no injector"
        elif r.id in ("REMP-EXPIRY-001", "REMP-LIVE-001") and not timed_validators:
            skipped[r.id] = "validator receipts carry no time in this profile's JSON Lines: use --kafka"
        else:
            todo.append(r.id)
    return todo, skipped


def clocked(profile: str, kafka: bool) -> bool:
    """Whether the checker's clock moves with validator receipts (it needs two timed sources): in
    a Kafka dump (every record has a time), or where the profile's validators stamp receipts."""
    return kafka or VALIDATOR_ROLE not in model_for(profile).zero_time_roles


class PartContext:
    """What the injectors of :mod:`.faults` may use about one part."""

    def __init__(self, *, stream: list, profile: str, part: int, seed: int, fullnode_id: str,
                 validators: list[str], validators_per_session: int, lifetime_s: float, kafka: bool,
                 signer=None, outsider: str, second_fullnode: str, validator_set=None,
                 last_part: bool = True):
        from rmkit.reference_impl.remp.profile import traits

        self.stream = stream
        self.profile = profile
        self.part = part
        self.model = m = model_for(profile)
        self.rng = random.Random(f"plant:{seed}:{part}")
        self.fullnode_id = fullnode_id
        self.fullnodes = {fullnode_id, second_fullnode}
        self.validators = sorted(validators)
        self._validator_set = set(validators) | {outsider}
        self.validators_per_session = validators_per_session
        self.lifetime_s = lifetime_s
        self.kafka = kafka
        self.signer = signer
        self.outsider = outsider
        self.second_fullnode = second_fullnode
        self.validator_set = validator_set
        self.last_part = last_part
        t = traits(profile)
        self.validator_signed = t.validator_signed
        self.b64 = t.signature_encoding == "base64"
        self.expiry_ms = m.expiry_bound_ms(lifetime_s)
        self.horizon_ms = int(m.default_horizon_s(lifetime_s) * 1000)
        self.clocked = clocked(profile, kafka)
        self._times = [kts for kts, _ in stream]
        self._by_msg: Optional[dict] = None
        self._first_single: Optional[dict] = None

    # ---- what injectors ask -------------------------------------------------------------------
    def role_of(self, src: str) -> str:
        return FULLNODE_ROLE if src in self.fullnodes else VALIDATOR_ROLE

    def index_at(self, t_ms: int) -> Optional[int]:
        """The first stream index whose Kafka time is >= t_ms (None past the part's end)."""
        j = bisect.bisect_left(self._times, t_ms)
        return j if j < len(self._times) else None

    def encode(self, kts: int, r: dict, offset: int = 0) -> bytes:
        """The line (without newline) the receipt is written as."""
        if self.kafka:
            return orjson.dumps({"topic": "remp-receipts", "partition": self.part, "offset": offset, "timestamp": kts,
                                 "key": r.get("message_id"), "value": r})
        return orjson.dumps(r)

    def signature_for(self, d: dict) -> str:
        """The signature the receipt's source would write (really signed with keys)."""
        if self.signer is not None and d["source_id"] in self.signer:
            raw = self.signer.signature(d)
        else:
            body = orjson.dumps({k: v for k, v in d.items() if k != "signature"}, option=orjson.OPT_SORT_KEYS)
            raw = hashlib.blake2b(body, digest_size=64).digest()
        import base64

        return base64.b64encode(raw).decode() if self.b64 else raw.hex()

    def signed(self, d: dict) -> dict:
        """``d`` with the signature its source puts on it ("" where the profile's source signs none)."""
        if self.role_of(d["source_id"]) == VALIDATOR_ROLE and not self.validator_signed:
            return {**d, "signature": ""}
        return {**d, "signature": self.signature_for({**d, "signature": ""})}

    def fullnode_known_before(self, i: int) -> bool:
        """Did the full node issue a full-node-only receipt before stream index i (so that the
        checker knows its role without a validator-set file)?"""
        j = self.first_single().get(self.fullnode_id)
        return self.validator_set is not None or (j is not None and j < i)

    def end_time(self) -> int:
        """About where the log's clock ends (the part's latest receipt time)."""
        tail = self.stream[-1000:]
        return max(max(r.get("timestamp") or 0, kts) for kts, r in tail) if tail else 0

    # ---- indexes --------------------------------------------------------------------------------
    def by_message(self) -> dict:
        if self._by_msg is None:
            idx: dict = {}
            for i, (_, r) in enumerate(self.stream):
                idx.setdefault(r["message_id"], []).append(i)
            self._by_msg = idx
        return self._by_msg

    def first_single(self) -> dict:
        """source -> stream index of its first receipt of a kind only one role may issue."""
        if self._first_single is None:
            kinds = self.model.kinds
            first: dict = {}
            for i, (_, r) in enumerate(self.stream):
                src = r["source_id"]
                if src not in first and len(kinds[r["kind"]].issuers) == 1:
                    first[src] = i
            self._first_single = first
        return self._first_single


def _first_time(items: list) -> Optional[int]:
    for kts, r in items:
        if isinstance(r, dict):
            t = r.get("timestamp") or kts
            if t:
                return t
    return None


def checker_time(kts: Optional[int], r: dict, kafka: bool) -> Optional[int]:
    """The time the checker gives a receipt: its timestamp, else (0 or none) its Kafka time when
    the log is a Kafka dump, else none."""
    ts = r.get("timestamp")
    return (ts if type(ts) is int and ts > 0 else None) or (kts if kafka else None)


class LogClock:
    """The checker's clock at the end of a log, followed over the receipts as they are written
    (docs/check.md, "the log's clock"): the latest time two different sources have reached, or the
    log's latest receipt time when that is at most ``jump_ms`` (the horizon) later. Exact, so that
    whether the checker judges a message's liveness at the log's end is known, not guessed."""

    __slots__ = ("kafka", "hwm", "top_t", "top_key")

    def __init__(self, kafka: bool):
        self.kafka = kafka
        self.hwm: Optional[int] = None
        self.top_t: Optional[int] = None
        self.top_key = None

    def add(self, kts: Optional[int], r: dict) -> None:
        t = checker_time(kts, r, self.kafka)
        if t is None or (self.hwm is not None and t <= self.hwm):
            return
        src = r.get("source_id")
        key = src.lower() if type(src) is str and src else r.get("message_id")
        if self.top_t is None or t > self.top_t:
            now = self.top_t if self.top_t is not None and self.top_key != key else None
            self.top_t, self.top_key = t, key
        else:
            now = t if self.top_key != key else None
        if now is not None and (self.hwm is None or now > self.hwm):
            self.hwm = now

    def end(self, jump_ms: int) -> Optional[int]:
        end = self.hwm
        if self.top_t is not None and (end is None or 0 < self.top_t - end <= jump_ms):
            end = self.top_t
        return end


def judged_at(first_t: Optional[int], end: Optional[int], horizon_ms: int) -> bool:
    """Does the checker judge the liveness of a message first seen at ``first_t`` (checker time)
    in a log whose clock ends at ``end``? Exactly when the clock has moved a horizon past it."""
    return first_t is not None and end is not None and end - first_t >= horizon_ms


def unreached(sim) -> dict:
    """Messages no validator ever received (every full-node send lost on the simulated network or
    made to a silent validator), with their receipts: message id -> ``[(stream index, (kafka_time_ms,
    receipt))]``, from the run itself (``sim.unreached``), never from a check. Such a message has
    SentToValidators alone and breaks REMP-LIVE-001 once judged; where the profile writes no
    SentToValidators (ever-node) it leaves no receipt, and is not listed."""
    return {mid: items for mid, items in sim.unreached.items() if items}


def lost_by_design(sim, timed: list, profile: str, lifetime_s: float, judged_to_end: bool = True,
                   kafka: bool = True) -> list[str]:
    """Messages a clean simulated log leaves without a final outcome, from the simulator's plan
    and run (``sim.fates``, ``sim.unreached``) and the receipts it wrote (``timed``:
    ``(kafka_time_ms, receipt)``), never from a check:

    - a message no validator ever received (:func:`unreached`: the lossy network took every send);
    - in a profile without Timeout, a message every collator rejects (fate "bad"), or whose first
      collations reject it (fate "flaky") and that no collator accepted, that a validator queued and
      never rejected (it stopped once 2/3 had rejected) is never decided.

    With ``judged_to_end``, only those the checker judges on ``timed`` alone (the log's clock, see
    :class:`LogClock`, ends a horizon past their first receipt; ``kafka``: the log is a Kafka dump,
    whose Kafka time stands in for a receipt's timestamp 0); else every such message, for the
    caller to judge."""
    m = model_for(profile)
    lost = unreached(sim)
    out = list(lost)
    by_msg: dict = {}
    if not m.kinds["Timeout"].in_table:
        kinds = m.kinds
        for _, r in timed:
            by_msg.setdefault(r["message_id"], []).append(r)
        # accepted by a collator or later: a "flaky" message (its first collations reject it) that
        # got this far will be decided; one the validators stopped on before that never is
        collated = {k.name for k in kinds.values() if k.category == "accepted" and k.level not in ("fullnode", "queue")}
        for mid, fate in sim.fates.items():
            rs = by_msg.get(mid)
            if fate[0] not in ("bad", "flaky") or not rs or mid in lost:
                continue
            if fate[0] == "flaky" and any(r["kind"] in collated for r in rs):
                continue
            queued = {r["source_id"] for r in rs if kinds[r["kind"]].bit & m.queued_mask and VALIDATOR_ROLE in kinds[r["kind"]].issuers}
            rejected = {r["source_id"] for r in rs if kinds[r["kind"]].category in ("rejected", "timeout")}
            if queued - rejected:
                out.append(mid)
    if not judged_to_end or not out:
        return out
    clock = LogClock(kafka)
    first: dict = dict.fromkeys(out)
    for kts, r in timed:
        clock.add(kts, r)
        mid = r["message_id"]
        if mid in first and first[mid] is None:
            first[mid] = checker_time(kts, r, kafka)
    horizon_ms = int(m.default_horizon_s(lifetime_s) * 1000)
    end = clock.end(horizon_ms)
    return [mid for mid in out if judged_at(first[mid], end, horizon_ms)]


def judged(ctx: PartContext, idxs: list) -> Optional[bool]:
    """Will the checker judge this message's liveness? It does once the log's clock is a horizon
    past its first receipt: always for a part that another follows, never for untimed receipts;
    in the last part, when the log ends late enough. None when too close to call (such messages
    are not planted). An estimate on the part before planting: a message the simulation itself
    leaves without an outcome is decided afresh on the written log's exact clock
    (:class:`LogClock`, :func:`judged_at`), as it cannot be left out of the log."""
    if not ctx.clocked or not ctx.last_part:
        return ctx.clocked
    t0 = _first_time([ctx.stream[i] for i in idxs[:3]])
    if t0 is None:
        return False
    left = ctx.end_time() - t0 - ctx.horizon_ms
    return None if abs(left) < 10_000 else left > 0


def plant_part(ctx: PartContext, rules: list[str], exclude: set) -> tuple[list, list]:
    """Plant ``rules`` (one violation each, on distinct messages) into the part. Returns
    ``(plants with the rules they must be found as, rules that found no fitting message)``:
    ``[(Plant, expected rules)]``, the expected rules being the aimed one and the injector's
    declared companions."""
    by_msg = ctx.by_message()
    zone = {m: judged(ctx, idxs) for m, idxs in by_msg.items() if m not in exclude}
    mids = [m for m, z in zone.items() if z is not None]
    rng = ctx.rng
    done, missed, used = [], [], set()
    for rule in rules:
        inject = PLANTERS[rule]
        start = rng.randrange(len(mids)) if mids else 0
        planted = None
        for n in range(len(mids)):
            mid = mids[(start + n) % len(mids)]
            if mid in used or (rule in JUDGED_RULES and not zone[mid]):
                continue
            p = inject(ctx, mid, by_msg[mid])
            if p is None:
                continue
            p.injector = inject.__name__
            planted = (p, {rule} | set(p.companions))
            break
        if planted is None:
            missed.append(rule)
            continue
        used.add(planted[0].message_id)
        done.append(planted)
    return done, missed
