"""Every rmkit command builds the whole parser, so what the parser imports every command pays for
at start-up, a check of a tiny log in CI included. The protocols' own commands (the RMB daemons and
recorder, the Corda brokers, nodes and harness) import their servers, event loops, databases and
clients when they run, never when their arguments are declared."""

from __future__ import annotations

import json
import subprocess
import sys

# what building the parser must leave unimported: none of it is needed to read a command line
SERVER_SIDE = ("asyncio", "aiohttp", "redis", "stomp", "sqlite3", "ssl", "pyspark", "hypothesis", "nacl",
               "rich", "jsonschema", "subprocess", "multiprocessing",
               "rmkit.reference_impl.corda.node", "rmkit.reference_impl.rmb.daemon")

PROBE = f"""
import json, sys
from rmkit.cli import build_parser
build_parser()
print(json.dumps([m for m in {SERVER_SIDE!r} if m in sys.modules]))
"""


def test_building_the_parser_imports_no_server_side_module():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    imported = json.loads(out)
    assert imported == [], (f"building rmkit's parser imported {imported}: import them where the command runs "
                            "(python -X importtime -c 'from rmkit.cli import build_parser; build_parser()' shows who)")


def test_the_corda_variants_offered_are_the_nodes():
    """The parser offers the variants from a module of their own; the node must implement exactly
    those: each faulty variant the node tests for is offered, and each one offered is tested for."""
    import inspect
    import re

    from rmkit.reference_impl.corda import node, variants

    tested = set(re.findall(r'variant [!=]= "(\w+)"', inspect.getsource(node)))
    assert tested, "the node no longer tests its variant as `variant == \"name\"`: update this test's pattern"
    assert tested | {"reference"} == set(variants.VARIANTS), (
        f"the node implements {sorted(tested | {'reference'})}; variants.py offers {sorted(variants.VARIANTS)}")
