"""The faces' place in the layers, read from their source: they import the engine and the
domain (never storage), and no two modules of `deadletter.api` import each other in a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import deadletter.api

API_ROOT = Path(deadletter.api.__file__).parent
ALLOWED = ("deadletter.api", "deadletter.engine", "deadletter.domain")


def _module_name(path: Path) -> str:
    parts = path.relative_to(API_ROOT.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every deadletter module `path` imports, at any depth (TYPE_CHECKING blocks included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            # `from deadletter.api import openapi` imports the module deadletter.api.openapi
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {name for name in found if name.split(".")[0] == "deadletter"}


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in sorted(API_ROOT.rglob("*.py"))}
    return {name: _imports(path) & modules.keys() - {name} for name, path in modules.items()}


def test_faces_import_only_the_engine_and_the_domain() -> None:
    for path in sorted(API_ROOT.rglob("*.py")):
        for name in _imports(path):
            assert name.startswith(ALLOWED), f"{_module_name(path)} imports {name}"


def test_no_import_cycle_inside_api() -> None:
    graph = _graph()
    assert "deadletter.api.zaqar.routes" in graph["deadletter.api.app"]
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name) :], name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
