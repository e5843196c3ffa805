"""The layers of src/deadletter, checked over its import graph as the source states it.

Every `import` counts: at module level, under `if TYPE_CHECKING:`, and inside functions (a
deferred import is still a dependency). Cycles are looked for among module-level imports,
the ones that run, or are type-checked, when a module is loaded; and, separately, through
deferred imports as well.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "deadletter"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the module imported, or the package a name was imported from
    line: int
    function: str | None = None  # the enclosing function, None at module level

    def __str__(self) -> str:
        where = f" (in {self.function}())" if self.function else ""
        return f"{self.source}:{self.line} imports {self.target}{where}"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> list[Import]:
    """The deadletter imports of one module's text, each with its enclosing function."""
    found: list[Import] = []
    package = module if is_package else module.rpartition(".")[0]

    def absolute(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        return ".".join([*base, node.module] if node.module else base)

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name if function is None else f"{function}.{child.name}")
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(module, alias.name, child.lineno, function))
            elif isinstance(child, ast.ImportFrom):
                base = absolute(child)
                for alias in child.names:
                    # `from pkg import mod` depends on pkg.mod, `from pkg import name` on pkg.
                    sub = f"{base}.{alias.name}"
                    found.append(
                        Import(module, sub if sub in known else base, child.lineno, function)
                    )
            visit(child, function)

    visit(ast.parse(source), None)
    return [i for i in found if within(i.target, PACKAGE)]


def import_graph(root: Path = ROOT) -> tuple[set[str], list[Import]]:
    paths = sorted((root / PACKAGE).rglob("*.py"))
    known = {module_name(p, root) for p in paths}
    graph: list[Import] = []
    for path in paths:
        name = module_name(path, root)
        graph += imports_of(path.read_text(), name, path.name == "__init__.py", known)
    return known, graph


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@dataclass(frozen=True)
class Rule:
    """What the modules of `layer` may import from deadletter, besides themselves."""

    layer: str
    allowed: tuple[str, ...] | None = None  # None: anything not forbidden
    forbidden: tuple[str, ...] = ()
    excused: Callable[[Import], bool] = lambda _: False

    def offences(self, graph: Iterable[Import]) -> list[Import]:
        out = []
        for i in graph:
            if not within(i.source, self.layer) or within(i.target, self.layer):
                continue
            refused = any(within(i.target, f) for f in self.forbidden) or (
                self.allowed is not None and not any(within(i.target, a) for a in self.allowed)
            )
            if refused and not self.excused(i):
                out.append(i)
        return out


def _cli_serve(i: Import) -> bool:
    """`deadletter serve` starts the server in-process, `credentials create-operator`
    bootstraps its first credential and `credentials rotate-master-key` re-seals the stored
    secrets: the CLI reaches the server side only through the composition root,
    `deadletter.server`, and its configuration. The server's settings are declared in the
    configuration, and `cli/server_options.py` builds serve's options from them."""
    if (i.source, i.function, i.target) == (
        "deadletter.cli.server_options",
        None,
        "deadletter.config",
    ):
        return True
    return (i.source, i.function) in (
        ("deadletter.cli.serve", "serve"),
        ("deadletter.cli.credentials", "create_operator"),
        ("deadletter.cli.credentials", "rotate_master_key"),
    ) and i.target in ("deadletter.server", "deadletter.config")


D = "deadletter."
SERVER_SIDE = (D + "api", D + "engine", D + "storage", D + "server")
RULES = {
    "domain": Rule(D + "domain", allowed=(D + "clock",)),
    # Credentials, roles and signatures: pure values and functions beside the domain.
    "auth": Rule(D + "auth", allowed=(D + "domain", D + "clock")),
    "storage": Rule(D + "storage", allowed=(D + "domain", D + "auth", D + "clock")),
    "engine": Rule(
        D + "engine", allowed=(D + "domain", D + "auth", D + "clock", D + "storage.base")
    ),
    "api": Rule(
        D + "api", allowed=(D + "engine", D + "domain", D + "auth", D + "clock", D + "config")
    ),
    # I/O behind the interfaces the engine owns (the webhook sender), wired in by the server.
    "adapters": Rule(D + "adapters", allowed=(D + "engine", D + "domain", D + "clock")),
    "client": Rule(D + "client", forbidden=SERVER_SIDE),
    "cli": Rule(D + "cli", forbidden=(*SERVER_SIDE, D + "config"), excused=_cli_serve),
    "pipeline": Rule(D + "pipeline", forbidden=(*SERVER_SIDE, D + "config")),
    # deadletter.server is the composition root: it may import anything.
}


