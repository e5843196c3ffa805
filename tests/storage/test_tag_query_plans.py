"""The statements of consumer tags go straight to what they return: a tag's claim reads on
from its cursor by sequence number and probes its states by key, never scanning a queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deadletter.storage.sql import tag_queries as t
from deadletter.storage.sqlite.backend import SQLiteStore
from deadletter.storage.sqlite.dialect import SQLITE

PARAMS: dict[str, Any] = {
    "project": "p", "queue": "q", "tag": "a", "after": 0, "start_at": 0.0, "now": 1.0,
    "limit": 10, "ids": ["a"], "claim_id": "c", "done": 1e12,
}  # fmt: skip
BY_KEY = "sqlite_autoindex_tag_states_1 (message_id=? AND tag=?)"


@pytest.mark.parametrize(
    ("sql", "steps"),
    [
        (t.TAG_CLAIMABLE_NEW, ["messages_queue_seq (project=? AND queue=? AND seq>?)", BY_KEY]),
        (t.TAG_FIRST_UNSEEN, ["messages_queue_seq (project=? AND queue=? AND seq>?)", BY_KEY]),
        (t.TAG_CLAIMABLE_AGAIN, ["tag_states_live (project=? AND queue=? AND tag=?"]),
        (t.TAG_CLAIMED_BY, ["tag_states_claim (project=? AND queue=? AND tag=? AND claim_id=?)"]),
        (t.TAG_VIEWS, ["sqlite_autoindex_messages_1 (id=?)", BY_KEY]),
        (t.LOCK_MESSAGES, ["sqlite_autoindex_messages_1 (id=?)"]),
        (t.COUNT_DEFAULT_DONE, ["messages_hidden (project=? AND queue=? AND visible_at>?)"]),
    ],
)
def test_sqlite_tag_statements_search_their_index(
    tmp_path: Path, sql: str, steps: list[str]
) -> None:
    store = SQLiteStore(tmp_path / "plans.db")
    try:
        statement = SQLITE.compile(sql)
        query = f"EXPLAIN QUERY PLAN {statement.text}"
        plan = [r[3] for r in store._conn.execute(query, SQLITE.bind(statement, PARAMS))]
    finally:
        store.close()
    for step in steps:
        assert any(step in s for s in plan), (step, plan)
    assert not any(s.startswith(("SCAN m", "SCAN s", "SCAN messages")) for s in plan), plan
