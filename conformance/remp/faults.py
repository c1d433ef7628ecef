"""Fault injection: turn a clean receipt stream into one that breaks a named rule.

Each injector picks a message (seeded, reproducible), changes the stream the way a buggy
implementation would, and says which rule it means to break. Used to build the committed fault
logs of ``fixtures/remp/logs`` and the demo; a checker that misses an injected fault is wrong.
A raw ``str`` in the returned list stands for a line that is not a receipt at all.

The second half holds per-message injectors, one per rule (:data:`PLANTERS`), which
``rmkit simulate -o DIR --violations RATE`` plants at scale through :mod:`.planting`.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Callable

Receipt = dict


def _pick(rng: random.Random, items: list):
    return items[rng.randrange(len(items))] if items else None


def _by_message(receipts: list) -> dict[str, list[int]]:
    idx: dict[str, list[int]] = {}
    for i, r in enumerate(receipts):
        if isinstance(r, dict) and isinstance(r.get("message_id"), str):
            idx.setdefault(r["message_id"], []).append(i)
    return idx


def _later(r: Receipt, ms: int) -> int:
    """A timestamp ``ms`` after receipt ``r``'s; 0 stays 0 (ever-node relays validator receipts with 0)."""
    return r["timestamp"] + ms if r.get("timestamp") else 0


def _other_block(r: Receipt) -> dict:
    bid = hashlib.sha256(("replay:" + r["block_id"]).encode()).hexdigest()
    return {"block_id": bid, "block_file_hash": hashlib.sha256(("file:" + bid).encode()).hexdigest(),
            "block_seqno": r["block_seqno"] + 1000, "shard": r["shard"], "wc": r["wc"]}


def _finalized(receipts, rng):
    """(index of a Finalized receipt, its message's indexes) of a randomly chosen finalized message."""
    by_msg = _by_message(receipts)
    cands = [(i, by_msg[r["message_id"]]) for i, r in enumerate(receipts)
             if isinstance(r, dict) and r.get("kind") == "Finalized" and isinstance(r.get("block_id"), str)]
    return _pick(rng, cands)


def replay_into_second_block(receipts: list, rng: random.Random) -> str:
    """After a message is finalized, a validator reports it in another accepted shard block."""
    i, idxs = _finalized(receipts, rng)
    fin = receipts[i]
    vals = [receipts[j]["source_id"] for j in idxs if receipts[j]["kind"] == "IncludedIntoAcceptedBlock"]
    src = _pick(rng, vals)
    base = {k: v for k, v in fin.items() if k in ("message_id", "signature")}
    ignored = {"kind": "IgnoredByMasterchain", **base, "timestamp": _later(fin, 4000), "source_id": src,
               **{k: fin[k] for k in ("block_id", "block_file_hash", "block_seqno", "shard", "wc")}}
    again = {"kind": "IncludedIntoAcceptedBlock", **base, "timestamp": _later(fin, 6000), "source_id": src, **_other_block(fin)}
    receipts[i + 1:i + 1] = [ignored, again]
    return "REMP-REPLAY-001"


def finalized_twice(receipts: list, rng: random.Random) -> str:
    """The full node reports Finalized again, naming a different shard block."""
    i, _ = _finalized(receipts, rng)
    fin = receipts[i]
    receipts.insert(i + 1, {**fin, "timestamp": _later(fin, 3000), **_other_block(fin)})
    return "REMP-REPLAY-002"


def oversend(receipts: list, rng: random.Random) -> str:
    """SentToValidators claims more validators than there are."""
    cands = [i for i, r in enumerate(receipts) if isinstance(r, dict) and r.get("kind") == "SentToValidators"]
    i = _pick(rng, cands)
    receipts[i] = {**receipts[i], "sent_to": receipts[i]["total_validators"] + 2}
    return "REMP-FANOUT-001"


def speak_after_reject(receipts: list, rng: random.Random) -> str:
    """A validator whose collator rejected the message queues it again."""
    cands = [i for i, r in enumerate(receipts) if isinstance(r, dict) and r.get("kind") == "RejectedByCollator"]
    i = _pick(rng, cands)
    r = receipts[i]
    receipts.insert(i + 1, {k: r[k] for k in ("message_id", "source_id", "signature") if k in r}
                    | {"kind": "PutIntoQueue", "timestamp": _later(r, 500)})
    return "REMP-SRC-001"


def misspelt_kind(receipts: list, rng: random.Random) -> str:
    """A producer writes a kind with the documents' old name."""
    cands = [i for i, r in enumerate(receipts) if isinstance(r, dict) and r.get("kind") == "IncludedIntoBlock"]
    i = _pick(rng, cands)
    receipts[i] = {**receipts[i], "kind": "AddedToBlock"}
    return "REMP-KIND-001"


