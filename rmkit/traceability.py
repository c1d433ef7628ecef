"""Reading a protocol's traceability file (spec/<protocol>/traceability.yaml): which sentences of the
design documents back which checks, with what force, and which prose sentences a complete file must
quote.

A judge may fail an implementation only on a rule or requirement that some sentence of force
``requirement`` backs (or that a profile's reference facts make one); ``backing_forces`` answers
that question for every check a traceability file names.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

STATUSES = ("covered", "partial", "not-checkable")
FORCES = ("requirement", "permission", "proposal", "description")
CHECK_PARTS = ("rules", "tla", "requirements", "scenarios", "spec")

# A prose sentence with one of these words says what the protocol does, must, may or will do (or
# explains why): a complete traceability file quotes each such sentence of its documents.
NORMATIVE_WORDS = re.compile(
    r"\b(must|should|shall|may|might|can|cannot|can't|will|won't|never|always|only|"
    r"guarantee[sd]?|required?|illegal|not allowed|need(?:s|ed)?)\b", re.I)
# Lines of code the documents show unfenced (001 and 002 print a Rust snippet as prose).
_CODE_LINE = re.compile(r"\|\||^\s*\"\w+\"\s*:")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“`(])")


def normalise(text: str) -> str:
    """The documents' text as quotes are compared with it: colour tags and bold marks dropped,
    whitespace collapsed."""
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("**", "")
    return " ".join(text.split())


def prose_sentences(text: str) -> list[str]:
    """The sentences of a document's prose, normalised: fenced code blocks and unfenced code lines
    are left out, a table row or list item is a line of its own, a line splits at sentence ends."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or _CODE_LINE.search(line):
            continue
        line = normalise(line)
        if line:
            out += _SENTENCE_END.split(line)
    return out


def unquoted_normative_sentences(text: str, quotes: Iterable[str]) -> list[str]:
    """Prose sentences of ``text`` with a normative word that no quote accounts for (a quote
    inside the sentence, or the sentence inside a quote)."""
    quotes = [normalise(q) for q in quotes]
    missing = []
    for sentence in prose_sentences(text):
        if not NORMATIVE_WORDS.search(sentence):
            continue
        core = sentence.strip(" -*#|>")
        if not any(q in core or core in q for q in quotes):
            missing.append(sentence)
    return missing


def backing_forces(sentences: list[dict]) -> dict[tuple[str, str], set[str]]:
    """(part, id) of every check the sentences name (rules, requirements, ...) -> the forces of the
    sentences that name it."""
    out: dict[tuple[str, str], set[str]] = {}
    for s in sentences:
        for part, ids in (s.get("checks") or {}).items():
            for ref in ids:
                out.setdefault((part, ref), set()).add(s["force"])
    return out


def backed_only_by_non_requirements(sentences: list[dict], parts: Iterable[str] = ("rules", "requirements")) -> list[str]:
    """Rules and requirements that sentences name only with a force other than requirement: a
    judge must not fail an implementation on them alone."""
    parts = tuple(parts)
    return sorted(ref for (part, ref), forces in backing_forces(sentences).items()
                  if part in parts and "requirement" not in forces)


