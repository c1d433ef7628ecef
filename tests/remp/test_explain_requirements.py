"""Driven conformance cites requirement ids (what a machine must do that no log shows) beside rule
ids; `rmkit explain` must explain every id a report can cite, not call it unknown."""

import pytest

from rmkit.cli import main
from rmkit.protocol import get_protocol, protocol_names
from rmkit.rules import citation

REQUIREMENTS = [(name, rid, req) for name in protocol_names() for rid, req in get_protocol(name).requirements().items()]


def test_remp_has_requirements_to_explain():
    assert any(name == "remp" for name, _, _ in REQUIREMENTS)


@pytest.mark.parametrize("name,rid,req", REQUIREMENTS, ids=[rid for _, rid, _ in REQUIREMENTS])
def test_every_requirement_is_explained_with_its_source(name, rid, req, capsys):
    assert main(["explain", rid.lower()]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{rid}: {req['title']}")
    assert citation(req["source"]) in out and "driven conformance" in out


def test_the_list_names_the_requirements(capsys):
    assert main(["explain", "list"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert {rid for _, rid, _ in REQUIREMENTS} <= listed


def test_a_near_miss_suggests_a_requirement(capsys):
    assert main(["explain", "REMP-VOTE-01"]) == 2
    assert "REMP-VOTE-001" in capsys.readouterr().err
