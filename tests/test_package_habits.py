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


# A module longer than this holds more than one concern; split it by concern, into modules
# whose names say what each holds.
MAX_MODULE_LINES = 500
# Modules over the bound, each being split; an entry leaves the list when its module does.
OVER_THE_BOUND: set[str] = set()


def test_no_module_is_longer_than_the_bound() -> None:
    lengths = {
        str(path.relative_to(SOURCE)): len(path.read_text().splitlines())
        for path in sorted(SOURCE.rglob("*.py"))
    }
    over = {name for name, n in lengths.items() if n > MAX_MODULE_LINES}
    assert over - OVER_THE_BOUND == set(), f"split by concern (at most {MAX_MODULE_LINES} lines)"
    assert OVER_THE_BOUND - over == set(), "now within the bound: take it off OVER_THE_BOUND"
