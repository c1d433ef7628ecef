"""The exact check packs a message's settled track (conformance/corda/packing.py) and unpacks it when
another record of it comes: the packing is lossless, and a record that comes after a message was
packed is judged as it is against a track never packed."""

from __future__ import annotations

import copy
import json

import pytest

from rmkit.keystore import KeyStore

from rmkit.conformance.corda import packing, share
from rmkit.conformance.corda.checker import CordaLogChecker
from rmkit.conformance.corda.state import Commit, Copy, NewAnswer, Track

T0 = 1_767_225_600_000


def _store(fingerprint=hash) -> packing.PackedTracks:
    return packing.PackedTracks(KeyStore(fingerprint))


def test_a_packed_track_unpacks_to_the_same_track():
    tr = Track("bob", "N-f1-1-0", 7, [Copy(7, "ID:b-1", "6f1c", 1, "s1", "NEW", 8, "committed"),
                                      Copy(11, "ID:b-1", "6f1c", 1, "s1", "DUPLICATE", 12, "acked")],
               commits=(Commit(9, 101, T0 + 9),), rows=(Commit(40, 101, T0 + 9),),
               new_after=(NewAnswer(8, T0 + 8, "6f1c", 1),), acked=13)
    before = copy.deepcopy(tr)
    assert packing.packable(tr)
    packed = _store()
    assert packed.pack(tr)
    n = packed.find("N-f1-1-0")
    assert n >= 0 and packed.node(n) == "bob" and len(packed) == 1
    assert packed.fast_judged(n)  # (committed once; the row of that transaction, inserted after its NEW answer)
    assert packed.peek(n, "N-f1-1-0") == before
    assert not packed.add_row(n, "bob", 41, 101, T0 + 20)  # (a second row: the track is unpacked to take it)
    assert packed.unpack(n, "N-f1-1-0") == before and packed.find("N-f1-1-0") == -1 and len(packed) == 0


def test_every_field_survives_the_packing(monkeypatch):
    """Names beyond the coded ones, no delivery, no sequence number, no dedup line, no acknowledgement,
    numbers at 64 bits: all as they were."""
    tr = Track("bob", "N-f1-1-0", 1 << 40, [Copy((1 << 40) + 5, None, "6f1c", None, None, "NEW", 0, "discarded"),
                                            Copy((1 << 62), "ID:b-2", None, (1 << 63) - 1, "s2", None, 0, "committed")],
               commits=(Commit(3, (1 << 63) - 1, -5),), new_after=(NewAnswer(2, -9, None, None),))
    before = copy.deepcopy(tr)
    coded = _store()
    assert coded.pack(copy.deepcopy(before))
    assert coded.peek(coded.find("N-f1-1-0"), "N-f1-1-0") == before
    monkeypatch.setattr(packing, "MAX_NAMES", 1)  # (no name coded: every one kept as it is)
    packed = _store()
    assert packed.pack(tr)
    assert packed.peek(packed.find("N-f1-1-0"), "N-f1-1-0") == before and packed.names == [None]


def test_a_track_whose_numbers_do_not_pack_is_not_packed():
    tr = Track("bob", "N-f1-1-0", 7, [Copy(7, "ID:b-1", "6f1c", 1, "s1", "NEW", 8, "committed")],
               commits=(Commit(9, 1 << 64, T0 + 9),))
    before = copy.deepcopy(tr)
    packed = _store()
    assert not packed.pack(tr) and tr == before and packed.find("N-f1-1-0") == -1
    sent = (3, "alice", "N-f1-1-0", "s1", "6f1c", 1)
    tr.commits = (Commit(9, 101, T0 + 9),)
    assert packed.pack(tr, sent)
    n = packed.find("N-f1-1-0")
    assert packed.sent_fact(n, "N-f1-1-0") == sent
    assert not packed.add_row(n, "bob", 40, 1 << 64, T0)  # (a number beyond 64 bits: the track is unpacked to take it)


