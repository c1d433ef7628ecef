"""The SDK-side receipt consumer: what a client may conclude from one message's receipts.

Why: the outcome rules of ``spec/remp/outcomes.yaml`` are evaluated by
:func:`~.outcome.evaluate_outcome` (shared with the log checker, so both conclude the same);
this machine adds what a client needs around them: each source's position, moved along the
profile's transition tables as receipts arrive, the receipts that decided the outcome
(``evidence``), and ``lost`` when no final outcome came by the horizon.

A source's role is the one issuer its kinds allow; for a kind with several issuers (Finalized in
ever-node) the role it showed before, else the one given in ``fullnode_ids``, else validator.
Receipts are the JSON objects of the log (dicts); ``at`` may give the time a receipt was seen
(a Kafka timestamp) when its own ``timestamp`` is 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from rmkit.protocols.remp.model import FULLNODE, VALIDATOR, model_for

from .outcome import evaluate_outcome


@dataclass(frozen=True)
class Outcome:
    """The consumer's conclusion: outcome ``name`` (an outcomes.yaml name, or ``lost``), whether it
    is final, and the receipts it rests on."""

    name: str
    final: bool
    evidence: tuple = ()
    lost: bool = False
    last_known: Optional[str] = None  # for lost: the outcome reached before the horizon


@dataclass
class _Source:
    role: str
    position: str = "none"
    last: Optional[Mapping] = None
    queued: bool = False


@dataclass
class ReceiptConsumer:
    """Folds the receipts of one message. Mutable; :meth:`step` returns the current outcome."""

    profile: str = "spec"
    horizon_ms: Optional[int] = None
    lifetime_s: Optional[float] = None
    fullnode_ids: frozenset = frozenset()
    message_id: Optional[str] = None
    kinds: set = field(default_factory=set)
    sources: dict = field(default_factory=dict)
    first_of_kind: dict = field(default_factory=dict)
    first_time: Optional[int] = None
    receipts: int = 0
    set_size: Optional[int] = None  # the validator set's size where the client knows it (outcomes.yaml of_set)
    final: Optional["Outcome"] = None  # the first final outcome: it never changes (001: "nothing is happening after it")

    def __post_init__(self):
        self._model = model_for(self.profile)
        if self.horizon_ms is None:
            lifetime = self.lifetime_s if self.lifetime_s is not None else self._model.default_lifetime_s
            self.horizon_ms = int(self._model.default_horizon_s(lifetime) * 1000)
        self._rules = {name: when for name, _, when in self._model.outcomes}

    def _role(self, src: str, issuers: frozenset) -> str:
        if len(issuers) == 1:
            return next(iter(issuers))
        known = self.sources.get(src)
        if known is not None and known.role in issuers:
            return known.role
        if src in self.fullnode_ids and FULLNODE in issuers:
            return FULLNODE
        return VALIDATOR if VALIDATOR in issuers else next(iter(sorted(issuers)))

    def step(self, receipt: Mapping, at: Optional[int] = None) -> Outcome:
        """Take one receipt (a JSON object of the log); return the outcome so far."""
        kind = receipt.get("kind")
        ki = self._model.kinds.get(kind)
        mid = receipt.get("message_id")
        if self.message_id is None:
            self.message_id = mid
        elif mid != self.message_id:
            raise ValueError(f"receipt for {mid} fed to the consumer of {self.message_id}")
        if ki is None:
            return self.outcome()  # unknown kind: nothing to conclude from it
        self.receipts += 1
        ts = receipt.get("timestamp") or at
        if ts and (self.first_time is None or ts < self.first_time):
            self.first_time = ts
        self.kinds.add(kind)
        self.first_of_kind.setdefault(kind, receipt)
        src = receipt.get("source_id")
        if src is not None:
            role = self._role(src, ki.issuers)
            st = self.sources.get(src)
            if st is None:
                st = self.sources[src] = _Source(role)
            st.role = role
            trans = ki.transitions.get(role)
            if trans is not None:
                st.position = trans[0]  # the kind says where the source is now, in order or not
            st.last = receipt
            if role == "validator" and ki.bit & self._model.queued_mask:  # outcomes.yaml queued_by
                st.queued = True
        return self.outcome()

    def _queued(self) -> list:
        return [st for st in self.sources.values() if st.queued]

    def outcome(self, now: Optional[int] = None) -> Outcome:
        """The outcome from the receipts so far; ``now`` past the horizon turns a non-final one
        into ``lost``."""
        if self.final is not None:
            return self.final
        queued = self._queued()
        name, final = evaluate_outcome(self._model.outcomes, self.kinds, [st.position for st in queued], self.set_size)
        evidence = self._evidence(name, queued)
        if (not final and now is not None and self.first_time is not None
                and now - self.first_time >= self.horizon_ms):
            return Outcome("lost", False, evidence, lost=True, last_known=name)
        out = Outcome(name, final, evidence)
        if final:
            self.final = out
        return out

    def _evidence(self, name: str, queued: list) -> tuple:
        when = self._rules.get(name) or {}
        ev = []
        if "any_kind" in when:
            ev.extend(self.first_of_kind[k] for k in when["any_kind"] if k in self.first_of_kind)
        if "queued_all_in" in when:
            ev.extend(st.last for st in queued)
        if "queued_fraction_in" in when:
            pos = when["queued_fraction_in"]["positions"]
            ev.extend(st.last for st in queued if st.position in pos)
        return tuple(ev)


def fold(receipts: Iterable, profile: str = "spec", *, now: Optional[int] = None,
         horizon_ms: Optional[int] = None, lifetime_s: Optional[float] = None,
         fullnode_ids: Iterable[str] = ()) -> Outcome:
    """The outcome of one message's receipts (``receipts``: dicts, or ``(receipt, at)`` pairs)."""
    c = ReceiptConsumer(profile, horizon_ms=horizon_ms, lifetime_s=lifetime_s, fullnode_ids=frozenset(fullnode_ids))
    for item in receipts:
        if isinstance(item, tuple):
            c.step(item[0], item[1])
        else:
            c.step(item)
    return c.outcome(now)
