"""The transaction contract every store keeps: no nesting, driver errors in domain words,
locked reads of a redrive task that wait for its holder."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from deadletter.domain.errors import QueueAlreadyExists
from deadletter.domain.model import DeadLetterFilter, Queue, QueueSettings
from deadletter.domain.redrive import RedriveTask, TaskStatus
from deadletter.storage.base import (
    NestedTransaction,
    StorageError,
    Store,
    TransactionConflict,
)
from deadletter.storage.sqlite.backend import SQLiteStore

WAIT = 10.0  # seconds; only reached when the behaviour under test is broken


def _queue(name: str) -> Queue:
    return Queue("p", name, QueueSettings(), created_at=0.0, updated_at=0.0)


def _task(task_id: str) -> RedriveTask:
    return RedriveTask(
        id=task_id,
        project="p",
        dlq="dlq",
        destination=None,
        filter=DeadLetterFilter(),
        rate=None,
        status=TaskStatus.RUNNING,
        moved=0,
        to_move=10,
        max_seq=10,
        started_at=0.0,
        updated_at=0.0,
    )


def test_a_transaction_inside_a_transaction_is_refused(store: Store) -> None:
    with store.transaction() as tx:
        tx.insert_queue(_queue("outer"))
        with pytest.raises(NestedTransaction), store.transaction():
            pass
    # and the outer one still commits, and the store takes new transactions
    with store.transaction() as tx:
        assert tx.get_queue("p", "outer") is not None


def test_other_threads_open_transactions_meanwhile(store: Store) -> None:
    seen: list[Queue | None] = []

    def other() -> None:
        with store.transaction() as tx:
            seen.append(tx.get_queue("p", "a"))

    with store.transaction() as tx:
        tx.insert_queue(_queue("a"))
    thread = threading.Thread(target=other)
    thread.start()
    thread.join(WAIT)
    assert len(seen) == 1 and seen[0] is not None


def test_a_taken_queue_name_fails_the_transaction_with_queue_already_exists(
    store: Store,
) -> None:
    with store.transaction() as tx:
        tx.insert_queue(_queue("taken"))
    with pytest.raises(QueueAlreadyExists) as raised, store.transaction() as tx:
        tx.insert_queue(_queue("fresh"))
        tx.insert_queue(_queue("taken"))
    assert raised.value.__cause__ is not None  # the driver's error, kept for the log
    with store.transaction() as tx:
        assert tx.get_queue("p", "fresh") is None  # nothing of it was committed


def test_inserting_a_task_twice_fails_on_every_store(store: Store) -> None:
    with store.transaction() as tx:
        tx.insert_task(_task("t1"))
    with pytest.raises(StorageError), store.transaction() as tx:
        tx.insert_task(replace(_task("t1"), moved=5))
    with store.transaction() as tx:
        task = tx.get_task("t1")
    assert task is not None and task.moved == 0


def test_a_locked_task_read_waits_for_the_transaction_that_holds_it(store: Store) -> None:
    # Given a transaction that has read task t1 with lock=True and not yet committed
    with store.transaction() as tx:
        tx.insert_task(_task("t1"))
    holding, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def holder() -> None:
        with store.transaction() as tx:
            task = tx.get_task("t1", lock=True)
            assert task is not None
            holding.set()
            assert release.wait(WAIT)
            tx.update_task(replace(task, moved=task.moved + 1))

    def reader() -> None:
        with store.transaction() as tx:
            task = tx.get_task("t1", lock=True)
            assert task is not None
            seen.append(task.moved)

    first = threading.Thread(target=holder)
    first.start()
    assert holding.wait(WAIT)
    # When another transaction reads it with lock=True meanwhile
    second = threading.Thread(target=reader)
    second.start()
    second.join(0.3)  # time to read the stale row, if it were not locked
    release.set()
    first.join(WAIT)
    second.join(WAIT)
    # Then that read waited for the holder's commit and saw its update
    assert seen == [1]


def test_sqlite_busy_from_another_process_is_a_transaction_conflict(tmp_path: Path) -> None:
    # Given another connection (as another process would) holding the write lock
    path = str(tmp_path / "busy.db")
    store = SQLiteStore(path)
    store._conn.execute("PRAGMA busy_timeout = 0")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        # Then a transaction fails with a conflict the engine retries, not a driver error
        with pytest.raises(TransactionConflict) as raised, store.transaction() as tx:
            tx.get_queue("p", "q")
        assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    finally:
        other.execute("ROLLBACK")
        other.close()
    with store.transaction() as tx:  # and the store works again once the lock is gone
        tx.insert_queue(_queue("q"))
    store.close()
