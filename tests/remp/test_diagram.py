"""The REMP status diagram is readable: one edge per pair of positions (the kinds along it in its
label, so parallel edges and self-loops no longer draw their labels over each other), no position
without an edge, a legend."""

from __future__ import annotations

import re

import pytest

from rmkit.conformance.remp.docs import status_diagram
from rmkit.protocols.remp.model import model_for


@pytest.mark.parametrize("profile", ["spec", "ever-node"])
def test_one_edge_per_pair_no_lone_node_and_a_legend(profile):
    dot = status_diagram(model_for(profile))
    pairs = re.findall(r"^\s*(\w+) -> (\w+) ", dot, flags=re.M)
    assert pairs and len(pairs) == len(set(pairs)), [p for p in pairs if pairs.count(p) > 1]
    nodes = set(re.findall(r"^\s*((?:validator|fullnode)_\w+) \[", dot, flags=re.M))
    assert nodes and nodes <= {n for pair in pairs for n in pair}, nodes - {n for pair in pairs for n in pair}
    assert "legend" in dot and "outside the profile's status table" in dot
    # every kind a role issues is on some edge of its cluster
    m = model_for(profile)
    for kind in m.kinds.values():
        for role in kind.issuers:
            if role in kind.transitions:
                assert re.search(rf">{kind.name}\*?</font>", dot), (role, kind.name)
