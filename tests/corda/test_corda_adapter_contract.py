"""spec/corda/adapter.md is the contract a Corda implementation under test meets: every event, field,
reply field and number of spec/corda/adapter.yaml is on the page with the value the kit uses, the kit
reads those numbers from the spec, the events it sends and the replies the reference gives pass the
wire's JSON Schema, and the two minimal implementations printed on the page pass `rmkit conform`
(so the page stays true: an implementation written from it alone is started and judged)."""

from __future__ import annotations

import json
import re
import sys

import jsonschema
import pytest

from conftest import REPO
from rmkit.cli import main
from rmkit.cli_options import DEFAULT_TIMEOUT as CLI_TIMEOUT
from rmkit.conformance.corda.driven import adapters, bridge, suite
from rmkit.conformance.corda.driven.adapters import ReferenceReceiver
from rmkit.conformance.corda.driven.bridge import ReferenceBridge
from rmkit.conformance.corda.driven.contract import adapter
from rmkit.specload import load_schema

DOC = (REPO / "spec" / "corda" / "adapter.md").read_text(encoding="utf-8")


def rows(name: str) -> list[str]:
    return [line for line in DOC.splitlines() if line.startswith(f"| `{name}` |")]


def numbers(node, path=()):
    """(path, value) of every {value, note} number of adapter.yaml."""
    if isinstance(node, dict):
        if set(node) == {"value", "note"}:
            yield path, node["value"]
            return
        for k, v in node.items():
            yield from numbers(v, path + (k,))


def test_every_number_is_on_the_page_with_its_value_and_where_it_comes_from():
    found = list(numbers(adapter()))
    assert len(found) >= 10
    for path, value in found:
        where = ".".join(path)
        hits = [r for r in rows(path[-1]) if f"`{where}`" in r]
        assert len(hits) == 1, f"adapter.md: expected one row for {where}, found {len(hits)}"
        shown = str(value) if isinstance(value, int) else f"{value:g}"
        assert f"| {shown} " in hits[0], (where, value, hits[0])


def test_every_range_of_the_topology_is_on_the_page():
    topology = adapter()["receiver"]["topology"]
    for name in ("peers", "sessions", "messages", "senders"):
        row = next(r for r in rows(name) if f"receiver.topology.{name}" in r)
        assert f"| {topology[name]['min']} to {topology[name]['max']} |" in row, row


def test_every_event_field_and_reply_field_is_on_the_page():
    spec = adapter()
    for role, events in spec["events"].items():
        for name, event in events.items():
            assert f"| `{name}` |" in DOC, (role, name)
            for field in event["fields"]:
                assert f"`{field}`" in DOC, (role, name, field)
    for field in spec["message"]:
        assert f"| `{field}` |" in DOC or f"`{field}`" in DOC, field
    for role, fields in spec["replies"].items():
        for field in fields:
            assert f"| `{field}` |" in DOC, (role, field)
    for placeholder in spec["process"]["placeholders"]:
        assert rows(placeholder), placeholder


def test_the_kit_reads_its_numbers_from_the_spec():
    a = adapter()
    assert suite.DRAIN_BOUND == a["receiver"]["drain"]["bound_ticks"]["value"]
    assert suite.QUIET_TICKS == a["receiver"]["drain"]["quiet_ticks"]["value"]
    assert suite.DRAIN_RESTARTS == a["receiver"]["drain"]["restarts"]["value"]
    assert suite.SHRINK_BUDGET_S == a["search"]["shrink_budget_s"]["value"]
    assert bridge.QUIET_TICKS == a["bridge"]["drain"]["quiet_ticks"]["value"]
    assert bridge.MAX_DRAIN_TICKS == a["bridge"]["drain"]["max_ticks"]["value"]
    assert bridge.MAX_DRAIN_MOVES == a["bridge"]["drain"]["max_moves"]["value"]
    assert bridge.MESSAGES == a["bridge"]["messages"]["value"]
    assert adapters.STOP_GRACE_S == a["process"]["stop_grace_s"]["value"]
    assert adapters.MAX_REPLY_BYTES == a["process"]["max_reply_bytes"]["value"]
    # --timeout's default is shared by every protocol's conform; the Corda contract states the same
    assert adapters.DEFAULT_TIMEOUT == CLI_TIMEOUT == a["process"]["reply_timeout_s"]["value"]


