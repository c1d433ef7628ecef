"""Every normative sentence of each protocol's design documents is accounted for: quoted exactly,
given its force, mapped to checks that exist (rules, TLA+ operators, driven requirements and
scenarios, spec entries) or to a stated reason it cannot be checked, and never left without a
status. One test for every protocol with a traceability file (spec/<protocol>/traceability.yaml)."""

import re
from collections import Counter

import pytest

from conftest import REPO, SEEDS
from rmkit.specload import load_protocol_spec
from rmkit.traceability import (FORCES, STATUSES, backed_only_by_non_requirements, normalise,
                                sources_not_requirements, unquoted_normative_sentences)

PROTOCOLS = ("remp", "rmb", "corda")

# Rules and requirements that only sentences of force permission, proposal or description name in
# their checks: a judge must not fail an implementation on them on the documents' word alone.
NOT_BACKED_BY_A_REQUIREMENT = {"remp": [], "rmb": [], "corda": []}
# Rules and requirements whose own source is no requirement of the documents: a proposal, a
# reference fact (binding only in the profiles that claim it), an info rule, or a sentence no entry
# holds. A change here changes what a judge may fail on: update the list (and the judge) deliberately.
SOURCE_NOT_A_REQUIREMENT = {
    "remp": {
        "REMP-CLIENT-001": ["fact"],          # the running node's resend pacing: binds in ever-node only
    },
    # Document 004 says only that messages are "signed": the signature's form, and these daemon
    # behaviours, are facts of the implementations (rmb-as-built), which the spec profile adopts.
    "rmb": {r: ["fact"] for r in (
        "RMB-SIG-001", "RMB-SIG-002", "RMB-SIG-003", "RMB-SIG-004", "RMB-SIG-005", "RMB-BACKLOG-002", "RMB-BACKLOG-003",
        "RMB-RETRY-003", "RMB-RETRY-004", "RMB-REMOTE-004", "RMB-REMOTE-006", "RMB-REMOTE-007", "RMB-REMOTE-008",
        "RMB-REMOTE-009", "RMB-REPLY-006")},
    # Document 003 walks the happy path: the deduplicator's answers, the ids, the order of a
    # suspend's actions, redelivery and ordering are facts of the implementation (corda-as-built).
    "corda": {r: ["fact"] for r in (
        "CORDA-ACK-002", "CORDA-DEDUP-003", "CORDA-DEDUP-004", "CORDA-DEDUP-006", "CORDA-DEDUP-007", "CORDA-DEDUP-008",
        "CORDA-ID-001", "CORDA-ID-002", "CORDA-ID-003", "CORDA-ORDER-001", "CORDA-ORDER-002", "CORDA-REDELIVER-001")},
}

needs_seeds = pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents (../shared/seeds) are not beside this "
                                                            "checkout (set RMKIT_SEEDS_DIR)")


@pytest.fixture(scope="module", params=PROTOCOLS)
def protocol(request):
    return request.param


@pytest.fixture(scope="module")
def spec(protocol):
    return load_protocol_spec(protocol)


@pytest.fixture(scope="module")
def sentences(spec):
    return spec["traceability"]["sentences"]


def _documents(spec: dict) -> list[str]:
    """The design documents of a protocol (its numbered documents; reference facts are not quoted here)."""
    return [d for d in spec["protocol"]["documents"] if d.isdigit()]


def _seed(doc: str) -> str:
    return next(SEEDS.glob(f"{doc}_*.txt")).read_text(encoding="utf-8")


