"""`./dev bench wal` counts what each operation appends to the write-ahead log."""

from __future__ import annotations

import pytest
from bench.wal_bench import markdown, run_once, run_postgres


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


@pytest.mark.postgres
def test_on_postgresql_each_operation_adds_wal() -> None:
    kib, cpu = run_postgres(preload=100, cycles=3)
    assert set(kib) == {"send", "claim", "delete"}
    # ten 1 KiB bodies are in the WAL of a send; a claim rewrites its rows
    assert kib["send"] >= 10 and kib["claim"] > 0 and kib["delete"] > 0
    # the engine's process spends CPU on a cycle; the backend's is read where it runs here
    assert cpu["process_ms_per_cycle"] > 0
    assert set(cpu) <= {"process_ms_per_cycle", "backend_ms_per_cycle"}
