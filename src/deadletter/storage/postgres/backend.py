"""The shared store: PostgreSQL through psycopg 3 and a connection pool.

Many server processes, on one host or several, use one database. Every rule that must hold
across them is the database's: rows that a claim, a dead-letter move, a sweep or a redrive
picks are locked with `FOR UPDATE SKIP LOCKED`, so two processes never hand out the same
message; a committed transaction is durable. Processes tell each other that a queue has new
messages with LISTEN/NOTIFY, which wakes long polls waiting in another process.

Messages are numbered from one sequence (`message_seq`), so senders to one queue never wait
for one another. Numbers are taken in one order and committed in another, so a listing by
marker must not read past a number that is still in flight: a transaction that numbers
messages of a queue first takes that queue's lane (a shared advisory lock, held until it
ends), and a listing first takes the lane exclusively, which waits for the senders in flight
and holds new ones back until the listing's transaction ends. The listing's SELECT (READ
COMMITTED: a snapshot per statement) then sees every number taken so far that committed,
and every number taken later is larger.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg.waiting import WAIT_R
from psycopg_pool import ConnectionPool, PoolTimeout

from deadletter.domain.errors import DeadletterError, StoreUnavailable
from deadletter.domain.model import ListQuery, Message, Queue
from deadletter.domain.tags import ConsumerTag
from deadletter.domain.templates import QueueTemplate
from deadletter.storage.base import (
    Availability,
    Deferred,
    Store,
    Transaction,
    running_now,
)
from deadletter.storage.migrations import migration_scripts, pending
from deadletter.storage.postgres.composed import ComposedStatements, abandon
from deadletter.storage.postgres.dialect import _LANE, POSTGRES, UNREACHABLE
from deadletter.storage.postgres.group import GROUP_LIMIT, Group, open_group
from deadletter.storage.postgres.notifications import Listener, Notifier
from deadletter.storage.postgres.on_loop import (
    LoopWaitingConnection,
    on_loop,
    ready_now,
    running_on_loop,
)

log = logging.getLogger(__name__)
# The pool warns of every connection it discards or fails to open, a dozen lines a second
# during an outage; the store says it once (`Availability`). Its errors still show.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

POOL_SIZE = 10
# How a store notices that the database went away, and how long a request waits for it
# (docs/outages.md). A new connection that has not finished its handshake in CONNECT_TIMEOUT
# seconds is given up (libpq's `connect_timeout`; a URL that sets it wins). A request waits
# POOL_WAIT seconds for a connection, OUTAGE_POOL_WAIT while the store is known to be away,
# then answers 503. The pool retries a lost connection with a growing delay for at most
# RECONNECT_SECONDS, then gives the slot up; the next request that finds no connection opens
# one at once, so service comes back within about a second of the database once requests
# are coming.
CONNECT_TIMEOUT = 5
POOL_WAIT = 10.0
OUTAGE_POOL_WAIT = 1.0
# A group run on the event loop takes a connection only if one is free: the pool's shortest
# wait (it refuses a wait of zero before it looks).
FREE_NOW = 0.001
RECONNECT_SECONDS = 2.0
# A transaction whose connection has not answered in this long is cut (its socket shut down):
# a connection whose packets vanish (a dead host, a black-holed route) never fails on its own.
# With `statement_timeout` set (the URL's `options=-c statement_timeout=...` or the role's),
# the deadline is that timeout and DEADLINE_GRACE: the server would have cancelled the
# statement by then.
DEADLINE_SECONDS = 30.0
DEADLINE_GRACE = 2.0
# Serialises schema migrations of one schema between processes that start at the same time.
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.deadletter'))"
# A listing waits for the queue's senders in flight (see the module's docstring).
CLEAR_LANE = f"SELECT pg_advisory_xact_lock{_LANE}"
# A tag's cursor moves only while no sender is in flight (it would step over their numbers);
# a claim that finds senders there leaves it for a later claim rather than wait.
TRY_CLEAR_LANE = f"SELECT pg_try_advisory_xact_lock{_LANE} AS cleared"
# A project's queue creations, one at a time: a count of its queues then stays true until
# the creating transaction ends, so a quota holds exactly between server processes.
PROJECT_QUEUES_LOCK = (
    "SELECT pg_advisory_xact_lock(x'7071'::int, hashtext(current_schema() || '/' || :project))"
)
# A project's subscription creations, one at a time, for the same reason (its own key space).
PROJECT_SUBSCRIPTIONS_LOCK = (
    "SELECT pg_advisory_xact_lock(x'7073'::int, hashtext(current_schema() || '/' || :project))"
)
# A project's template changes, one at a time, for the same reason (its own key space).
PROJECT_TEMPLATES_LOCK = (
    "SELECT pg_advisory_xact_lock(x'7474'::int, hashtext(current_schema() || '/' || :project))"
)
# What a send, a claim or an acknowledgement writes of a queue: its messages, counts,
# claims and counters, in one statement.
LEFT_BY_HOT_CALLS = (
    "WITH messages_left AS (DELETE FROM messages WHERE project = :project AND queue = :name),"
    " depths_left AS (DELETE FROM queue_depths WHERE project = :project AND queue = :name),"
    " hidden_left AS (DELETE FROM queue_hidden WHERE project = :project AND queue = :name),"
    " claims_left AS (DELETE FROM claims WHERE project = :project AND queue = :name)"
    " DELETE FROM counters WHERE project = :project AND queue = :name"
)
# Every session of the pool: no JIT compilation, no parallel workers. Each statement reads a
# few rows through an index made for it, but PostgreSQL may cost some as if they read a deep
# queue: it estimates the hidden messages that have become visible (none once the sweep has
# settled them) from each column alone, 140,000 rows of a table of 3,000,000. Past a plan cost
# of 100,000 (`jit_above_cost`) it would compile the statement with LLVM (5-8 ms) and, past a
# lower one, start parallel workers (5-20 ms on a busy host): 25-60 ms for 0.1 ms of work. The
# statement that reads a whole queue, a count of a DLQ's dead letters by filter, took as long
# without workers as with them at a million (540 ms on two cores).
SESSION_SETTINGS = "SET jit = off; SET max_parallel_workers_per_gather = 0"

Conn = psycopg.Connection[dict[str, Any]]


class PostgresTransaction(ComposedStatements):
    """SQLTransaction with the locks READ COMMITTED needs; no override changes a result the
    interface does not state: each adds a lock or a lane wait, or batches round trips (the
    hot requests' steps in one statement each: `composed`)."""

    def together(self) -> AbstractContextManager[Any]:
        # The same statements, one round trip.
        connection: psycopg.Connection[Any] = self.cur.connection  # type: ignore[attr-defined]
        return connection.pipeline()

    def count_queues(self, project: str) -> int:
        # Adds the project's lock that `Queues.count_queues` promises (SQLite's writer holds it).
        self.run(PROJECT_QUEUES_LOCK, {"project": project})
        return super().count_queues(project)

    def insert_queue(self, queue: Queue) -> None:
        # A queue made anew starts empty. A hot call that read the queue's row before another
        # process deleted it may have written after the delete (READ COMMITTED: nothing locks
        # the row between the two, and a group's calls share one read of it): what it left
        # goes here, not into the new queue.
        self.run(LEFT_BY_HOT_CALLS, {"project": queue.project, "name": queue.name})
        super().insert_queue(queue)

    def count_subscriptions(self, project: str, queue: str) -> tuple[int, int]:
        # Adds the project's lock that `Subscriptions.count_subscriptions` promises.
        self.run(PROJECT_SUBSCRIPTIONS_LOCK, {"project": project})
        return super().count_subscriptions(project, queue)

    def templates_to_change(self, project: str) -> list[QueueTemplate]:
        # Adds the project's lock that `Administration.templates_to_change` promises.
        self.run(PROJECT_TEMPLATES_LOCK, {"project": project})
        return super().templates_to_change(project)

    def list_messages(
        self, project: str, queue: str, now: float, query: ListQuery
    ) -> list[Message]:
        """Adds the lane wait by which `Messages.list_messages` returns no number above one
        still in flight (module docstring); SQLite's one writer gives it without a wait."""
        self.run(CLEAR_LANE, {"project": project, "queue": queue})
        return super().list_messages(project, queue, now, query)

    def advance_tag_cursor(self, tag: ConsumerTag) -> None:
        # Moves only when no sender holds the lane: the "known to be safe" of the interface.
        if self.one(TRY_CLEAR_LANE, {"project": tag.project, "queue": tag.queue})["cleared"]:
            super().advance_tag_cursor(tag)


class PostgresStore(Store):
    # A redrive step locks only the rows it moves, so producers go on beside a long one; four
    # times fewer steps moved 9-12% more messages a second (docs/benchmarks.md, W3).
    redrive_batch = 2000

    def __init__(self, url: str, pool_size: int = POOL_SIZE) -> None:
        self.url = url
        self.availability = Availability()
        # In autocommit: a write transaction sends its own BEGIN before its first statement
        # (`ComposedStatements`); reads and migrations open theirs with `conn.transaction()`.
        kwargs: dict[str, Any] = {
            "row_factory": dict_row,
            "autocommit": True,
            **_connect_options(url),
        }
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            connection_class=LoopWaitingConnection,
            min_size=1,
            max_size=pool_size,
            kwargs=kwargs,
            configure=_configure,
            check=_check,
            timeout=POOL_WAIT,
            reconnect_timeout=RECONNECT_SECONDS,
            open=True,
            name="deadletter",
        )
        try:
            self._schema, statement_timeout = self._migrate()
        except BaseException:  # a store that does not open leaves no pool behind
            self._pool.close()
            raise
        self._deadlines = _Deadlines(
            statement_timeout + DEADLINE_GRACE if statement_timeout else DEADLINE_SECONDS
        )
        self._listener: Listener | None = None
        self._notifier = Notifier(url, _connect_options(url), self._schema)

    def _migrate(self) -> tuple[str, float]:
        """Apply the migrations this schema lacks; returns the schema's name and the sessions'
        `statement_timeout` in seconds (0: none)."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SET LOCAL statement_timeout = 0")  # a migration takes its time
            timeout_row = conn.execute(
                "SELECT reset_val FROM pg_settings WHERE name = 'statement_timeout'"
            ).fetchone()
            conn.execute(MIGRATION_LOCK)
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            rows = conn.execute("SELECT version FROM schema_version").fetchall()
            applied = {row["version"] for row in rows}
            for version, sql in pending(migration_scripts("deadletter.storage.postgres"), applied):
                conn.execute(sql)  # no parameters: several statements at once
                conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
            schema_row = conn.execute("SELECT current_schema() AS s").fetchone()
            schema = str(schema_row["s"]) if schema_row else "public"
            return schema, int(timeout_row["reset_val"]) / 1000 if timeout_row else 0.0

    def _connection(self) -> AbstractContextManager[Conn]:
        """A pooled connection; while the database is known to be away a request waits for one
        only briefly, since one that comes back is handed to a waiting request at once. (A
        pool that is only busy, all its connections working, keeps the full wait.)"""
        outage = self.availability.outage
        away = outage is not None and outage.reason == UNREACHABLE
        return self._pool.connection(timeout=OUTAGE_POOL_WAIT if away else POOL_WAIT)

    runs_together = True

    def run_together(
        self, works: Sequence[Callable[[], Any]], *, ran: Callable[[], None] = lambda: None
    ) -> list[Deferred[Any] | None]:
        """One transaction, one COMMIT, for each GROUP_LIMIT of `works` in turn (`group.py`
        says what a failure does to the others); `ran()` before the last COMMIT."""
        outcomes: list[Deferred[Any] | None] = []
        for start in range(0, len(works), GROUP_LIMIT):
            last = start + GROUP_LIMIT >= len(works)
            outcomes += self._run_group(works[start : start + GROUP_LIMIT], ran if last else None)
        return outcomes

    async def run_together_on_loop(
        self, works: Sequence[Callable[[], Any]], *, ran: Callable[[], None] = lambda: None
    ) -> list[Deferred[Any] | None]:
        """`run_together` in a greenlet on the loop's thread, its waits for PostgreSQL the
        loop's (`on_loop.py`); a group takes a connection only if one is free at once."""
        return await on_loop(self.run_together, works, ran=ran)

    def _run_group(
        self, works: Sequence[Callable[[], Any]], ran: Callable[[], None] | None
    ) -> list[Deferred[Any] | None]:
        """The group's connection is taken and watched as any transaction's: it waits for
        the pool as briefly during an outage, and is cut at the same deadline."""
        connection = self._group_connection()
        if connection is None:
            return [None] * len(works)  # each runs alone, on a worker thread
        deferreds: list[Deferred[Any]] = [Deferred(self) for _ in works]
        group: Group | None = None
        failure: BaseException | None = None
        try:
            with (
                POSTGRES.translated_errors(),
                connection as conn,
                self._deadlines.watching(conn),
            ):
                group = Group(self, conn, _member_transaction)
                group.run(works, deferreds)
                failure = group.failure
                if ran is not None:
                    ran()
                if failure is None:
                    group.commit()
                else:
                    abandon(conn)
        except DeadletterError as exc:  # no connection, or the COMMIT failed
            failure = exc
        if failure is None:
            assert group is not None
            group.told(None)
            return list(deferreds)
        if not isinstance(failure, StoreUnavailable):
            return [None] * len(works)
        if group is not None:
            group.told(failure)
        for deferred in deferreds:
            deferred.fail(failure)
        return list(deferreds)

    def _group_connection(self) -> AbstractContextManager[Conn] | None:
        """A group's connection, as any transaction's; on the event loop, which never waits
        for the pool, one free now or None."""
        if not running_on_loop():
            return self._connection()
        try:
            return _returned(self._pool, self._pool.getconn(timeout=FREE_NOW))
        except PoolTimeout:
            return None

    @contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        group = open_group.get()
        deferred = running_now.get()
        if group is not None and group.store is self and deferred is not None:
            with group.member(deferred) as tx:
                yield tx
            return
        with (
            POSTGRES.translated_errors(),
            self._connection() as conn,
            self._deadlines.watching(conn),
        ):
            tx = PostgresTransaction(conn.cursor(), POSTGRES)
            try:
                yield tx
            except BaseException:
                tx.abandon()
                raise
            tx.commit()

    @contextmanager
    def _read(self) -> Iterator[Transaction]:
        """`BEGIN READ ONLY`: psycopg spells it so while the connection is `read_only`, which
        is set back before the connection returns to the pool."""
        with (
            POSTGRES.translated_errors(),
            self._connection() as conn,
            self._deadlines.watching(conn),
        ):
            conn.read_only = True
            try:
                with conn.transaction():
                    yield PostgresTransaction(conn.cursor(), POSTGRES)
            finally:
                if conn.info.transaction_status == TransactionStatus.IDLE:
                    conn.read_only = False
                elif not conn.closed:
                    # Interrupted mid-statement (a signal, Ctrl-C): the connection is still
                    # busy, so it cannot be set back; closed, the pool replaces it.
                    conn.close()

    def on_messages_available(self, callback: Callable[[str, str], None]) -> None:
        if self._listener is None:
            notifier = self._notifier
            self._listener = Listener(
                self.url,
                _connect_options(self.url),
                self._schema,
                callback,
                own=lambda: notifier.backend_pid,
            )
            self._listener.start()

    def hear_other_processes(self) -> Future[None] | None:
        return None if self._listener is None else self._listener.hear()

    def stop_hearing_other_processes(self) -> None:
        if self._listener is not None:
            self._listener.stop_hearing()

    def notify_messages_available(self, project: str, queue: str) -> None:
        self._notifier.tell(json.dumps([self._schema, project, queue]))

    def close(self) -> None:
        if self._listener is not None:
            # The listener waits for a notification up to POLL_SECONDS: one sent now ends the
            # wait, so closing takes milliseconds instead of up to half a second.
            self._listener.stop(wake=lambda: self._notifier.tell(json.dumps([self._schema])))
        self._notifier.stop()
        self._deadlines.stop()
        self._pool.close()


