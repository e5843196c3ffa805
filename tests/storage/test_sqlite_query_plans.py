"""Lookups that must not turn into scans of a whole queue as it grows."""

from __future__ import annotations

from pathlib import Path

from deadletter.storage.sql import queries
from deadletter.storage.sqlite.backend import SQLiteStore
from deadletter.storage.sqlite.dialect import REDRIVE_IN_PLACE, SQLITE


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


def test_a_redrive_in_place_finds_each_message_by_its_id(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    sql = SQLITE.compile(REDRIVE_IN_PLACE).text
    params = {"queue": "q", "now": 1.0, "expires_at": 2.0, "event": "{}", "ids": "[]",
              "visible_at": 1.0, "only_tag": None, "hidden": 0,
              "first": 1, "project": "p"}  # fmt: skip
    try:
        plan = [row[3] for row in store._conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    finally:
        store.close()
    assert "SEARCH messages USING INDEX sqlite_autoindex_messages_1 (id=?)" in plan, plan
    assert not any(step.startswith("SCAN messages") for step in plan), plan