def validator(part: str):
    schema = load_schema("corda-adapter-wire")
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{part}", "$defs": schema["$defs"]})


class Wire:
    """Wraps an implementation: every event the kit sends and every reply checked against the schema."""

    def __init__(self, impl, role):
        self.impl, self.role = impl, role
        self.events, self.replies = validator(f"{role}_event"), validator(f"{role}_reply")
        self.seen = set()

    def handle(self, event):
        if event["type"] != "crash":
            self.events.validate(event)
        reply = self.impl.handle(event)
        self.replies.validate(reply)
        self.seen.add(event["type"])
        return reply


@pytest.mark.parametrize("role,cls", [("receiver", ReferenceReceiver), ("bridge", ReferenceBridge)])
def test_the_kits_events_and_the_references_replies_pass_the_wire_schema(role, cls):
    made = []

    def factory(r):
        made.append(Wire(cls(r), r))
        return made[-1]

    r = suite.search(factory, "corda-os", max_examples=30, role=role)
    assert r.failure is None
    assert set().union(*(w.seen for w in made)) == set(adapter()["events"][role])


def test_the_wire_schema_refuses_a_reply_with_done_and_commits():
    assert not validator("receiver_reply").is_valid({"done": [["commit", "N-a-1-0"]], "commits": []})
    assert validator("receiver_reply").is_valid({"done": [["commit", "N-a-1-0"], ["ack", 1, 1]]})


def minimal(role: str) -> str:
    blocks = [b for b in re.findall(r"```python\n(.*?)```", DOC, re.S) if b.startswith(f"# minimal {role}")
              or b.startswith(f"# minimal receiving node") and role == "receiver"]
    assert len(blocks) == 1, role
    return blocks[0]


@pytest.mark.parametrize("role", ["receiver", "bridge"])
def test_the_minimal_implementation_on_the_page_passes(tmp_path, capsys, role):
    code = minimal(role)
    assert len(code.strip().splitlines()) <= 45
    path = tmp_path / f"minimal_{role}.py"
    path.write_text(code)
    assert main(["conform", "--protocol", "corda", "--role", role, "--impl-cmd", f"{sys.executable} {path} ROLE",
                 "--max-examples", "10", "--derandomize", "--regressions", str(tmp_path / "regs")]) == 0, capsys.readouterr()
    assert "PASS" in capsys.readouterr().out


def test_the_minimal_receiver_acknowledging_before_its_commit_fails_ack_001(tmp_path, capsys):
    """The test above can fail: the page's receiver with its reply's order reversed."""
    code = minimal("receiver")
    right = 'done += [["commit", dedup_id], ["ack", *copy]]'
    assert right in code
    path = tmp_path / "reversed.py"
    path.write_text(code.replace(right, 'done += [["ack", *copy], ["commit", dedup_id]]'))
    assert main(["conform", "--protocol", "corda", "--role", "receiver", "--catalogue-only", "--format", "json",
                 "--impl-cmd", f"{sys.executable} {path} ROLE", "--regressions", str(tmp_path / "regs")]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert next(s for s in doc["scenarios"] if s["failure"])["rules"][0] == "CORDA-ACK-001"


def test_conform_help_points_to_every_protocols_contract(capsys):
    with pytest.raises(SystemExit):
        main(["conform", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for page in ("spec/remp/adapter.md", "spec/rmb/daemon.md", "spec/corda/adapter.md"):
        assert page in out, page


def test_a_topology_range_without_names_for_its_peers_is_refused(monkeypatch):
    import copy

    from rmkit.conformance.corda.driven import contract
    from rmkit.errors import SpecError
    from rmkit.specload import load_protocol_spec

    spec = copy.deepcopy(load_protocol_spec("corda"))
    spec["adapter"]["receiver"]["peers"] = ["A"]
    monkeypatch.setattr(contract, "load_protocol_spec", lambda _: spec)
    contract.adapter.cache_clear()
    try:
        with pytest.raises(SpecError, match="receiver.peers"):
            contract.adapter()
    finally:
        monkeypatch.undo()
        contract.adapter.cache_clear()