@contextmanager
def _returned(pool: ConnectionPool[Conn], conn: Conn) -> Iterator[Conn]:
    """`conn`, taken from `pool`, in the block as `pool.connection()` holds one: its
    transaction ended by the block's outcome, then given back."""
    try:
        with conn:
            yield conn
    finally:
        if conn.broken:
            # Closed here, by the work that used it: on the loop, its reader goes before its
            # socket does (`on_loop._release`). Left to the pool, a broken connection is
            # dropped, and its socket closed whenever it is collected, its number given to a
            # new connection meanwhile.
            conn.close()
        pool.putconn(conn)


def _member_transaction(cursor: Any, begun: bool) -> ComposedStatements:
    return PostgresTransaction(cursor, POSTGRES, begun=begun)


def _configure(conn: Conn) -> None:
    """A new connection of the pool gets `SESSION_SETTINGS` and its shard of the counts
    (they stay after the commit)."""
    conn.execute(SESSION_SETTINGS)
    conn.execute(f"SET deadletter.shard = {_next_shard()}")
    conn.commit()


# The shards of the counts (queries.SHARD): a process takes a block of them by its pid and
# gives its connections the block's shards in turn, so that two connections of one process
# share a row only past SHARD_BLOCK connections open at once (the pool holds POOL_SIZE).
SHARD_BLOCK = 16
SHARD_BLOCKS = 4
_connections_opened = itertools.count()


