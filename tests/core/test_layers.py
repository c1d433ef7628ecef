"""The import contract: the layers ARCHITECTURE.md draws, held by the code.

Every import of every module of the package roots counts: at module level or inside a function,
absolute or relative (resolved). A module may import its own layer or one below, never one above;
no set of modules may import each other in a cycle (an import inside a function hides a cycle from
Python, not from this test); and one protocol's modules never import another protocol's.

Layers, lowest first (setup.py's ROOTS name the folders):

0. ``rmkit/`` (the core) and the data packages ``spec/``, ``tla/``
1. ``protocols/<p>/``: the compiled spec, record formats, signing
2. ``reference_impl/<p>/``: the reference implementations
3. ``conformance/``, ``spark_checks/``, ``fixtures/``: checkers, driven suites, the audit, the
   fixture builders (what the commands run)

The core reaches what sits above it through entry points (``rmkit.protocols``, ``rmkit.audit``:
pyproject.toml), never by import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# repository folder -> (installed package, layer)
ROOTS = {
    "rmkit": ("rmkit", 0),
    "spec": ("rmkit.spec", 0),
    "tla": ("rmkit.tla", 0),
    "protocols": ("rmkit.protocols", 1),
    "reference_impl": ("rmkit.reference_impl", 2),
    "conformance": ("rmkit.conformance", 3),
    "spark_checks": ("rmkit.spark_checks", 3),
    "fixtures": ("rmkit.fixtures", 3),
}
LAYER_NAMES = {0: "core", 1: "protocol layer", 2: "reference implementations", 3: "checkers and suites"}
# the protocols: one folder each in the protocol layer
PROTOCOLS = tuple(sorted(p.name for p in (REPO / "protocols").iterdir() if (p / "__init__.py").exists()))


def package_modules(repo: Path) -> dict[str, tuple[Path, bool, int, Path]]:
    """Every module of the package roots: dotted name -> (file, is a package, layer, its path in
    the repository)."""
    found = {}
    for folder, (package, layer) in ROOTS.items():
        for path in sorted((repo / folder).rglob("*.py")):
            parts = list(path.relative_to(repo / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join([package, *parts])] = (path, is_package, layer, path.relative_to(repo))
    return found


def imports_of(name: str, path: Path, is_package: bool, known, is_module) -> list[tuple[str, int]]:
    """The modules of the package roots ``name`` imports, each with the line of the import: every
    ``import`` and ``from ... import`` anywhere in the file (in a function, a class, a branch),
    relative ones resolved. ``known(dotted)`` is the longest module of ours that ``dotted`` names
    or lies in (``a.b.name`` -> ``a.b``), ``is_module`` whether it names one exactly."""
    package = name if is_package else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from P import m``: the module P.m where that is one, else (a name P defines) P itself
            candidates = [f"{source}.{alias.name}" if is_module(f"{source}.{alias.name}") else source
                          for alias in node.names]
        else:
            continue
        for candidate in candidates:
            target = known(candidate)
            if target and target != name:
                found.append((target, node.lineno))
    return sorted(set(found))


def import_graph(repo: Path) -> tuple[dict, dict[str, list[tuple[str, int]]]]:
    modules = package_modules(repo)

    def known(dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts:  # the longest prefix that is a module of ours (``a.b.name`` -> ``a.b``)
            if ".".join(parts) in modules:
                return ".".join(parts)
            parts.pop()
        return None

    return modules, {name: imports_of(name, *info[:2], known, modules.__contains__) for name, info in modules.items()}


def protocol_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] != "spec" and parts[2] in PROTOCOLS else None


def upward_imports(modules, graph) -> list[str]:
    found = []
    for name, targets in graph.items():
        _, _, layer, path = modules[name]
        for target, line in targets:
            if modules[target][2] > layer:
                found.append(f"{path}:{line}: {name} ({LAYER_NAMES[layer]}) imports "
                             f"{target} ({LAYER_NAMES[modules[target][2]]})")
    return found


def cross_protocol_imports(modules, graph) -> list[str]:
    found = []
    for name, targets in graph.items():
        mine = protocol_of(name)
        for target, line in targets:
            theirs = protocol_of(target)
            if mine and theirs and mine != theirs:
                found.append(f"{modules[name][3]}:{line}: {name} ({mine}) imports {target} ({theirs})")
    return found


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each
    sorted: a set of modules every one of which imports, through the others, every other."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    edges = {name: sorted({t for t, _ in targets}) for name, targets in graph.items()}
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


@pytest.fixture(scope="module")
def graph():
    return import_graph(REPO)


def test_the_roots_are_the_installed_ones():
    """The folders this contract places are the ones setup.py installs: a new root must be given
    a layer here before it can be imported."""
    setup = (REPO / "setup.py").read_text()
    for folder, (package, _) in ROOTS.items():
        assert f'"{package}": "{folder}"' in setup, f"{folder}/ is not a root of setup.py as {package}"
    roots = {line.split('"')[3] for line in setup.splitlines() if line.strip().startswith('"rmkit')}
    assert roots <= set(ROOTS), f"setup.py installs folders this contract gives no layer: {roots - set(ROOTS)}"


def test_no_module_imports_a_layer_above_its_own(graph):
    modules, edges = graph
    assert len(modules) > 200  # the walk found the package roots
    found = upward_imports(modules, edges)
    assert not found, "imports of a higher layer:\n" + "\n".join(found)


def test_no_protocol_imports_another(graph):
    assert set(PROTOCOLS) >= {"remp", "rmb", "corda"}
    found = cross_protocol_imports(*graph)
    assert not found, "imports across protocols:\n" + "\n".join(found)


def test_no_import_cycle(graph):
    found = cycles(graph[1])
    assert not found, "import cycles (each line: modules that import each other, some inside functions):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_the_contract_sees_what_it_must(tmp_path):
    """A planted upward import inside a function, a relative one and a cycle closed by an import
    inside a function are all found (the checks above would pass over an empty graph)."""
    for folder in ROOTS:
        (tmp_path / folder).mkdir()
    (tmp_path / "rmkit" / "__init__.py").write_text("")
    (tmp_path / "rmkit" / "a.py").write_text("def f():\n    from rmkit.conformance.remp import checker\n")
    (tmp_path / "rmkit" / "b.py").write_text("from . import c\n")
    (tmp_path / "rmkit" / "c.py").write_text("def g():\n    import rmkit.b\n")
    (tmp_path / "conformance" / "remp").mkdir()
    (tmp_path / "conformance" / "remp" / "checker.py").write_text("from ..rmb import judge\n")
    (tmp_path / "conformance" / "rmb").mkdir()
    (tmp_path / "conformance" / "rmb" / "judge.py").write_text("")
    modules, edges = import_graph(tmp_path)
    assert [u.split(": ", 1)[1] for u in upward_imports(modules, edges)] == [
        "rmkit.a (core) imports rmkit.conformance.remp.checker (checkers and suites)"]
    assert [c.split(": ", 1)[1] for c in cross_protocol_imports(modules, edges)] == [
        "rmkit.conformance.remp.checker (remp) imports rmkit.conformance.rmb.judge (rmb)"]
    assert cycles(edges) == [["rmkit.b", "rmkit.c"]]
