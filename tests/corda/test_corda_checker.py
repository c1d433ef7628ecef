"""The Corda records checker (`rmkit check --protocol corda`): each per-rule fixture yields exactly the
findings planted in it (rule, message id and the planted record among the evidence), the clean and
legal logs pass in their profiles, off rules stay silent, bad input is reported by file, line and
field and exits 2, `--jobs` and `rmkit audit` (Spark) find the same (rule, id) set as one process."""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import REPO
from rmkit.cli import main
from rmkit.conformance.corda.checker import NOT_IN_RECORDS, CordaLogChecker
from rmkit.protocols.corda.records import record_format
from rmkit.protocols.corda.model import corda_spec, profiles

ROOT = REPO / "fixtures" / "corda" / "rules"
MANIFEST = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))["fixtures"]


def run(entry, profile=None, **kw):
    return CordaLogChecker(profile or entry["profile"], settled=entry["settled"], max_examples=0, **kw).run([str(ROOT / entry["file"])])


def pairs(report) -> set:
    return {(v.rule, v.subject) for v in report.violations}


@pytest.mark.parametrize("entry", MANIFEST, ids=[f["file"] for f in MANIFEST])
def test_fixture_yields_exactly_its_planted_findings(entry):
    report = run(entry)
    assert report.unreadable == 0 and report.records > 0
    assert sorted(pairs(report)) == sorted((r, i) for r, i, _ in entry["expect"]), \
        [(v.rule, v.subject, v.explanation) for v in report.violations]
    assert sum(report.counts.values()) == len(entry["expect"])
    for rule, mid, line in entry["expect"]:
        hit = next(v for v in report.violations if (v.rule, v.subject) == (rule, mid))
        assert line in [e.line for e in hit.evidence], (rule, mid, line, hit.evidence)
        assert all(e.file == str(ROOT / entry["file"]) for e in hit.evidence)
    modes = {corda_spec(entry["profile"]).mode(r) for r, _, _ in entry["expect"]}
    assert report.verdict == ("pass" if not modes else "fail" if "strict" in modes else "non-strict"), report.reasons


@pytest.mark.parametrize("profile", profiles())
def test_every_rule_records_can_show_has_a_fixture_and_a_clean_log(profile):
    named = {f["file"].split("/")[1][:-6] for f in MANIFEST if f["profile"] == profile}
    active = [r.id for r in corda_spec(profile).rules if r.mode(profile) != "off" and r.id not in NOT_IN_RECORDS]
    assert not [r for r in active if r not in named]
    assert any(n.startswith("clean-") for n in named)


def test_off_rules_are_silent_and_settled_rules_wait_for_settled():
    for profile in profiles():
        off = {r.id for r in corda_spec(profile).rules if r.mode(profile) == "off"}
        for entry in MANIFEST:
            report = run(entry, profile)
            assert not off & set(report.counts), (profile, entry["file"])
            if not entry["settled"]:
                continue
            unsettled = CordaLogChecker(profile).run([str(ROOT / entry["file"])])
            assert not {"CORDA-DEDUP-002", "CORDA-REDELIVER-001"} & set(unsettled.counts)
            assert {"CORDA-DEDUP-002", "CORDA-REDELIVER-001"} <= set(unsettled.not_checked)


