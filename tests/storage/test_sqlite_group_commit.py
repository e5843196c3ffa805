"""Group commit on SQLite: transactions that queue up behind a running one share its commit,
yet each caller returns only once its own work is committed, and a failing transaction
takes only its own work back."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deadletter.domain.model import Queue, QueueSettings
from deadletter.storage.base import Transaction
from deadletter.storage.sqlite.backend import SQLiteStore

WAIT = 10.0  # seconds; only reached when the behaviour under test is broken


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "group.db")


@pytest.fixture
def store(path: str) -> Iterator[SQLiteStore]:
    s = SQLiteStore(path)
    yield s
    s.close()


def _queue(name: str) -> Queue:
    return Queue("p", name, QueueSettings(), created_at=0.0, updated_at=0.0)


def _committed_queues(path: str) -> set[str]:
    """What another connection sees: only committed rows."""
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM queues")}
    finally:
        conn.close()


def _count_commits(store: SQLiteStore) -> list[str]:
    commits: list[str] = []
    store._conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    return commits


def _wait_until_queued(store: SQLiteStore, n: int) -> None:
    deadline = time.monotonic() + WAIT
    while store._queued < n:
        assert time.monotonic() < deadline, f"{store._queued} of {n} transactions queued"
        time.sleep(0.001)


class _Caller(threading.Thread):
    """Runs one transaction in its own thread and records how it ended."""

    def __init__(self, store: SQLiteStore, body: Callable[[Transaction], None]) -> None:
        super().__init__(daemon=True)
        self.store, self.body = store, body
        self.error: BaseException | None = None
        self.visible_on_return: set[str] = set()
        self.done = threading.Event()

    def run(self) -> None:
        try:
            with self.store.transaction() as tx:
                self.body(tx)
            self.visible_on_return = _committed_queues(self.store.path)
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()


def _insert(name: str, hold: threading.Event | None = None) -> Callable[[Transaction], None]:
    def body(tx: Transaction) -> None:
        tx.insert_queue(_queue(name))
        if hold is not None:
            assert hold.wait(WAIT)

    return body


def test_transactions_queued_behind_a_running_one_share_one_commit(
    store: SQLiteStore, path: str
) -> None:
    # Given a transaction that holds the connection, and four more queued behind it
    commits = _count_commits(store)
    hold = threading.Event()
    first = _Caller(store, _insert("a", hold))
    first.start()
    while not store._lock.locked():
        time.sleep(0.001)
    queued = [_Caller(store, _insert(name)) for name in "bcde"]
    for caller in queued:
        caller.start()
    _wait_until_queued(store, 4)
    # When the first one finishes
    hold.set()
    for caller in [first, *queued]:
        assert caller.done.wait(WAIT)
    # Then one COMMIT made all five durable, and each saw its row committed on return
    assert [c.error for c in [first, *queued]] == [None] * 5
    assert commits == ["COMMIT"]
    assert _committed_queues(path) == set("abcde")
    for caller, name in zip([first, *queued], "abcde", strict=True):
        assert name in caller.visible_on_return


def test_a_caller_does_not_return_before_the_shared_commit(store: SQLiteStore) -> None:
    # Given a transaction that finished its work while the next one, which will commit
    # for both, is still running
    hold_first, hold_second = threading.Event(), threading.Event()
    first = _Caller(store, _insert("a", hold_first))
    first.start()
    while not store._lock.locked():
        time.sleep(0.001)
    second = _Caller(store, _insert("b", hold_second))
    second.start()
    _wait_until_queued(store, 1)
    hold_first.set()
    # Then the first caller waits for that commit rather than returning uncommitted work
    assert not first.done.wait(0.3)
    hold_second.set()
    assert first.done.wait(WAIT) and second.done.wait(WAIT)
    assert first.error is None and second.error is None
    assert {"a", "b"} <= first.visible_on_return


def test_a_failing_transaction_in_a_group_takes_back_only_its_own_work(
    store: SQLiteStore, path: str
) -> None:
    # Given a group of three where the middle one fails after writing
    hold = threading.Event()
    first = _Caller(store, _insert("a", hold))
    first.start()
    while not store._lock.locked():
        time.sleep(0.001)

    def fail(tx: Transaction) -> None:
        tx.insert_queue(_queue("b"))
        raise RuntimeError("the consumer's code failed")

    failing = _Caller(store, fail)
    last = _Caller(store, _insert("c"))
    failing.start()
    last.start()
    _wait_until_queued(store, 2)
    hold.set()
    for caller in (first, failing, last):
        assert caller.done.wait(WAIT)
    # Then its error reaches it, and the others' work is committed without its row
    assert isinstance(failing.error, RuntimeError)
    assert first.error is None and last.error is None
    assert _committed_queues(path) == {"a", "c"}


def test_work_committed_in_a_group_survives_reopening_the_file(path: str) -> None:
    store = SQLiteStore(path)
    callers = [_Caller(store, _insert(f"q{i}")) for i in range(20)]
    for caller in callers:
        caller.start()
    for caller in callers:
        assert caller.done.wait(WAIT)
    store._conn.close()  # as a crash would: no orderly close() that could commit late
    assert _committed_queues(path) == {f"q{i}" for i in range(20)}
