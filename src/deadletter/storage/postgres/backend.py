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

from deadletter.domain.errors import QueueAlreadyExists
from deadletter.domain.model import (
    DeadLetterFilter,
    ListQuery,
    Message,
    Queue,
    QueueSettings,
    RedriveTask,
)
from deadletter.storage.base import (
    ClaimRecord,
    MessageCounts,
    Store,
    Transaction,
    TransactionConflict,
)
from deadletter.storage.migrations import migration_scripts
from deadletter.storage.rows import (
    MESSAGE_COLUMN_COUNT,
    MESSAGE_COLUMNS,
    TASK_COLUMN_COUNT,
    TASK_COLUMNS,
    dead_letter_target,
    message_from,
    message_row,
    queue_from,
    task_from,
    task_row,
    with_seq,
)

log = logging.getLogger(__name__)

CHANNEL = "deadletter_messages"
POOL_SIZE = 10
# Serialises schema migrations of one schema between processes that start at the same time.
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.deadletter'))"

_MESSAGE_VALUES = f"({MESSAGE_COLUMNS}) VALUES ({', '.join(['%s'] * MESSAGE_COLUMN_COUNT)})"
INSERT_MESSAGE = f"INSERT INTO messages {_MESSAGE_VALUES}"
UPSERT_MESSAGE = (
    INSERT_MESSAGE
    + " ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in MESSAGE_COLUMNS.split(", ") if c != "id")
)
UPSERT_TASK = (
    f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({', '.join(['%s'] * TASK_COLUMN_COUNT)})"
    " ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in TASK_COLUMNS.split(", ") if c != "id")
)

Conn = psycopg.Connection[dict[str, Any]]


def _dead_letter_where(where: DeadLetterFilter) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if where.source_queue is not None:
        clauses.append("dl_source = %s")
        params.append(where.source_queue)
    if where.reason is not None:
        clauses.append("dl_reason = %s")
        params.append(where.reason.value)
    if where.since is not None:
        clauses.append("dl_at >= %s")
        params.append(where.since)
    if where.until is not None:
        clauses.append("dl_at < %s")
        params.append(where.until)
    if where.message_ids is not None:
        clauses.append("id = ANY(%s)")
        params.append(list(where.message_ids))
    return "".join(f" AND {c}" for c in clauses), params


