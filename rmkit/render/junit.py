"""JUnit XML for CI systems: one test case per rule of the run; a violated strict rule is a
failure, a violated non-strict rule a passing case with its findings in system-out, an inactive
rule (or one that could not be checked) a skipped case. Unreadable lines add a failing ``input`` case."""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET

from rmkit.rules import NON_STRICT, OFF, STRICT
from rmkit.verdict import Report


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
            out.append(f"{v.message_id or '-'}: {v.explanation} [{ev}]")
    if rule == report.input_rule:
        out += [f"{p.file}:{p.line}: {p.error}" for p in report.input_problems]
    n = report.counts.get(rule, 0)
    if n > len(out):
        out.append(f"... {n - len(out)} more")
    return "\n".join(out)


def render_junit(report: Report, rules=None, **_) -> str:
    suite = ET.Element("testsuite", name=f"rmkit.{report.protocol}.{report.profile}")
    failures = skipped = 0
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
        elif n and mode == NON_STRICT:
            ET.SubElement(case, "system-out").text = f"non-strict: {title}: {n} violation(s)\n" + _lines(report, rule_id)
        nj = report.not_judged.get(rule_id) if mode != OFF else None
        if nj:
            ET.SubElement(case, "system-err").text = f"not judged for {nj['messages']} message(s): {nj['why']}"
    if report.receipts == 0:
        case = ET.SubElement(suite, "testcase", classname=f"rmkit.{report.protocol}.{report.profile}", name="input")
        ET.SubElement(case, "failure", message="no receipts were read: nothing was checked", type="empty")
        failures += 1
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    return xml_safe(ET.tostring(suite, encoding="unicode")) + "\n"
