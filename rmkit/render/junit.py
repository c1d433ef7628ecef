"""JUnit XML for CI systems: one test case per rule of the run; a violated strict rule is a
failure, a violated non-strict rule a passing case with its findings in system-out, an inactive
rule (or one that could not be checked) a skipped case. Unreadable lines (exit 2) add a failing
``input`` case naming each line's file, line and field, unless the protocol counts them against a
strict rule of its own, whose failing case lists them; a log with no records adds one too."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from xml.etree import ElementTree as ET

from rmkit.rules import NON_STRICT, OFF, STRICT
from rmkit.verdict import GENERIC_NOUNS, NOTHING_READ, Nouns, Report


# what XML 1.0 forbids anywhere in a document (control characters, lone surrogates, U+FFFE/FFFF)
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """``text`` with each character XML 1.0 forbids written as a visible escape (``\\x1b``), so
    that a report is valid XML whatever a log or an implementation put into it. Applied to the
    serialized document: markup never holds such characters, so only content changes."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def _lines(report: Report, rule: str) -> str:
    out = []
    for v in report.violations:
        if v.rule == rule:
            ev = ", ".join(f"{e.file}:{e.line} {e.kind or ''}".strip() for e in v.evidence)
            out.append(f"{v.subject or '-'}: {v.explanation} [{ev}]")
    if rule == report.input_rule:
        out += _unreadable_lines(report)
    n = report.counts.get(rule, 0)
    if n > len(out):
        out.append(f"... {n - len(out)} more")
    return "\n".join(out)


def _unreadable_lines(report: Report) -> list[str]:
    """Each unreadable line shown, as the text report words it: file:line, the field, the error."""
    return [f"{p.file}:{p.line}{(' field ' + p.field) if p.field else ''}: {p.error}" for p in report.input_problems]


def _input_failure(report: Report, listed_by_rule: bool) -> str | None:
    """Why the ``input`` case fails (None: it is not needed): nothing read, or lines that could
    not be read and are not already listed by the failing case of the protocol's input rule."""
    if report.records == 0:
        return NOTHING_READ
    if report.unreadable and not listed_by_rule:
        return f"{report.unreadable} line(s) could not be read: the run has no verdict (exit 2)"
    return None


def render_junit(report: Report, rules=None, nouns: Nouns = GENERIC_NOUNS, **_) -> str:
    """``nouns``: the protocol's words for records and subjects."""
    suite = ET.Element("testsuite", name=f"rmkit.{report.protocol}.{report.profile}")
    failures = skipped = 0
    listed_by_rule = False  # the unreadable lines are in a failing case of the protocol's input rule
    for rule_id, mode in report.rules.items():
        case = ET.SubElement(suite, "testcase", classname=f"rmkit.{report.protocol}.{report.profile}", name=rule_id)
        n = report.counts.get(rule_id, 0)
        title = rules[rule_id].title if rules is not None and rule_id in rules else rule_id
        if mode == OFF:
            ET.SubElement(case, "skipped", message=f"{title}: off in profile {report.profile}")
            skipped += 1
        elif rule_id in report.not_checked:
            ET.SubElement(case, "skipped", message=f"{title}: not checked: {report.not_checked[rule_id]}")
            skipped += 1
        elif n and mode == STRICT:
            f = ET.SubElement(case, "failure", message=f"{title}: {n} violation(s)", type=rule_id)
            f.text = _lines(report, rule_id)
            failures += 1
            listed_by_rule = listed_by_rule or rule_id == report.input_rule
        elif n and mode == NON_STRICT:
            ET.SubElement(case, "system-out").text = f"non-strict: {title}: {n} violation(s)\n" + _lines(report, rule_id)
        nj = report.not_judged.get(rule_id) if mode != OFF else None
        if nj:
            ET.SubElement(case, "system-err").text = f"not judged for {nj['messages']} {nouns.subject}(s): {nj['why']}"
    why = _input_failure(report, listed_by_rule)
    if why is not None:
        case = ET.SubElement(suite, "testcase", classname=f"rmkit.{report.protocol}.{report.profile}", name="input")
        f = ET.SubElement(case, "failure", message=why, type="empty" if report.records == 0 else "unreadable")
        shown = _unreadable_lines(report)
        if report.unreadable > len(shown):
            shown.append(f"... {report.unreadable - len(shown)} more")
        f.text = "\n".join(shown) or None
        failures += 1
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    elapsed = (report.metrics or {}).get("elapsed_s")
    if isinstance(elapsed, (int, float)):
        suite.set("time", f"{elapsed:.3f}")
    ET.indent(suite)  # one element a line: a CI log or a diff shows which case changed
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml_safe(ET.tostring(suite, encoding="unicode")) + "\n"


# ---- test suites of a driven run (rmkit conform): one writer for every protocol -------------------
@dataclass
class Case:
    """One test case: passed unless ``failure`` (message, type, text) or ``skipped`` (why) is set;
    ``out`` goes to its system-out (a finding that passes, the evidence of a pass)."""

    classname: str
    name: str
    failure: tuple[str, str, str] | None = None
    skipped: str | None = None
    out: str | None = None
    time: float | None = None


@dataclass
class Suite:
    name: str
    cases: list[Case] = field(default_factory=list)
    out: str | None = None      # the suite's system-out (what it does not cover, say)
    time: float | None = None


def render_suites(suites: list[Suite], time: float | None = None) -> str:
    """A ``<testsuites>`` document, indented one element a line, counts of tests, failures and
    skipped cases per suite, ``time=`` where given; characters XML forbids written as escapes."""
    root = ET.Element("testsuites")
    if time is not None:
        root.set("time", f"{time:.3f}")
    for s in suites:
        el = ET.SubElement(root, "testsuite", name=s.name, tests=str(len(s.cases)),
                           failures=str(sum(c.failure is not None for c in s.cases)),
                           skipped=str(sum(c.skipped is not None and c.failure is None for c in s.cases)), errors="0")
        if s.time is not None:
            el.set("time", f"{s.time:.3f}")
        for c in s.cases:
            case = ET.SubElement(el, "testcase", classname=c.classname, name=c.name)
            if c.time is not None:
                case.set("time", f"{c.time:.3f}")
            if c.failure is not None:
                message, kind, text = c.failure
                f = ET.SubElement(case, "failure", message=message[:500], type=kind)
                f.text = text or None
            elif c.skipped is not None:
                ET.SubElement(case, "skipped", message=c.skipped[:500])
            if c.out:
                ET.SubElement(case, "system-out").text = c.out
        if s.out:
            ET.SubElement(el, "system-out").text = s.out
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml_safe(ET.tostring(root, encoding="unicode")) + "\n"
