"""The shared store: PostgreSQL through psycopg 3 and a connection pool.

Many server processes, on one host or several, use one database. Every rule that must hold
across them is the database's: rows that a claim, a dead-letter move, a sweep or a redrive
picks are locked with `FOR UPDATE SKIP LOCKED`, so two processes never hand out the same
message; a committed transaction is durable. Processes tell each other that a queue has new
messages with LISTEN/NOTIFY, which wakes long polls waiting in another process.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from deadletter.domain.errors import DeadletterError, QueueAlreadyExists
from deadletter.domain.model import Message
from deadletter.storage.base import StorageError, Store, Transaction, TransactionConflict
from deadletter.storage.migrations import migration_scripts
from deadletter.storage.rows import with_seq
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.dialect import PARAMETER, Dialect, Statements
from deadletter.storage.sql.transaction import SQLTransaction

log = logging.getLogger(__name__)

CHANNEL = "deadletter_messages"
POOL_SIZE = 10
# Serialises schema migrations of one schema between processes that start at the same time.
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.deadletter'))"
# The next sequence number of each queue. A sender holds its queue's row until commit, so
# sequence numbers are handed out in commit order per queue.
RESERVE_SEQS = (
    "INSERT INTO queue_sequences (project, queue, value) VALUES (:project, :queue, :n)"
    " ON CONFLICT (project, queue)"
    " DO UPDATE SET value = queue_sequences.value + excluded.value RETURNING value"
)
FORGET_SEQS = "DELETE FROM queue_sequences WHERE project = :project AND queue = :name"
NOTIFY = "SELECT pg_notify(:channel, :payload)"
READ_ONLY = "SET TRANSACTION READ ONLY"

Conn = psycopg.Connection[dict[str, Any]]


class PostgresDialect(Dialect):
    """queries.py is written in PostgreSQL's SQL: only the parameter style changes."""

    driver_error = psycopg.Error

    def _spell(self, sql: str) -> str:
        return PARAMETER.sub(r"%(\1)s", sql.replace("%", "%%"))

    def domain_error(self, exc: Exception) -> DeadletterError:
        if isinstance(exc, pg_errors.UniqueViolation) and exc.diag.table_name == "queues":
            return QueueAlreadyExists()
        if isinstance(exc, pg_errors.DeadlockDetected | pg_errors.SerializationFailure):
            return TransactionConflict(str(exc))
        return StorageError(str(exc))

    def numbered(self, tx: Statements, project: str, messages: Sequence[Message]) -> list[Message]:
        """Counters are taken in queue-name order so that two transactions never wait for
        each other's counters in opposite orders."""
        by_queue: dict[str, list[int]] = defaultdict(list)
        for i, m in enumerate(messages):
            by_queue[m.queue].append(i)
        out = list(messages)
        for queue in sorted(by_queue):
            positions = by_queue[queue]
            n = len(positions)
            row = tx.one(RESERVE_SEQS, {"project": project, "queue": queue, "n": n})
            first = int(row["value"]) - n + 1
            for offset, i in enumerate(positions):
                out[i] = with_seq(messages[i], first + offset)
        return out

    def forget_queue(self, tx: Statements, project: str, name: str) -> None:
        tx.run(FORGET_SEQS, {"project": project, "name": name})

    def wipe(self, tx: Statements) -> None:
        tx.run(f"TRUNCATE {', '.join(q.TABLES)}, queue_sequences")


POSTGRES = PostgresDialect()


class PostgresStore(Store):
    def __init__(self, url: str, pool_size: int = POOL_SIZE) -> None:
        self.url = url
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"row_factory": dict_row},
            open=True,
            name="deadletter",
        )
        self._schema = self._migrate()
        self._listener: _Listener | None = None

    def _migrate(self) -> str:
        """Apply the migrations this schema lacks; returns the schema's name."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(MIGRATION_LOCK)
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = conn.execute("SELECT MAX(version) AS v FROM schema_version").fetchone()
            current = (row["v"] if row else None) or 0
            for version, sql in migration_scripts("deadletter.storage.postgres"):
                if version > current:
                    conn.execute(sql)  # no parameters: several statements at once
                    conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
            schema_row = conn.execute("SELECT current_schema() AS s").fetchone()
            return str(schema_row["s"]) if schema_row else "public"

    @contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        with POSTGRES.translated_errors(), self._pool.connection() as conn, conn.transaction():
            yield SQLTransaction(conn.cursor(), POSTGRES)

    @contextmanager
    def _read(self) -> Iterator[Transaction]:
        with POSTGRES.translated_errors(), self._pool.connection() as conn, conn.transaction():
            conn.execute(READ_ONLY)
            yield SQLTransaction(conn.cursor(), POSTGRES)

    def on_messages_available(self, callback: Callable[[str, str], None]) -> None:
        if self._listener is None:
            self._listener = _Listener(self.url, self._schema, callback)
            self._listener.start()

    def notify_messages_available(self, tx: Transaction, project: str, queue: str) -> None:
        assert isinstance(tx, SQLTransaction)
        tx.run(NOTIFY, {"channel": CHANNEL, "payload": json.dumps([self._schema, project, queue])})

    def close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
        self._pool.close()


class _Listener:
    """A daemon thread on its own connection that turns NOTIFYs of this schema into calls.

    Notifications are delivered on commit, so the callback never sees uncommitted messages.
    A lost connection is reopened; a wakeup missed meanwhile only delays a long poll, which
    re-reads the queue when it times out.
    """

    POLL_SECONDS = 0.5

    def __init__(self, url: str, schema: str, callback: Callable[[str, str], None]) -> None:
        self._url = url
        self._schema = schema
        self._callback = callback
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="deadletter-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=self.POLL_SECONDS):
                            self._deliver(note.payload)
            except psycopg.Error:
                log.warning("notification listener lost its connection; reconnecting")
                self._stopping.wait(1.0)

    def _deliver(self, payload: str) -> None:
        try:
            schema, project, queue = json.loads(payload)
        except (ValueError, TypeError):
            return
        if schema == self._schema:
            try:
                self._callback(project, queue)
            except Exception:
                log.exception("messages-available callback failed")
