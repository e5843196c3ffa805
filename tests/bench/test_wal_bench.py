"""`./dev bench wal` counts the pages each operation appends to SQLite's WAL."""

from __future__ import annotations

from bench.wal_bench import markdown, run_once


def test_each_operation_is_counted_and_named_by_the_b_trees_it_wrote() -> None:
    result = run_once(preload=200, cycles=5)
    pages = result["pages"]
    # A send writes at least the messages table and its indexes; nothing is free of pages.
    assert set(pages) == {"send", "claim", "delete"}
    assert all(n >= 3 for n in pages.values())
    assert "messages" in result["by_tree"]["send"]
    assert "claims" in result["by_tree"]["claim"]
    assert sum(result["by_tree"]["delete"].values()) >= 3
    table = markdown({"preload": 200, "cycles": 5, "variants": {"this": result, "base": result}})
    assert "| this |" in table and "| base |" in table and "- base, delete: " in table
