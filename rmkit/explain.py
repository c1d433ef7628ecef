"""``rmkit explain``: a rule with its source, its force per profile, and a live example.

One flow for every protocol. The example is not prose: it is the rule's own fixture (a log planted
by ``fixtures/<protocol>/make_rule_fixtures.py``, shipped with the kit) run through the protocol's
checker exactly as ``rmkit check`` runs it, with the options the fixture needs, so the example
cannot drift from what the checker reports, and the command shown reproduces it. What a protocol
adds is data: where its rule fixtures are and the options a fixture is checked with
(:meth:`rmkit.protocol.ChecksLogs.rule_fixture_options`); and, in its spec, why no log can show a
rule (the rule's ``not_loggable`` in ``spec/<protocol>/rules.yaml``).
"""

from __future__ import annotations

import argparse
import json
import shlex
from contextlib import ExitStack
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable

from rmkit.protocol import FixtureFile, capable
from rmkit.rules import OFF, Rule, citation
from rmkit.verdict import Evidence, Violation

WIDTH = 150  # characters of a record shown


@dataclass(frozen=True)
class Example:
    """A violation of the rule found in its fixture, with the records its evidence names."""

    profile: str
    fixture: str  # the fixture's path under fixtures/ (``<protocol>/rules/<profile>/<RULE>.jsonl``)
    why: str  # what the fixture plants (its manifest entry)
    records: list[str]  # the evidence's lines, numbered, each cut to WIDTH characters
    violation: Violation
    command: list[str]  # the ``rmkit check`` command line that reproduces it


@dataclass(frozen=True)
class Explanation:
    rule: Rule
    example: Example | None = None
    not_loggable: str | None = None  # why no log can show the rule, and where it is judged instead


def explain(proto, rule_id: str, parse_check: Callable[[list[str]], argparse.Namespace]) -> Explanation:
    """The rule ``rule_id`` of ``proto``: a rule no log can show says why and where it is judged;
    any other gets the first example its fixtures give, in the profiles' order.
    ``parse_check(argv)`` parses the arguments of ``rmkit check`` (the command line's parser)."""
    rule = proto.rules()[rule_id]
    why_not = not_loggable(proto, rule)
    if why_not:
        return Explanation(rule, not_loggable=why_not)
    if not capable(proto, "check"):
        return Explanation(rule)
    return Explanation(rule, example=_first_example(proto, rule, parse_check))


def not_loggable(proto, rule: Rule) -> str | None:
    """Why no log can show ``rule`` (its ``not_loggable`` in the protocol's rules.yaml), with where
    it is judged instead when the rule says so (its ``driven`` roles or ``judged_elsewhere``); None
    when a log can show it."""
    why = rule.not_loggable
    if not why:
        return None
    if rule.driven:
        return f"{why}; rmkit conform --protocol {proto.name} --role {' / '.join(rule.driven)} judges it"
    if rule.judged_elsewhere:
        return f"{why}; where judged: {rule.judged_elsewhere}"
    return why


def _first_example(proto, rule: Rule, parse_check) -> Example | None:
    root = proto.rule_fixture_root()
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    for profile in [p for p in proto.profiles() if rule.mode(p) != OFF]:
        entry = next((f for f in manifest["fixtures"]
                      if f["profile"] == profile and f["file"].endswith(f"/{rule.id}.jsonl")), None)
        if entry is not None and (found := _example(proto, rule, profile, root, manifest, entry, parse_check)):
            return found
    return None


def _example(proto, rule: Rule, profile: str, root, manifest: dict[str, Any], entry: dict[str, Any],
             parse_check) -> Example | None:
    with ExitStack() as files:
        def real(item):  # a fixture file as a path the checker can open
            return str(files.enter_context(resources.as_file(root / item.path))) if isinstance(item, FixtureFile) else item

        log = real(FixtureFile(entry["file"]))
        options = [real(item) for item in proto.rule_fixture_options(manifest, entry)]
        argv = ["--protocol", proto.name, "--profile", profile, *options, log]
        report = proto.make_checker(profile, parse_check(argv)).run([log])
        with open(log, encoding="utf-8") as f:
            lines = f.read().splitlines()
    shown = f"{proto.name}/rules/{entry['file']}"
    hit = next((v for v in report.violations if v.rule == rule.id), None)
    if hit is None and rule.id == report.input_rule and report.input_problems:  # a line no record could be read from
        p = report.input_problems[0]
        hit = Violation(rule.id, rule.severity, rule.mode(profile), None, p.error, [Evidence(p.line, None, None, shown)])
    if hit is None:
        return None
    wanted = sorted({e.line for e in hit.evidence})
    records = [f"{n:3}: {lines[n - 1][:WIDTH]}{'…' if len(lines[n - 1]) > WIDTH else ''}" for n in wanted if 0 < n <= len(lines)]
    return Example(profile, shown, entry["why"], records, hit, ["rmkit", "check", *argv])


def render_rule(expl: Explanation, nouns) -> str:
    """The text ``rmkit explain RULE`` prints."""
    r = expl.rule
    out = [f"{r.id}: {r.title}",
           f"  severity:  {r.severity}",
           "  modes:     " + ", ".join(f"{p} = {m}" for p, m in r.modes.items()),
           f"  statement: {r.statement}",
           f"  source:    {r.citation()}"]
    out += [f"  in {prof}: {note}" for prof, note in r.profile_notes.items()]
    out.append(f"  what to do: {r.advice}")
    if expl.not_loggable:
        out.append(f"  log check: not checked from logs: {expl.not_loggable}")
    ex = expl.example
    if ex:
        v = ex.violation
        out += ["", f"example ({ex.profile} profile, fixture {ex.fixture}): {ex.why}"]
        out += [f"  {line}" for line in ex.records]
        out += ["", f"  -> {v.rule}" + (f" on {nouns.subject} {v.subject}" if v.subject is not None else "") + f": {v.explanation}"]
        for e in v.evidence:
            source = f"from {e.source[:16]}{'…' if len(e.source) > 16 else ''}" if e.source else ""
            out.append(f"     evidence: line {e.line} {e.kind or ''} {source}".rstrip())
        out += ["", f"  reproduce: {shlex.join(ex.command)}"]
    return "\n".join(out) + "\n"


def render_requirement(rule_id: str, req: dict[str, Any]) -> str:
    """A requirement of driven conformance: what a machine must do that no log shows, so it has no
    log fixture and no per-profile mode; the conformance run's failure shows the example."""
    return "\n".join([
        f"{rule_id}: {req['title']}",
        "  judged by: rmkit conform and rmkit replay (driven conformance), roles " + ", ".join(req["roles"]),
        f"  statement: {' '.join(req['statement'].split())}",
        f"  source:    {citation(req['source'])}",
        "  log check: not checked from logs: a log cannot show it; a failing scenario's expected and "
        "actual outputs are the example"]) + "\n"