# The engine defines what it needs from the network (`engine.notifier.WebhookSender`); an
# adapter outside it makes the calls.
HTTP_CLIENTS = frozenset(
    {"httpx", "httpcore", "requests", "urllib3", "aiohttp", "h11", "h2", "pycurl",
     "http.client", "urllib.request", "xmlrpc.client", "websockets"}
)  # fmt: skip


def outside_imports(source: str, module: str) -> list[Import]:
    """Every import of a module's text that is not deadletter's, at any depth."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append(Import(module, node.module, node.lineno))
            found += [Import(module, f"{node.module}.{a.name}", node.lineno) for a in node.names]
    return [i for i in found if not within(i.target, PACKAGE)]


def http_client_imports(modules: Iterable[tuple[str, str]]) -> list[Import]:
    """The imports of an HTTP client among `modules` (name, source)."""
    return [
        i
        for name, source in modules
        for i in outside_imports(source, name)
        if any(within(i.target, client) for client in HTTP_CLIENTS)
    ]


def cycles(graph: Iterable[Import], deferred: bool = False) -> list[list[Import]]:
    """The import cycles among module-level imports (and those inside functions too when
    `deferred`), each as the imports between its modules (a strongly connected component of
    more than one module, or a module importing itself)."""
    graph = [i for i in graph if deferred or i.function is None]
    edges: dict[str, set[str]] = {}
    for i in graph:
        edges.setdefault(i.source, set()).add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                components.append(component)

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return [
        sorted(
            (i for i in graph if i.source in c and i.target in c),
            key=str,
        )
        for c in components
    ]


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    return import_graph()[1]


def check(rule: str, graph: list[Import]) -> None:
    offences = RULES[rule].offences(graph)
    assert not offences, f"{RULES[rule].layer} breaks its layer:\n" + "\n".join(
        f"  {i}" for i in offences
    )


def test_domain_imports_nothing_else_from_deadletter(graph: list[Import]) -> None:
    check("domain", graph)


def test_storage_imports_only_the_domain(graph: list[Import]) -> None:
    check("storage", graph)


def test_engine_imports_only_the_domain_and_the_storage_interface(graph: list[Import]) -> None:
    check("engine", graph)


def test_the_faces_import_the_engine_never_storage_pipeline_or_cli(graph: list[Import]) -> None:
    check("api", graph)


def facade_bypasses(graph: Iterable[Import]) -> list[Import]:
    """Imports by the faces of an engine module past the façade (the `deadletter.engine`
    package, which exports what a face may use)."""
    return [
        i
        for i in graph
        if within(i.source, D + "api") and within(i.target, D + "engine")
        and i.target != D + "engine"
    ]  # fmt: skip


def test_the_faces_call_the_engine_through_its_facade_only(graph: list[Import]) -> None:
    assert facade_bypasses(graph) == []


def test_a_face_reaching_past_the_facade_is_reported() -> None:
    source = "from deadletter.engine import Engine\nfrom deadletter.engine.claims import claim\n"
    known = {"deadletter.engine", "deadletter.engine.claims"}
    graph = imports_of(source, "deadletter.api.zaqar.x", False, known)
    assert [i.target for i in facade_bypasses(graph)] == ["deadletter.engine.claims"]


def test_adapters_import_only_the_engine_and_the_domain(graph: list[Import]) -> None:
    check("adapters", graph)


def test_the_engine_imports_no_http_client() -> None:
    paths = sorted((ROOT / PACKAGE / "engine").rglob("*.py"))
    found = http_client_imports((module_name(p), p.read_text()) for p in paths)
    assert not found, "the engine calls HTTP itself:\n" + "\n".join(f"  {i}" for i in found)


def test_the_client_imports_nothing_server_side(graph: list[Import]) -> None:
    check("client", graph)


def test_the_cli_talks_http_except_to_start_the_server(graph: list[Import]) -> None:
    check("cli", graph)


def test_the_pipeline_talks_http(graph: list[Import]) -> None:
    check("pipeline", graph)


def test_no_import_cycles(graph: list[Import]) -> None:
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(
        "  " + "; ".join(map(str, cycle)) for cycle in found
    )


def test_no_import_cycles_hidden_in_functions(graph: list[Import]) -> None:
    """A cycle broken only by deferring one import is still a cycle between the modules."""
    found = cycles(graph, deferred=True)
    assert not found, "import cycles through deferred imports:\n" + "\n".join(
        "  " + "; ".join(map(str, cycle)) for cycle in found
    )


# The checker itself, on graphs made for it.


def test_a_face_importing_storage_is_reported() -> None:
    # Given a face that reaches into a backend, beside imports the rules allow
    graph = [
        Import("deadletter.api.sqs.actions", "deadletter.engine.engine", 3),
        Import("deadletter.api.sqs.actions", "deadletter.domain.model", 4),
        Import("deadletter.api.sqs.actions", "deadletter.storage.sqlite.backend", 9, "receive"),
        Import("deadletter.server", "deadletter.storage", 5),
    ]
    # I expect the face's rule to name that import, and that import alone
    offences = RULES["api"].offences(graph)
    assert [str(i) for i in offences] == [
        "deadletter.api.sqs.actions:9 imports deadletter.storage.sqlite.backend (in receive())"
    ]
    with pytest.raises(AssertionError, match=r"storage\.sqlite\.backend"):
        check("api", graph)


def test_only_the_cli_serve_command_may_import_the_server() -> None:
    graph = [
        Import("deadletter.cli.serve", "deadletter.server", 20, "serve"),
        Import("deadletter.cli.serve", "deadletter.config", 21, "serve"),
        Import("deadletter.cli.dlq", "deadletter.server", 7),
        Import("deadletter.cli.serve", "deadletter.engine.engine", 22, "serve"),
    ]
    assert [str(i) for i in RULES["cli"].offences(graph)] == [
        "deadletter.cli.dlq:7 imports deadletter.server",
        "deadletter.cli.serve:22 imports deadletter.engine.engine (in serve())",
    ]


def test_an_http_client_imported_anywhere_in_an_engine_module_is_reported() -> None:
    source = (
        "import json, urllib.request\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from httpx import Client\n"
        "def later():\n"
        "    import requests.adapters\n"
        "    from deadletter.engine import notifier\n"
        "    from httpcore import ConnectionPool\n"
    )
    found = http_client_imports([("deadletter.engine.hooks", source)])
    assert [str(i) for i in found] == [
        "deadletter.engine.hooks:1 imports urllib.request",
        "deadletter.engine.hooks:4 imports httpx",
        "deadletter.engine.hooks:4 imports httpx.Client",
        "deadletter.engine.hooks:6 imports requests.adapters",
        "deadletter.engine.hooks:8 imports httpcore",
        "deadletter.engine.hooks:8 imports httpcore.ConnectionPool",
    ]


def test_a_cycle_through_a_type_checking_import_is_reported() -> None:
    source_app = "from deadletter.api.zaqar.routes import ROUTES\n"
    source_routes = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from deadletter.api.app import AppOptions\n"
        "def later():\n"
        "    from deadletter.engine import engine\n"
    )
    known = {"deadletter.api.app", "deadletter.api.zaqar.routes", "deadletter.engine.engine"}
    graph = imports_of(source_app, "deadletter.api.app", False, known) + imports_of(
        source_routes, "deadletter.api.zaqar.routes", False, known
    )
    assert [str(i) for i in graph] == [
        "deadletter.api.app:1 imports deadletter.api.zaqar.routes",
        "deadletter.api.zaqar.routes:3 imports deadletter.api.app",
        "deadletter.api.zaqar.routes:5 imports deadletter.engine.engine (in later())",
    ]
    assert [[str(i) for i in c] for c in cycles(graph)] == [
        [
            "deadletter.api.app:1 imports deadletter.api.zaqar.routes",
            "deadletter.api.zaqar.routes:3 imports deadletter.api.app",
        ]
    ]


def test_a_cycle_through_a_deferred_import_is_reported_only_when_asked() -> None:
    graph = [
        Import("deadletter.pipeline.schema", "deadletter.pipeline.datasource", 83, "register"),
        Import("deadletter.pipeline.datasource", "deadletter.pipeline.schema", 33),
    ]
    assert cycles(graph) == []
    assert cycles(graph, deferred=True) == [sorted(graph, key=str)]


def test_relative_imports_are_read_as_absolute() -> None:
    known = {"deadletter.api.sqs.errors", "deadletter.storage.base"}
    source = "from .errors import SqsError\nfrom ...storage import base\nfrom .. import app\n"
    graph = imports_of(source, "deadletter.api.sqs.actions", False, known)
    assert [i.target for i in graph] == [
        "deadletter.api.sqs.errors",
        "deadletter.storage.base",
        "deadletter.api",
    ]


def test_the_graph_covers_every_module() -> None:
    known, graph = import_graph()
    assert "deadletter.server" in known and "deadletter.api.zaqar.routes" in known
    assert any(i.source == "deadletter.server" for i in graph)