class PostgresTransaction(Transaction):
    def __init__(self, conn: Conn) -> None:
        self.c = conn

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self.c.execute(sql, params).fetchall()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        return self.c.execute(sql, params).fetchone()

    def _messages(self, sql: str, params: Sequence[Any]) -> list[Message]:
        return [message_from(r) for r in self._all(sql, params)]

    # Queues

    def get_queue(self, project: str, name: str) -> Queue | None:
        row = self._one("SELECT * FROM queues WHERE project = %s AND name = %s", (project, name))
        return queue_from(row) if row else None

    def insert_queue(self, queue: Queue) -> None:
        try:
            with self.c.transaction():  # a savepoint: the duplicate must not abort the caller
                self.c.execute(
                    "INSERT INTO queues (project, name, settings, dlq_target, created_at,"
                    " updated_at) VALUES (%s, %s, %s, %s, %s, %s)",
                    (
                        queue.project,
                        queue.name,
                        json.dumps(queue.settings.to_dict()),
                        dead_letter_target(queue.settings),
                        queue.created_at,
                        queue.updated_at,
                    ),
                )
        except pg_errors.UniqueViolation as exc:
            raise QueueAlreadyExists(f"queue {queue.name!r} already exists") from exc

    def update_queue(self, project: str, name: str, settings: QueueSettings, now: float) -> None:
        self.c.execute(
            "UPDATE queues SET settings = %s, dlq_target = %s, updated_at = %s"
            " WHERE project = %s AND name = %s",
            (json.dumps(settings.to_dict()), dead_letter_target(settings), now, project, name),
        )

    def delete_queue(self, project: str, name: str) -> bool:
        gone = self.c.execute(
            "DELETE FROM queues WHERE project = %s AND name = %s", (project, name)
        ).rowcount
        for table in ("messages", "claims", "counters", "queue_sequences"):
            self.c.execute(
                f"DELETE FROM {table} WHERE project = %s AND queue = %s", (project, name)
            )
        self.c.execute("DELETE FROM tasks WHERE project = %s AND dlq = %s", (project, name))
        self.c.execute("DELETE FROM patterns WHERE project = %s AND dlq = %s", (project, name))
        return gone > 0

    def list_queues(
        self, project: str, prefix: str | None, after: str | None, limit: int
    ) -> list[Queue]:
        sql = "SELECT * FROM queues WHERE project = %s AND name > %s"
        params: list[Any] = [project, after or ""]
        if prefix:
            sql += " AND starts_with(name, %s)"
            params.append(prefix)
        sql += " ORDER BY name LIMIT %s"
        params.append(limit)
        return [queue_from(r) for r in self._all(sql, params)]

    def sources_of(self, project: str, dlq: str) -> list[Queue]:
        rows = self._all(
            "SELECT * FROM queues WHERE project = %s AND dlq_target = %s ORDER BY name",
            (project, dlq),
        )
        return [queue_from(r) for r in rows]

    def dead_letter_targets(self, project: str) -> set[str]:
        queues = (
            queue_from(r)
            for r in self._all(
                "SELECT * FROM queues WHERE project = %s AND dlq_target IS NOT NULL", (project,)
            )
        )
        return {
            q.settings.dead_letter.target
            for q in queues
            if q.settings.dead_letter and q.settings.dead_letter.active
        }

    # Messages

    def _with_seqs(self, project: str, messages: Sequence[Message]) -> list[Message]:
        """`messages` with sequence numbers from their queues' counters, in input order.

        Counters are taken in queue-name order so that two transactions never wait for each
        other's counters in opposite orders.
        """
        by_queue: dict[str, list[int]] = defaultdict(list)
        for i, m in enumerate(messages):
            by_queue[m.queue].append(i)
        out = list(messages)
        for queue in sorted(by_queue):
            positions = by_queue[queue]
            row = self._one(
                "INSERT INTO queue_sequences (project, queue, value) VALUES (%s, %s, %s)"
                " ON CONFLICT (project, queue)"
                " DO UPDATE SET value = queue_sequences.value + excluded.value RETURNING value",
                (project, queue, len(positions)),
            )
            assert row is not None
            first = int(row["value"]) - len(positions) + 1
            for offset, i in enumerate(positions):
                out[i] = with_seq(messages[i], first + offset)
        return out

    def insert_messages(self, project: str, messages: Sequence[Message]) -> list[Message]:
        if not messages:
            return []
        stored = self._with_seqs(project, messages)
        with self.c.cursor() as cur:
            cur.executemany(INSERT_MESSAGE, [message_row(project, m) for m in stored])
        return stored

    def get_messages(self, project: str, queue: str, ids: Sequence[str]) -> list[Message]:
        return self._messages(
            "SELECT * FROM messages WHERE project = %s AND queue = %s AND id = ANY(%s)"
            " ORDER BY seq",
            (project, queue, list(ids)),
        )

    def claimable(self, project: str, queue: str, now: float, limit: int) -> list[Message]:
        return self._messages(
            "SELECT * FROM messages WHERE project = %s AND queue = %s AND visible_at <= %s"
            " AND expires_at > %s ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED",
            (project, queue, now, now, limit),
        )

    def list_messages(
        self, project: str, queue: str, now: float, query: ListQuery
    ) -> list[Message]:
        sql = (
            "SELECT * FROM messages WHERE project = %s AND queue = %s AND seq > %s"
            " AND expires_at > %s"
        )
        params: list[Any] = [project, queue, query.after_seq, now]
        if not query.include_claimed:
            sql += " AND NOT (claim_id IS NOT NULL AND claim_expires_at > %s)"
            params.append(now)
        if not query.include_delayed:
            sql += " AND NOT (claim_id IS NULL AND visible_at > %s)"
            params.append(now)
        if query.exclude_client_id is not None:
            sql += " AND (client_id IS NULL OR client_id != %s)"
            params.append(query.exclude_client_id)
        if query.max_seq is not None:
            sql += " AND seq <= %s"
            params.append(query.max_seq)
        if query.dead_letters is not None:
            extra, extra_params = _dead_letter_where(query.dead_letters)
            sql += extra
            params += extra_params
        sql += " ORDER BY seq LIMIT %s"
        params.append(query.limit)
        return self._messages(sql, params)

    def dead_letters(
        self,
        project: str,
        dlq: str,
        now: float,
        where: DeadLetterFilter,
        max_seq: int,
        limit: int,
        lock: bool,
    ) -> list[Message]:
        extra, params = _dead_letter_where(where)
        return self._messages(
            "SELECT * FROM messages WHERE project = %s AND queue = %s AND seq <= %s"
            " AND expires_at > %s AND visible_at <= %s"
            + extra
            + " ORDER BY seq LIMIT %s"
            + (" FOR UPDATE SKIP LOCKED" if lock else ""),
            [project, dlq, max_seq, now, now, *params, limit],
        )

    def count_dead_letters(
        self, project: str, dlq: str, now: float, where: DeadLetterFilter, max_seq: int
    ) -> int:
        extra, params = _dead_letter_where(where)
        row = self._one(
            "SELECT COUNT(*) AS n FROM messages WHERE project = %s AND queue = %s AND seq <= %s"
            " AND expires_at > %s" + extra,
            [project, dlq, max_seq, now, *params],
        )
        return int(row["n"]) if row else 0

    def max_seq(self, project: str, queue: str) -> int:
        row = self._one(
            "SELECT COALESCE(MAX(seq), 0) AS n FROM messages WHERE project = %s AND queue = %s",
            (project, queue),
        )
        return int(row["n"]) if row else 0

    def update_messages(self, project: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        with self.c.cursor() as cur:
            cur.executemany(
                "UPDATE messages SET visible_at = %s, claim_id = %s, claim_expires_at = %s,"
                " claim_count = %s, first_claimed_at = %s, expires_at = %s WHERE id = %s",
                [
                    (
                        m.visible_at,
                        m.claim_id,
                        m.claim_expires_at,
                        m.claim_count,
                        m.first_claimed_at,
                        m.expires_at,
                        m.id,
                    )
                    for m in messages
                ],
            )

    def move_messages(self, project: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        moved = self._with_seqs(project, messages)
        with self.c.cursor() as cur:
            cur.executemany(UPSERT_MESSAGE, [message_row(project, m) for m in moved])

    def delete_messages(self, project: str, queue: str, ids: Sequence[str]) -> int:
        return self.c.execute(
            "DELETE FROM messages WHERE project = %s AND queue = %s AND id = ANY(%s)",
            (project, queue, list(ids)),
        ).rowcount

    def purge(self, project: str, queue: str) -> int:
        self.c.execute("DELETE FROM claims WHERE project = %s AND queue = %s", (project, queue))
        return self.c.execute(
            "DELETE FROM messages WHERE project = %s AND queue = %s", (project, queue)
        ).rowcount

    def claimed_by(self, project: str, queue: str, claim_id: str) -> list[Message]:
        return self._messages(
            "SELECT * FROM messages WHERE project = %s AND queue = %s AND claim_id = %s"
            " ORDER BY seq",
            (project, queue, claim_id),
        )

    def expired(self, now: float, limit: int) -> list[tuple[str, Message]]:
        rows = self._all(
            "SELECT * FROM messages WHERE expires_at <= %s ORDER BY expires_at, seq LIMIT %s"
            " FOR UPDATE SKIP LOCKED",
            (now, limit),
        )
        return [(r["project"], message_from(r)) for r in rows]

    def counts(self, project: str, queue: str, now: float) -> MessageCounts:
        row = self._one(
            "SELECT"
            " COUNT(*) FILTER (WHERE claim_id IS NOT NULL AND claim_expires_at > %s) AS claimed,"
            " COUNT(*) FILTER (WHERE visible_at > %s"
            "   AND NOT (claim_id IS NOT NULL AND claim_expires_at > %s)) AS delayed,"
            " COUNT(*) AS total"
            " FROM messages WHERE project = %s AND queue = %s AND expires_at > %s",
            (now, now, now, project, queue, now),
        )
        assert row is not None
        ends: list[Message | None] = []
        for order in ("ASC", "DESC"):
            r = self._one(
                "SELECT * FROM messages WHERE project = %s AND queue = %s AND expires_at > %s"
                f" ORDER BY seq {order} LIMIT 1",
                (project, queue, now),
            )
            ends.append(message_from(r) if r else None)
        claimed, delayed, total = int(row["claimed"]), int(row["delayed"]), int(row["total"])
        return MessageCounts(
            free=total - claimed - delayed,
            claimed=claimed,
            delayed=delayed,
            oldest=ends[0],
            newest=ends[1],
        )

    def count_by_source(self, project: str, dlq: str, now: float) -> dict[str, int]:
        rows = self._all(
            "SELECT dl_source, COUNT(*) AS n FROM messages WHERE project = %s AND queue = %s"
            " AND expires_at > %s AND dl_source IS NOT NULL GROUP BY dl_source ORDER BY dl_source",
            (project, dlq, now),
        )
        return {r["dl_source"]: int(r["n"]) for r in rows}

    # Claims

    def insert_claim(self, claim: ClaimRecord) -> None:
        self.c.execute(
            "INSERT INTO claims (id, project, queue, ttl, grace, created_at, expires_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                claim.id,
                claim.project,
                claim.queue,
                claim.ttl,
                claim.grace,
                claim.created_at,
                claim.expires_at,
            ),
        )

    def get_claim(self, project: str, queue: str, claim_id: str) -> ClaimRecord | None:
        r = self._one(
            "SELECT * FROM claims WHERE project = %s AND queue = %s AND id = %s",
            (project, queue, claim_id),
        )
        if r is None:
            return None
        return ClaimRecord(
            r["id"],
            r["project"],
            r["queue"],
            r["ttl"],
            r["grace"],
            r["created_at"],
            r["expires_at"],
        )

    def update_claim(self, claim: ClaimRecord) -> None:
        self.c.execute(
            "UPDATE claims SET ttl = %s, grace = %s, expires_at = %s WHERE id = %s",
            (claim.ttl, claim.grace, claim.expires_at, claim.id),
        )

    def delete_claim(self, project: str, queue: str, claim_id: str) -> None:
        self.c.execute(
            "DELETE FROM claims WHERE project = %s AND queue = %s AND id = %s",
            (project, queue, claim_id),
        )

    def delete_stale_claims(self, now: float) -> int:
        return self.c.execute("DELETE FROM claims WHERE expires_at <= %s", (now,)).rowcount

    # Counters

    def bump_counter(self, project: str, queue: str, name: str, amount: int) -> None:
        self.c.execute(
            "INSERT INTO counters (project, queue, name, value) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (project, queue, name)"
            " DO UPDATE SET value = counters.value + excluded.value",
            (project, queue, name, amount),
        )

    def counters(self, project: str, queue: str) -> dict[str, int]:
        rows = self._all(
            "SELECT name, value FROM counters WHERE project = %s AND queue = %s", (project, queue)
        )
        return {r["name"]: int(r["value"]) for r in rows}

    # Tasks

    def insert_task(self, task: RedriveTask) -> None:
        self.c.execute(UPSERT_TASK, task_row(task))

    def get_task(self, task_id: str, lock: bool = False) -> RedriveTask | None:
        r = self._one(
            "SELECT * FROM tasks WHERE id = %s" + (" FOR UPDATE" if lock else ""), (task_id,)
        )
        return task_from(r) if r else None

    def update_task(self, task: RedriveTask) -> None:
        self.c.execute(UPSERT_TASK, task_row(task))

    def list_tasks(self, project: str, dlq: str | None, limit: int) -> list[RedriveTask]:
        if dlq is None:
            rows = self._all(
                "SELECT * FROM tasks WHERE project = %s ORDER BY started_at DESC, id LIMIT %s",
                (project, limit),
            )
        else:
            rows = self._all(
                "SELECT * FROM tasks WHERE project = %s AND dlq = %s"
                " ORDER BY started_at DESC, id LIMIT %s",
                (project, dlq, limit),
            )
        return [task_from(r) for r in rows]

    def active_task_ids(self) -> list[str]:
        rows = self._all(
            "SELECT id FROM tasks WHERE status IN ('RUNNING', 'CANCELLING') ORDER BY started_at"
        )
        return [r["id"] for r in rows]

    # Patterns

    def save_patterns(self, project: str, dlq: str, patterns: list[dict[str, Any]]) -> None:
        self.c.execute(
            "INSERT INTO patterns (project, dlq, patterns) VALUES (%s, %s, %s)"
            " ON CONFLICT (project, dlq) DO UPDATE SET patterns = excluded.patterns",
            (project, dlq, json.dumps(patterns)),
        )

    def get_patterns(self, project: str, dlq: str) -> list[dict[str, Any]]:
        r = self._one(
            "SELECT patterns FROM patterns WHERE project = %s AND dlq = %s", (project, dlq)
        )
        return list(json.loads(r["patterns"])) if r else []

    def wipe(self) -> None:
        self.c.execute(
            "TRUNCATE messages, claims, counters, tasks, patterns, queues, queue_sequences"
        )


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
    def transaction(self) -> Iterator[Transaction]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield PostgresTransaction(conn)
        except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure) as exc:
            raise TransactionConflict(str(exc)) from exc

    def on_messages_available(self, callback: Callable[[str, str], None]) -> None:
        if self._listener is None:
            self._listener = _Listener(self.url, self._schema, callback)
            self._listener.start()

    def notify_messages_available(self, tx: Transaction, project: str, queue: str) -> None:
        assert isinstance(tx, PostgresTransaction)
        payload = json.dumps([self._schema, project, queue])
        tx.c.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))

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
