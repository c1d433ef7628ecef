"""The freedoms the REMP driven judge accepts (spec/remp/freedoms.yaml) are derived from the forces
of the documents' sentences (spec/remp/traceability.yaml), not written beside them: every
permission, proposal and open reading names the freedom that grants it or says why no driven judge
needs one, every freedom is named by such a sentence and quotes it, and no freedom rests on a
requirement alone (that would be the kit's invention, not the documents' leave)."""

import copy

import pytest

from rmkit.specload import load_protocol_spec
from rmkit.traceability import freedom_derivation_problems, needs_freedom


@pytest.fixture(scope="module")
def spec():
    return load_protocol_spec("remp")


@pytest.fixture(scope="module")
def sentences(spec):
    return spec["traceability"]["sentences"]


@pytest.fixture(scope="module")
def freedoms(spec):
    return spec["freedoms"]["freedoms"]


@pytest.fixture(scope="module")
def fact_profiles(spec):
    """The profiles that claim reference facts: all but the default one (the documents as written)."""
    return [name for name, p in spec["protocol"]["profiles"].items() if not p.get("default")]


def _problems(sentences, freedoms, fact_profiles):
    return freedom_derivation_problems(sentences, freedoms, fact_profiles)


def test_the_freedoms_equal_the_choices_the_documents_leave(sentences, freedoms, fact_profiles):
    problems = _problems(sentences, freedoms, fact_profiles)
    assert not problems, "freedoms and sentences disagree:\n" + "\n".join(problems)


def test_the_named_choices_are_granted_where_the_issue_says(sentences):
    """The choices issue 39 names are granted by the freedom that states them."""
    def entry(words):
        return next(s for s in sentences if any(words in r["quote"] for r in s["renderings"]))
    assert entry("may be removed or limited without any great damage")["freedom"] == "REMP-FREE-011"
    assert entry("There are N^2 messages in catchain per external message")["freedom"] == "REMP-FREE-010"
    assert entry("Validators do not retransmit messages received from the catchain")["freedom"] == "REMP-FREE-010"
    assert entry("do not forward a message if it is received via the catchain")["freedom"] == "REMP-FREE-003"
    assert entry("The full node sends messages sequentially")["freedom"] == "REMP-FREE-002"
    assert entry("the message is remembered longer")["freedom"] == "REMP-FREE-013"
    assert entry("Only currently processed messages should be delivered in full")["freedom"] == "REMP-FREE-014"
    # a requirement with no second reading grants nothing: a final reject waits for all validators
    assert "freedom" not in entry("All validators must reject the message before it is finally rejected")


def _entry(sentences, sid):
    return next(s for s in sentences if s["id"] == sid)


def test_a_permission_without_its_freedom_is_caught(sentences, freedoms, fact_profiles):
    """Removing the one sentence that names REMP-FREE-009 leaves the sentence unaccounted for and
    the freedom resting on nothing."""
    mutated = copy.deepcopy(sentences)
    del _entry(mutated, "T-000-149")["freedom"]
    problems = _problems(mutated, freedoms, fact_profiles)
    assert any(p.startswith("T-000-149:") and "neither" in p for p in problems), problems
    assert any(p.startswith("REMP-FREE-009: no sentence names it") for p in problems), problems


def test_a_freedom_that_does_not_quote_the_sentence_is_caught(sentences, freedoms, fact_profiles):
    mutated = copy.deepcopy(sentences)
    _entry(mutated, "T-000-52")["freedom"] = "REMP-FREE-005"
    problems = _problems(mutated, freedoms, fact_profiles)
    assert "T-000-52: freedom REMP-FREE-005 quotes none of its renderings" in problems


def test_a_freedom_resting_on_a_requirement_alone_is_caught(sentences, freedoms, fact_profiles):
    """REMP-FREE-013 rests on requirement sentences that admit two readings (obsolete at N+2, or
    remembered longer after short sessions); without the readings they leave no choice, and a
    freedom on them would be the kit's invention."""
    mutated = copy.deepcopy(sentences)
    for sid in ("T-000-23", "T-001-19", "T-001-20", "T-001-22"):
        e = _entry(mutated, sid)
        del e["readings"], e["freedom"]
        assert not needs_freedom(e)
    problems = _problems(mutated, freedoms, fact_profiles)
    assert any(p.startswith("REMP-FREE-013: rests on T-") and "a requirement" in p for p in problems), problems


def test_a_fact_source_binds_only_where_a_profile_claims_facts(sentences, freedoms, fact_profiles):
    mutated = copy.deepcopy(freedoms)
    f = next(f for f in mutated if f["id"] == "REMP-FREE-006")
    f["profiles"] = ["spec"]
    problems = _problems(sentences, mutated, fact_profiles)
    assert "REMP-FREE-006: no sentence names it" in problems
    assert "REMP-FREE-006: rests on a reference fact but binds in no profile that claims facts" in problems


def test_a_choice_given_both_or_a_requirement_given_one_is_caught(sentences, freedoms, fact_profiles):
    mutated = copy.deepcopy(sentences)
    _entry(mutated, "T-000-44")["freedom_why"] = "both fields on one sentence"
    _entry(mutated, "T-000-21")["freedom_why"] = "a requirement without readings leaves no choice"
    problems = _problems(mutated, freedoms, fact_profiles)
    assert any(p.startswith("T-000-44:") and "exactly one" in p for p in problems), problems
    assert any(p.startswith("T-000-21: leaves no choice") for p in problems), problems
