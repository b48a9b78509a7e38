"""Imports flow one way: no module of `keras_seq` or `zoo` reaches itself
through the modules it imports, at the top or inside a function (read from
the source's syntax tree, so an import no test executes counts too)."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("keras_seq", "zoo")


def _modules():
    """Module name -> (path, is a package's `__init__`)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            init = parts[-1] == "__init__"
            if init:
                parts = parts[:-1]
            found[".".join(parts)] = (path, init)
    return found


def _imported(name, path, init, modules):
    """The project modules that `name` imports anywhere in its source.

    `from a import b` names module `a.b` where that is a module, else `a`;
    relative imports are resolved against the module's package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if init else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                names.add(full if full in modules else base)
    edges = set()
    for imported in names:
        # `import a.b.c` loads `a.b.c`; the longest project module it names.
        while imported and imported not in modules:
            imported = imported.rpartition(".")[0]
        if imported and imported != name:
            edges.add(imported)
    return edges


def import_graph():
    modules = _modules()
    return {
        name: _imported(name, path, init, modules)
        for name, (path, init) in modules.items()
    }


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for following in graph.get(node, ()):
            if following not in index:
                visit(following)
                low[node] = min(low[node], low[following])
            elif following in on_stack:
                low[node] = min(low[node], index[following])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_in_function_and_relative_imports():
    graph = import_graph()
    # `zoo.recipes.workflow` imports `corpora` inside its functions.
    assert "zoo.recipes.corpora" in graph["zoo.recipes.workflow"]
    assert "zoo.recipes.families" in graph["zoo.recipes.workflow"]
    assert len(graph) > 100


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package):
    graph = import_graph()
    found = [c for c in cycles(graph) if c[0].split(".")[0] == package]
    assert found == [], f"modules that import each other: {found}"