def summary_markdown(sentences: list[dict]) -> list[str]:
    """The counts by status and by force, as a small markdown table."""
    by = Counter((s["status"], s["force"]) for s in sentences)
    out = ["| status | " + " | ".join(FORCES) + " | total |", "|---|" + "---|" * (len(FORCES) + 1)]
    for st in STATUSES:
        row = [by[(st, f)] for f in FORCES]
        out.append(f"| {st} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    cols = [sum(by[(st, f)] for st in STATUSES) for f in FORCES]
    out.append("| total | " + " | ".join(map(str, cols)) + f" | {sum(cols)} |")
    return out


def _sources(item: dict) -> list[dict]:
    src = item.get("source") or item.get("sources") or []
    return src if isinstance(src, list) else [src]


def source_forces(items: Iterable[dict], sentences: list[dict]) -> dict[str, list[str]]:
    """id of each rule or requirement -> the forces of the traceability sentences its own source
    quotes ('fact' for a source that is a reference fact, 'untraced' for a quote no sentence holds)."""
    out: dict[str, list[str]] = {}
    for item in items:
        forces: list[str] = []
        for src in _sources(item):
            if "quote" not in src:
                forces.append("fact")
                continue
            q = normalise(src["quote"])
            hits = {s["force"] for s in sentences for r in s["renderings"]
                    if r["doc"] == src["doc"] and (q in normalise(r["quote"]) or normalise(r["quote"]) in q)}
            forces += sorted(hits) or ["untraced"]
        out[item["id"]] = forces
    return out


def sources_not_requirements(items: Iterable[dict], sentences: list[dict]) -> dict[str, list[str]]:
    """The rules or requirements whose source sentences include no requirement, with what they are."""
    return {i: f for i, f in source_forces(items, sentences).items() if "requirement" not in f}


def needs_freedom(sentence: dict) -> bool:
    """Whether a sentence leaves an implementation a choice that driven conformance must honour: its
    force is permission or proposal, or two or more of its readings are taken by some profile."""
    taken = [r for r in sentence.get("readings") or () if r["profiles"]]
    return sentence["force"] in ("permission", "proposal") or len(taken) >= 2


def freedom_quotes(freedom: dict) -> list[dict]:
    """The quoted sources of a freedom (its ``sources`` and its readings' ``source``), reference
    facts left out."""
    out = [s for s in _sources(freedom) if "quote" in s]
    out += [r["source"] for r in freedom.get("readings") or () if "quote" in r.get("source", {})]
    return out


def quoted_by(src: dict, sentence: dict) -> bool:
    """Whether a quote (doc, quote) is one of the sentence's renderings, or holds one, or lies in one."""
    q = normalise(src["quote"])
    return any(r["doc"] == src["doc"] and (q in normalise(r["quote"]) or normalise(r["quote"]) in q)
               for r in sentence["renderings"])


def freedom_derivation_problems(sentences: list[dict], freedoms: list[dict], fact_profiles: Iterable[str]) -> list[str]:
    """Where the freedoms a judge accepts and the sentences that leave a choice are not the same:
    a choice-leaving sentence with neither or both of ``freedom`` / ``freedom_why``; a ``freedom``
    that does not exist or does not quote the sentence; a freedom no sentence names (unless it rests
    on reference facts alone and binds only in ``fact_profiles``, the profiles that claim facts); a
    freedom quoting a sentence that leaves no choice (a requirement without readings: the kit's
    invention), or quoting no sentence at all; a fact source in a freedom none of whose profiles
    claims facts."""
    fact_profiles = set(fact_profiles)
    by_id = {f["id"]: f for f in freedoms}
    problems: list[str] = []
    named: set[str] = set()
    for s in sentences:
        has = [k for k in ("freedom", "freedom_why") if k in s]
        if needs_freedom(s) and len(has) != 1:
            problems.append(f"{s['id']}: a {s['force']} or open reading needs exactly one of freedom, freedom_why (has {has or 'neither'})")
        if not needs_freedom(s) and has:
            problems.append(f"{s['id']}: leaves no choice ({s['force']}, no open reading) but has {has}")
        if "freedom" not in s:
            continue
        f = by_id.get(s["freedom"])
        if f is None:
            problems.append(f"{s['id']}: freedom {s['freedom']} does not exist")
            continue
        named.add(f["id"])
        if not any(quoted_by(q, s) for q in freedom_quotes(f)):
            problems.append(f"{s['id']}: freedom {f['id']} quotes none of its renderings")
    for f in freedoms:
        quotes = freedom_quotes(f)
        facts_only_there = not quotes and set(f["profiles"]) <= fact_profiles
        if f["id"] not in named and not facts_only_there:
            problems.append(f"{f['id']}: no sentence names it")
        if any("quote" not in src for src in _sources(f)) and not set(f["profiles"]) & fact_profiles:
            problems.append(f"{f['id']}: rests on a reference fact but binds in no profile that claims facts")
        for q in quotes:
            hits = [s for s in sentences if quoted_by(q, s)]
            if not hits:
                problems.append(f"{f['id']}: quotes a sentence no entry holds: {q['doc']} “{q['quote']}”")
            for s in hits:
                if not needs_freedom(s):
                    problems.append(f"{f['id']}: rests on {s['id']}, a {s['force']} that leaves no choice")
    return problems


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def traceability_markdown(sentences: list[dict], documents: str) -> list[str]:
    """The ``## Traceability`` section of a protocol's generated README: the counts by status and
    by force, then one row per sentence (its renderings, force and readings, status, checks, and
    what is missing, why it cannot be checked, or how it is read)."""
    counts = Counter(s["status"] for s in sentences)
    out = ["", "## Traceability", "",
           f"Every normative sentence of {documents} ({len(sentences)}; one sentence the documents render in "
           "several places counts once): " + ", ".join(f"{counts[st]} {st}" for st in STATUSES) + ". "
           "Force: what the sentence asks of an implementation (requirement, permission, proposal, "
           "description); a failing verdict rests only on requirements.", ""]
    out += summary_markdown(sentences)
    out += ["", "| id | sentence | force | status | checked by | missing, why, or note |", "|---|---|---|---|---|---|"]
    for s in sentences:
        quote = "<br>".join(f"{r['doc']}: “{_cell(r['quote'])}”" for r in s["renderings"])
        checks = "; ".join(f"{part}: {', '.join(ids)}" for part, ids in (s.get("checks") or {}).items()) or "-"
        text = " ".join(f"{label}: {_cell(s[label])}" for label in ("missing", "why", "note") if label in s)
        force = s["force"] + (f" ({_cell(s['force_why'])})" if "force_why" in s else "")
        if s.get("readings"):
            force += "<br>readings: " + "; ".join(
                f"{_cell(r['reading'])} [{', '.join(r['profiles']) or 'no profile'}]" for r in s["readings"])
        if "freedom" in s:
            force += f"<br>freedom: {s['freedom']}"
        elif "freedom_why" in s:
            force += f"<br>no freedom: {_cell(s['freedom_why'])}"
        out.append(f"| {s['id']} | {quote} | {force} | {s['status']} | {_cell(checks)} | {text or '-'} |")
    return out