def test_the_fast_judgement_is_judge_tracks():
    tr = Track("bob", "N-f1-1-0", 7, [Copy(7, "ID:b-1", "6f1c", 1, "s1", "NEW", 8, "committed")],
               commits=(Commit(9, 101, T0 + 9),), new_after=(NewAnswer(8, T0 + 8, "6f1c", 1),))

    def packed_with(row):
        packed = _store()
        packed.pack(copy.deepcopy(tr))
        n = packed.find("N-f1-1-0")
        if row is not None:
            assert packed.add_row(n, "bob", *row)
        return packed, n

    assert not packed_with(None)[0].fast_judged(packed_with(None)[1])   # no row yet
    assert not packed_with((40, 102, T0 + 9))[0].fast_judged(0)          # the row of another transaction
    assert not packed_with((40, 101, T0 + 7))[0].fast_judged(0)          # a row inserted before the NEW answer
    assert packed_with((40, 101, T0 + 8))[0].fast_judged(0)
    other, n = packed_with(None)
    assert not other.add_row(n, "carol", 40, 101, T0 + 8)                # another node's row: not this track's


def test_a_track_not_settled_is_not_packed():
    tr = Track("bob", "N-f1-1-0", 7, [Copy(7, "ID:b-1", "6f1c", 1, "s1", "NEW", 8, None)],
               commits=(Commit(9, 101, T0 + 9),))
    assert not packing.packable(tr)  # (its copy is neither acknowledged nor committed yet)


class _Log:
    def __init__(self):
        self.lines, self.rows, self.t = [], [], T0
        self.sends: dict[str, int] = {}

    def ev(self, event, mid, node="bob", **kw):
        self.t += 7
        self.lines.append({"t": self.t, "node": node, "event": event, "id": mid, **kw})
        return len(self.lines)

    def settled(self, mid, seq, tx):
        """Sent, received, answered NEW, committed, acknowledged: packed after its acknowledgement
        (with its send)."""
        who = {"sender": "6f1c2a80-a1", "seq": seq, "session": "s1"}
        self.sends[mid] = self.ev("sent", mid, node="alice", **who)
        self.ev("received", mid, delivery=f"ID:bob-{mid}", **who)
        self.ev("dedup", mid, verdict="NEW")
        line = self.ev("committed", mid, tx=tx)
        self.ev("acked", mid, delivery=f"ID:bob-{mid}")
        return line

    def row(self, mid, seq, tx):
        self.rows.append({"node": "bob", "id": mid, "sender": "6f1c2a80-a1", "seq": seq, "tx": tx, "t": self.t})
        return len(self.rows)


