"""The embedded store: one SQLite file in WAL mode with synchronous=FULL.

Every call that returns has committed, and a committed transaction survives a crash or
power loss (WAL + FULL fsyncs the log on each commit). One connection serves the process,
guarded by a lock, so transactions are serial; `BEGIN IMMEDIATE` also serialises them
against any other process that opens the same file.

The fsync of each commit is what limits a busy server, so transactions that queue up behind
one another share a commit (group commit): each runs in a savepoint of one open database
transaction, and the last of the queue commits them all with one fsync. A caller still
returns only after its work is committed, and a failing transaction rolls back only its
own savepoint. A transaction's cursor is closed before the connection passes on: a cursor
left to the garbage collector would reset its cached statement from whichever thread frees
it, possibly while another thread runs the same statement on the connection.

Work of bounded size (the message routes) can run at once on the caller's thread, the event
loop's (`run_now`), when the connection is free and no other process holds the file: its
transactions join the open group without waiting for its commit, and the caller learns of
the commit through a `Deferred`. The loop commits the group (`commit_now`) once the requests
that were ready with it have joined it: one fsync for all of them, as a server that writes
its log from its event loop syncs it once per turn of the loop. So no request is handed to a
worker thread and back; the loop does wait for that one fsync.

Reads (`Store.read()`) stay off that path: each takes a connection of its own, opened
`query_only`, and reads in a plain deferred transaction. WAL lets readers run beside the
writer, and a reader sees only what had committed when it started, never a group still
waiting for its COMMIT. An in-memory database is one connection's own, so there reads take
the write path.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from deadletter.domain.errors import DeadletterError
from deadletter.storage.base import (
    Availability,
    Deferred,
    StorageError,
    Store,
    Transaction,
    TransactionConflict,
    running_now,
)
from deadletter.storage.migrations import migration_scripts, pending
from deadletter.storage.sql.transaction import SQLTransaction
from deadletter.storage.sqlite.dialect import SQLITE

# At most this many transactions share one commit, so that none waits long for its turn.
GROUP_COMMIT_LIMIT = 64


SETUP_ATTEMPTS = 20
BUSY_TIMEOUT_MS = 30_000

T = TypeVar("T")


class SQLiteStore(Store):
    runs_now = True

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        self.availability = Availability()
        if self.path != ":memory:":
            _create_private(Path(self.path))
        self._lock = threading.Lock()  # owns the connection
        self._queue_guard = threading.Lock()  # guards `_queued`
        self._queued = 0  # transactions waiting for the connection
        self._group: _CommitGroup | None = None  # the open, not yet committed transaction
        self._readers: list[sqlite3.Connection] = []  # idle read connections
        self._readers_guard = threading.Lock()  # guards `_readers` and `_closed`
        self._closed = False
        self._free_waiters: list[Callable[[], None]] = []  # `when_free`; guarded by `_queue_guard`
        self._conn = self._connect()
        # Servers started together on a new file race to switch it to WAL and migrate it; the
        # switch can answer "database is locked" without waiting, so the setup is retried.
        try:
            self._set_up()
        except BaseException:  # a store that does not open leaves no connection behind
            self._conn.close()
            raise

    def _set_up(self) -> None:
        for attempt in range(1, SETUP_ATTEMPTS + 1):
            try:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = FULL")
                self._migrate()
                break
            except sqlite3.OperationalError as exc:
                if attempt == SETUP_ATTEMPTS or "locked" not in str(exc):
                    raise
                time.sleep(0.05 * attempt)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Each request's savepoint keeps the pages it changes in a statement journal, which
        # SQLite otherwise spills to a new temporary file (created, unlinked and closed again
        # with every commit). In memory it costs no system calls; it holds only the pages of
        # the open group and is not needed after a crash (the WAL is what makes writes last).
        conn.execute("PRAGMA temp_store = MEMORY")
        return conn

    def _migrate(self) -> None:
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                c.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                applied = {row[0] for row in c.execute("SELECT version FROM schema_version")}
                scripts = migration_scripts("deadletter.storage.sqlite")
                for version, sql in pending(scripts, applied):
                    for statement in _statements(sql):
                        c.execute(statement)
                    c.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

    def run_now(self, work: Callable[[], T]) -> Deferred[T] | None:
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if self._closed:
                return None
            if self._group is not None and self._group.members >= GROUP_COMMIT_LIMIT:
                self._commit_group()  # full: its members are told now, the work starts anew
            try:
                if self._group is None and not self._begin_now():
                    return None  # another process holds the file: the work must wait for it
            except DeadletterError:
                return None  # the way that waits meets the same error and answers it
            deferred: Deferred[T] = Deferred(self)
            deferred.run(work)
            return deferred
        finally:
            # The group stays open: the caller commits it (`commit_now`) once the work ready
            # meanwhile has joined it, unless a transaction queued for the connection does
            # first (the last of them commits).
            self._unlock()

    def when_free(self, wake: Callable[[], None]) -> bool:
        with self._queue_guard:
            if not self._lock.locked():
                return False
            self._free_waiters.append(wake)
            return True

    def _unlock(self) -> None:
        """Release the connection and wake whoever waits for it (`when_free`)."""
        self._lock.release()
        with self._queue_guard:
            waiters, self._free_waiters = self._free_waiters, []
        for wake in waiters:
            wake()

    def _begin_now(self) -> bool:
        """Open a group without waiting: False if another process holds the file's lock."""
        try:
            with SQLITE.translated_errors():
                self._conn.execute("PRAGMA busy_timeout = 0")
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                finally:
                    self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except TransactionConflict:
            return False
        self._group = _CommitGroup()
        return True

    def commit_now(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # the transaction holding the connection commits the group, or one after it
        try:
            self._commit_group()
        finally:
            self._unlock()

    @contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        deferred = running_now.get()
        if deferred is not None and deferred.store is self:
            with self._transaction_now(deferred) as tx:
                yield tx
            return
        with SQLITE.translated_errors():
            self._acquire_connection()
            try:
                group = self._join_group()
                committed = group.watched()
                with self._member_of(group) as tx:
                    yield tx
            finally:
                self._release_connection()
            committed.wait()
            if group.error is not None:
                raise _commit_error(group.error) from group.error

    @contextmanager
    def _transaction_now(self, deferred: Deferred[Any]) -> Iterator[Transaction]:
        """A transaction of work under `run_now`, which holds the connection: it joins the open
        group and leaves its commit to whoever commits the group."""
        with SQLITE.translated_errors():
            if self._group is None and not self._begin_now():  # the group failed meanwhile
                raise TransactionConflict("another process holds the database")
            group = self._group
            assert group is not None
            with self._member_of(group) as tx:
                yield tx
            group.done.append(deferred.joined())

    @contextmanager
    def _member_of(self, group: _CommitGroup) -> Iterator[Transaction]:
        """One transaction of the open `group`: a savepoint, which a failure rolls back alone."""
        self._conn.execute("SAVEPOINT request")
        before = self._conn.total_changes
        try:
            with closing(self._conn.cursor()) as cursor:
                tx = SQLTransaction(cursor, SQLITE)
                yield tx
            self._conn.execute("RELEASE request")
        except BaseException as exc:
            self._undo_request(group, exc)
            raise
        tx.changed = self._conn.total_changes > before
        group.members += 1

    @contextmanager
    def _read(self) -> Iterator[Transaction]:
        if self.path == ":memory:":
            with self._transaction() as tx:
                yield tx
            return
        with SQLITE.translated_errors():
            conn = self._take_reader()
            ended = False
            try:
                conn.execute("BEGIN")
                try:
                    with closing(conn.cursor()) as cursor:
                        yield SQLTransaction(cursor, SQLITE)
                finally:
                    conn.execute("ROLLBACK")  # it wrote nothing: ending it is all
                    ended = True
            finally:
                if ended:
                    self._give_back(conn)
                else:
                    conn.close()

    def _take_reader(self) -> sqlite3.Connection:
        """An idle read connection, or a new one: there are as many as reads at once."""
        with self._readers_guard:
            if self._closed:
                raise StorageError("the store is closed")
            if self._readers:
                return self._readers.pop()
        conn = self._connect()
        conn.execute("PRAGMA query_only = ON")
        return conn

    def _give_back(self, conn: sqlite3.Connection) -> None:
        with self._readers_guard:
            if not self._closed:
                self._readers.append(conn)
                return
        conn.close()

    def _acquire_connection(self) -> None:
        with self._queue_guard:
            self._queued += 1
        self._lock.acquire()
        with self._queue_guard:
            self._queued -= 1

    def _release_connection(self) -> None:
        """Commit the open group unless a transaction queued behind us will: the last of a
        queue commits for all (each queued one is bound to reach this point too)."""
        group = self._group
        if group is not None:
            with self._queue_guard:
                queued = self._queued
            if queued == 0 or group.members >= GROUP_COMMIT_LIMIT:
                try:
                    self._commit_group()
                finally:
                    self._unlock()
                return
        self._unlock()

    def _join_group(self) -> _CommitGroup:
        if self._group is None:
            self._conn.execute("BEGIN IMMEDIATE")
            self._group = _CommitGroup()
        return self._group

    def _undo_request(self, group: _CommitGroup, cause: BaseException) -> None:
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK TO request")
                self._conn.execute("RELEASE request")
                return
            except sqlite3.Error:
                pass  # the request's writes cannot be undone alone: the group goes with them
        # SQLite itself rolled the whole transaction back (disk full, I/O error), or the
        # savepoint could not be: the group's earlier members are lost with it and must not
        # report success.
        self._abandon(group, cause)

    def _commit_group(self) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        try:
            self._conn.execute("COMMIT")
        except BaseException as exc:
            self._abandon(group, exc)
            return
        group.wake_waiters()
        for done in group.done:
            done(None)

    def _abandon(self, group: _CommitGroup, cause: BaseException) -> None:
        """Roll the open group back; its members fail with `cause` (what rolled it back)."""
        self._group = None
        if self._conn.in_transaction:
            # A disk that fails the rollback too: SQLite rolls the file back when next opened.
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
        group.error = cause
        group.wake_waiters()
        if group.done:
            error = _commit_error(cause)
            for done in group.done:
                done(error)

    def close(self) -> None:
        with self._readers_guard:
            self._closed = True
            readers, self._readers = self._readers, []
        for reader in readers:
            reader.close()
        self._lock.acquire()
        try:
            self._commit_group()
            self._conn.close()
        finally:
            self._unlock()


def _create_private(path: Path) -> None:
    """The database's file, created readable by its owner only (0600), and its directory
    0700 when it is made here. SQLite gives the WAL and shared-memory files it creates beside
    the database the database file's mode, so they are private too. A file that exists keeps
    its mode (docs/security.md)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _commit_error(cause: BaseException) -> BaseException:
    """What a member of a group that did not commit raises: `cause` rolled the group back."""
    if isinstance(cause, sqlite3.Error):
        return SQLITE.domain_error(cause)
    return StorageError(f"commit failed: {cause}")


def _statements(script: str) -> Iterator[str]:
    """The statements of a migration one by one; a trigger's body holds `;` of its own."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""


@dataclass
class _CommitGroup:
    """Transactions committed by one COMMIT; each member on a worker thread waits for
    `committed`, each under `run_now` is told by its entry in `done`."""

    members: int = 0
    # Made by the first member that waits (`watched`): most groups on the loop have none.
    committed: threading.Event | None = None
    error: BaseException | None = None
    done: list[Callable[[BaseException | None], None]] = field(default_factory=list)

    def wake_waiters(self) -> None:
        """The group committed, or failed (`error`): its members on threads go on."""
        if self.committed is not None:
            self.committed.set()

    def watched(self) -> threading.Event:
        """What a member on a worker thread waits for; called with the connection held,
        so before the group can commit."""
        if self.committed is None:
            self.committed = threading.Event()
        return self.committed
