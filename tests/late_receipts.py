"""A REMP log with late receipts: the fixtures' clean simulator log plus, at its last time, receipts
for two messages whose close point the log's clock passed long before (replays into another block,
a redelivered one, an unknown kind). The audit's tests and the --jobs parity tests read the same log."""

from __future__ import annotations

import json
from pathlib import Path

CLEAN_LOG = Path(__file__).resolve().parent.parent / "fixtures" / "remp" / "logs" / "sim-spec-clean.jsonl"


def late_receipts(lines: list[str]) -> list[dict]:
    """The late receipts for ``lines`` (a clean log): per message an IncludedIntoAcceptedBlock into
    another block (REMP-REPLAY-001), a Finalized there (REMP-REPLAY-002; for the first message the
    same replay again, a redelivered receipt) and an unknown kind, all at the log's last time."""
    recs = [json.loads(x) for x in lines]
    fins = [r for r in recs if r["kind"] == "Finalized"][:2]
    end_t = recs[-1]["timestamp"]
    late = []
    for n, fin in enumerate(fins):
        acc = next(r for r in recs if r["kind"] == "IncludedIntoAcceptedBlock" and r["message_id"] == fin["message_id"])
        other = {"block_id": f"{n + 1:02x}" * 32, "block_seqno": acc["block_seqno"] + 99, "timestamp": end_t}
        late.append(acc | other)
        late.append(fin | other if n else acc | other)
        late.append(fin | {"kind": "Bogus", "timestamp": end_t})
    return late


def late_log(path: Path) -> tuple[Path, int]:
    """Write the clean log plus its late receipts to ``path``; return it and how many are late."""
    lines = CLEAN_LOG.read_text().splitlines()
    late = late_receipts(lines)
    path.write_text("\n".join(lines + [json.dumps(r, separators=(",", ":")) for r in late]) + "\n")
    return path, len(late)
