"""A store that cannot do its work now says so in one domain error, StoreUnavailable, raised
`from` the driver's error at the storage edge; the store logs the outage once each way; the
background worker waits for the store instead of failing tasks or logging tracebacks."""

from __future__ import annotations

import logging
import sqlite3
import threading

import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from deadletter.domain.errors import DeadletterError, QueueAlreadyExists, StoreUnavailable
from deadletter.domain.model import Queue, QueueSettings
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage import base
from deadletter.storage.base import StorageError, TransactionConflict
from deadletter.storage.postgres.dialect import POSTGRES
from deadletter.storage.sqlite.backend import SQLiteStore
from deadletter.storage.sqlite.dialect import SQLITE
from tests.engine.helpers import P, fail, send, with_dlq


def sqlite_error(code: int, text: str = "it failed") -> sqlite3.Error:
    exc = sqlite3.OperationalError(text)
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


# (driver error, what the store raises, the reason it gives)
SQLITE_CASES = [
    (sqlite_error(sqlite3.SQLITE_FULL), StoreUnavailable, "the disk is full"),
    (
        sqlite_error(sqlite3.SQLITE_IOERR_WRITE),
        StoreUnavailable,
        "the disk failed to read or write",
    ),
    (
        sqlite_error(sqlite3.SQLITE_IOERR_FSYNC),
        StoreUnavailable,
        "the disk failed to read or write",
    ),
    (sqlite_error(sqlite3.SQLITE_CANTOPEN), StoreUnavailable, "the database file cannot be opened"),
    (sqlite_error(sqlite3.SQLITE_BUSY), TransactionConflict, None),
    (sqlite_error(sqlite3.SQLITE_READONLY), StorageError, None),  # a read that tried to write
    (sqlite_error(sqlite3.SQLITE_CORRUPT), StorageError, None),
]
UNREACHABLE = "the database cannot be reached"
POSTGRES_CASES = [
    (psycopg.OperationalError("server closed the connection unexpectedly"), UNREACHABLE),
    (PoolTimeout("couldn't get a connection after 10.00 sec"), None),
    (pg_errors.lookup("08006")("connection failure"), UNREACHABLE),
    (pg_errors.lookup("57P01")("terminating connection due to administrator command"), UNREACHABLE),
    (pg_errors.lookup("57P03")("the database system is starting up"), UNREACHABLE),
    (pg_errors.lookup("57014")("canceling statement due to statement timeout"), UNREACHABLE),
    (pg_errors.lookup("53300")("too many connections"), UNREACHABLE),
    (pg_errors.lookup("53100")("could not extend file"), "the database's disk is full"),
]


@pytest.mark.parametrize(("driver", "expected", "reason"), SQLITE_CASES, ids=repr)
def test_sqlite_errors_in_domain_words(
    driver: sqlite3.Error, expected: type[DeadletterError], reason: str | None
) -> None:
    error = SQLITE.domain_error(driver)
    assert type(error) is expected
    if reason is not None:
        assert isinstance(error, StoreUnavailable) and error.reason == reason
        # reads go on while the disk refuses writes; an unopenable file answers nothing
        assert error.reads_served is (reason != "the database file cannot be opened")


@pytest.mark.parametrize(("driver", "reason"), POSTGRES_CASES, ids=repr)
def test_postgres_errors_of_an_unreachable_database_are_store_unavailable(
    driver: psycopg.Error, reason: str | None
) -> None:
    error = POSTGRES.domain_error(driver)
    assert isinstance(error, StoreUnavailable)
    assert reason is None or error.reason == reason
    assert "Try again in 5 seconds" in error.message


@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        (pg_errors.lookup("40P01")("deadlock detected"), TransactionConflict),
        (pg_errors.lookup("42P01")("relation does not exist"), StorageError),
        (pg_errors.lookup("22P02")("invalid input syntax"), StorageError),
    ],
    ids=repr,
)
def test_other_postgres_errors_are_not_outages(
    driver: psycopg.Error, expected: type[DeadletterError]
) -> None:
    assert type(POSTGRES.domain_error(driver)) is expected


def test_an_unreachable_store_raises_from_the_drivers_error(tmp_path: object) -> None:
    store = SQLiteStore(":memory:")
    full = sqlite_error(sqlite3.SQLITE_FULL, "database or disk is full")
    with pytest.raises(StoreUnavailable) as caught, SQLITE.translated_errors():
        raise full
    assert caught.value.__cause__ is full
    store.close()


def _queue(name: str) -> Queue:
    return Queue("p", name, QueueSettings(), 0.0, 0.0)


def test_an_outage_is_logged_once_each_way(
    tmp_path: object, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "SETTLE_SECONDS", 0.0)
    store = SQLiteStore(f"{tmp_path}/db")
    try:
        with caplog.at_level(logging.INFO, logger="deadletter.storage.base"):
            # Given a disk that refused a hundred writes,
            for _ in range(100):
                with pytest.raises(StoreUnavailable), store.transaction():
                    raise SQLITE.domain_error(sqlite_error(sqlite3.SQLITE_FULL))
            outage = store.availability.outage
            assert outage is not None and outage.reason == "the disk is full"
            # a read that answers, or a write that changed nothing, does not end it (a full
            # disk serves both);
            with store.read() as tx:
                tx.get_queue("p", "a")
            with store.transaction() as tx:
                tx.get_queue("p", "a")
            assert store.availability.outage is outage
            # a write that commits a change does.
            with store.transaction() as tx:
                tx.insert_queue(_queue("a"))
            assert store.availability.outage is None
    finally:
        store.close()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "store unavailable; requests are answered 503 until it is back",
        "store available again",
    ]
    assert caplog.records[0].reason == "the disk is full"  # type: ignore[attr-defined]


def test_failures_in_a_burst_are_one_outage(tmp_path: object) -> None:
    # Given the default settling time, a success right after a failure does not end it.
    store = SQLiteStore(f"{tmp_path}/db")
    try:
        store.availability.failed(StoreUnavailable())
        with store.read() as tx:
            tx.get_queue("p", "a")
        assert store.availability.outage is not None
    finally:
        store.close()


def test_the_worker_waits_for_the_store_without_failing_tasks_or_tracebacks(
    engine: Engine, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a running redrive task,
    with_dlq(engine, "a", "dlq", max_claims=1)
    send(engine, "a", "x")
    fail(engine, "a", 1)
    task = engine.start_redrive(P, "dlq", rate=1)
    # when the store goes away under the worker's loop,
    looked = threading.Event()
    calls = 0

    def away(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls >= 2:
            looked.set()
        raise StoreUnavailable()

    monkeypatch.setattr(engine, "redrive_step", away)
    monkeypatch.setattr(engine, "sweep_expired", away)
    worker = Worker(engine, sweep_interval=0.0)
    with caplog.at_level(logging.INFO):
        worker.start()
        assert looked.wait(timeout=30)
        worker.stop()
    # then it logs nothing of it (the store does, once), and the task is still running.
    assert not [r for r in caplog.records if r.name == "deadletter.engine.worker"]
    monkeypatch.undo()
    assert engine.get_task(P, "dlq", task_id=task.id).status is TaskStatus.RUNNING


def test_queue_already_exists_is_still_translated() -> None:
    error = SQLITE.domain_error(sqlite3.IntegrityError("UNIQUE constraint failed: queues.name"))
    assert isinstance(error, QueueAlreadyExists)
