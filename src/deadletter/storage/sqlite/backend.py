"""The embedded store: one SQLite file in WAL mode with synchronous=FULL.

Every call that returns has committed, and a committed transaction survives a crash or
power loss (WAL + FULL fsyncs the log on each commit). One connection serves the process,
guarded by a lock, so transactions are serial; `BEGIN IMMEDIATE` also serialises them
against any other process that opens the same file.

The fsync of each commit is what limits a busy server, so transactions that queue up behind
one another share a commit (group commit): each runs in a savepoint of one open database
transaction, and the last of the queue commits them all with one fsync. A caller still
returns only after its work is committed, and a failing transaction rolls back only its
own savepoint.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
)
from deadletter.storage.migrations import migration_scripts
from deadletter.storage.rows import (
    MESSAGE_COLUMN_COUNT,
    MESSAGE_COLUMNS,
    TASK_COLUMN_COUNT,
    TASK_COLUMNS,
    chunks,
    dead_letter_target,
    message_from,
    message_row,
    queue_from,
    task_from,
    task_row,
    with_seq,
)

# SQLite allows at most 32766 host parameters; stay well below.
IDS_PER_STATEMENT = 500
# At most this many transactions share one commit, so that none waits long for its turn.
GROUP_COMMIT_LIMIT = 64
_MESSAGE_VALUES = f"({MESSAGE_COLUMNS}) VALUES ({','.join('?' * MESSAGE_COLUMN_COUNT)})"
_TASK_VALUES = f"({TASK_COLUMNS}) VALUES ({','.join('?' * TASK_COLUMN_COUNT)})"
INSERT_MESSAGE = f"INSERT INTO messages {_MESSAGE_VALUES}"
UPSERT_MESSAGE = f"INSERT OR REPLACE INTO messages {_MESSAGE_VALUES}"
INSERT_TASK = f"INSERT INTO tasks {_TASK_VALUES}"
UPSERT_TASK = f"REPLACE INTO tasks {_TASK_VALUES}"
# Without statistics SQLite would rather walk the whole queue in seq order than sort the
# few messages of one claim.
CLAIMED_BY = (
    "SELECT * FROM messages INDEXED BY messages_claim"
    " WHERE project = ? AND queue = ? AND claim_id = ? ORDER BY seq"
)


def _dead_letter_where(where: DeadLetterFilter) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if where.source_queue is not None:
        clauses.append("dl_source = ?")
        params.append(where.source_queue)
    if where.reason is not None:
        clauses.append("dl_reason = ?")
        params.append(where.reason.value)
    if where.since is not None:
        clauses.append("dl_at >= ?")
        params.append(where.since)
    if where.until is not None:
        clauses.append("dl_at < ?")
        params.append(where.until)
    if where.message_ids is not None:
        # One JSON parameter instead of one per id: a filter may list any number of ids.
        clauses.append("id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(where.message_ids)))
    return "".join(f" AND {c}" for c in clauses), params


class SQLiteTransaction(Transaction):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.c = conn

    # Queues

    def get_queue(self, project: str, name: str) -> Queue | None:
        row = self.c.execute(
            "SELECT * FROM queues WHERE project = ? AND name = ?", (project, name)
        ).fetchone()
        return queue_from(row) if row else None

    def insert_queue(self, queue: Queue) -> None:
        try:
            self.c.execute(
                "INSERT INTO queues (project, name, settings, dlq_target, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    queue.project,
                    queue.name,
                    json.dumps(queue.settings.to_dict()),
                    dead_letter_target(queue.settings),
                    queue.created_at,
                    queue.updated_at,
                ),
            )
        except sqlite3.IntegrityError as exc:
            raise QueueAlreadyExists(f"queue {queue.name!r} already exists") from exc

    def update_queue(self, project: str, name: str, settings: QueueSettings, now: float) -> None:
        self.c.execute(
            "UPDATE queues SET settings = ?, dlq_target = ?, updated_at = ?"
            " WHERE project = ? AND name = ?",
            (json.dumps(settings.to_dict()), dead_letter_target(settings), now, project, name),
        )

    def delete_queue(self, project: str, name: str) -> bool:
        gone = self.c.execute(
            "DELETE FROM queues WHERE project = ? AND name = ?", (project, name)
        ).rowcount
        for table in ("messages", "claims", "counters"):
            self.c.execute(f"DELETE FROM {table} WHERE project = ? AND queue = ?", (project, name))
        self.c.execute("DELETE FROM tasks WHERE project = ? AND dlq = ?", (project, name))
        self.c.execute("DELETE FROM patterns WHERE project = ? AND dlq = ?", (project, name))
        return gone > 0

    def list_queues(
        self, project: str, prefix: str | None, after: str | None, limit: int
    ) -> list[Queue]:
        sql = "SELECT * FROM queues WHERE project = ? AND name > ?"
        params: list[Any] = [project, after or ""]
        if prefix:
            sql += " AND substr(name, 1, ?) = ?"
            params += [len(prefix), prefix]
        sql += " ORDER BY name LIMIT ?"
        params.append(limit)
        return [queue_from(r) for r in self.c.execute(sql, params)]

    def sources_of(self, project: str, dlq: str) -> list[Queue]:
        rows = self.c.execute(
            "SELECT * FROM queues WHERE project = ? AND dlq_target = ? ORDER BY name",
            (project, dlq),
        )
        return [queue_from(r) for r in rows]

    def dead_letter_targets(self, project: str) -> set[str]:
        return {
            q.settings.dead_letter.target
            for q in (
                queue_from(r)
                for r in self.c.execute(
                    "SELECT * FROM queues WHERE project = ? AND dlq_target IS NOT NULL", (project,)
                )
            )
            if q.settings.dead_letter and q.settings.dead_letter.active
        }

    # Messages

    def _next_seqs(self, n: int) -> int:
        """Reserve n sequence numbers; returns the first."""
        (last,) = self.c.execute(
            "UPDATE message_sequence SET value = value + ? RETURNING value", (n,)
        ).fetchone()
        return int(last) - n + 1

    def insert_messages(self, project: str, messages: Sequence[Message]) -> list[Message]:
        first = self._next_seqs(len(messages))
        stored = [with_seq(m, first + i) for i, m in enumerate(messages)]
        self.c.executemany(
            INSERT_MESSAGE,
            [message_row(project, m) for m in stored],
        )
        return stored

    def get_messages(self, project: str, queue: str, ids: Sequence[str]) -> list[Message]:
        found: list[Message] = []
        for part in chunks(ids, IDS_PER_STATEMENT):
            rows = self.c.execute(
                f"SELECT * FROM messages WHERE project = ? AND queue = ?"
                f" AND id IN ({','.join('?' * len(part))}) ORDER BY seq",
                [project, queue, *part],
            )
            found += [message_from(r) for r in rows]
        return found

    def claimable(self, project: str, queue: str, now: float, limit: int) -> list[Message]:
        rows = self.c.execute(
            "SELECT * FROM messages WHERE project = ? AND queue = ? AND visible_at <= ?"
            " AND expires_at > ? ORDER BY seq LIMIT ?",
            (project, queue, now, now, limit),
        )
        return [message_from(r) for r in rows]

    def list_messages(
        self, project: str, queue: str, now: float, query: ListQuery
    ) -> list[Message]:
        sql = (
            "SELECT * FROM messages WHERE project = ? AND queue = ? AND seq > ? AND expires_at > ?"
        )
        params: list[Any] = [project, queue, query.after_seq, now]
        if not query.include_claimed:
            sql += " AND NOT (claim_id IS NOT NULL AND claim_expires_at > ?)"
            params.append(now)
        if not query.include_delayed:
            sql += " AND NOT (claim_id IS NULL AND visible_at > ?)"
            params.append(now)
        if query.exclude_client_id is not None:
            sql += " AND (client_id IS NULL OR client_id != ?)"
            params.append(query.exclude_client_id)
        if query.max_seq is not None:
            sql += " AND seq <= ?"
            params.append(query.max_seq)
        if query.dead_letters is not None:
            extra, extra_params = _dead_letter_where(query.dead_letters)
            sql += extra
            params += extra_params
        sql += " ORDER BY seq LIMIT ?"
        params.append(query.limit)
        return [message_from(r) for r in self.c.execute(sql, params)]

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
        rows = self.c.execute(
            "SELECT * FROM messages WHERE project = ? AND queue = ? AND seq <= ?"
            " AND expires_at > ? AND visible_at <= ?" + extra + " ORDER BY seq LIMIT ?",
            [project, dlq, max_seq, now, now, *params, limit],
        )
        return [message_from(r) for r in rows]

    def count_dead_letters(
        self, project: str, dlq: str, now: float, where: DeadLetterFilter, max_seq: int
    ) -> int:
        extra, params = _dead_letter_where(where)
        (n,) = self.c.execute(
            "SELECT COUNT(*) FROM messages WHERE project = ? AND queue = ? AND seq <= ?"
            " AND expires_at > ?" + extra,
            [project, dlq, max_seq, now, *params],
        ).fetchone()
        return int(n)

    def max_seq(self, project: str, queue: str) -> int:
        (n,) = self.c.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE project = ? AND queue = ?",
            (project, queue),
        ).fetchone()
        return int(n)

    def update_messages(self, project: str, messages: Sequence[Message]) -> None:
        self.c.executemany(
            "UPDATE messages SET visible_at = ?, claim_id = ?, claim_expires_at = ?,"
            " claim_count = ?, first_claimed_at = ?, expires_at = ? WHERE id = ?",
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
        first = self._next_seqs(len(messages))
        rows = [message_row(project, with_seq(m, first + i)) for i, m in enumerate(messages)]
        self.c.executemany(
            UPSERT_MESSAGE,
            rows,
        )

    def delete_messages(self, project: str, queue: str, ids: Sequence[str]) -> int:
        gone = 0
        for part in chunks(ids, IDS_PER_STATEMENT):
            gone += self.c.execute(
                f"DELETE FROM messages WHERE project = ? AND queue = ?"
                f" AND id IN ({','.join('?' * len(part))})",
                [project, queue, *part],
            ).rowcount
        return gone

    def purge(self, project: str, queue: str) -> int:
        self.c.execute("DELETE FROM claims WHERE project = ? AND queue = ?", (project, queue))
        return self.c.execute(
            "DELETE FROM messages WHERE project = ? AND queue = ?", (project, queue)
        ).rowcount

    def claimed_by(self, project: str, queue: str, claim_id: str) -> list[Message]:
        rows = self.c.execute(CLAIMED_BY, (project, queue, claim_id))
        return [message_from(r) for r in rows]

    def expired(self, now: float, limit: int) -> list[tuple[str, Message]]:
        rows = self.c.execute(
            "SELECT * FROM messages WHERE expires_at <= ? ORDER BY expires_at, seq LIMIT ?",
            (now, limit),
        )
        return [(r["project"], message_from(r)) for r in rows]

    def counts(self, project: str, queue: str, now: float) -> MessageCounts:
        row = self.c.execute(
            "SELECT"
            " COALESCE(SUM(claim_id IS NOT NULL AND claim_expires_at > ?), 0) AS claimed,"
            " COALESCE(SUM(visible_at > ? AND NOT (claim_id IS NOT NULL AND claim_expires_at > ?)),"
            " 0) AS delayed,"
            " COUNT(*) AS total"
            " FROM messages WHERE project = ? AND queue = ? AND expires_at > ?",
            (now, now, now, project, queue, now),
        ).fetchone()
        ends = []
        for order in ("ASC", "DESC"):
            r = self.c.execute(
                "SELECT * FROM messages WHERE project = ? AND queue = ? AND expires_at > ?"
                f" ORDER BY seq {order} LIMIT 1",
                (project, queue, now),
            ).fetchone()
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
        rows = self.c.execute(
            "SELECT dl_source, COUNT(*) FROM messages WHERE project = ? AND queue = ?"
            " AND expires_at > ? AND dl_source IS NOT NULL GROUP BY dl_source ORDER BY dl_source",
            (project, dlq, now),
        )
        return {r[0]: int(r[1]) for r in rows}

    # Claims

    def insert_claim(self, claim: ClaimRecord) -> None:
        self.c.execute(
            "INSERT INTO claims (id, project, queue, ttl, grace, created_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
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
        r = self.c.execute(
            "SELECT * FROM claims WHERE project = ? AND queue = ? AND id = ?",
            (project, queue, claim_id),
        ).fetchone()
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
            "UPDATE claims SET ttl = ?, grace = ?, expires_at = ? WHERE id = ?",
            (claim.ttl, claim.grace, claim.expires_at, claim.id),
        )

    def delete_claim(self, project: str, queue: str, claim_id: str) -> None:
        self.c.execute(
            "DELETE FROM claims WHERE project = ? AND queue = ? AND id = ?",
            (project, queue, claim_id),
        )

    def delete_stale_claims(self, now: float) -> int:
        return self.c.execute("DELETE FROM claims WHERE expires_at <= ?", (now,)).rowcount

    # Counters

    def bump_counter(self, project: str, queue: str, name: str, amount: int) -> None:
        self.c.execute(
            "INSERT INTO counters (project, queue, name, value) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (project, queue, name) DO UPDATE SET value = value + excluded.value",
            (project, queue, name, amount),
        )

    def counters(self, project: str, queue: str) -> dict[str, int]:
        rows = self.c.execute(
            "SELECT name, value FROM counters WHERE project = ? AND queue = ?", (project, queue)
        )
        return {r[0]: int(r[1]) for r in rows}

    # Tasks

    def insert_task(self, task: RedriveTask) -> None:
        self.c.execute(INSERT_TASK, task_row(task))

    def get_task(self, task_id: str, lock: bool = False) -> RedriveTask | None:
        r = self.c.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
        return task_from(r) if r else None

    def update_task(self, task: RedriveTask) -> None:
        self.c.execute(UPSERT_TASK, task_row(task))

    def list_tasks(self, project: str, dlq: str | None, limit: int) -> list[RedriveTask]:
        if dlq is None:
            rows = self.c.execute(
                "SELECT * FROM tasks WHERE project = ? ORDER BY started_at DESC, id LIMIT ?",
                (project, limit),
            )
        else:
            rows = self.c.execute(
                "SELECT * FROM tasks WHERE project = ? AND dlq = ?"
                " ORDER BY started_at DESC, id LIMIT ?",
                (project, dlq, limit),
            )
        return [task_from(r) for r in rows]

    def active_task_ids(self) -> list[str]:
        rows = self.c.execute(
            "SELECT id FROM tasks WHERE status IN ('RUNNING', 'CANCELLING') ORDER BY started_at"
        )
        return [r[0] for r in rows]

    # Patterns

    def save_patterns(self, project: str, dlq: str, patterns: list[dict[str, Any]]) -> None:
        self.c.execute(
            "REPLACE INTO patterns (project, dlq, patterns) VALUES (?, ?, ?)",
            (project, dlq, json.dumps(patterns)),
        )

    def get_patterns(self, project: str, dlq: str) -> list[dict[str, Any]]:
        r = self.c.execute(
            "SELECT patterns FROM patterns WHERE project = ? AND dlq = ?", (project, dlq)
        ).fetchone()
        return list(json.loads(r[0])) if r else []

    def wipe(self) -> None:
        for table in ("messages", "claims", "counters", "tasks", "patterns", "queues"):
            self.c.execute(f"DELETE FROM {table}")


class SQLiteStore(Store):
    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # owns the connection
        self._queue_guard = threading.Lock()  # guards `_queued`
        self._queued = 0  # transactions waiting for the connection
        self._group: _CommitGroup | None = None  # the open, not yet committed transaction
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute("PRAGMA busy_timeout = 30000")
        self._migrate()

    def _migrate(self) -> None:
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                c.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                row = c.execute("SELECT MAX(version) FROM schema_version").fetchone()
                current = row[0] or 0
                for version, sql in migration_scripts("deadletter.storage.sqlite"):
                    if version > current:
                        for statement in sql.split(";"):
                            if statement.strip():
                                c.execute(statement)
                        c.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        self._acquire_connection()
        try:
            group = self._join_group()
            self._conn.execute("SAVEPOINT request")
            try:
                yield SQLiteTransaction(self._conn)
            except BaseException:
                self._undo_request(group)
                raise
            self._conn.execute("RELEASE request")
            group.members += 1
        finally:
            self._release_connection()
        group.committed.wait()
        if group.error is not None:
            raise sqlite3.OperationalError(f"commit failed: {group.error}") from group.error

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
                self._commit_group()
        self._lock.release()

    def _join_group(self) -> _CommitGroup:
        if self._group is None:
            self._conn.execute("BEGIN IMMEDIATE")
            self._group = _CommitGroup()
        return self._group

    def _undo_request(self, group: _CommitGroup) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK TO request")
            self._conn.execute("RELEASE request")
        else:
            # SQLite itself rolled the whole transaction back (disk full, I/O error): the
            # group's earlier members are lost with it and must not report success.
            self._group = None
            group.error = sqlite3.OperationalError("the shared transaction was rolled back")
            group.committed.set()

    def _commit_group(self) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        try:
            self._conn.execute("COMMIT")
        except BaseException as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            group.error = exc
        group.committed.set()

    def close(self) -> None:
        with self._lock:
            self._commit_group()
            self._conn.close()


@dataclass
class _CommitGroup:
    """Transactions committed by one COMMIT; each member waits for `committed`."""

    members: int = 0
    committed: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
