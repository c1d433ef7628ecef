"""The checker's faster paths change no finding: shares keep every receipt of a message together
whichever way its line is read (typed, general, Kafka record), hex formats refuse what is no
string, and the copy test still tells a copy from a new receipt."""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import FIXTURES
from rmkit.conformance.remp.checker import RempLogChecker
from rmkit.protocols.remp.model import _hex_check

_spec = importlib.util.spec_from_file_location("mk", FIXTURES / "make_rule_fixtures.py")
mk = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mk)


def _spellings(lines: list[str]) -> list[str]:
    """The same receipts, every fourth line in another layout: its id in upper case (typed, the spec
    profile folds case), an implementation's own extra field (general reading), a Kafka record
    holding the receipt as a JSON string or as an object."""
    out = []
    for i, line in enumerate(lines):
        rec = json.loads(line)
        way = i % 4
        if way == 1:
            rec["message_id"] = rec["message_id"].upper()
            line = json.dumps(rec)
        elif way == 2:
            line = json.dumps(dict(rec, node_note="relayed"))
        elif way == 3:
            value = json.dumps(rec) if i % 8 == 3 else rec
            line = json.dumps({"topic": "receipts", "partition": 0, "offset": i, "timestamp": rec["timestamp"],
                               "key": rec["message_id"], "value": value})
        out.append(line)
    return out


def test_shares_keep_a_messages_receipts_together_in_every_layout(tmp_path):
    log = mk.Log("spec")
    for i in range(120):
        log.happy(i * 3000, msg=mk.h(f"m{i}"))
    for i in range(0, 120, 11):  # a second Finalized into another block: REMP-REPLAY-002 across layouts
        log.r("Finalized", mk.FN2, i * 3000 + 9000, msg=mk.h(f"m{i}"), **mk.BLOCKS[mk.B2], **mk.MASTER)
    lines = _spellings(log.lines)
    path = tmp_path / "layouts.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    one = RempLogChecker(jobs=1).run([str(path)])
    assert one.counts.get("REMP-REPLAY-002") == 11 and one.subjects == 120
    for jobs in (2, 3, 5):
        other = RempLogChecker(jobs=jobs).run([str(path)])
        assert other.counts == one.counts, jobs
        assert (other.records, other.subjects, other.unreadable) == (one.records, one.subjects, one.unreadable)
        assert other.metrics["outcomes"] == one.metrics["outcomes"]
        assert [(v.rule, v.subject, [e.line for e in v.evidence]) for v in other.violations] == \
               [(v.rule, v.subject, [e.line for e in v.evidence]) for v in one.violations]


@pytest.mark.parametrize("pattern", ["^[0-9a-fA-F]{64}$", "^[0-9a-f]{64}$", "^([0-9a-fA-F]{64}|[0-9a-fA-F]{128})$"])
def test_hex_checks_refuse_what_is_no_string(pattern):
    check = _hex_check(pattern)
    for value in (None, 7, 1.5, b"00" * 32, bytearray(b"00" * 32), ["0"] * 64, ("a",) * 64, {"0": 1}):
        assert check(value) is False, value
    assert check("0" * 64) is True


def test_a_copy_is_told_from_new_receipts_however_many_a_message_has(tmp_path):
    """Copies are found by the hash of the line; a bit per hash spares most searches. A message
    with many receipts (bits shared by several hashes) still counts exactly its copies."""
    log = mk.Log("spec")
    log.sent(0)
    vals = [mk.h(f"v{i}") for i in range(60)]
    log.queued(100, vals=vals)
    lines = log.lines
    copies = lines[1::3]
    path = tmp_path / "copies.jsonl"
    path.write_text("\n".join(lines + copies + copies[:5]) + "\n", encoding="utf-8")
    report = RempLogChecker(jobs=1).run([str(path)])
    assert report.metrics["redelivered_receipts"] == len(copies) + 5
    assert report.records == len(lines) + len(copies) + 5
    assert report.metrics["receipts_per_kind"]["PutIntoQueue"] == len(vals)


def test_a_share_is_found_by_the_id_key_not_by_a_value_that_reads_like_it():
    from rmkit.conformance.remp.shares import partition_share

    mid = "ab" * 31 + "c7"
    plain = b'{"kind":"Finalized","message_id":"%s","source_id":"00"}' % mid.encode()
    decoy = b'{"kind":"Finalized","message_id":"%s","note":"message_id","x":"0"}' % mid.encode()
    spaced = b'{"kind":"Finalized","message_id" :\t"%s"}' % mid.encode()
    kafka = b'{"key":"k","value":"{\\"message_id\\":\\"%s\\",\\"note\\":\\"message_id\\"}"}' % mid.encode()
    for n in (2, 3, 5):
        want = (ord("7") | 0x20) % n
        assert [partition_share(line, n) for line in (plain, decoy, spaced, kafka)] == [want] * 4


def test_open_messages_keep_one_string_per_source():
    """Tens of thousands of messages are open at once, each holding its sources in its state (block
    events, the first Finalized, its sources' positions): a source is kept as one string however
    many receipts name it, not as each receipt's own copy (which took 20 MB more per --jobs share
    at 3 million receipts)."""
    log = FIXTURES / "logs" / "sim-spec-clean.jsonl"
    c = RempLogChecker("spec", lifetime_s=3600, jobs=1)  # (a long lifetime: every message stays open)
    c.begin([str(log)])
    c._run_file(0, str(log))
    held = [src for msg in c._msgs.values() for src in msg.srcs]
    held += [src for msg in c._msgs.values() if msg.blk for src in msg.blk[4::5] if src is not None]
    held += [msg.fin.src for msg in c._msgs.values() if msg.fin is not None and msg.fin.src is not None]
    assert len(c._msgs) > 100 and len(held) > 1000
    assert len({id(s) for s in held}) == len(set(held))
