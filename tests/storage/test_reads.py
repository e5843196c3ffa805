"""Read-only transactions: they go on while a writer holds its transaction open, see only
committed data, refuse to write, and are refused inside a write (which must read through its
own transaction)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

import pytest

from deadletter.domain.model import ListQuery, NewMessage, Queue, QueueSettings
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import NestedTransaction, StorageError, Store
from deadletter.storage.postgres.backend import PostgresStore
from deadletter.storage.sql.executor import Executor
from tests.services import postgres_schema
from tests.support.transactions import write_held_open

WAIT = 10.0  # seconds; only reached when the behaviour under test is broken


def _queue(name: str) -> Queue:
    return Queue("p", name, QueueSettings(), created_at=0.0, updated_at=0.0)


def in_thread(work: Callable[[], object]) -> list[object]:
    """Run `work` in a thread; what it returned, or nothing if it did not finish in time."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(WAIT)
    return out


def test_a_read_completes_while_a_write_is_held_open_and_sees_only_committed_data(
    store: Store,
) -> None:
    with store.transaction() as tx:
        tx.insert_queue(_queue("before"))

    def read() -> list[str]:
        with store.read() as tx:
            return [q.name for q in tx.list_queues("p", None, None, 10)]

    with write_held_open(store):
        seen = in_thread(read)
        assert seen == [["before"]]  # finished, without the uncommitted queue
    assert in_thread(read) == [["before", "held"]]


def test_a_read_refuses_to_write(store: Store) -> None:
    with pytest.raises(StorageError), store.read() as tx:
        tx.insert_queue(_queue("a"))
    with store.read() as tx:
        assert tx.get_queue("p", "a") is None


def test_a_read_inside_a_write_is_refused_and_the_write_goes_on(store: Store) -> None:
    with store.transaction() as tx:
        tx.insert_queue(_queue("outer"))
        with pytest.raises(NestedTransaction), store.read():
            pass
    with store.read() as tx:
        assert tx.get_queue("p", "outer") is not None


def test_a_failed_read_leaves_the_store_readable(store: Store) -> None:
    for _ in range(3):
        with pytest.raises(ZeroDivisionError), store.read():
            _ = 1 / 0
    with store.read() as tx:
        assert tx.list_queues("p", None, None, 10) == []


def test_the_engines_reads_go_on_while_a_write_is_held_open(store: Store) -> None:
    engine = Engine(store)
    engine.create_queue("p", "q")
    (sent,) = engine.send("p", "q", messages=[NewMessage(body=b"x", ttl=60)])
    reads: list[Callable[[], object]] = [
        lambda: engine.get_queue("p", "q"),
        lambda: engine.list_queues("p"),
        lambda: engine.stats("p", "q").total,
        lambda: [m.id for m in engine.list_messages("p", "q", query=ListQuery(limit=10))],
        lambda: engine.get_message("p", "q", message_id=sent.id).id,
        lambda: engine.list_dead_letters("p", "q"),
        lambda: engine.list_tasks("p"),
        lambda: engine.get_patterns("p", "q"),
        lambda: engine.credentials("p"),
    ]
    with write_held_open(store):
        for read in reads:
            assert len(in_thread(read)) == 1
        assert engine.stats("p", "q").total == 1


class _Interrupted(BaseException):
    """What a signal handler or Ctrl-C raises in the middle of a statement."""


@pytest.mark.postgres
def test_an_interrupted_read_raises_what_interrupted_it_and_leaves_the_pool_whole() -> None:
    with postgres_schema() as url:
        store = open_store(url)
        assert isinstance(store, PostgresStore)
        try:
            # Given a read whose statement is still running on the server when it is
            # interrupted (sent, its answer not yet read: the connection is ACTIVE)
            with pytest.raises(_Interrupted), store.read() as tx:
                assert isinstance(tx, Executor)
                cast(Any, tx.cur).connection.pgconn.send_query(b"SELECT pg_sleep(0.2)")
                raise _Interrupted
            # Then the interruption is what comes out (not the driver's complaint about the
            # connection's state), and every later read gets a connection that works
            for _ in range(4):
                with store.read() as tx:
                    assert tx.count_queues("p") == 0
        finally:
            store.close()
