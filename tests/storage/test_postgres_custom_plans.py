"""PostgreSQL plans every statement with its values, also once psycopg has prepared it: a
generic plan of a listing, made without them, walks a deep queue (see `_plan_each_execution`)."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.domain.model import ListQuery, NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage.postgres.backend import PostgresStore
from tests.services import postgres_schema

pytestmark = pytest.mark.postgres


def test_statements_run_many_times_keep_plans_made_with_their_values() -> None:
    with postgres_schema() as url:
        store = PostgresStore(url, pool_size=1)  # one session, whose prepared statements we read
        try:
            engine = Engine(store)
            # Given a queue, listed many more times than psycopg needs to prepare the listing
            engine.create_queue("p", "q")
            engine.send("p", "q", [NewMessage(body=b"{}")] * 20)
            for _ in range(30):
                assert len(engine.list_messages("p", "q", ListQuery(limit=10))) == 10
            # I expect the prepared listing to have been planned each time with its values
            with store.read() as tx:
                prepared: list[dict[str, Any]] = tx.all(  # type: ignore[attr-defined]
                    "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements",
                    {},
                )
        finally:
            store.close()
    listings = [p for p in prepared if "ORDER BY seq LIMIT" in p["statement"]]
    assert listings and all(p["custom_plans"] >= 5 for p in listings)
    assert [p["statement"] for p in prepared if p["generic_plans"]] == []
