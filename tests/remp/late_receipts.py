"""A REMP log with late receipts: the fixtures' clean simulator log plus, at its last time, receipts
for two messages whose close point the log's clock passed long before (replays into another block,
a redelivered one, an unknown kind). The audit's tests and the --jobs parity tests read the same log."""

from __future__ import annotations

import json
from pathlib import Path

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "remp" / "logs"
CLEAN_LOG = LOGS / "sim-spec-clean.jsonl"
FAULTS_LOG = LOGS / "sim-spec-faults.jsonl"  # the same kind of log with planted violations


def late_receipts(lines: list[str]) -> list[dict]:
    """The late receipts for ``lines`` (a clean log): per message an IncludedIntoAcceptedBlock into
    another block (REMP-REPLAY-001), a Finalized there (REMP-REPLAY-002; for the first message the
    same replay again, a redelivered receipt) and an unknown kind, all at the log's last time."""
    recs = []
    for x in lines:
        try:
            rec = json.loads(x)
        except ValueError:  # a line planted unreadable
            continue
        if isinstance(rec, dict) and isinstance(rec.get("timestamp"), int):
            recs.append(rec)
    fins = [r for r in recs if r.get("kind") == "Finalized"][:2]
    end_t = recs[-1]["timestamp"]
    late = []
    for n, fin in enumerate(fins):
        acc = next(r for r in recs if r.get("kind") == "IncludedIntoAcceptedBlock" and r.get("message_id") == fin["message_id"])
        other = {"block_id": f"{n + 1:02x}" * 32, "block_seqno": acc["block_seqno"] + 99, "timestamp": end_t}
        late.append(acc | other)
        late.append(fin | other if n else acc | other)
        late.append(fin | {"kind": "Bogus", "timestamp": end_t})
    return late


def late_log(path: Path, base: Path = CLEAN_LOG) -> tuple[Path, int]:
    """Write ``base`` (a simulator log: the clean one by default) plus its late receipts to
    ``path``; return it and how many are late."""
    lines = base.read_text().splitlines()
    late = late_receipts(lines)
    path.write_text("\n".join(lines + [json.dumps(r, separators=(",", ":")) for r in late]) + "\n")
    return path, len(late)
