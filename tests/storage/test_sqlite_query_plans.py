"""Lookups that must not turn into scans of a whole queue as it grows."""

from __future__ import annotations

from pathlib import Path

from deadletter.storage.sqlite.backend import CLAIMED_BY, SQLiteStore


def test_the_messages_of_a_claim_are_found_through_the_claim_index(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    try:
        plan = [
            row[3]
            for row in store._conn.execute(f"EXPLAIN QUERY PLAN {CLAIMED_BY}", ("p", "q", "c"))
        ]
    finally:
        store.close()
    assert any(step.startswith("SEARCH messages USING INDEX messages_claim") for step in plan)
    assert not any("messages_queue_seq" in step for step in plan), plan
