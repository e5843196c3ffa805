"""PostgreSQL plans a statement with optional filters with its values every time: a generic
plan of a prepared listing, made without them, walks a deep queue (`PostgresDialect.execute`)."""

from __future__ import annotations

from typing import Any

import pytest

from deadletter.domain.model import ListQuery, NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage.postgres.backend import PostgresStore
from tests.services import postgres_schema

pytestmark = pytest.mark.postgres


def test_a_listing_run_many_times_is_never_prepared_while_the_claims_are() -> None:
    with postgres_schema() as url:
        store = PostgresStore(url, pool_size=1)  # one session, whose prepared statements we read
        try:
            engine = Engine(store)
            # Given a queue, listed and claimed many more times than psycopg needs to prepare
            engine.create_queue("p", "q")
            engine.send("p", "q", messages=[NewMessage(body=b"{}")] * 40)
            for _ in range(30):
                assert len(engine.list_messages("p", "q", query=ListQuery(limit=10))) == 10
            for _ in range(8):
                engine.claim("p", "q", limit=1, ttl=60)
            # I expect the listing never prepared (planned with its values each time), and
            # the claim's statements prepared as before
            with store.read() as tx:
                prepared: list[dict[str, Any]] = tx.all(  # type: ignore[attr-defined]
                    "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements",
                    {},
                )
        finally:
            store.close()
    assert [p["statement"] for p in prepared if "IS NULL" in p["statement"]] == []
    assert any("SKIP LOCKED" in p["statement"] for p in prepared)


def test_a_send_keeps_its_generic_plan() -> None:
    with postgres_schema() as url:
        store = PostgresStore(url, pool_size=1)  # one session, whose prepared statements we read
        try:
            engine = Engine(store)
            # Given a queue sent batches of ten many more times than PostgreSQL needs to choose
            engine.create_queue("p", "q")
            for _ in range(20):
                engine.send("p", "q", messages=[NewMessage(body=b"{}")] * 10)
            with store.read() as tx:
                prepared: list[dict[str, Any]] = tx.all(  # type: ignore[attr-defined]
                    "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements",
                    {},
                )
        finally:
            store.close()
    # I expect the send's statement run with its generic plan since the sixth run, not planned
    # again with its values each time (`composed._numbered`)
    [send] = [p for p in prepared if "message_seq" in p["statement"]]
    assert send["custom_plans"] <= 5 < send["generic_plans"]
