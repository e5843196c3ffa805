"""Work run at once on SQLite (`Store.run_now`): its transactions join the open group without
waiting for the commit, nothing of it is seen or told before the commit, and it never waits:
not for another thread's transaction, not for another process's lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deadletter.domain.errors import StoreUnavailable
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.storage import open_store
from deadletter.storage.base import Deferred, Store
from deadletter.storage.sqlite.backend import SQLiteStore
from tests.support.transactions import write_held_open

WAIT = 10.0  # seconds; only reached when the behaviour under test is broken


class Sent(EngineListener):
    def __init__(self) -> None:
        self.counts: list[int] = []

    def sent(self, project: str, queue: str, count: int) -> None:
        self.counts.append(count)


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "now.db")


@pytest.fixture
def store(path: str) -> Iterator[SQLiteStore]:
    s = SQLiteStore(path)
    yield s
    s.close()


@pytest.fixture
def sent() -> Sent:
    return Sent()


@pytest.fixture
def engine(store: SQLiteStore, sent: Sent) -> Engine:
    e = Engine(store, listeners=[sent])
    e.create_queue("p", "q")
    return e


def _committed_messages(path: str) -> int:
    """What another connection sees: only committed rows."""
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def _send(engine: Engine, n: int = 2) -> list[str]:
    return [m.id for m in engine.send("p", "q", messages=[NewMessage(b"x") for _ in range(n)])]


def _ran(done: Deferred[list[str]] | None) -> Deferred[list[str]]:
    assert done is not None, "the work did not run at once"
    return done


def test_work_runs_at_once_and_is_committed_and_told_only_by_commit_now(
    engine: Engine, store: SQLiteStore, path: str, sent: Sent
) -> None:
    # Given a send run at once
    done = _ran(store.run_now(lambda: _send(engine)))
    woken: list[str] = []
    # I expect it to wait for its commit: nothing committed, nothing told
    assert done.when_committed(lambda: woken.append("committed"))
    assert _committed_messages(path) == 0
    assert sent.counts == []
    # When the group is committed
    store.commit_now()
    # I expect the waiter woken, the rows committed, and the event told when it settles
    assert woken == ["committed"]
    assert _committed_messages(path) == 2
    assert sent.counts == []  # told on the caller's side, by `settle`
    ids = done.result()
    assert len(ids) == 2
    assert sent.counts == [2]


def test_works_run_at_once_one_after_another_share_one_commit(
    engine: Engine, store: SQLiteStore, path: str
) -> None:
    commits: list[str] = []
    store._conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    done = [_ran(store.run_now(lambda: _send(engine))) for _ in range(5)]
    store.commit_now()
    assert commits == ["COMMIT"]
    assert [len(d.result()) for d in done] == [2] * 5
    assert _committed_messages(path) == 10


def test_work_does_not_wait_for_another_threads_transaction_and_is_told_when_it_ends(
    engine: Engine, store: SQLiteStore
) -> None:
    # Given another thread inside a transaction
    with write_held_open(store):
        # I expect work not to run, at once, and a waker to be kept for the end of that
        # transaction
        started = time.monotonic()
        assert store.run_now(lambda: _send(engine)) is None
        assert time.monotonic() - started < 1.0
        freed = threading.Event()
        assert store.when_free(freed.set)
        assert not freed.is_set()
    assert freed.wait(WAIT)
    # Then the work runs at once
    done = _ran(store.run_now(lambda: _send(engine)))
    store.commit_now()
    assert len(done.result()) == 2


def test_a_free_store_keeps_no_waker(store: SQLiteStore) -> None:
    assert store.when_free(lambda: None) is False


def test_work_does_not_wait_for_another_process_holding_the_file(
    engine: Engine, store: SQLiteStore, path: str
) -> None:
    # Given another connection (as another process) holding the file's write lock
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        # I expect the work not run, and no wait for the lock (busy_timeout is 30 s)
        assert store.run_now(lambda: _send(engine)) is None
        assert time.monotonic() - started < 1.0
    finally:
        other.execute("ROLLBACK")
        other.close()
    # and the store still to wait for such a lock on its other path, as before
    assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000


def test_a_commit_that_fails_fails_the_work_and_tells_nothing(
    engine: Engine, store: SQLiteStore, path: str, sent: Sent
) -> None:
    done = _ran(store.run_now(lambda: _send(engine)))
    # When the group cannot be committed (the disk fails)
    group = store._group
    assert group is not None
    failed = sqlite3.OperationalError("disk I/O error")
    failed.sqlite_errorcode = sqlite3.SQLITE_IOERR  # type: ignore[attr-defined]
    store._abandon(group, failed)
    with pytest.raises(StoreUnavailable, match="failed to read or write"):
        done.result()
    assert sent.counts == []
    assert _committed_messages(path) == 0


def test_a_commit_failing_with_the_disk_full_marks_the_store_unavailable(
    engine: Engine, store: SQLiteStore
) -> None:
    done = _ran(store.run_now(lambda: _send(engine)))
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
    group = store._group
    assert group is not None
    store._abandon(group, full)
    with pytest.raises(StoreUnavailable):
        done.result()
    assert store.availability.outage is not None


def test_work_that_raises_after_a_transaction_keeps_that_transaction_and_its_events(
    engine: Engine, store: SQLiteStore, path: str, sent: Sent
) -> None:
    def send_then_fail() -> None:
        _send(engine, 3)
        raise LookupError("after the send")

    done = store.run_now(send_then_fail)
    assert done is not None
    store.commit_now()
    with pytest.raises(LookupError, match="after the send"):
        done.result()
    assert _committed_messages(path) == 3
    assert sent.counts == [3]


def test_a_thread_joining_the_open_group_commits_it_for_the_work_run_at_once(
    engine: Engine, store: SQLiteStore, path: str
) -> None:
    done = _ran(store.run_now(lambda: _send(engine)))
    woken = threading.Event()
    assert done.when_committed(woken.set)
    # When a transaction of another thread runs before the loop's commit
    thread = threading.Thread(target=lambda: _send(engine, 1))
    thread.start()
    thread.join(WAIT)
    # I expect the group committed with it, and the work told
    assert woken.wait(WAIT)
    assert _committed_messages(path) == 3
    store.commit_now()  # nothing left: a commit with nothing open does nothing
    assert len(done.result()) == 2


def test_only_an_embedded_store_runs_work_at_once(store_url: str) -> None:
    any_store: Store = open_store(store_url)
    try:
        done = any_store.run_now(lambda: 1)
        if store_url.startswith("sqlite"):
            assert done is not None and done.result() == 1
        else:  # every statement waits on the network
            assert done is None
            assert any_store.when_free(lambda: None) is False
    finally:
        any_store.close()


def test_work_meeting_a_full_group_commits_it_and_still_runs_at_once(
    engine: Engine, store: SQLiteStore, path: str
) -> None:
    from deadletter.storage.sqlite.backend import GROUP_COMMIT_LIMIT

    full = [_ran(store.run_now(lambda: _send(engine))) for _ in range(GROUP_COMMIT_LIMIT)]
    woken: list[int] = []
    for i, done in enumerate(full):
        assert done.when_committed(lambda i=i: woken.append(i))  # type: ignore[misc]
    # One more: the full group is committed first, and its members told, before it runs
    last = _ran(store.run_now(lambda: _send(engine)))
    assert woken == list(range(GROUP_COMMIT_LIMIT))
    assert _committed_messages(path) == 2 * GROUP_COMMIT_LIMIT
    store.commit_now()
    assert len(last.result()) == 2
    assert _committed_messages(path) == 2 * GROUP_COMMIT_LIMIT + 2
