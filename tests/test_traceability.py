"""Every normative sentence of the REMP documents is accounted for: quoted exactly, mapped to checks
that exist (rules, TLA+ operators, driven requirements and scenarios, spec entries) or to a stated
reason it cannot be checked from receipts, and never left without a status."""

import re
from collections import Counter

import pytest

from conftest import REPO, SEEDS
from test_spec import _norm
from rmkit.specload import load_protocol_spec
from rmkit.traceability import (FORCES, STATUSES, backed_only_by_non_requirements, sources_not_requirements,
                                unquoted_normative_sentences)

# Rules and requirements that only sentences of force permission, proposal or description name in
# their checks: a judge must not fail an implementation on them on the documents' word alone.
REMP_NOT_BACKED_BY_A_REQUIREMENT = []
# Rules and requirements whose own source is no requirement of the documents: a proposal, a
# reference fact (binding only in the profile that claims it), or a sentence no entry holds.
REMP_SOURCE_NOT_A_REQUIREMENT = {
    "REMP-QUEUE-001": ["proposal"],       # 000's third proposal for speeding up
    "REMP-CLIENT-001": ["fact"],          # the running node's resend pacing
    "REMP-SEND-001": ["fact"],            # the running node's receipt sending
    "REMP-EXACT-001": ["untraced"],       # the catch-all: every output as the reference machine's
}


@pytest.fixture(scope="module")
def spec():
    return load_protocol_spec("remp")


@pytest.fixture(scope="module")
def sentences(spec):
    return spec["traceability"]["sentences"]


def _tla_operators() -> set:
    text = (REPO / "tla" / "remp" / "REMP.tla").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*==", text, flags=re.M))


def _resolve(spec: dict, path: str):
    node = spec
    for step in path.split("."):
        if isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return None
    return node


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents (../shared/seeds) are not beside this checkout")
def test_every_quote_is_in_its_document(spec, sentences):
    docs = {p.name[:3]: _norm(p.read_text(encoding="utf-8")) for p in SEEDS.glob("00*_*.txt")}
    bad = [(s["id"], r["doc"], r["quote"]) for s in sentences for r in s["renderings"]
           if _norm(r["quote"]) not in docs[r["doc"]]]
    for name, c in spec["protocol"]["conflicts"].items():
        bad += [(f"conflicts.{name}", r["doc"], r["quote"]) for r in c["readings"]
                if "quote" in r and _norm(r["quote"]) not in docs[r["doc"]]]
    assert not bad, "quotes not found in their document:\n" + "\n".join(map(repr, bad))


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents (../shared/seeds) are not beside this checkout")
def test_no_normative_sentence_is_missing(sentences):
    """Every prose sentence with a normative word (must, may, can, will, only, ...) is quoted."""
    missing = []
    for doc in ("000", "001", "002"):
        text = next(SEEDS.glob(f"{doc}_*.txt")).read_text(encoding="utf-8")
        quotes = [r["quote"] for s in sentences for r in s["renderings"] if r["doc"] == doc]
        missing += [(doc, m) for m in unquoted_normative_sentences(text, quotes)]
    assert not missing, "sentences no entry quotes:\n" + "\n".join(map(repr, missing))


def test_every_sentence_has_a_force_and_its_readings_name_profiles(spec, sentences):
    profiles = set(spec["protocol"]["profiles"])
    for s in sentences:
        assert s.get("force") in FORCES, s["id"]
        for r in s.get("readings", []):
            assert set(r["profiles"]) <= profiles, (s["id"], r["profiles"])
    # a reading no profile takes is no reading: every profile passes at least one of them
    for s in sentences:
        if "readings" in s:
            for p in profiles:
                assert any(p in r["profiles"] for r in s["readings"]), (s["id"], p)


def test_the_short_session_exception_permits_keeping_a_message_longer(sentences):
    """001's exception obliges keeping a message past N+2 after short sessions, so it permits it:
    a judge reading its force and readings must not fail a validator that does."""
    entry = next(s for s in sentences if any("remembered longer" in r["quote"] for r in s["renderings"]))
    assert entry["force"] == "requirement"
    assert any("two lifetimes" in r["reading"] and "spec" in r["profiles"] for r in entry["readings"])


def test_named_forces_of_the_issue_sentences(sentences):
    def force(words):
        return next(s["force"] for s in sentences if any(words in r["quote"] for r in s["renderings"]))
    assert force("may be removed or limited without any great damage") == "permission"
    assert force("All validators must reject the message before it is finally rejected") == "requirement"
    assert force("Validators do not retransmit messages received from the catchain") == "proposal"
    assert force("do not forward a message if it is received via the catchain") == "proposal"
    assert force("The full node sends messages sequentially") == "proposal"
    assert force("There are N^2 messages in catchain per external message") == "permission"
    assert force("A message may exist in the Message Queue Catchain in several copies") == "permission"


def test_checks_backed_only_by_non_requirements_are_listed(spec, sentences):
    """Which rules and requirements no sentence of force requirement backs. A change here is a
    change of what a judge may fail on: update the list (and the judge) deliberately."""
    assert backed_only_by_non_requirements(sentences) == REMP_NOT_BACKED_BY_A_REQUIREMENT
    items = spec["rules"]["rules"] + spec["conformance"]["requirements"]
    assert sources_not_requirements(items, sentences) == REMP_SOURCE_NOT_A_REQUIREMENT


def test_every_referenced_id_exists(spec, sentences):
    known = {
        "rules": {r["id"] for r in spec["rules"]["rules"]},
        "tla": _tla_operators(),
        "requirements": {r["id"] for r in spec["conformance"]["requirements"]},
        "scenarios": {s["id"] for s in spec["conformance"]["scenarios"]},
    }
    unknown = []
    for s in sentences:
        for part, ids in s.get("checks", {}).items():
            for ref in ids:
                ok = _resolve(spec, ref) is not None if part == "spec" else ref in known[part]
                if not ok:
                    unknown.append((s["id"], part, ref))
    assert not unknown, f"unknown ids: {unknown}"


def test_nothing_is_missing_and_each_status_says_why(sentences):
    assert len(sentences) >= 100
    ids = Counter(s["id"] for s in sentences)
    assert not [i for i, n in ids.items() if n > 1], "duplicate sentence ids"
    primary = Counter((s["renderings"][0]["doc"], _norm(s["renderings"][0]["quote"])) for s in sentences)
    assert not [q for q, n in primary.items() if n > 1], "a sentence is listed twice"
    for s in sentences:
        assert s["status"] in STATUSES, s["id"]
        if s["status"] == "partial":
            assert s["missing"] and s["checks"], s["id"]
        if s["status"] == "not-checkable":
            assert s["why"], s["id"]
        docs = [r["doc"] for r in s["renderings"]]
        assert len(docs) == len(set(docs)), f"{s['id']}: one rendering per document"
    # 002 renders 001: a sentence of one is a sentence of the other
    one_not_two = [s["id"] for s in sentences if ("001" in [r["doc"] for r in s["renderings"]])
                   != ("002" in [r["doc"] for r in s["renderings"]])]
    assert not one_not_two, f"sentences quoted from only one of 001 and 002: {one_not_two}"


def test_readme_shows_the_table(sentences):
    readme = (REPO / "spec" / "remp" / "README.md").read_text(encoding="utf-8")
    assert "## Traceability" in readme
    for s in sentences:
        assert f"| {s['id']} |" in readme, s["id"]