def _next_shard() -> int:
    block = os.getpid() % SHARD_BLOCKS
    return block * SHARD_BLOCK + next(_connections_opened) % SHARD_BLOCK


def _connect_options(url: str) -> dict[str, Any]:
    return (
        {} if "connect_timeout" in conninfo_to_dict(url) else {"connect_timeout": CONNECT_TIMEOUT}
    )


def _check(conn: Conn) -> None:
    """A pooled connection is checked as it is handed out, without a round trip while it is
    quiet: an idle connection has nothing to read unless the server closed it or said why it
    is about to (a restart, a terminated backend); then a query shows whether it still works,
    and the pool replaces one that does not."""
    if ready_now(conn.fileno(), WAIT_R):
        ConnectionPool.check_connection(conn)


class _Deadlines:
    """Cuts a connection whose transaction has run past its deadline: its socket is shut
    down, so the statement waiting on it fails at once (and the request answers 503), and the
    pool discards the connection. One thread per store looks at the open transactions every
    quarter of the deadline (at most a second)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._open: dict[int, tuple[Conn, float]] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="deadletter-deadlines", daemon=True)
        self._thread.start()

    @contextmanager
    def watching(self, conn: Conn) -> Iterator[None]:
        key = id(conn)
        with self._lock:
            self._open[key] = (conn, time.monotonic() + self.seconds)
        try:
            yield
        finally:
            with self._lock:
                self._open.pop(key, None)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopping.wait(min(1.0, self.seconds / 4)):
            now = time.monotonic()
            # Under the lock: a connection is never cut after its transaction has ended.
            with self._lock:
                for key, (conn, deadline) in list(self._open.items()):
                    if now >= deadline:
                        del self._open[key]
                        _cut(conn)


def _cut(conn: Conn) -> None:
    try:
        with socket.socket(fileno=os.dup(conn.pgconn.socket)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, psycopg.Error):
        pass  # already closed