def _planted(tmp_path):
    """A log whose messages are settled (and so packed) before later records of them come, and the
    findings those records make, by the rules' definitions: (rule, id, file, line)."""
    log, expect = _Log(), []
    first = log.settled("N-f1-1-0", 1, 101)
    again = log.ev("committed", "N-f1-1-0", tx=150)  # committed a second time: its effect happened twice
    expect.append(("CORDA-DEDUP-001", "N-f1-1-0", "events", again))
    log.settled("N-f1-2-0", 2, 102)              # clean: its row is of its commit's transaction
    log.settled("N-f1-3-0", 3, 103)              # its row names another transaction
    committed = log.settled("N-f1-4-0", 4, 104)  # no row at all in the node's export
    expect.append(("CORDA-DEDUP-005", "N-f1-4-0", "events", committed))
    log.settled("N-f1-5-0", 5, 105)              # redelivered after its acknowledgement, answered NEW again
    log.ev("received", "N-f1-5-0", delivery="ID:bob-N-f1-5-0", sender="6f1c2a80-a1", seq=5, session="s1")
    renewed = log.ev("dedup", "N-f1-5-0", verdict="NEW")
    expect.append(("CORDA-DEDUP-005", "N-f1-5-0", "events", renewed))
    log.ev("acked", "N-f1-5-0", delivery="ID:bob-N-f1-5-0")
    # another node consumes two of the packed messages against their send order: judged by their sends,
    # which the packed tracks keep
    commits = {}
    for mid, seq in (("N-f1-3-0", 3), ("N-f1-2-0", 2)):
        log.ev("received", mid, node="carol", delivery=f"ID:carol-{mid}", sender="6f1c2a80-a1", seq=seq, session="s1")
        log.ev("dedup", mid, node="carol", verdict="NEW")
        commits[mid] = log.ev("committed", mid, node="carol", tx=seq)
        log.ev("acked", mid, node="carol", delivery=f"ID:carol-{mid}")
    expect += [("CORDA-ORDER-001", "N-f1-2-0", "events", line)
               for line in (commits["N-f1-3-0"], commits["N-f1-2-0"], log.sends["N-f1-2-0"], log.sends["N-f1-3-0"])]
    for mid, seq, tx in (("N-f1-1-0", 1, 101), ("N-f1-2-0", 2, 102), ("N-f1-5-0", 5, 105)):
        log.row(mid, seq, tx)
    other = log.row("N-f1-3-0", 3, 199)
    expect.append(("CORDA-ACK-002", "N-f1-3-0", "export", other))
    second = log.row("N-f1-2-0", 2, 102)          # the export holds an id twice
    expect.append(("CORDA-DEDUP-001", "N-f1-2-0", "export", second))
    events, export = tmp_path / "events.jsonl", tmp_path / "export.jsonl"
    events.write_text("".join(json.dumps(x) + "\n" for x in log.lines))
    export.write_text("".join(json.dumps(x) + "\n" for x in log.rows))
    return [str(events), str(export)], expect, first


def _found(paths, monkeypatch, pack: bool, fingerprint=hash) -> tuple[set, int]:
    packed = []

    class Counted(packing.PackedTracks):  # (compiled, the class itself takes no new method)
        def pack(self, tr, sent=None):
            packed.append(tr.mid)
            return super().pack(tr, sent)

    monkeypatch.setattr(share, "PackedTracks", Counted)
    monkeypatch.setattr(share, "packable", packing.packable if pack else (lambda tr: False))
    monkeypatch.setattr(share, "KeyStore", lambda: KeyStore(fingerprint))
    report = CordaLogChecker("spec", max_examples=0, settled=True).run(paths)
    assert report.subjects == 5
    names = {paths[0]: "events", paths[1]: "export"}
    return {(v.rule, v.subject, names[e.file], e.line) for v in report.violations for e in v.evidence}, len(packed)


def test_records_after_a_message_was_packed_are_judged_as_without_packing(tmp_path, monkeypatch):
    paths, expect, _ = _planted(tmp_path)
    with_packing, packed = _found(paths, monkeypatch, pack=True)
    assert packed >= 5  # every message was packed at its acknowledgement
    assert set(expect) <= with_packing
    assert {(r, m) for r, m, _, _ in with_packing} == {(r, m) for r, m, _, _ in expect}
    without, packed = _found(paths, monkeypatch, pack=False)
    assert packed == 0 and without == with_packing


@pytest.mark.parametrize("fingerprint", [lambda key: 0, lambda key: len(key) % 3],
                         ids=["every id the same fingerprint", "three fingerprints"])
def test_ids_whose_fingerprints_collide_are_judged_as_ever(tmp_path, monkeypatch, fingerprint):
    """The packed tracks and the facts' ids are found by a fingerprint of the id; a fingerprint shared
    by several ids costs a second look at the id itself, never another id's track or fact."""
    paths, expect, _ = _planted(tmp_path)
    colliding, packed = _found(paths, monkeypatch, pack=True, fingerprint=fingerprint)
    assert packed >= 5
    assert colliding == _found(paths, monkeypatch, pack=False)[0]
    assert {(r, m) for r, m, _, _ in colliding} == {(r, m) for r, m, _, _ in expect}
