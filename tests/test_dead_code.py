"""No dead code in src/deadletter: vulture finds nothing beyond its reviewed whitelist
(vulture_whitelist.py), and the whitelist excuses nothing that is not a finding."""

from __future__ import annotations

import ast
from pathlib import Path

import vulture

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "deadletter"
WHITELIST = ROOT / "vulture_whitelist.py"


def unused(*paths: Path) -> list[vulture.core.Item]:
    finder = vulture.Vulture()
    finder.scavenge([str(p) for p in paths])
    return list(finder.get_unused_code())


def excused() -> set[str]:
    """The names the whitelist mentions, one `_.name` a line."""
    tree = ast.parse(WHITELIST.read_text())
    return {
        node.value.attr
        for node in tree.body
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Attribute)
    }


def test_vulture_finds_no_dead_code() -> None:
    found = unused(SOURCE, WHITELIST)
    assert not found, (
        "remove the dead code, or add it to vulture_whitelist.py with why it is used:\n"
        + "\n".join(item.get_report(add_size=False) for item in found)
    )


def test_the_whitelist_excuses_only_findings() -> None:
    """An entry whose name vulture no longer finds unused (its definition removed, or used
    by src since) would hide the next definition of that name that is dead."""
    stale = excused() - {item.name for item in unused(SOURCE)}
    assert not stale, f"remove from vulture_whitelist.py: {', '.join(sorted(stale))}"
