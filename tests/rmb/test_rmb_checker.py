"""`rmkit check --protocol rmb`: every planted violation of the per-rule fixtures is found at its
planted line, in each profile, and nothing else; the clean logs of the real reference daemons
(real redis-servers, HTTP, recorders) give no finding; bad input is named and counted; the
coverage of rules no log can show is stated, never passed."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import pytest

from rmkit.conformance.rmb.checker import RmbLogChecker, RmbShards
from rmkit.protocols.rmb.model import rmb_spec

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "fixtures" / "rmb" / "rules"
LOGS = REPO / "fixtures" / "rmb" / "logs"
MANIFEST = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))
FIXTURES = MANIFEST["fixtures"]
DIRECTORY = str(ROOT / MANIFEST["directory"])
SPEC = rmb_spec()
LOGCHECK = SPEC.raw["logcheck"]


def check(paths, profile, directory=DIRECTORY, jobs=1, **kw):
    return RmbLogChecker(RmbShards(profile, directory, max_examples=0, **kw), jobs=jobs).run([str(p) for p in paths])


def clean_logs(profile: str) -> list[Path]:
    return sorted((LOGS / profile).glob("*.jsonl"))


@pytest.mark.parametrize("entry", FIXTURES, ids=[f["file"] for f in FIXTURES])
def test_fixture_breaks_exactly_the_rules_it_names_at_the_planted_line(entry):
    report = check([ROOT / entry["file"]], entry["profile"], DIRECTORY if entry["directory"] else None)
    assert sorted(report.counts) == entry["expect"], [(v.rule, v.explanation) for v in report.violations]
    assert report.unreadable == 0 and report.records > 0
    if entry["expect"]:
        lines = {e.line for v in report.violations if v.rule in entry["expect"] for e in v.evidence}
        assert set(entry["lines"]) <= lines, (entry["lines"], sorted(lines))
        modes = {SPEC.mode(r, entry["profile"]) for r in entry["expect"]}
        assert report.verdict == ("fail" if "strict" in modes else "non-strict")
    else:
        assert report.verdict == "pass", report.reasons


@pytest.mark.parametrize("profile", SPEC.profiles)
def test_every_loggable_active_rule_has_a_fixture_of_its_own(profile):
    named = {f["file"].split("/")[1][:-6] for f in FIXTURES if f["profile"] == profile}
    skipped = MANIFEST["unshowable"].get(profile, {})
    missing = [r.id for r in SPEC.rules if r.mode(profile) != "off" and r.id in LOGCHECK["checked"]
               and r.id not in named and r.id not in skipped]
    assert not missing, f"loggable rules with no fixture in profile {profile}: {missing}"


def test_off_rules_are_silent_on_every_fixture():
    for profile in SPEC.profiles:
        off = {r.id for r in SPEC.rules if r.mode(profile) == "off"}
        for entry in [e for e in FIXTURES if e["profile"] != profile]:  # in its own profile the first test counts exactly
            report = check([ROOT / entry["file"]], profile)
            assert not off & set(report.counts), (profile, entry["file"])


def test_coverage_is_honest_about_rules_no_log_shows_and_rules_that_need_the_directory():
    report = check([ROOT / "spec" / "RMB-SIG-002.jsonl"], "spec", directory=None)
    assert report.verdict == "pass" and not report.counts  # the forged signature is not judged without keys...
    for rid in LOGCHECK["needs_directory"]:
        assert "--directory" in report.not_checked[rid]  # ...and the report says so
    unlogged = {rid for rid in LOGCHECK["not_loggable"] if SPEC.mode(rid, "spec") != "off"}
    assert unlogged and all(report.not_checked[rid].startswith("no log shows it") for rid in unlogged)
    with_keys = check([ROOT / "spec" / "RMB-SIG-002.jsonl"], "spec")
    assert set(with_keys.not_checked) == unlogged and with_keys.counts == {"RMB-SIG-002": 1}


@pytest.mark.parametrize("profile", SPEC.profiles)
def test_logs_of_the_real_reference_daemons_pass(profile):
    logs = clean_logs(profile)
    assert any(p.name.startswith("recorder-") for p in logs) and any(p.name.startswith("twin-") for p in logs)
    directory = str(LOGS / profile / "directory.json")
    whole = check(logs, profile, directory)
    assert whole.verdict == "pass", [(v.rule, v.explanation, [(e.file, e.line) for e in v.evidence]) for v in whole.violations]
    assert whole.records > 50 and whole.subjects >= 5
    events = set(whole.metrics["records_per_event"])
    assert {"http-post", "http-answer", "reply-to-ret", "error-to-ret", "recorded-request", "recorded-response"} <= events
    for part in ([p for p in logs if p.name.startswith("twin-")], [p for p in logs if p.name.startswith("recorder-")]):
        assert check(part, profile, directory).verdict == "pass", part


def test_a_planted_violation_is_found_among_the_real_daemons_records(tmp_path):
    """A reply pushed to another client's queue, planted into twin 1's real log: REPLY-005 only."""
    logs = clean_logs("spec")
    twin1 = next(p for p in logs if p.name == "twin-1.jsonl")
    lines = twin1.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line)["event"] == "reply-to-ret")
    rec = json.loads(lines[at])
    rec["queue"] = "client.someone-else"
    lines[at] = json.dumps(rec)
    planted = tmp_path / "twin-1.jsonl"
    planted.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = check([planted, *[p for p in logs if p != twin1]], "spec", str(LOGS / "spec" / "directory.json"))
    assert report.counts == {"RMB-REPLY-005": 1}
    assert any(e.line == at + 1 and e.file == str(planted) for e in report.violations[0].evidence)


def test_bad_lines_are_named_counted_and_the_rest_still_checked(tmp_path):
    good = (ROOT / "spec" / "RMB-REPLY-005.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(good[0])
    broken = [good[0], "{not json", json.dumps({k: v for k, v in first.items() if k != "who"}),
              json.dumps({**first, "status": "202"}), json.dumps({**first, "event": "teleported"}), *good[1:]]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(broken) + "\n", encoding="utf-8")
    report = check([path], "spec")
    assert report.unreadable == 4 and report.verdict == "fail"
    assert [(p.line, p.field) for p in report.input_problems] == [(2, None), (3, "who"), (4, "status"), (5, "event")]
    assert all(p.file == str(path) for p in report.input_problems)
    assert report.counts == {"RMB-REPLY-005": 1}  # the readable lines were still checked


def test_a_writer_named_as_a_twin_beyond_any_twin_id_is_a_bad_line_not_a_crash(tmp_path):
    """``who`` names a twin by its 32-bit id: a longer number (one Python would refuse to read
    beyond 4,300 digits) or other digits than 0-9 make the line unreadable, named by its field."""
    good = (ROOT / "spec" / "RMB-REPLY-005.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(good[0])
    lines = [good[0], json.dumps({**first, "who": "twin-" + "9" * 5000}), json.dumps({**first, "who": "twin-\u00b2"}),
             json.dumps({**first, "who": "twin-4294967295"}), *good[1:]]
    path = tmp_path / "who.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = check([path], "spec")
    assert [(p.line, p.field) for p in report.input_problems] == [(2, "who"), (3, "who")]
    assert report.unreadable == 2 and report.records == len(lines) - 2


def test_a_peer_named_as_a_twin_beyond_any_twin_id_is_a_bad_line_not_a_crash(tmp_path):
    """A POST's ``peer`` names the twin it went to as ``N@address``: other digits than 0-9 (which
    str.isdigit takes and int() refuses) or a number beyond any twin id make the line unreadable,
    named by its field, as ``who``; the other lines are still checked."""
    lines = (LOGS / "spec" / "twin-1.jsonl").read_text(encoding="utf-8").splitlines()
    posts = [i for i, line in enumerate(lines) if json.loads(line)["event"] == "http-post"][:2]
    for i, head in zip(posts, ("\u00b2", "9" * 5000)):
        rec = json.loads(lines[i])
        rec["peer"] = head + "@" + rec["peer"].split("@", 1)[1]
        lines[i] = json.dumps(rec)
    path = tmp_path / "peer.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = check([path], "spec", str(LOGS / "spec" / "directory.json"))
    assert [(p.line, p.field) for p in report.input_problems] == [(posts[0] + 1, "peer"), (posts[1] + 1, "peer")]
    assert report.unreadable == 2 and report.records == len(lines) - 2


def test_a_number_in_a_note_beyond_a_ttl_or_twin_id_is_a_bad_line_not_a_crash(tmp_path):
    """The judgments read numbers from notes: a backlog TTL (``ttl N s``; a float overflows on
    400 digits, int() refuses 5,000; other digits than 0-9 are no TTL either) and a forward job's
    destination twin. A number no TTL or twin id is makes the line unreadable, named by its field;
    the other lines are still checked."""
    lines = (LOGS / "spec" / "twin-1.jsonl").read_text(encoding="utf-8").splitlines()
    backlog = next(json.loads(line) for line in lines if json.loads(line)["event"] == "backlog-set")
    job = next(json.loads(line) for line in lines if json.loads(line)["event"] == "forward-job")
    bad = [{**backlog, "note": "ttl " + "9" * 400 + " s"}, {**backlog, "note": "ttl " + "9" * 5000 + " s"},
           {**backlog, "note": "ttl \u0663 s"}, {**job, "note": job["uid"] + ":" + "9" * 5000}]
    path = tmp_path / "note.jsonl"
    path.write_text("\n".join([json.dumps(b) for b in bad] + lines) + "\n", encoding="utf-8")
    report = check([path], "spec", str(LOGS / "spec" / "directory.json"))
    assert [(p.line, p.field) for p in report.input_problems] == [(n, "note") for n in (1, 2, 3, 4)]
    assert report.unreadable == 4 and report.records == len(lines)


def test_a_proxy_payload_with_a_huge_integer_or_deep_nesting_is_judged_not_a_crash(tmp_path):
    """An envelope's payload is JSON read from the log's base64: an integer beyond 64 bits or
    nesting beyond any message is judged as a payload (here: handed over though invalid), never
    an internal error; the run goes on."""
    lines = (ROOT / "spec" / "RMB-PROXY-004.jsonl").read_text(encoding="utf-8").splitlines()
    env = json.loads(lines[0])
    payload = json.loads(base64.b64decode(env["message"]["dat"]))
    for dat in (json.dumps({**payload, "now": 10**30}).encode(), b"[" * 100000):
        env["message"]["dat"] = base64.b64encode(dat).decode()
        path = tmp_path / "proxy.jsonl"
        path.write_text("\n".join([json.dumps(env), *lines[1:]]) + "\n", encoding="utf-8")
        report = check([path], "spec")
        assert report.unreadable == 0 and report.counts == {"RMB-PROXY-002": 1, "RMB-PROXY-004": 1}, report.counts


def test_a_line_time_no_log_has_is_a_bad_line_and_does_not_move_the_log_end(tmp_path):
    """A line's time is the log's clock: one far in the future (or before 2000) would end the log
    past every follow-up's horizon and turn "not judged" into violations. It is an input problem
    naming ``time``, in one process and in shares alike, and leaves the log's time span alone."""
    lines = (ROOT / "spec" / "RMB-FWD-001.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    first = json.loads(lines[0])
    path = tmp_path / "time.jsonl"
    path.write_text("\n".join([*lines, json.dumps({**first, "time": 1e300}), json.dumps({**first, "time": 1000})]) + "\n",
                    encoding="utf-8")
    for jobs in (1, 2):
        report = check([path], "spec", jobs=jobs)
        assert [(p.line, p.field) for p in report.input_problems] == [(4, "time"), (5, "time")]
        assert report.counts == {} and "RMB-FWD-001" in report.not_judged and report.unreadable == 2
        assert report.metrics["log_time_span_s"] < 1


def test_a_malformed_destination_list_is_no_crash(tmp_path):
    """A stored request whose dst holds something else than twin ids (a list, an object) is no
    destination to judge fan-out by; the run goes on (the messages on the wire are judged by the
    message rules, RMB-MSG-006)."""
    for dst in ([[2]], [{"a": 1}], {"a": 1}, [2, "x"]):
        out = tmp_path / str(len(list(tmp_path.iterdir())))
        out.mkdir()
        for f in clean_logs("rmb-rs-v1"):
            lines = f.read_text(encoding="utf-8").splitlines()
            for i, line in enumerate(lines):
                rec = json.loads(line)
                if rec["event"] in ("backlog-set", "http-post") and isinstance(rec.get("message"), dict):
                    rec["message"]["dst"] = dst
                    lines[i] = json.dumps(rec)
            (out / f.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        report = check(sorted(out.glob("*.jsonl")), "rmb-rs-v1")
        assert report.unreadable == 0 and report.counts.get("RMB-MSG-006"), (dst, report.counts)


def _builder():
    spec = importlib.util.spec_from_file_location("mk_rmb", REPO / "fixtures" / "rmb" / "make_rule_fixtures.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    return mk


@pytest.mark.parametrize("profile", SPEC.profiles)
def test_a_legal_duplicated_delivery_is_clean_and_a_reply_posted_again_after_acceptance_is_not(profile):
    """Two accepted copies of one request give two replies, each posted once: legal (no
    deduplication at the receiver). The same reply posted after it was accepted is RMB-REPLY-002."""
    dup = [json.loads(x) for x in (ROOT / profile / "clean-duplicated-delivery.jsonl").read_text().splitlines()]
    assert len([x for x in dup if x["event"] == "to-handler"]) == 2  # the ground truth's shape: two copies accepted...
    posts = [x for x in dup if x["event"] == "http-post" and x["endpoint"] == SPEC.behaviour(profile)["reply_endpoint"]]
    assert len(posts) == 2 and posts[0]["message"]["dat"] != posts[1]["message"]["dat"]  # ...two different replies
    assert check([ROOT / profile / "clean-duplicated-delivery.jsonl"], profile).verdict == "pass"
    again = check([ROOT / profile / "RMB-REPLY-002-after-accepted.jsonl"], profile)
    assert again.counts == {"RMB-REPLY-002": 1} and "after HTTP" in again.violations[0].explanation


@pytest.mark.parametrize("profile", SPEC.profiles)
def test_alike_replies_may_be_posted_as_often_as_they_were_pushed(profile, tmp_path):
    """A handler answering both copies alike pushes two equal replies: two POSTs are legal, a third
    after both were accepted is a retry of an accepted reply."""
    mk = _builder()
    log = mk.Log(profile)
    req = log.request("a1a1a1a1-0000-4000-8000-000000000001", t=1.0, tries=3)
    log.sent(req, 1.0)
    for k, t in ((1, 1.03), (2, 1.5)):
        s = log.copy(req, 2, t)
        log.accepted(s, t + 0.005)
        log.post(s, t + 0.01, None if k == 1 else log.b["accepted"]["status"], attempt=k)
    first = len(log.lines)
    log.answer(req, 2, 1.8)
    log.lines += [dict(x, time=x["time"] + 0.3) for x in log.lines[first:]]  # the same reply, pushed again, 0.3 s later
    path = tmp_path / "alike.jsonl"
    path.write_text(log.text())
    assert check([path], profile).verdict == "pass"
    log.lines.append(dict(log.lines[-1], time=log.lines[-1]["time"] + 0.3, note="attempt 2"))
    path.write_text(log.text())
    assert check([path], profile).counts == {"RMB-REPLY-002": 1}


def rmkit(capsys, *args):
    """``rmkit ARGS`` in this process (a subprocess per call costs seconds of imports)."""
    from rmkit.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_codes_and_report_formats(tmp_path, capsys):
    clean = str(ROOT / "spec" / "clean-fan-out.jsonl")
    bad = str(ROOT / "spec" / "RMB-RETRY-001.jsonl")
    code, out, err = rmkit(capsys, "check", "--protocol", "rmb", "--directory", DIRECTORY, clean)
    assert code == 0, out + err
    code, out, _ = rmkit(capsys, "check", "--protocol", "rmb", "--directory", DIRECTORY, "--format", "json", bad)
    rep = json.loads(out)
    assert code == 1 and rep["counts"] == {"RMB-RETRY-001": 1} and rep["violations"][0]["evidence"][0]["file"] == bad
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert rmkit(capsys, "check", "--protocol", "rmb", str(empty))[0] == 2  # a run that checked nothing fails
    junk = tmp_path / "junk.jsonl"
    junk.write_text("[1, 2]\n")
    code, out, _ = rmkit(capsys, "check", "--protocol", "rmb", "--format", "json", str(junk))
    assert code == 2 and json.loads(out)["input_problems"][0]["line"] == 1
    code, _, err = rmkit(capsys, "check", "--protocol", "rmb", "--directory", str(tmp_path / "nope.json"), clean)
    assert code == 2 and "--directory" in err
    code, out, _ = rmkit(capsys, "check", "--protocol", "rmb", "--format", "junit", bad)
    assert code == 1 and "RMB-RETRY-001" in out


def test_jobs_give_the_same_report_as_one_process():
    paths = clean_logs("spec") + [ROOT / "spec" / f for f in ("RMB-REPLY-006.jsonl", "RMB-FANOUT-001.jsonl", "RMB-LOCAL-002.jsonl")]
    one, two = check(paths, "spec", str(LOGS / "spec" / "directory.json")), check(paths, "spec", str(LOGS / "spec" / "directory.json"), jobs=3)
    key = lambda r: (sorted((v.rule, v.subject, tuple((e.file, e.line) for e in v.evidence)) for v in r.violations),  # noqa: E731
                     r.counts, r.records, r.subjects, r.unreadable, r.verdict, r.not_judged)
    assert key(one) == key(two) and one.counts


def test_explain_shows_the_fixture_violation_and_says_when_no_log_can(capsys):
    code, out, _ = rmkit(capsys, "explain", "RMB-REPLY-004")
    assert code == 0 and "example (spec profile, fixture rmb/rules/spec/RMB-REPLY-004.jsonl)" in out
    assert "-> RMB-REPLY-004" in out
    code, out, _ = rmkit(capsys, "explain", "RMB-REMOTE-008")
    assert code == 0 and "not checked from logs" in out


def test_fixture_files_are_what_the_builder_writes():
    mk = _builder()
    for rel, text in mk.write_all().items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, f"{rel} is stale: run python fixtures/rmb/make_rule_fixtures.py"


@pytest.mark.slow
@pytest.mark.parametrize("profile", SPEC.profiles)
def test_fresh_logs_of_the_reference_daemons_pass(profile, tmp_path):
    """Three daemons on their own redis-servers, recorders between them, the clean-log traffic."""
    spec = importlib.util.spec_from_file_location("mk_clean", REPO / "fixtures" / "rmb" / "make_clean_logs.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    mk.run(profile, tmp_path / profile)
    report = check(sorted((tmp_path / profile).glob("*.jsonl")), profile, str(tmp_path / profile / "directory.json"))
    assert report.verdict == "pass", [(v.rule, v.explanation) for v in report.violations]


@pytest.mark.parametrize("profile", sorted(SPEC.profiles))
def test_the_replys_ret_and_tag_fields_are_judged_only_where_the_profile_restores_them(profile, tmp_path):
    """Document 004 names the reply's queue only and has no tag: a reply routed to the right queue
    with its own ret and tag passes in spec and rmb-go; rmb-rs-v1 restores both (its facts), so
    there a reply whose tag or ret field differs from the request's breaks RMB-REPLY-005."""
    lines = [json.loads(x) for x in (ROOT / profile / "clean-request-reply.jsonl").read_text(encoding="utf-8").splitlines()]
    found = {}
    for variant in ("tag", "ret"):
        out = []
        for rec in lines:
            rec = json.loads(json.dumps(rec))
            if isinstance(rec["message"], dict):
                if rec["event"] == "reply-to-ret":
                    rec["message"].update({"tag": "reply-tag"} if variant == "tag" else {"ret": "msgbus.system.reply"})
                elif variant == "tag":
                    rec["message"]["tag"] = "request-tag"
            out.append(rec)
        path = tmp_path / f"{variant}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
        found[variant] = check([path], profile).counts
    restores = SPEC.behaviour(profile)["reply_ret_restored"]
    expected = {"RMB-REPLY-005": 1} if restores else {}
    assert found == {"tag": expected, "ret": expected}
    assert restores == (profile == "rmb-rs-v1")


@pytest.mark.parametrize("profile", sorted(SPEC.profiles))
def test_a_forward_jobs_note_holds_the_whole_job_text(profile, tmp_path):
    """The note of a forward-job line is the job as pushed ({uid}:{dst} in spec), nothing less and
    nothing more (spec/schema/rmb-log.schema.json): the destination alone, or the job with words
    after it, is a job not of the profile's form (RMB-FANOUT-001)."""
    lines = [json.loads(x) for x in (ROOT / profile / "clean-request-reply.jsonl").read_text(encoding="utf-8").splitlines()]
    at = next(i for i, r in enumerate(lines) if r["event"] == "forward-job")
    job = lines[at]["note"]
    assert job == SPEC.behaviour(profile)["forward_job"].format(uid=lines[at]["uid"] or lines[at]["message"]["uid"], dst=2)
    for note, expected in ((job, set()), ("2", {"RMB-FANOUT-001"}), (job + " queued", {"RMB-FANOUT-001"})):
        lines[at]["note"] = note
        path = tmp_path / "job.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
        assert set(check([path], profile).counts) == expected, note


def _sig007_lines() -> list[dict]:
    return [json.loads(x) for x in (ROOT / "spec" / "RMB-SIG-007.jsonl").read_text(encoding="utf-8").splitlines()]


def test_one_signature_on_two_messages_is_reported_across_shares_and_never_fails(tmp_path):
    """RMB-SIG-007 (info): the two messages are in different groups (their uids differ), so the
    finding is made when the shares merge: one process and --jobs 2 report it alike, and the
    verdict is at most non-strict."""
    path = ROOT / "spec" / "RMB-SIG-007.jsonl"
    one, two = check([path], "spec"), check([path], "spec", jobs=2)
    assert one.counts == two.counts == {"RMB-SIG-007": 1}
    assert one.verdict == two.verdict == "non-strict"
    assert [e.line for e in one.violations[0].evidence] == [e.line for e in two.violations[0].evidence] == [1, 3]


def test_dst_2_3_and_dst_23_sign_alike_and_uncovered_fields_do_not_count(tmp_path):
    """The issue's own example: dst [2, 3] and dst [23] have one challenge, so one signature; a
    copy that differs only in fields the signature does not cover (try, exp) is the same message."""
    from rmkit.protocols.rmb.signing import keypair
    from rmkit.reference_impl.rmb.cluster import demo_seed

    lines = _sig007_lines()
    first = {**lines[0]["message"], "dst": [2, 3]}
    first = keypair(demo_seed(1), "ed25519").sign({k: v for k, v in first.items() if k != "sig"})
    second = {**first, "dst": [23]}
    resent = {**first, "try": first["try"] + 1, "exp": first["exp"] - 1}
    for name, other, expected in (("collision", second, True), ("resent", resent, False)):
        out = [dict(lines[0], message=first), dict(lines[1], message=first), dict(lines[2], message=other),
               dict(lines[3], message=other)]
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
        assert ("RMB-SIG-007" in check([path], "spec").counts) is expected, name


def test_explain_shows_the_signature_reuse_example(capsys):
    code, out, _ = rmkit(capsys, "explain", "RMB-SIG-007")
    assert code == 0 and "severity:  info" in out and "fixture rmb/rules/spec/RMB-SIG-007.jsonl" in out
    assert "-> RMB-SIG-007: one signature on two messages" in out


@pytest.mark.parametrize("chunk", [1, 3, 1 << 16])
def test_a_shares_signature_index_written_to_a_file_reads_back_alike(tmp_path, monkeypatch, chunk):
    """A --jobs share hands its signature index to the merge as a file (sigreuse.SignatureIndex.spill):
    the merge reads the same columns, and finds the same reuse, as from the index itself, however
    the index is cut into chunks."""
    from rmkit.conformance.rmb import sigreuse
    from rmkit.protocols.rmb.model import rmb_spec

    lines = _sig007_lines()
    pieces = rmb_spec().raw["signature"]["challenge"]["pieces"]
    whole = sigreuse.SignatureIndex(pieces)
    for ref, rec in enumerate(lines, 1):
        whole.add(ref << 3, rec["event"], rec["message"])
    monkeypatch.setattr(sigreuse, "CHUNK", chunk)
    index = sigreuse.SignatureIndex(pieces)
    for ref, rec in enumerate(lines, 1):
        index.add(ref << 3, rec["event"], rec["message"])
    spilled = index.spill(str(tmp_path))
    assert len(spilled) == len(index) == len(whole) > 0
    expected = [c.tolist() for c in whole.columns()]
    assert [c.tolist() for c in spilled.columns()] == [c.tolist() for c in index.columns()] == expected
    assert sigreuse.reused([spilled]) == sigreuse.reused([index]) == sigreuse.reused([whole]) != []
    assert sigreuse.reused([spilled, sigreuse.SignatureIndex(pieces)]) == sigreuse.reused([whole])


@pytest.mark.parametrize("chunk", [1, 3, 1 << 16])
def test_a_signature_index_given_a_directory_holds_one_chunk_and_reads_back_alike(tmp_path, monkeypatch, chunk):
    """An index given a directory (as rmkit check gives every share one) writes each chunk there
    once it is full: it holds at most one chunk in memory, and reads back, spilled or not, the
    columns and the reuse of an index kept in memory."""
    from rmkit.conformance.rmb import sigreuse
    from rmkit.protocols.rmb.model import rmb_spec

    lines = _sig007_lines() * 3
    pieces = rmb_spec().raw["signature"]["challenge"]["pieces"]
    whole = sigreuse.SignatureIndex(pieces)
    monkeypatch.setattr(sigreuse, "CHUNK", chunk)
    index = sigreuse.SignatureIndex(pieces, str(tmp_path))
    for ref, rec in enumerate(lines, 1):
        whole.add(ref << 3, rec["event"], rec["message"])
        index.add(ref << 3, rec["event"], rec["message"])
        assert not index.done and len(index.ref) < chunk
    assert len(index) == len(whole) > 0 and (index.files is not None) == (len(whole) >= chunk)
    expected = [c.tolist() for c in whole.columns()]
    assert [c.tolist() for c in index.columns()] == expected
    spilled = index.spill(str(tmp_path))
    assert len(spilled) == len(whole) and [c.tolist() for c in spilled.columns()] == expected
    assert sigreuse.reused([spilled]) == sigreuse.reused([whole]) != []


def test_a_jobs_run_leaves_no_file_behind(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = ROOT / "spec" / "RMB-SIG-007.jsonl"
    assert check([path], "spec", jobs=2).counts == {"RMB-SIG-007": 1}
    assert list(tmp_path.iterdir()) == []