def _tla_operators(protocol: str) -> set:
    ops = set()
    for path in (REPO / "tla" / protocol).glob("*.tla"):
        text = path.read_text(encoding="utf-8")
        ops |= set(re.findall(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*==", text, flags=re.M))
    return ops


def _resolve(spec: dict, path: str):
    node = spec
    for step in path.split("."):
        if isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return None
    return node


def _items(spec: dict) -> list[dict]:
    """The rules, and the driven requirements where the protocol has them."""
    return spec["rules"]["rules"] + (spec["conformance"]["requirements"] if "conformance" in spec else [])


@needs_seeds
def test_every_quote_is_in_its_document(spec, sentences):
    docs = {d: normalise(_seed(d)) for d in _documents(spec)}
    bad = [(s["id"], r["doc"], r["quote"]) for s in sentences for r in s["renderings"]
           if r["doc"] not in docs or normalise(r["quote"]) not in docs[r["doc"]]]
    for name, c in (spec["protocol"].get("conflicts") or {}).items():
        bad += [(f"conflicts.{name}", r["doc"], r["quote"]) for r in c["readings"]
                if "quote" in r and normalise(r["quote"]) not in docs[r["doc"]]]
    assert not bad, "quotes not found in their document:\n" + "\n".join(map(repr, bad))


@needs_seeds
def test_no_normative_sentence_is_missing(spec, sentences):
    """Every prose sentence with a normative word (must, may, can, will, only, ...) is quoted."""
    missing = []
    for doc in _documents(spec):
        quotes = [r["quote"] for s in sentences for r in s["renderings"] if r["doc"] == doc]
        missing += [(doc, m) for m in unquoted_normative_sentences(_seed(doc), quotes)]
    assert not missing, "sentences no entry quotes:\n" + "\n".join(map(repr, missing))


def test_every_sentence_has_a_force_and_its_readings_name_profiles(spec, sentences):
    profiles = set(spec["protocol"]["profiles"])
    for s in sentences:
        assert s.get("force") in FORCES, s["id"]
        for r in s.get("readings", []):
            assert set(r["profiles"]) <= profiles, (s["id"], r["profiles"])
        # a reading no profile takes is no reading: every profile passes at least one of them
        if "readings" in s:
            for p in profiles:
                assert any(p in r["profiles"] for r in s["readings"]), (s["id"], p)


def test_every_referenced_id_exists(protocol, spec, sentences):
    known = {"rules": {r["id"] for r in spec["rules"]["rules"]}, "tla": _tla_operators(protocol)}
    if "conformance" in spec:
        known["requirements"] = {r["id"] for r in spec["conformance"]["requirements"]}
        known["scenarios"] = {s["id"] for s in spec["conformance"]["scenarios"]}
    unknown = []
    for s in sentences:
        for part, ids in s.get("checks", {}).items():
            for ref in ids:
                ok = _resolve(spec, ref) is not None if part == "spec" else ref in known.get(part, ())
                if not ok:
                    unknown.append((s["id"], part, ref))
    assert not unknown, f"unknown ids: {unknown}"


def test_nothing_is_listed_twice_and_each_status_says_why(protocol, spec, sentences):
    ids = Counter(s["id"] for s in sentences)
    assert not [i for i, n in ids.items() if n > 1], "duplicate sentence ids"
    primary = Counter((s["renderings"][0]["doc"], normalise(s["renderings"][0]["quote"])) for s in sentences)
    assert not [q for q, n in primary.items() if n > 1], "a sentence is listed twice"
    for s in sentences:
        assert s["status"] in STATUSES, s["id"]
        if s["status"] == "partial":
            assert s["missing"] and s["checks"], s["id"]
        if s["status"] == "not-checkable":
            assert s["why"], s["id"]
        docs = [r["doc"] for r in s["renderings"]]
        assert len(docs) == len(set(docs)), f"{s['id']}: one rendering per document"
        assert set(docs) <= set(_documents(spec)), f"{s['id']}: a document of another protocol"
        assert s["id"].startswith(f"T-{docs[0]}-"), f"{s['id']}: the id names the primary rendering's document"
    if protocol == "remp":
        # 002 renders 001: a sentence of one is a sentence of the other
        one_not_two = [s["id"] for s in sentences if ("001" in [r["doc"] for r in s["renderings"]])
                       != ("002" in [r["doc"] for r in s["renderings"]])]
        assert not one_not_two, f"sentences quoted from only one of 001 and 002: {one_not_two}"


def test_every_rule_is_traced(protocol, spec, sentences):
    """Every rule's own source sentence (where it quotes a document) is an entry of the file."""
    untraced = {i: f for i, f in sources_not_requirements(spec["rules"]["rules"], sentences).items() if "untraced" in f}
    assert not untraced, f"rules whose source sentence no entry quotes: {untraced}"


def test_checks_backed_only_by_non_requirements_are_listed(protocol, spec, sentences):
    """Which rules and requirements no sentence of force requirement backs, by the sentences'
    checks and by the rules' own sources. These are what a judge must not fail on."""
    assert backed_only_by_non_requirements(sentences) == NOT_BACKED_BY_A_REQUIREMENT[protocol]
    assert sources_not_requirements(_items(spec), sentences) == SOURCE_NOT_A_REQUIREMENT.get(protocol, {})


def test_readme_shows_the_table(protocol, sentences):
    readme = (REPO / "spec" / protocol / "README.md").read_text(encoding="utf-8")
    assert "## Traceability" in readme
    for s in sentences:
        assert f"| {s['id']} |" in readme, s["id"]


# ---- REMP: the forces the project's judging depends on ----------------------------------------

@pytest.fixture(scope="module")
def remp_sentences():
    return load_protocol_spec("remp")["traceability"]["sentences"]


def test_the_short_session_exception_permits_keeping_a_message_longer(remp_sentences):
    """001's exception obliges keeping a message past N+2 after short sessions, so it permits it:
    a judge reading its force and readings must not fail a validator that does."""
    entry = next(s for s in remp_sentences if any("remembered longer" in r["quote"] for r in s["renderings"]))
    assert entry["force"] == "requirement"
    assert any("two lifetimes" in r["reading"] and "spec" in r["profiles"] for r in entry["readings"])


def test_named_forces_of_the_remp_sentences(remp_sentences):
    def force(words):
        return next(s["force"] for s in remp_sentences if any(words in r["quote"] for r in s["renderings"]))
    assert force("may be removed or limited without any great damage") == "permission"
    assert force("All validators must reject the message before it is finally rejected") == "requirement"
    assert force("Validators do not retransmit messages received from the catchain") == "proposal"
    assert force("do not forward a message if it is received via the catchain") == "proposal"
    assert force("The full node sends messages sequentially") == "proposal"
    assert force("There are N^2 messages in catchain per external message") == "permission"
    assert force("A message may exist in the Message Queue Catchain in several copies") == "permission"
