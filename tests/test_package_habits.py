"""Facts about the package stated once: its version (deadletter.__version__, which the build
reads) and each logger's name (its module's, `__name__`)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import deadletter

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "deadletter"


def test_the_version_is_stated_once_and_the_build_reads_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"], "the version lives in deadletter/__init__.py"
    assert "version" in project["project"]["dynamic"]
    source = ROOT / project["tool"]["hatch"]["version"]["path"]
    assert source == SOURCE / "__init__.py"
    assert f'__version__ = "{deadletter.__version__}"' in source.read_text()


def test_the_changelog_names_the_current_version() -> None:
    assert f"## {deadletter.__version__}" in (ROOT / "CHANGELOG.md").read_text()


def test_every_deadletter_logger_is_named_after_its_module() -> None:
    """A hand-written name goes stale when a module moves, and a filter on a package
    (`deadletter.engine`) misses a logger named outside it."""
    by_hand = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "getLogger"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).startswith("deadletter")
            ):
                by_hand.append(f"{path.relative_to(SOURCE)}:{node.lineno}")
    assert by_hand == [], "use logging.getLogger(__name__)"
