"""Every normative sentence of the REMP documents is accounted for: quoted exactly, mapped to checks
that exist (rules, TLA+ operators, driven requirements and scenarios, spec entries) or to a stated
reason it cannot be checked from receipts, and never left without a status."""

import re
from collections import Counter

import pytest

from conftest import REPO, SEEDS
from test_spec import _norm
from rmkit.specload import load_protocol_spec

STATUSES = ("covered", "partial", "not-checkable")


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
