"""The Corda records checker's modules that setup.py compiles with Cython (from the same .py files,
in Cython's pure Python mode; optional: where no C compiler is found they run as Python) report
what the Python files report: every rule fixture, the faulty receivers' simulated logs and a log
whose messages are packed before later records of them come, each checked by the compiled modules
here and by the Python files in a subprocess that imports them from source."""

from __future__ import annotations

import json

import pytest

import corda_records_sim as sim
from compiled_support import compiled, same_findings_from_source
from conftest import REPO
from rmkit.conformance.corda import facts, handlers, packing, share, spanning

FIXTURES = REPO / "fixtures" / "corda" / "rules"
MODULES = {"share": share, "packing": packing, "facts": facts, "handlers": handlers, "spanning": spanning}

FINDINGS = r"""
def FINDINGS(profile, settled, paths, jobs):
    from rmkit.conformance.corda.checker import CordaLogChecker

    report = CordaLogChecker(profile, settled=settled, max_examples=0, jobs=jobs).run(paths)
    return [sorted([v.rule, v.subject, v.explanation, sorted([e.file, e.line] for e in v.evidence)] for v in report.violations),
            dict(report.counts), report.unreadable, report.records, report.subjects]
"""


def _runs(tmp_path) -> list[tuple]:
    """(profile, settled, paths, jobs) of every rule fixture, the faulty receivers' simulated logs,
    and a log of packed messages with later records (one process and two)."""
    manifest = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))["fixtures"]
    runs = [(f["profile"], f["settled"], [str(FIXTURES / f["file"])], 1) for f in manifest]
    for name, patch in sim.FAULTY.items():
        for seed in range(3):
            log = tmp_path / f"{name}-{seed}.jsonl"
            log.write_text(sim.run("spec", seed, messages=6, steps=120, patch=patch), encoding="utf-8")
            runs.append(("spec", True, [str(log)], 1))
    many = tmp_path / "many.jsonl"
    lines = []
    t = 1_767_225_600_000
    for k in range(3000):  # settled (packed) messages, some redelivered after their acknowledgement
        mid, who = f"N-f{k % 7}-{k}-0", {"sender": "6f1c2a80-a1", "seq": k + 1, "session": f"s{k % 7}"}
        for ev, kw in (("sent", who), ("received", {"delivery": f"ID:{k}", **who}), ("dedup", {"verdict": "NEW"}),
                       ("committed", {"tx": k + 1}), ("acked", {"delivery": f"ID:{k}"})):
            t += 1
            lines.append({"t": t, "node": "alice" if ev == "sent" else "bob", "event": ev, "id": mid, **kw})
    for k in range(0, 3000, 97):
        mid = f"N-f{k % 7}-{k}-0"
        for ev, kw in (("received", {"delivery": f"ID:{k}-2", "sender": "6f1c2a80-a1", "seq": k + 1, "session": f"s{k % 7}"}),
                       ("dedup", {"verdict": "NEW" if k % 2 else "DUPLICATE"}), ("acked", {"delivery": f"ID:{k}-2"})):
            t += 1
            lines.append({"t": t, "node": "bob", "event": ev, "id": mid, **kw})
    rows = [{"node": "bob", "id": f"N-f{k % 7}-{k}-0", "sender": "6f1c2a80-a1", "seq": k + 1, "tx": k + 1 + (k % 101 == 5), "t": t}
            for k in range(3000) if k % 89 != 3]
    many.write_text("".join(json.dumps(x) + "\n" for x in lines + rows), encoding="utf-8")
    runs += [("spec", True, [str(many)], 1), ("spec", True, [str(many)], 2)]
    return runs


def test_the_compiled_corda_checker_reports_what_its_python_files_report(tmp_path):
    if not compiled(MODULES):
        pytest.skip("no module of the Corda checker was compiled here (no C compiler at install): only the Python files run")
    here = same_findings_from_source("rmkit.conformance.corda", list(MODULES), FINDINGS, _runs(tmp_path), tmp_path)
    assert sum(1 for found, *_ in here if found) > 20  # (the fixtures break rules: the comparison is not of empty reports)
    assert here[-1][0]  # (the packed log's later records make findings)


def test_a_share_run_drops_every_field_its_init_sets_when_it_hands_its_share_back():
    """``share._RUN_STATE`` names what :meth:`_ShareRun.release` drops: compiled, the run's C fields
    (no instance dict to clear). A field added to ``__init__`` and not to it would stay held."""
    import ast

    from rmkit.conformance.corda.checker import CordaLogChecker

    tree = ast.parse((REPO / "conformance" / "corda" / "share.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_ShareRun")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    targets = [t for node in ast.walk(init) for t in (node.targets if isinstance(node, ast.Assign) else
                                                       [node.target] if isinstance(node, ast.AnnAssign) else [])]
    set_there = {t.attr for target in targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                 if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    assert set_there - {"phase", "ref"} == set(share._RUN_STATE)
    run = share._ShareRun(CordaLogChecker("spec"), ["-"])
    run.release()
    assert all(getattr(run, name) is None for name in share._RUN_STATE)
