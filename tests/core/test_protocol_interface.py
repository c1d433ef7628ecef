"""The plug-in interface holds what the core relies on: every method or attribute the core (and the
Spark audit, which runs a protocol's checker) uses on a protocol is declared on
:class:`rmkit.protocol.Protocol` or on one of its capabilities, and every installed protocol fills
in the required part and each capability it claims. A protocol written against the declared
interface then works with every command, and one the core would call past the interface is caught
here, not by a user."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from rmkit.protocol import CAPABILITIES, DrivesImplementations, Protocol, capable, default_protocol, registry, require
from rmkit.errors import UsageError

REPO = Path(__file__).resolve().parents[2]
CALLERS = [REPO / "rmkit", REPO / "spark_checks"]

# the names a protocol object goes by in the core
PROTOCOL_VARIABLES = {"proto"}
# calls that return a protocol: get_protocol(name), require(proto, capability), registry()[name]
PROTOCOL_GETTERS = {"get_protocol", "require"}


def _is_protocol(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in PROTOCOL_VARIABLES
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in PROTOCOL_GETTERS
    if isinstance(node, ast.Subscript):
        value = node.value
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "registry"
    return False


def used_on_protocols(source: str) -> set[str]:
    """The attribute names ``source`` uses on a protocol: ``proto.X``, ``get_protocol(n).X``,
    ``registry()[n].X``, ``getattr(proto, "X")``, and the hook names handed to
    ``_add_protocol_options`` (the command line calls them by name)."""
    used = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _is_protocol(node.value):
            used.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "getattr" and _is_protocol(node.args[0]) and isinstance(node.args[1], ast.Constant):
                used.add(node.args[1].value)
            if node.func.id == "_add_protocol_options" and isinstance(node.args[2], ast.Constant):
                used.add(node.args[2].value)
    return used


def core_uses() -> dict[str, set[str]]:
    """attribute -> the files that use it on a protocol."""
    uses: dict[str, set[str]] = {}
    for root in CALLERS:
        for path in root.rglob("*.py"):
            for name in used_on_protocols(path.read_text(encoding="utf-8")):
                uses.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return uses


def declared() -> set[str]:
    return set(dir(Protocol)).union(*(dir(mixin) for mixin, _ in CAPABILITIES.values()))


def test_every_attribute_the_core_uses_on_a_protocol_is_declared():
    uses = core_uses()
    # the walk sees the command line's calls (not an empty set that would pass anything)
    assert {"make_checker", "validate", "rule_fixture_options", "simulate", "conform", "nouns", "help_text",
            "add_check_arguments", "sharded_checker", "operator_figures"} <= set(uses)
    undeclared = {name: sorted(files) for name, files in uses.items() if name not in declared()}
    assert not undeclared, f"used on a protocol but declared neither on Protocol nor on a capability: {undeclared}"


def test_the_walk_sees_each_way_the_core_reaches_a_protocol():
    source = ("proto.a()\nget_protocol(n).b\nregistry()[n].c\ngetattr(proto, 'd', None)\n"
              "require(get_protocol(n), 'check').e()\n_add_protocol_options(o, 'check', 'f')\nother.g()\n")
    assert used_on_protocols(source) == {"a", "b", "c", "d", "e", "f"}


def _overrides(proto: Protocol, owner: type, name: str) -> bool:
    return getattr(type(proto), name) is not getattr(owner, name)


@pytest.mark.parametrize("name", sorted(registry()))
def test_each_protocol_fills_in_the_required_part_and_the_capabilities_it_claims(name):
    proto = registry()[name]
    assert proto.name == name and proto.title
    for method in ("spec", "rules", "validate", "diagram", "docs"):
        assert _overrides(proto, Protocol, method), f"protocol {name} does not define {method}()"
    assert proto.nouns.records and proto.nouns.subject and proto.nouns.subjects
    must = {"check": ("make_checker", "sharded_checker"), "simulate": ("simulate",), "keys": ("keys",),
            "conform": ("conform", "replay")}
    # (found in the protocol folder's shape where the protocol does not define them: DrivesImplementations)
    in_layout = {"conform": ("driven.cli", "conform"), "replay": ("driven.cli", "replay")}
    assert set(must) == set(CAPABILITIES)
    for capability, methods in must.items():
        if capable(proto, capability):
            for method in methods:
                if method in in_layout and not _overrides(proto, CAPABILITIES[capability][0], method):
                    module, function = in_layout[method]
                    package = type(proto).__module__.rpartition(".")[0]
                    assert callable(getattr(importlib.import_module(f"{package}.{module}"), function, None)), \
                        f"protocol {name} claims {capability} but neither defines {method}() nor has {module}.{function}"
                    continue
                assert _overrides(proto, CAPABILITIES[capability][0], method), \
                    f"protocol {name} claims {capability} but does not define {method}()"


class _Elsewhere(DrivesImplementations, Protocol):
    """A protocol whose package holds no pytest_support module (this test's own)."""

    name = "elsewhere"


@pytest.mark.parametrize("name", sorted(registry()))
def test_a_protocol_finds_its_driven_commands_and_pytest_support_in_its_own_folder(name):
    proto = registry()[name]
    if not capable(proto, "conform"):
        pytest.skip(f"protocol {name} drives no implementation")
    package = type(proto).__module__.rpartition(".")[0]
    support = proto.pytest_support()
    assert support is not None and type(support).__module__ == f"{package}.pytest_support"
    assert _Elsewhere().pytest_support() is None


@pytest.mark.parametrize("name", sorted(registry()))
def test_a_protocol_has_no_capability_method_it_does_not_claim(name):
    """A method of a capability defined on a protocol that does not claim it would never be called:
    the protocol meant to claim the capability."""
    proto = registry()[name]
    for capability, (mixin, _) in CAPABILITIES.items():
        if not capable(proto, capability):
            own = {m for m in vars(mixin) if not m.startswith("_")} & set(vars(type(proto)))
            assert not own, f"protocol {name} defines {sorted(own)} of capability {capability} without claiming it"


def test_a_command_a_protocol_has_no_capability_for_is_a_usage_error_naming_what_it_lacks():
    lacking = [(p, c) for p in registry().values() for c in CAPABILITIES if not capable(p, c)]
    assert lacking  # (not every installed protocol simulates)
    proto, capability = lacking[0]
    with pytest.raises(UsageError, match=f"protocol {proto.name} has no {CAPABILITIES[capability][1]}"):
        require(proto, capability)


def test_the_default_protocol_is_the_one_that_declares_itself_so():
    declaring = [name for name, proto in registry().items() if proto.default]
    assert len(declaring) == 1, f"protocols declaring themselves the default: {declaring}"
    assert default_protocol() == declaring[0]
    for capability in CAPABILITIES:  # a command few protocols have: its default among those
        chosen = default_protocol(capability)
        assert chosen is None or capable(registry()[chosen], capability)