def test_fixture_files_are_what_the_builder_writes():
    spec = importlib.util.spec_from_file_location("mk_corda", REPO / "fixtures" / "corda" / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    files = mk.write_all()
    for rel, text in files.items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, f"{rel} is stale: run python fixtures/corda/make_rule_fixtures.py"
    assert len(files) == len(MANIFEST) + 1


def test_rules_records_cannot_show_are_listed_as_not_checked():
    report = run(next(e for e in MANIFEST if e["file"] == "spec/clean-redelivered.jsonl"))
    assert set(report.not_checked) == set(NOT_IN_RECORDS)
    assert report.verdict == "pass"


def test_jobs_find_the_same_as_one_process():
    for entry in [e for e in MANIFEST if e["profile"] == "corda-ent-fastpath"]:
        one, three = run(entry), run(entry, jobs=3)
        assert pairs(three) == pairs(one) and three.counts == one.counts, entry["file"]
        assert (three.records, three.subjects, three.unreadable) == (one.records, one.subjects, one.unreadable)


def test_jobs_show_the_examples_one_process_shows(tmp_path):
    """With --max-examples, a share keeps its first findings per rule: the merge takes them in the
    order one process finds them (here R-4's second row comes before R-1's), so every split of the
    log shows the examples one process shows, not those whose evidence comes first."""
    rows = [("R-1", 1), ("R-4", 2), ("R-4", 3), ("R-1", 4)]
    log = _write(tmp_path, "rows.jsonl", [{"node": "bob", "id": mid, "sender": "s", "seq": int(mid[2:]), "tx": tx,
                                           "t": 1767225600000 + tx} for mid, tx in rows])
    for jobs in (1, 2, 3):
        report = CordaLogChecker("spec", max_examples=1, jobs=jobs).run([str(log)])
        assert pairs(report) == {("CORDA-DEDUP-001", "R-4")} and report.counts == {"CORDA-DEDUP-001": 2}, jobs


# -- bad input -----------------------------------------------------------------------------------
def _write(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return p


GOOD = {"t": 1, "node": "bob", "event": "received", "id": "N-a-1-0", "sender": "u1", "seq": 1, "session": "s1", "delivery": "d1"}


def test_bad_records_name_file_line_and_field_and_the_rest_is_checked(tmp_path, capsys):
    log = _write(tmp_path, "events.jsonl", [
        GOOD,
        "{not json",
        GOOD | {"event": "ackd"},
        GOOD | {"seq": "7"},
        {k: v for k, v in GOOD.items() if k != "delivery"},
        {"t": 2, "node": "bob", "event": "dedup", "id": "N-a-1-0", "verdict": "maybe"},
        {"t": 3, "node": "bob", "event": "dedup", "id": "N-a-1-0", "verdict": "new"},
        {"t": 4, "node": "bob", "event": "acked", "id": "N-a-1-0", "delivery": "d1"},
        {"node": "bob", "id": "N-b-1-0", "tx": "x", "sender": None, "seq": None, "t": 5},
        "[1, 2]",
        "",
    ])
    report = CordaLogChecker("spec").run([str(log)])
    got = [(p.line, p.field) for p in report.input_problems]
    assert got == [(2, None), (3, "event"), (4, "seq"), (5, "delivery"), (6, "verdict"), (9, "tx"), (10, None)]
    assert report.unreadable == 7 and report.records == 3
    assert "did you mean 'acked'" in report.input_problems[1].error
    assert "found str '7'" in report.input_problems[2].error
    assert {(v.rule, v.subject) for v in report.violations} == {("CORDA-ACK-001", "N-a-1-0")}  # still checked
    assert main(["check", "--protocol", "corda", str(log)]) == 2
    out = capsys.readouterr().out
    assert "events.jsonl:4 field seq" in out


def test_verdicts_in_either_spelling_are_read_alike_and_the_reference_node_writes_the_documents_spelling(tmp_path):
    from rmkit.reference_impl.corda.records import VERDICTS

    assert VERDICTS == record_format().written
    upper = [json.loads(x) for x in (ROOT / "spec" / "clean-redelivered.jsonl").read_text().splitlines()]
    lower = [json.loads(x) for x in (ROOT / "spec" / "clean-lower-case-verdicts.jsonl").read_text().splitlines()]
    assert {x["verdict"] for x in upper if "verdict" in x} == {"NEW", "DUPLICATE", "IN_FLIGHT"}
    assert [x | ({"verdict": x["verdict"].upper()} if "verdict" in x else {}) for x in lower] == upper
    mixed = _write(tmp_path, "mixed.jsonl", [x | ({"verdict": x["verdict"].lower()} if "verdict" in x and i % 2 else {})
                                               for i, x in enumerate(upper)])
    for path in (ROOT / "spec" / "clean-redelivered.jsonl", mixed):
        report = CordaLogChecker("spec", settled=True).run([str(path)])
        assert report.verdict == "pass" and report.unreadable == 0 and report.metrics["verdicts"]["IN_FLIGHT"] == 1
    bad = _write(tmp_path, "bad.jsonl", [{"t": 2, "node": "bob", "event": "dedup", "id": "N-a-1-0", "verdict": "New"}])
    assert "did you mean 'NEW'" in CordaLogChecker("spec").run([str(bad)]).input_problems[0].error


def test_one_copy_committed_twice_is_dedup_001_not_a_malformed_log(tmp_path, capsys):
    entry = next(e for e in MANIFEST if e["file"] == "spec/CORDA-DEDUP-001-one-copy.jsonl")
    for jobs in (1, 2):
        report = run(entry, jobs=jobs)
        assert report.unreadable == 0 and pairs(report) == {("CORDA-DEDUP-001", "N-f1-2-0")} and report.verdict == "fail"
        assert report.violations[0].severity == "critical"
    assert main(["check", "--protocol", "corda", str(ROOT / entry["file"])]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("broken", [{"seq": "2"}, {"delivery": 7}, {"session": ""}, {"sender": None}])
def test_a_bad_received_line_affects_only_itself(tmp_path, broken):
    """A received line with one bad field is reported and not judged; its dedup, commit, ack and the
    export row are read and judged as they would be without it: no follow-up is unreadable, no
    finding is made up (a row 'never received', a commit with no answered copy)."""
    clean = [json.loads(x) for x in (ROOT / "spec" / "clean-sessions-in-seq.jsonl").read_text().splitlines()]
    at = next(i for i, x in enumerate(clean) if x.get("event") == "received")
    bad = clean[:at] + [clean[at] | broken] + clean[at + 1:]
    for settled in (False, True):
        for jobs in (1, 2):
            report = CordaLogChecker("spec", settled=settled, max_examples=0, jobs=jobs).run([str(_write(tmp_path, "bad.jsonl", bad))])
            assert [(p.line, p.field) for p in report.input_problems] == [(at + 1, next(iter(broken)))]
            assert report.unreadable == 1 and not report.violations, [(v.rule, v.explanation) for v in report.violations]
    # a message whose every line is gone but the row still shows the ack-002 it is
    lone = [x for x in clean if x.get("id") != clean[at]["id"] or "event" not in x]
    report = CordaLogChecker("spec", max_examples=0).run([str(_write(tmp_path, "lone.jsonl", lone))])
    assert ("CORDA-ACK-002", clean[at]["id"]) in pairs(report)


def _delivered(mid, sender, t, tx):
    return [{"t": t, "node": "bob", "event": "received", "id": mid, "sender": sender, "seq": 1, "session": "s1", "delivery": f"d{tx}"},
            {"t": t + 1, "node": "bob", "event": "dedup", "id": mid, "verdict": "new"},
            {"t": t + 2, "node": "bob", "event": "committed", "id": mid, "tx": tx},
            {"t": t + 3, "node": "bob", "event": "acked", "id": mid, "delivery": f"d{tx}"}]


def test_a_flow_id_with_more_digits_than_int_reads_is_ordered_not_a_crash(tmp_path):
    """An N- id's suspends and index order a session's sends; an id may hold more digits than
    int() reads (4,300). They order as numbers (leading zeros aside) in one process and in shares."""
    big, below = "N-f1-1" + "0" * 5000 + "-0", "N-f1-0" + "9" * 5000 + "-0"
    log = _write(tmp_path, "long.jsonl", _delivered(big, "u1", 1767225600000, 101) + _delivered(below, "u2", 1767225600010, 102))
    for jobs in (1, 2):
        report = CordaLogChecker("spec", max_examples=0, jobs=jobs).run([str(log)])
        assert report.unreadable == 0 and pairs(report) == {("CORDA-ORDER-001", below)}, report.counts


def test_an_ack_recorded_before_its_commit_fails_even_in_the_rows_millisecond(tmp_path):
    """The row is inserted before its transaction commits, so a node that acknowledges between the
    insert and the commit (the commit's fsync takes milliseconds) acks at or after the row's time.
    The row excuses an ack only when its own commit left no record (a kill in between); when the
    committed record of the row's transaction comes after the ack, the ack came before the commit."""
    mid = "N-f1-1-0"
    recv = {"t": 10, "node": "bob", "event": "received", "id": mid, "sender": "u1", "seq": 1, "session": "s1", "delivery": "d1"}
    log = _write(tmp_path, "early.jsonl", [
        {"t": 9, "node": "alice", "event": "sent", "id": mid, "sender": "u1", "seq": 1, "session": "s1"},
        recv,
        {"t": 10, "node": "bob", "event": "dedup", "id": mid, "verdict": "new"},
        {"t": 11, "node": "bob", "event": "acked", "id": mid, "delivery": "d1"},
        {"t": 16, "node": "bob", "event": "committed", "id": mid, "tx": 7},
        {"node": "bob", "id": mid, "sender": "u1", "seq": 1, "tx": 7, "t": 11},
    ])
    for jobs in (1, 2):
        report = CordaLogChecker("spec", settled=True, max_examples=0, jobs=jobs).run([str(log)])
        assert pairs(report) == {("CORDA-ACK-001", mid)}, (jobs, report.counts)
        (v,) = report.violations
        assert {e.line for e in v.evidence} >= {4, 5} and "before its commit" in v.explanation
        assert any(e.line == 5 and e.kind == "committed" for e in v.evidence)
    assert main(["check", "--protocol", "corda", "--settled", str(log)]) == 1


@pytest.mark.parametrize("answer, expected", [("new", {("CORDA-ACK-001", "N-f1-1-0")}), ("duplicate", set())])
def test_a_kill_between_commit_and_its_record_excuses_only_the_ack_of_a_copy_already_committed(tmp_path, answer, expected):
    """A node acknowledges a copy in the millisecond its row was inserted, then is killed between its
    commit and the committed record. A copy answered NEW was acknowledged before the commit (its
    committed record would precede its ack): the row's millisecond cannot excuse it. A copy answered
    DUPLICATE was acknowledged after a commit the deduplicator saw: legal."""
    mid = "N-f1-1-0"
    log = _write(tmp_path, "killed.jsonl", [
        {"t": 9, "node": "alice", "event": "sent", "id": mid, "sender": "u1", "seq": 1, "session": "s1"},
        {"t": 10, "node": "bob", "event": "received", "id": mid, "sender": "u1", "seq": 1, "session": "s1", "delivery": "d1"},
        {"t": 10, "node": "bob", "event": "dedup", "id": mid, "verdict": answer},
        {"t": 11, "node": "bob", "event": "acked", "id": mid, "delivery": "d1"},
        {"node": "bob", "id": mid, "sender": "u1", "seq": 1, "tx": 7, "t": 11},
    ])
    for jobs in (1, 2):
        report = CordaLogChecker("spec", settled=True, max_examples=0, jobs=jobs).run([str(log)])
        assert report.unreadable == 0 and pairs(report) == expected, (jobs, report.counts)


def test_exit_codes_pass_violations_and_nothing_read(tmp_path):
    clean = ROOT / "spec" / "clean-redelivered.jsonl"
    assert main(["check", "--protocol", "corda", "--settled", str(clean)]) == 0
    assert main(["check", "--protocol", "corda", str(ROOT / "spec" / "CORDA-ACK-001.jsonl")]) == 1
    nonstrict = str(ROOT / "corda-os" / "CORDA-ORDER-001.jsonl")
    assert main(["check", "--protocol", "corda", "--profile", "corda-os", nonstrict]) == 0
    assert main(["check", "--protocol", "corda", "--profile", "corda-os", "--strict", nonstrict]) == 1
    empty = _write(tmp_path, "empty.jsonl", ["", "  "])
    assert main(["check", "--protocol", "corda", str(empty)]) == 2
    assert main(["check", "--protocol", "corda", "--profile", "nope", str(clean)]) == 2


def test_json_report_cites_rule_evidence_and_advice(tmp_path):
    out = tmp_path / "r.json"
    assert main(["check", "--protocol", "corda", "--format", "json", "--out", str(out), str(ROOT / "spec" / "CORDA-DEDUP-001.jsonl")]) == 1
    rep = json.loads(out.read_text())
    (v,) = rep["violations"]
    assert v["rule"] == "CORDA-DEDUP-001" and v["message_id"] == "N-f1-2-0" and v["severity"] == "critical"
    assert {e["line"] for e in v["evidence"]} >= {8} and "again" in v["explanation"]


def test_explain_shows_a_fixture_example(capsys):
    assert main(["explain", "CORDA-ACK-001"]) == 0
    out = capsys.readouterr().out
    assert "fixture corda/rules/spec/CORDA-ACK-001.jsonl" in out and '"event":"acked"' in out


def test_records_spec_names_what_the_node_writes():
    fmt = record_format()
    assert set(fmt.required) == {"received", "dedup", "committed", "acked", "discarded", "sent"}
    assert fmt.written == ("NEW", "DUPLICATE", "IN_FLIGHT")  # as the documents spell the answers
    assert fmt.verdicts == {"NEW": "NEW", "DUPLICATE": "DUPLICATE", "IN_FLIGHT": "IN_FLIGHT",
                            "new": "NEW", "duplicate": "DUPLICATE", "in_flight": "IN_FLIGHT"}  # both spellings read
    assert fmt.row_required == ("node", "id", "sender", "seq", "tx", "t") and fmt.key == "id"
    assert fmt.required["dedup"] == ("verdict",) and fmt.required["committed"] == ("tx",)


def test_records_spec_source_is_the_reference_text():
    import re

    from rmkit.specload import load_protocol_spec

    ref = (REPO.parent / "shared" / "reference" / "corda-as-built.md")
    if not ref.is_file():
        pytest.skip("the reference facts are not beside this checkout")
    text = " ".join(ref.read_text(encoding="utf-8").replace("`", "").split()).lower()
    fact = load_protocol_spec("corda")["records"]["source"]["fact"]
    section, words = re.match(r"section ([^:]+): (.*)", fact).groups()
    assert f"## {section}".lower() in text and " ".join(words.split()).lower() in text


# -- Spark (the session is conftest.py's, shared by every protocol's audit tests) ---
def _renamed(value: str, field: str, k: int) -> str:
    """A fixture's name made its own within a combined log: ids keep their format."""
    if field != "id":
        return f"{value}@{k}"
    letter, rest = value[:2], value[2:]
    if letter == "N-":
        return f"N-k{k}{rest}"
    if letter == "R-":
        return f"R-{k}{rest.lstrip('-')}"
    if letter == "E-":
        error, session = rest.split("-", 1)
        return f"E-{error}-k{k}{session}"
    return f"{letter}k{k}-{rest}"


def combined_fixtures(tmp_path, profile: str):
    """Every fixture of ``profile`` in one log, each with its own nodes, ids, senders, sessions and
    deliveries: (path, the union of the planted (rule, id) pairs)."""
    lines, planted = [], set()
    for k, entry in enumerate(e for e in MANIFEST if e["profile"] == profile):
        for raw in (ROOT / entry["file"]).read_text(encoding="utf-8").splitlines():
            rec = json.loads(raw)
            for f in ("id", "node", "sender", "session", "delivery"):
                if isinstance(rec.get(f), str):
                    rec[f] = _renamed(rec[f], f, k)
            lines.append(json.dumps(rec))
        planted |= {(rule, _renamed(mid, "id", k)) for rule, mid, _ in entry["expect"]}
    path = tmp_path / f"{profile}-all.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, planted


def test_fixtures_combined_in_one_log_find_the_union_of_their_plants(tmp_path):
    for profile in profiles():
        path, planted = combined_fixtures(tmp_path, profile)
        report = CordaLogChecker(profile, settled=True, max_examples=0).run([str(path)])
        assert pairs(report) == planted, (profile, pairs(report) ^ planted)


def test_audit_finds_what_check_finds_on_the_fixtures(spark, tmp_path):
    """The fast-path profile's fixtures (every rule that spans ids is active there) in one log, and
    corda-os-2021's, each a log of its own in one Spark job (one file each keeps the job cheap)."""
    from rmkit.spark_checks.job import audit

    logs = [combined_fixtures(tmp_path, p) + (p,) for p in ("corda-ent-fastpath", "corda-os-2021")]
    checkers = [CordaLogChecker(p, settled=True, max_examples=0) for _, _, p in logs]
    res = audit(spark, checkers, [str(path) for path, _, _ in logs], per_file=True)
    for i, (path, planted, profile) in enumerate(logs):
        want, got = checkers[i].run([str(path)]), res.reports[i]
        assert pairs(got) == pairs(want) == planted, profile
        assert (got.counts, got.records, got.subjects, got.unreadable, got.verdict, got.not_checked) == \
               (want.counts, want.records, want.subjects, want.unreadable, want.verdict, want.not_checked), profile
    assert len(logs[0][1]) >= 15


def test_audit_command_runs_the_corda_checker(spark, capsys):
    log = str(ROOT / "spec" / "CORDA-DEDUP-002.jsonl")
    assert main(["audit", "--protocol", "corda", "--settled", "--format", "json", log]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert {(v["rule"], v["message_id"]) for v in rep["violations"]} == {
        ("CORDA-DEDUP-002", "N-f1-2-0"), ("CORDA-DEDUP-002", "N-f2-2-0"), ("CORDA-ACK-001", "N-f2-2-0")}


def test_a_truncated_gzip_is_one_unreadable_line_after_those_it_held(tmp_path):
    import gzip

    text = (ROOT / "spec" / "CORDA-ACK-001.jsonl").read_bytes() * 200
    whole = gzip.compress(text)
    log = tmp_path / "events.jsonl.gz"
    log.write_bytes(whole[: len(whole) * 2 // 3])
    for jobs in (1, 2):
        report = CordaLogChecker("spec", jobs=jobs).run([str(log)])
        assert report.unreadable == 1 and report.records > 100
        assert "truncated" in report.input_problems[0].error
        assert "CORDA-ACK-001" in report.counts


@pytest.mark.parametrize("old, new, where", [
    ("    written: [NEW, DUPLICATE, IN_FLIGHT]\n", "    written: [NEW, DUPLICATE, INFLIGHT]\n", "events.verdicts.written.2"),  # no such answer
    ("in_flight: IN_FLIGHT}\n", "in_flight: INFLIGHT}\n", "events.verdicts.also_read.in_flight"),
    ("      required: [verdict]\n", "      required: [verdikt]\n", "events.kinds.dedup.required.0"),
])
def test_a_broken_records_spec_names_file_line_and_field(tmp_path, monkeypatch, old, new, where):
    from spec_support import broken_spec_copy

    from rmkit.errors import SpecError
    from rmkit.specload import load_protocol_spec, load_schema

    broken_spec_copy(tmp_path, monkeypatch, "corda", "records.yaml", old, new, record_format)
    try:
        with pytest.raises(SpecError) as err:
            record_format()
        assert "spec/corda/records.yaml:" in str(err.value) and where in str(err.value)
    finally:
        monkeypatch.undo()
        for f in (load_protocol_spec, load_schema, record_format):
            f.cache_clear()


def test_the_rules_the_records_cannot_show_are_the_specs():
    """The checker's list of rules a node's records cannot show is the spec's (rules.yaml's
    ``not_loggable``, which ``rmkit explain`` reads), word for word."""
    spec = {r.id: r.not_loggable for r in corda_spec("spec").rules if r.not_loggable}
    assert NOT_IN_RECORDS == spec
