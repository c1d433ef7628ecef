"""Fault injection: turn a clean receipt stream into one that breaks a named rule.

Each injector picks a message (seeded, reproducible), changes the stream the way a buggy
implementation would, and says which rule it means to break. Used to build the committed fault
logs of ``fixtures/remp/logs`` and the demo; a checker that misses an injected fault is wrong.
A raw ``str`` in the returned list stands for a line that is not a receipt at all.
"""

from __future__ import annotations

import hashlib
import random
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