def garbage_line(receipts: list, rng: random.Random) -> str:
    """A truncated line in the dump."""
    i = rng.randrange(len(receipts))
    receipts.insert(i, '{"kind": "PutIntoQueue", "message_id": "6cb9')
    return "REMP-INPUT-001"


def lose_message(receipts: list, rng: random.Random) -> str:
    """Every receipt after PutIntoQueue of an early finalized message is lost: no outcome ever."""
    by_msg = _by_message(receipts)
    early = list(by_msg.items())[: max(1, len(by_msg) // 25)]  # early enough to be judged
    keep = ("SentToValidators", "PutIntoQueue")
    cands = [(m, idxs) for m, idxs in early if any(receipts[j]["kind"] == "Finalized" for j in idxs)
             and any(receipts[j]["kind"] in keep for j in idxs)]
    _, idxs = _pick(rng, cands)
    drop = {j for j in idxs if receipts[j]["kind"] not in keep}
    receipts[:] = [r for j, r in enumerate(receipts) if j not in drop]
    return "REMP-LIVE-001"


INJECTORS: dict[str, Callable[[list, random.Random], str]] = {
    "replay_into_second_block": replay_into_second_block,
    "finalized_twice": finalized_twice,
    "oversend": oversend,
    "speak_after_reject": speak_after_reject,
    "misspelt_kind": misspelt_kind,
    "garbage_line": garbage_line,
    "lose_message": lose_message,
}


def inject(receipts: list, names: list[str], seed: int) -> list[str]:
    """Apply the named injectors in order (each on its own seeded choice); return the rules aimed at."""
    rng = random.Random(seed)
    return [INJECTORS[name](receipts, rng) for name in names]


# ---- per-message injectors (planted at scale by :mod:`.planting`) ---------------------------------
#
# Each takes a planting context ``ctx`` (:class:`rmkit.conformance.remp.planting.PartContext`: the
# part's stream of ``(kafka_time_ms, receipt)`` items, the profile's model, the node ids, a signer)
# and one message (its id and the stream indexes of its receipts). It returns a :class:`Plant`
# describing the change as edits of that stream, or None when the message does not fit (it was not
# finalized, no validator rejected it, ...). A plant names the rule it aims at and the rules it
# always breaks too in that context (``companions``): together they are the plant's ground truth,
# which the manifest records and a check must find exactly. Receipts a plant adds or changes are
# signed as their source would sign them (with ``--keys``: really).

VALIDATOR_ROLE, FULLNODE_ROLE = "validator", "fullnode"
START_OF_BLOCK = ("block_id", "block_file_hash", "block_seqno", "shard", "wc")


@dataclass
class Plant:
    """One planted violation: edits of the part's stream on the receipts of one message.

    ``before[i]``: items inserted before stream index i; ``replace[i]``: what stream item i becomes
    (an empty list deletes it). Items are ``(kafka_time_ms, receipt dict | bytes)``; bytes stand for
    a raw line that is not a receipt."""

    rule: str
    message_id: str
    before: dict = field(default_factory=dict)
    replace: dict = field(default_factory=dict)
    companions: frozenset = frozenset()
    injector: str = ""


def _of(ctx, idxs, kind=None, src=None, role=None):
    """Indexes of the message's receipts of ``kind`` (and ``src`` / issuing ``role``), in order."""
    out = []
    for i in idxs:
        r = ctx.stream[i][1]
        if kind is not None and r["kind"] != kind:
            continue
        if src is not None and r["source_id"] != src:
            continue
        if role is not None and ctx.role_of(r["source_id"]) != role:
            continue
        out.append(i)
    return out


def _with_block(r: dict, block: dict) -> dict:
    return {k: v for k, v in r.items() if k not in START_OF_BLOCK and not k.startswith("mc_block")} | block


def _block_of(r: dict) -> dict:
    return {k: r[k] for k in START_OF_BLOCK if k in r}


def _other_block_of(r: dict, label: str) -> dict:
    bid = hashlib.sha256(f"{label}:{r['block_id']}".encode()).hexdigest()
    return {"block_id": bid, "block_file_hash": hashlib.sha256(("file:" + bid).encode()).hexdigest(),
            "block_seqno": r["block_seqno"] + 1000, "shard": r["shard"], "wc": r["wc"]}


def _after(ctx, i: int, kts_ms: int, *receipts) -> dict:
    """``before`` edits putting ``receipts`` right after stream item i, ``kts_ms`` apart."""
    kts = ctx.stream[i][0]
    return {i + 1: [(kts + kts_ms * (n + 1), r) for n, r in enumerate(receipts)]}


def _positions(ctx, idxs, skip=()):
    """Each validator source's last position in the message (the transition table of the
    profile), and the stream index of its last receipt. A redelivered copy (the same receipt
    again) is skipped: the checker reads it once, so it moves its source nowhere."""
    kinds = ctx.model.kinds
    pos: dict[str, tuple] = {}
    seen: list = []
    for i in idxs:
        if i in skip:
            continue
        r = ctx.stream[i][1]
        if ctx.role_of(r["source_id"]) != VALIDATOR_ROLE or r in seen:
            continue
        seen.append(r)
        tr = kinds[r["kind"]].log_transitions.get(VALIDATOR_ROLE)
        if tr is not None:
            pos[r["source_id"]] = (tr[0], i)
    return pos


def _everywhere(ctx, idxs, i: int, new: dict) -> dict:
    """``replace`` edits turning stream item i, and every redelivered copy of it, into ``new``
    (a copy left unchanged would read as a second, different receipt of its source)."""
    r = ctx.stream[i][1]
    return {j: [(ctx.stream[j][0], new)] for j in idxs if ctx.stream[j][1] == r}


def _idle_validator(ctx, idxs):
    """A validator of the shard that sent nothing about this message."""
    used = {ctx.stream[i][1]["source_id"] for i in idxs}
    free = [v for v in ctx.validators if v not in used]
    return free[ctx.rng.randrange(len(free))] if free else None


def input_truncated(ctx, mid, idxs):
    """REMP-INPUT-001: the writer was cut off mid-line, then wrote the receipt again in full."""
    i = idxs[ctx.rng.randrange(len(idxs))]
    kts, r = ctx.stream[i]
    line = ctx.encode(kts, r)
    return Plant("REMP-INPUT-001", mid, before={i: [(kts, line[: len(line) // 2])]})


def schema_seqno_as_string(ctx, mid, idxs):
    """REMP-SCHEMA-001: a producer writes the 64-bit block_seqno as a JSON string."""
    cands = [i for i in idxs if "block_seqno" in ctx.stream[i][1] and ctx.role_of(ctx.stream[i][1]["source_id"]) == VALIDATOR_ROLE]
    if not cands:
        return None
    i = cands[0]
    kts, r = ctx.stream[i]
    return Plant("REMP-SCHEMA-001", mid, replace=_everywhere(ctx, idxs, i, {**r, "block_seqno": str(r["block_seqno"])}))


def kind_old_name(ctx, mid, idxs):
    """REMP-KIND-001: IncludedIntoBlock written with the documents' old name AddedToBlock (one
    whose source's next receipt may follow the position before it: an unknown kind moves its
    source nowhere, and the next receipt must not read as out of order, REMP-SEQ-001)."""
    for i in _of(ctx, idxs, "IncludedIntoBlock"):
        r = ctx.stream[i][1]
        mine = [j for j in _of(ctx, idxs, src=r["source_id"]) if ctx.stream[j][1] != r]
        nxt = [j for j in mine if j > i]
        if nxt:
            pos = _positions(ctx, [j for j in mine if j < i]).get(r["source_id"], ("none",))[0]
            tr = ctx.model.kinds[ctx.stream[nxt[0]][1]["kind"]].log_transitions.get(VALIDATOR_ROLE)
            if tr is None or pos not in tr[1]:
                continue
        return Plant("REMP-KIND-001", mid, replace=_everywhere(ctx, idxs, i, {**r, "kind": "AddedToBlock"}))
    return None


def kind_outside_table(ctx, mid, idxs):
    """REMP-KIND-002: a validator acknowledges the queue with a status the profile never emits
    (spec: AcceptedByQueue; ever-node: Duplicate, naming the block the message went into)."""
    puts = _of(ctx, idxs, "PutIntoQueue")
    if not puts:
        return None
    i = puts[-1]
    kts, r = ctx.stream[i]
    if ctx.profile == "spec":
        new = {**r, "kind": "AcceptedByQueue", "timestamp": r["timestamp"] + 1 if r["timestamp"] else 0}
    else:
        blocks = _of(ctx, idxs, "IncludedIntoAcceptedBlock")
        if not blocks:
            return None
        new = {**r, "kind": "Duplicate", **_block_of(ctx.stream[blocks[0]][1])}
    return Plant("REMP-KIND-002", mid, before=_after(ctx, i, 1, ctx.signed(new)))


def time_zero(ctx, mid, idxs):
    """REMP-TIME-001: a source stamps a receipt with 0 instead of the time (spec: a validator's
    PutIntoQueue; ever-node, where validators may do so, the full node's RejectedByFullnode)."""
    if ctx.profile == "spec":
        cands = _of(ctx, idxs, "PutIntoQueue")[1:]
    else:
        cands = _of(ctx, idxs, "RejectedByFullnode", role=FULLNODE_ROLE)
    if not cands:
        return None
    i = cands[-1]
    kts, r = ctx.stream[i]
    return Plant("REMP-TIME-001", mid, replace=_everywhere(ctx, idxs, i, ctx.signed({**r, "timestamp": 0})))


def signature_malformed(ctx, mid, idxs):
    """REMP-SIG-001: spec: a validator sends a receipt unsigned; ever-node: a validator signs
    one but encodes the signature in hex, not base64."""
    cands = [i for i in idxs if ctx.role_of(ctx.stream[i][1]["source_id"]) == VALIDATOR_ROLE]
    if not cands:
        return None
    i = cands[ctx.rng.randrange(len(cands))]
    kts, r = ctx.stream[i]
    if ctx.profile == "spec":
        bad = ""
    else:
        bad = hashlib.blake2b(ctx.encode(kts, r), digest_size=64).hexdigest()
    return Plant("REMP-SIG-001", mid, replace=_everywhere(ctx, idxs, i, {**r, "signature": bad}))


def signature_of_other_bytes(ctx, mid, idxs):
    """REMP-SIG-002 (needs keys): the source signed the receipt, then changed its timestamp."""
    if ctx.signer is None:
        return None
    signed_roles = (VALIDATOR_ROLE, FULLNODE_ROLE) if ctx.profile == "spec" else (FULLNODE_ROLE, VALIDATOR_ROLE)
    cands = [i for i in idxs if ctx.role_of(ctx.stream[i][1]["source_id"]) in signed_roles]
    if not cands:
        return None
    i = cands[ctx.rng.randrange(len(cands))]
    kts, r = ctx.stream[i]
    sig = ctx.signature_for({**r, "timestamp": r["timestamp"] + 1})
    return Plant("REMP-SIG-002", mid, replace=_everywhere(ctx, idxs, i, {**r, "signature": sig}))


def signed_by_stranger(ctx, mid, idxs):
    """REMP-SIG-003 (needs keys): one validator's receipts come from a node outside the
    validator set (a stale key after a re-install), signed with that node's key."""
    if ctx.signer is None:
        return None
    pos = _positions(ctx, idxs)
    if not pos:
        return None
    v = sorted(pos)[ctx.rng.randrange(len(pos))]
    rep = {i: [(ctx.stream[i][0], ctx.signed({**ctx.stream[i][1], "source_id": ctx.outsider}))]
           for i in _of(ctx, idxs, src=v)}
    return Plant("REMP-SIG-003", mid, replace=rep)


def fullnode_queues(ctx, mid, idxs):
    """REMP-ROLE-001: the full node also reports PutIntoQueue, a validator's status."""
    fn = _of(ctx, idxs, src=ctx.fullnode_id)
    if not fn:
        return None
    i = fn[0]
    kts, r = ctx.stream[i]
    new = {"kind": "PutIntoQueue", "message_id": mid, "timestamp": r["timestamp"] + 1 if r["timestamp"] else kts + 1,
           "source_id": ctx.fullnode_id, "signature": ""}
    return Plant("REMP-ROLE-001", mid, before=_after(ctx, i, 1, ctx.signed(new)))


def skip_queue_ack(ctx, mid, idxs):
    """REMP-SEQ-001 (spec): a validator reports the collation outcome without its PutIntoQueue."""
    puts = _of(ctx, idxs, "PutIntoQueue")
    for i in puts[1:]:
        r = ctx.stream[i][1]
        mine = _of(ctx, idxs, src=r["source_id"])
        if mine[0] != i or len(mine) < 2:
            continue
        same = [j for j in mine if ctx.stream[j][1] == r]  # its redelivered copies go too
        rest = [j for j in mine if j not in same]
        if rest and ctx.stream[rest[0]][1]["kind"] not in ("PutIntoQueue", "IgnoredByQueue", "RejectedByQueue"):
            return Plant("REMP-SEQ-001", mid, replace={j: [] for j in same})
    return None


def queue_after_reject(ctx, mid, idxs):
    """REMP-SRC-001: a validator whose collator rejected the message takes it up again (in a
    finalized message: in one that every validator rejected, the validator back in the queue
    would also leave it without an outcome, REMP-LIVE-001). In ever-node a validator may leave out
    its intermediate receipts (REMP-FREE-006), so after a reject anything may follow; there the
    validator reports its collator's IgnoredByCollator after its own Finalized, which stays final."""
    if not _finalized_items(ctx, idxs):
        return None
    if ctx.profile == "spec":
        after = _of(ctx, idxs, "RejectedByCollator")
    else:
        after = [i for i in _of(ctx, idxs, "Finalized") if ctx.role_of(ctx.stream[i][1]["source_id"]) == VALIDATOR_ROLE]
    if not after:
        return None
    i = after[-1]
    kts, r = ctx.stream[i]
    new = {"kind": "PutIntoQueue", "message_id": mid, "timestamp": r["timestamp"] + 500 if r["timestamp"] else 0,
           "source_id": r["source_id"], "signature": ""}
    if ctx.profile != "spec":
        # its validator receipts carry neither time nor signature: a second PutIntoQueue would read
        # as a redelivered copy of the first, so the validator reports the collator's IgnoredByCollator
        new["kind"] = "IgnoredByCollator"
    return Plant("REMP-SRC-001", mid, before=_after(ctx, i, 500, ctx.signed(new)))


def _sent(ctx, mid, t, sent_to, total):
    return ctx.signed({"kind": "SentToValidators", "message_id": mid, "timestamp": t, "source_id": ctx.fullnode_id,
                       "signature": "", "sent_to": sent_to, "total_validators": total})


def send_after_reject(ctx, mid, idxs):
    """REMP-SRC-002: the full node rejects a message, then sends it to validators anyway (ever-node
    never writes SentToValidators: REMP-KIND-002 too)."""
    rej = _of(ctx, idxs, "RejectedByFullnode", src=ctx.fullnode_id)
    if not rej:
        return None
    i = rej[0]
    kts, r = ctx.stream[i]
    n = ctx.validators_per_session
    return Plant("REMP-SRC-002", mid, before=_after(ctx, i, 5, _sent(ctx, mid, (r["timestamp"] or kts) + 5, n, n)),
                 companions=frozenset({"REMP-KIND-002"} if ctx.profile != "spec" else ()))


def validator_after_fullnode_reject(ctx, mid, idxs):
    """REMP-FN-001 (spec): a message the full node rejected reaches a validator, whose collator
    rejects it."""
    rej = _of(ctx, idxs, "RejectedByFullnode", src=ctx.fullnode_id)
    if not rej or len(idxs) != len(rej):
        return None
    v = _idle_validator(ctx, idxs)
    i = rej[0]
    kts, r = ctx.stream[i]
    t = r["timestamp"] or kts
    base = {"message_id": mid, "source_id": v, "signature": ""}
    put = ctx.signed({"kind": "PutIntoQueue", **base, "timestamp": t + 40})
    rc = ctx.signed({"kind": "RejectedByCollator", **base, "timestamp": t + 2300, "error": "Contract rejected message with error code 52"})
    return Plant("REMP-FN-001", mid, before={i + 1: [(kts + 40, put), (kts + 2300, rc)]})


def _fanout(rule, sent_to_of):
    def inject(ctx, mid, idxs):
        sends = _of(ctx, idxs, "SentToValidators", src=ctx.fullnode_id)
        if ctx.profile == "spec":
            if not sends:
                return None
            i = sends[0]
            kts, r = ctx.stream[i]
            bad = sent_to_of(r["total_validators"])
            if bad is None:
                return None
            return Plant(rule, mid, replace=_everywhere(ctx, idxs, i, ctx.signed({**r, "sent_to": bad})))
        puts = _of(ctx, idxs, "PutIntoQueue")  # ever-node: the node writes the documents' SentToValidators
        if not puts or _of(ctx, idxs, src=ctx.fullnode_id):
            return None
        n = ctx.validators_per_session
        bad = sent_to_of(n)
        if bad is None:
            return None
        i = idxs[0]
        kts = ctx.stream[i][0]
        return Plant(rule, mid, before={i: [(kts - 1, _sent(ctx, mid, kts - 1, bad, n))]}, companions=frozenset({"REMP-KIND-002"}))
    return inject


def _named(inject, name: str, doc: str):
    """``inject`` under its module name: the manifest records a plant's injector by name, which
    must lead to this function, not to the closure's ``inject``."""
    inject.__name__ = inject.__qualname__ = name
    inject.__doc__ = doc
    return inject


fanout_over = _named(_fanout("REMP-FANOUT-001", lambda total: total + 2), "fanout_over",
                     "REMP-FANOUT-001: SentToValidators counts more sends than there are validators.")
fanout_under = _named(_fanout("REMP-FANOUT-002", lambda total: 1 if total >= 3 else None), "fanout_under",
                      "REMP-FANOUT-002: the full node sends the message to one validator only.")


def _finalized_items(ctx, idxs):
    fins = [i for i in _of(ctx, idxs, "Finalized") if isinstance(ctx.stream[i][1].get("block_id"), str)]
    return fins


def finalized_resent(ctx, mid, idxs):
    """REMP-FIN-001 (spec): the full node writes Finalized again a second later."""
    fins = _finalized_items(ctx, idxs)
    if len(fins) != 1:
        return None
    i = fins[0]
    kts, r = ctx.stream[i]
    return Plant("REMP-FIN-001", mid, before=_after(ctx, i, 1000, ctx.signed({**r, "timestamp": r["timestamp"] + 1000})))


def finalized_wrong_block(ctx, mid, idxs):
    """REMP-FIN-002 (spec): Finalized names a shard block nobody reported accepted."""
    fins = _finalized_items(ctx, idxs)
    if len(fins) != 1 or fins[0] != idxs[-1]:
        return None
    i = fins[0]
    kts, r = ctx.stream[i]
    new = ctx.signed({**_with_block(r, _other_block_of(r, "fin")), **{k: v for k, v in r.items() if k.startswith("mc_block")}})
    return Plant("REMP-FIN-002", mid, replace={i: [(kts, new)]})


def _included_after_finalized(ctx, mid, idxs, rule: str, kind: str, label: str):
    """A validator reports ``kind`` into a second shard block after the message was finalized
    (spec: a validator that saw its block ignored, so the ignore comes first; ever-node: one
    that had not reported on it). ``label`` seeds the new block's id."""
    fins = _finalized_items(ctx, idxs)
    if not fins:
        return None
    i = fins[-1]
    kts, fin = ctx.stream[i]
    t = fin["timestamp"] or kts
    if ctx.profile == "spec":
        pos = {v: p for v, p in _positions(ctx, idxs).items() if p[0] == "shard"}
        if not pos:
            return None
        v = sorted(pos)[0]
        last = ctx.stream[pos[v][1]][1]
        base = {"message_id": mid, "source_id": v, "signature": ""}
        ign = ctx.signed({"kind": "IgnoredByMasterchain", **base, "timestamp": t + 4000, **_block_of(last)})
        again = ctx.signed({"kind": kind, **base, "timestamp": t + 6000, **_other_block_of(fin, label)})
        return Plant(rule, mid, before={i + 1: [(kts + 4000, ign), (kts + 6000, again)]})
    v = _idle_validator(ctx, idxs)
    if v is None:
        return None
    again = ctx.signed({"kind": kind, "message_id": mid, "timestamp": 0, "source_id": v,
                        "signature": "", **_other_block_of(fin, label)})
    return Plant(rule, mid, before={i + 1: [(kts + 6000, again)]})


def accepted_again(ctx, mid, idxs):
    """REMP-REPLAY-001: after the message is finalized, validators accept a second shard block
    holding it."""
    return _included_after_finalized(ctx, mid, idxs, "REMP-REPLAY-001", "IncludedIntoAcceptedBlock", "replay")


def finalized_in_two_blocks(ctx, mid, idxs):
    """REMP-REPLAY-002: Finalized is reported again, naming another shard block."""
    fins = _finalized_items(ctx, idxs)
    if not fins:
        return None
    i = fins[-1]
    kts, r = ctx.stream[i]
    new = ctx.signed({**_with_block(r, _other_block_of(r, "replay")), **{k: v for k, v in r.items() if k.startswith("mc_block")},
                      "timestamp": r["timestamp"] + 3000 if r["timestamp"] else 0})
    return Plant("REMP-REPLAY-002", mid, before={i + 1: [(kts + 3000, new)]})


def collated_again(ctx, mid, idxs):
    """REMP-REPLAY-003: a collator puts the finalized message into a new block candidate."""
    return _included_after_finalized(ctx, mid, idxs, "REMP-REPLAY-003", "IncludedIntoBlock", "recollate")


def block_claimed_twice(ctx, mid, idxs):
    """REMP-BLOCK-001: a validator that had not reported on the message claims another node's
    block candidate as its own collation (spec: after queueing the message, as its flow requires;
    ever-node, whose validators may skip intermediate receipts: the IncludedIntoBlock alone)."""
    for i in _of(ctx, idxs, "IncludedIntoBlock", role=VALIDATOR_ROLE):
        kts, r = ctx.stream[i]
        if not isinstance(r.get("block_id"), str):
            continue
        v = _idle_validator(ctx, idxs)
        if v is None:
            return None
        base = {"message_id": mid, "source_id": v, "signature": ""}
        t = r["timestamp"]
        claim = ctx.signed({"kind": "IncludedIntoBlock", **base, "timestamp": t + 2 if t else 0, **_block_of(r)})
        if ctx.profile != "spec":
            return Plant("REMP-BLOCK-001", mid, before=_after(ctx, i, 1, claim))
        put = ctx.signed({"kind": "PutIntoQueue", **base, "timestamp": t + 1 if t else 0})
        return Plant("REMP-BLOCK-001", mid, before=_after(ctx, i, 1, put, claim))
    return None


def accepted_twice_before_final(ctx, mid, idxs):
    """REMP-REPLAY-004 (spec): while a shard block holding the message is accepted, a validator
    that had not reported on it queues the message, collates it into another candidate and sees
    that block accepted too, before the Finalized of the first. Its collation, made while an
    accepted block held the message, is REMP-REPLAY-005's (non-strict) finding too. Only where no
    collator rejected the message (2/3 rejects would add REMP-COLL-004)."""
    fins = _finalized_items(ctx, idxs)
    if len(fins) != 1 or _of(ctx, idxs, "RejectedByCollator"):
        return None
    fin_kts, fin = ctx.stream[fins[0]]
    accepted = [i for i in _of(ctx, idxs, "IncludedIntoAcceptedBlock", role=VALIDATOR_ROLE)
                if i < fins[0] and ctx.stream[i][1].get("block_id") == fin["block_id"]]
    if not accepted:
        return None
    i = accepted[0]
    kts, acc = ctx.stream[i]
    t = acc["timestamp"]
    if not t or not fin["timestamp"] or fin["timestamp"] - t < 1000 or fin_kts - kts < 1000:
        return None  # the second block must be seen accepted before the Finalized
    v = _idle_validator(ctx, idxs)
    if v is None:
        return None
    base = {"message_id": mid, "source_id": v, "signature": ""}
    other = _other_block_of(acc, "second-accepted")
    put = ctx.signed({"kind": "PutIntoQueue", **base, "timestamp": t + 1})
    coll = ctx.signed({"kind": "IncludedIntoBlock", **base, "timestamp": t + 2, **other})
    again = ctx.signed({"kind": "IncludedIntoAcceptedBlock", **base, "timestamp": t + 3, **other})
    return Plant("REMP-REPLAY-004", mid, before=_after(ctx, i, 1, put, coll, again),
                 companions=frozenset({"REMP-REPLAY-005"}))


def collated_after_expiry(ctx, mid, idxs):
    """REMP-EXPIRY-001: a validator queues a message with the others, sits on it until it is
    obsolete, then collates it; the shard rejects the block. In a message 2/3 of the validators
    the full node counted had rejected, that collation breaks REMP-COLL-004 too (where checked)."""
    if _of(ctx, idxs, "Finalized") or _of(ctx, idxs, "RejectedByFullnode"):
        return None
    rejecters = {ctx.stream[i][1]["source_id"] for i in _of(ctx, idxs, "RejectedByCollator")}
    sent = [ctx.stream[i][1] for i in _of(ctx, idxs, "SentToValidators")]
    total = sent[0].get("total_validators") if sent else None
    stopped = (ctx.model.mode("REMP-COLL-004") != "off" and isinstance(total, int) and total > 0
               and len(rejecters) >= ctx.model.threshold("stop_collation_rejected", total))
    puts = _of(ctx, idxs, "PutIntoQueue")
    if not puts:
        return None
    blocks = [i for i in idxs if isinstance(ctx.stream[i][1].get("block_id"), str)]
    put_kts, first_put = ctx.stream[puts[0]]
    at = (first_put["timestamp"] or put_kts) + ctx.expiry_ms + 30_000
    j = ctx.index_at(at)
    if j is None and not ctx.last_part:
        j = len(ctx.stream)  # after the part's last receipt (the next part starts much later)
    if j is None or j <= idxs[-1]:
        return None
    v = _idle_validator(ctx, idxs)
    if v is None:
        return None
    ref = ctx.stream[blocks[0]][1] if blocks else {"block_id": mid, "block_seqno": 1, "shard": "a000000000000000", "wc": 0}
    blk = _other_block_of(ref, "expired")
    zero = ctx.profile != "spec"  # ever-node validators stamp nothing
    base = {"message_id": mid, "source_id": v, "signature": ""}
    put = ctx.signed({"kind": "PutIntoQueue", **base, "timestamp": 0 if zero else first_put["timestamp"] + 1})
    late = [(at, ctx.signed({"kind": "IncludedIntoBlock", **base, "timestamp": 0 if zero else at, **blk})),
            (at + 600, ctx.signed({"kind": "RejectedByShardchain", **base, "timestamp": 0 if zero else at + 600, **blk,
                                   "error": "Block rejected by the shardchain: message expired"}))]
    edits = _after(ctx, puts[0], 1, put)
    edits.setdefault(j, []).extend(late)
    return Plant("REMP-EXPIRY-001", mid, before=edits, companions=frozenset({"REMP-COLL-004"} if stopped else ()))


def lost_after_queue(ctx, mid, idxs):
    """REMP-LIVE-001: every receipt after the queue acknowledgements is lost: no outcome ever."""
    if not _finalized_items(ctx, idxs):
        return None
    keep = ("SentToValidators", "PutIntoQueue")
    drop = [i for i in idxs if ctx.stream[i][1]["kind"] not in keep]
    if len(drop) == len(idxs) or not _of(ctx, idxs, "PutIntoQueue"):
        return None
    return Plant("REMP-LIVE-001", mid, replace={i: [] for i in drop})


def finalized_though_all_rejected(ctx, mid, idxs):
    """REMP-OUTCOME-001: every validator that queued the message gives it up, yet the full node
    finalizes it (spec: the validators' rejects come before the full node's Finalized; ever-node:
    a message every collator rejected is finalized by the full node)."""
    if ctx.profile == "spec":
        fins = _finalized_items(ctx, idxs)
        if len(fins) != 1:
            return None
        i = fins[0]
        kts, fin = ctx.stream[i]
        t = fin["timestamp"]
        items = []
        for v, (p, last_i) in sorted(_positions(ctx, idxs, skip={i}).items()):
            last = ctx.stream[last_i][1]
            base = {"message_id": mid, "source_id": v, "signature": ""}
            steps = {"shard": ["IgnoredByMasterchain"], "collator": ["IgnoredByShardchain"], "queue": [], "duplicate": []}.get(p)
            if steps is None:
                continue  # already rejected or timed out
            for kind in steps:
                items.append(ctx.signed({"kind": kind, **base, "timestamp": t - 2, **_block_of(last)}))
            items.append(ctx.signed({"kind": "RejectedByCollator", **base, "timestamp": t - 1,
                                     "error": "Contract rejected message with error code 52"}))
        if not items:
            return None
        return Plant("REMP-OUTCOME-001", mid, before={i: [(kts, r) for r in items]})
    if _finalized_items(ctx, idxs) or _of(ctx, idxs, "RejectedByFullnode"):
        return None
    pos = _positions(ctx, idxs)
    if not pos or any(p not in ("rejected", "timed_out") for p, _ in pos.values()):
        return None
    if not ctx.fullnode_known_before(idxs[0]):
        return None  # else the checker would take the full node's Finalized for a validator's
    i = idxs[-1]
    kts = ctx.stream[i][0]
    blk = _other_block_of({"block_id": mid, "block_seqno": 1, "shard": "a000000000000000", "wc": 0}, "phantom")
    fin = ctx.signed({"kind": "Finalized", "message_id": mid, "timestamp": kts + 5000, "source_id": ctx.fullnode_id,
                      "signature": "", **blk})
    return Plant("REMP-OUTCOME-001", mid, before={i + 1: [(kts + 5000, fin)]})


def finalized_though_fullnode_rejected(ctx, mid, idxs):
    """REMP-OUTCOME-002: a full node rejects a message that is then finalized (spec: a second
    full node rejects the user's copy while the first one goes on, so validators did process a
    rejected message: REMP-FN-001 too; ever-node: the full node rejects a resubmission)."""
    if not _finalized_items(ctx, idxs):
        return None
    i = idxs[0]
    kts, first = ctx.stream[i]
    fn = ctx.second_fullnode if ctx.profile == "spec" else ctx.fullnode_id
    t = (first["timestamp"] or kts) + 20
    rej = ctx.signed({"kind": "RejectedByFullnode", "message_id": mid, "timestamp": t, "source_id": fn, "signature": "",
                      "error": "Message rejected by pre-evaluation: duplicate submission"})
    return Plant("REMP-OUTCOME-002", mid, before={i + 1: [(kts + 20, rej)]},
                 companions=frozenset(({"REMP-FN-001"} | ({"REMP-SIG-003"} if ctx.validator_set is not None else set()))
                                      if ctx.profile == "spec" else ()))


# rule -> the per-message injector that plants it
PLANTERS: dict[str, Callable] = {
    "REMP-INPUT-001": input_truncated,
    "REMP-SCHEMA-001": schema_seqno_as_string,
    "REMP-KIND-001": kind_old_name,
    "REMP-KIND-002": kind_outside_table,
    "REMP-TIME-001": time_zero,
    "REMP-SIG-001": signature_malformed,
    "REMP-SIG-002": signature_of_other_bytes,
    "REMP-SIG-003": signed_by_stranger,
    "REMP-ROLE-001": fullnode_queues,
    "REMP-SEQ-001": skip_queue_ack,
    "REMP-SRC-001": queue_after_reject,
    "REMP-SRC-002": send_after_reject,
    "REMP-FN-001": validator_after_fullnode_reject,
    "REMP-FANOUT-001": fanout_over,
    "REMP-FANOUT-002": fanout_under,
    "REMP-FIN-001": finalized_resent,
    "REMP-FIN-002": finalized_wrong_block,
    "REMP-REPLAY-001": accepted_again,
    "REMP-REPLAY-002": finalized_in_two_blocks,
    "REMP-REPLAY-003": collated_again,
    "REMP-EXPIRY-001": collated_after_expiry,
    "REMP-BLOCK-001": block_claimed_twice,
    "REMP-REPLAY-004": accepted_twice_before_final,
    "REMP-LIVE-001": lost_after_queue,
    "REMP-OUTCOME-001": finalized_though_all_rejected,
    "REMP-OUTCOME-002": finalized_though_fullnode_rejected,
}
