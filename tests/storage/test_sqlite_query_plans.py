"""Lookups that must not turn into scans of a whole queue as it grows."""

from __future__ import annotations

from pathlib import Path

from deadletter.storage.sql import queries
from deadletter.storage.sqlite.backend import SQLITE, SQLiteStore


def test_the_messages_of_a_claim_are_found_through_the_claim_index(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    sql = SQLITE.compile(queries.CLAIMED_BY).text
    try:
        params = {"project": "p", "queue": "q", "claim_id": "c"}
        plan = [row[3] for row in store._conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    finally:
        store.close()
    assert any(step.startswith("SEARCH messages USING INDEX messages_claim") for step in plan)
    assert not any("messages_queue_seq" in step for step in plan), plan
