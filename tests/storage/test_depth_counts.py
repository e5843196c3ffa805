"""The counts the store keeps by statement: queue depths by dead-letter source, and each
queue's number of subscriptions, which a send reads with its queue instead of asking for
subscriptions. Both must stay exact through every way messages and subscriptions come and go,
and a subscription made by another process must be seen by the next send of this one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import DeadLetterFilter
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store
from deadletter.storage.sql import queries as q
from deadletter.storage.sql import subscription_queries as sq
from deadletter.storage.sql.executor import Executor
from deadletter.storage.sql.transaction import SQLTransaction
from tests.engine.helpers import P, fail, send, with_dlq

HOOK = "http://hooks.example/a"


def kept_and_counted(store: Store) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """(queue, source) -> n as queue_depths keeps it, and as the messages table counts it."""
    with store.read() as tx:
        assert isinstance(tx, SQLTransaction)
        kept = tx.all(
            "SELECT queue, source, SUM(n) AS n FROM queue_depths GROUP BY queue, source", {}
        )
        counted = tx.all(
            "SELECT queue, COALESCE(dl_source, '') AS source, COUNT(*) AS n FROM messages"
            " GROUP BY queue, COALESCE(dl_source, '')",
            {},
        )
    keep = {(r["queue"], r["source"]): int(r["n"]) for r in kept if int(r["n"])}
    return keep, {(r["queue"], r["source"]): int(r["n"]) for r in counted}


def test_depths_stay_exact_through_sends_deletes_moves_redrives_and_purges(
    engine: Engine, store: Store, clock: ManualClock
) -> None:
    with_dlq(engine, max_claims=1)
    engine.create_queue(P, "other")
    sent = send(engine, "orders", *[f"m{i}" for i in range(30)])
    send(engine, "other", "a", "b", "c")
    engine.delete_messages(P, "orders", ids=[m.id for m in sent[:5]])
    claim = engine.claim(P, "orders", limit=3)
    engine.delete_held(P, "orders", held=[(m.id, claim.id) for m in claim.messages[:2]])
    fail(engine, "orders", 1)  # everything visible goes to the DLQ at its next claim
    engine.claim(P, "orders", limit=100)
    kept, counted = kept_and_counted(store)
    expected = {("orders-dlq", "orders"): 22, ("orders", ""): 1, ("other", ""): 3}
    assert kept == counted == expected  # one is still held by the first claim
    assert engine.stats(P, "orders-dlq").total == 22

    task = engine.start_redrive(
        P, "orders-dlq", destination=None, where=DeadLetterFilter(), rate=None
    )
    while engine.redrive_step(task.id, 10).status.value == "RUNNING":
        pass
    kept, counted = kept_and_counted(store)
    assert kept == counted == {("orders", ""): 23, ("other", ""): 3}

    assert engine.purge(P, "orders") == 23
    engine.pop(P, "other", limit=1)
    kept, counted = kept_and_counted(store)
    assert kept == counted == {("other", ""): 2}
    assert engine.delete_queue(P, "other")
    assert kept_and_counted(store) == ({}, {})


@pytest.fixture
def second_engine(store_url: str, clock: ManualClock) -> Iterator[Engine]:
    """Another server on the same database: its own store, connections and caches."""
    other = open_store(store_url)
    yield Engine(other, clock)
    other.close()


def test_a_subscription_made_by_another_server_is_owed_the_next_send(
    engine: Engine, second_engine: Engine
) -> None:
    engine.create_queue(P, "q")
    send(engine, "q", "before")
    sub, _ = second_engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    send(engine, "q", "after")
    owed = engine.subscriptions.pending(P, "q")
    assert [d.body for d in owed] == [b"after"]
    assert second_engine.subscriptions.delete(P, "q", subscription_id=sub.id)
    send(engine, "q", "gone")
    assert [d.body for d in engine.subscriptions.pending(P, "q")] == []


def test_expired_subscriptions_swept_away_leave_the_queue_without_any(
    engine: Engine, store: Store, clock: ManualClock
) -> None:
    engine.create_queue(P, "q")
    engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=60, options={})
    engine.subscriptions.create(P, "q", subscriber=HOOK + "2", ttl=600, options={})
    clock.advance(120)
    with store.transaction() as tx:
        assert tx.delete_expired_subscriptions(clock.now()) == 1
        assert tx.all(q.GET_QUEUE, {"project": P, "name": "q"})[0]["subscriptions"] == 1  # type: ignore[attr-defined]
    send(engine, "q", "x")
    assert [d.subscriber for d in engine.subscriptions.pending(P, "q")] == [HOOK + "2"]


def test_a_send_to_a_queue_without_subscriptions_asks_for_none(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.create_queue(P, "q")
    ran: list[str] = []
    original = Executor.run

    def recording(self: Executor, sql: str, params: Mapping[str, Any] | None = None) -> int:
        ran.append(sql)
        return original(self, sql, params)

    monkeypatch.setattr(Executor, "run", recording)
    send(engine, "q", "a", "b")
    assert ran and sq.LIVE_SUBSCRIPTIONS not in ran
    engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    send(engine, "q", "c")
    assert sq.LIVE_SUBSCRIPTIONS in ran
