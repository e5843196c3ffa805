"""The hot requests' steps composed for PostgreSQL: one data-modifying statement each where
`SQLTransaction` sends several (docs/benchmarks.md, "Statements per request").

Each statement a request sends costs psycopg 20-40 µs of Python and the server a round trip,
so a send numbers, inserts and counts its messages in one statement; a claim picks, claims,
counts and records them in one; an acknowledgement deletes and counts in one; and the
counters the engine bumps wait: a claim's step carries them, a statement that reads the
counters sees them written first, and what is left goes with the COMMIT (in a group, with the
group's COMMIT). Every statement does exactly what the steps it stands
for would do, and only that: which messages a claim hands out, which leave for the DLQ, what
an acknowledgement may delete is still decided where `SQLTransaction`'s steps leave it (the
engine, or the statements of queries.py these are built from).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from deadletter.domain.model import Message
from deadletter.domain.tags import DEFAULT_DONE_AT
from deadletter.storage.base import ClaimRecord
from deadletter.storage.postgres.prepared import PreparedCursor
from deadletter.storage.rows import message_params, with_seq
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.dialect import json_text
from deadletter.storage.sql.transaction import SQLTransaction

# A queue's lane (backend.py's module docstring): advisory lock keys (class, hash of the
# queue) in a class of their own.
LANE = "(x'646c'::int, hashtext(current_schema() || '/' || :project || '/' || :queue))"
CLAIMED = 2  # the class of a claimed message (`rows.hidden_class`)

# The columns of a message a send gives, each as an array of one element per message, and
# the type the array is read as.
_SENT_TYPES = {
    "id": "text", "body": "bytea", "attributes": "text", "enqueued_at": "float8",
    "expires_at": "float8", "visible_at": "float8", "claim_id": "text",
    "claim_expires_at": "float8", "claim_count": "int", "first_claimed_at": "float8",
    "client_id": "text", "dl_eligible": "bool", "provenance": "text", "dl_source": "text",
    "dl_reason": "text", "dl_at": "float8", "history": "text", "dl_due_at": "float8",
    "group_id": "text", "dedup_id": "text", "ready_at": "float8", "only_tag": "text",
    "dl_tag": "text", "hidden": "int",
}  # fmt: skip
_SENT = tuple(f for f in q.MESSAGE_FIELDS if f in _SENT_TYPES)
assert set(_SENT) | {"project", "queue", "seq"} == set(q.MESSAGE_FIELDS)


def _add(table: str, key: str, value: str, select: str) -> str:
    """An upsert of `table`'s sharded counts adding each row `select` gives (project, queue,
    key, shard, value), in key order so that two transactions never wait for each other's
    rows in turn."""
    return (
        f"INSERT INTO {table} (project, queue, {key}, shard, {value}) {select}"
        f" ON CONFLICT (project, queue, {key}, shard)"
        f" DO UPDATE SET {value} = {table}.{value} + excluded.{value}"
    )


def _numbered(fields: Sequence[str]) -> str:
    """CTEs `lane`, `seqs` and `new`: the queue's lane taken (shared) before any number is,
    then one number per row of `:rows` (a JSON array of objects: `ord`, their order from 1,
    and `fields` but the body), in their order (`numbered`). One JSON text costs psycopg a
    fraction of what an array per column does (it inspects every list). The bodies come apart,
    as one `bytea[]` in binary (`:bodies`, the `ord`-th is the row's): in the JSON, in hex, they
    were most of the text PostgreSQL lexed, twice, a fifth of the backend's CPU a send.

    The numbers are one per element of `:rows`, not `generate_series(1, :n)`: PostgreSQL
    estimates a series of `:n` rows as 1,000 in a generic plan and as `:n` in a plan made with
    the values, so it judged the generic plan dearer and planned the statement again at every
    send (a fifth of the backend's CPU a send). Counted from the array, both plans expect the
    same rows, and the prepared statement keeps its generic plan."""
    columns = ", ".join(f"{f} {_SENT_TYPES[f]}" for f in fields if f != "body")
    body = "(:bodies::bytea[])[r.ord] AS body, " if "body" in fields else ""
    return (
        f"WITH lane AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared{LANE}),"
        " seqs AS MATERIALIZED (SELECT nextval('message_seq') AS seq"
        " FROM lane, json_array_elements(:rows::json)),"
        f" new AS MATERIALIZED (SELECT s.seq, {body}r.*"
        f" FROM json_to_recordset(:rows::json) AS r(ord bigint, {columns})"
        " JOIN (SELECT seq, row_number() OVER (ORDER BY seq) AS ord FROM seqs) AS s USING (ord))"
    )


def _rows(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> dict[str, Any]:
    """The parameters `_numbered` reads `rows` from: `:rows`, and `:bodies` if `fields` has the
    body. A column whose value is None is left out of its row: `json_to_recordset` reads a
    missing key as NULL, and a new message's row is about half nulls, text that PostgreSQL
    would lex and the server encode for nothing."""
    columns = [f for f in fields if f != "body"]
    params: dict[str, Any] = {
        "rows": json_text(
            [
                {"ord": i, **{f: r[f] for f in columns if r[f] is not None}}
                for i, r in enumerate(rows, 1)
            ]
        )
    }
    if "body" in fields:
        params["bodies"] = [r["body"] for r in rows]
    return params


# New messages of one queue, numbered, inserted and counted (`SQLTransaction.insert_messages`,
# `PostgresDialect.numbered`).
INSERT_SENT = (
    _numbered(_SENT) + f", stored AS (INSERT INTO messages ({', '.join(q.MESSAGE_FIELDS)})"
    f" SELECT {', '.join(':' + f if f in ('project', 'queue') else f for f in q.MESSAGE_FIELDS)}"
    " FROM new),"
    " depths AS ("
    + _add(
        "queue_depths",
        "source",
        "n",
        f"SELECT :project, :queue, COALESCE(dl_source, ''), {q.SHARD}, count(*) FROM new"
        " GROUP BY 3 ORDER BY 3",
    )
    + "), shown AS ("
    + _add(
        "queue_hidden",
        "hidden",
        "n",
        f"SELECT :project, :queue, hidden, {q.SHARD}, count(*) FROM new WHERE hidden > 0"
        " GROUP BY 3 ORDER BY 3",
    )
    + ") SELECT id, seq FROM new"
)

# Messages moved to one queue (`SQLTransaction.move_messages`): numbered as new ones of it,
# every column but the id, project and body rewritten, and the counts changed by what the
# engine knows moved (`:depth_*` and `:hidden_*`, computed from where the rows were).
_MOVED = tuple(f for f in q.MESSAGE_FIELDS if f not in ("project", "queue", "seq", "body"))
MOVE_TO_ONE_QUEUE = (
    _numbered(_MOVED)
    + ", moved AS (UPDATE messages AS m SET queue = :queue, seq = new.seq, "
    + ", ".join(f"{f} = new.{f}" for f in _MOVED if f != "id")
    + " FROM new WHERE m.id = new.id AND m.project IS NOT DISTINCT FROM :project),"
    " depths AS ("
    + _add(
        "queue_depths",
        "source",
        "n",
        f"SELECT :project, d.queue, d.source, {q.SHARD}, d.n FROM json_to_recordset(:depths::json)"
        " AS d(queue text, source text, n bigint) ORDER BY 2, 3",
    )
    + "), shown AS ("
    + _add(
        "queue_hidden",
        "hidden",
        "n",
        f"SELECT :project, h.queue, h.hidden, {q.SHARD}, h.n FROM json_to_recordset(:shown::json)"
        " AS h(queue text, hidden int, n bigint) ORDER BY 2, 3",
    )
    + ") SELECT id, seq FROM new"
)

# The counters the engine bumped since the transaction's last statement, as arrays.
_BUMPS = (
    f"SELECT b.project, b.queue, b.name, {q.SHARD}, b.amount FROM json_to_recordset(:bumps::json)"
    " AS b(project text, queue text, name text, amount bigint) ORDER BY 1, 2, 3"
)
BUMP_COUNTERS = _add("counters", "name", "value", _BUMPS)

# A claim's step (`SQLTransaction.claim_next`): the oldest of the ready and the hidden
# messages whose time has come, as `claimable` picks them, written as `CLAIM_MESSAGES`
# writes them, the class counts changed, the claim recorded, and the counters bumped since
# the last statement; the messages come back as they were picked.
CLAIM_NEXT = (
    f"WITH ready AS MATERIALIZED ({q.CLAIMABLE_READY}),"
    f" later AS MATERIALIZED ({q.CLAIMABLE_HIDDEN}),"
    " picked AS MATERIALIZED (SELECT * FROM ready UNION ALL SELECT * FROM later"
    " ORDER BY seq LIMIT :limit),"
    " claimed AS (UPDATE messages AS m SET claim_id = :claim_id, claim_expires_at = :expires,"
    " visible_at = :expires, claim_count = m.claim_count + 1,"
    " first_claimed_at = COALESCE(NULLIF(m.first_claimed_at, 0), :now),"
    " expires_at = CASE WHEN m.expires_at > :live_until THEN m.expires_at ELSE :live_until END,"
    f" dl_due_at = NULL, hidden = {CLAIMED} FROM picked WHERE m.id = picked.id),"
    " shown AS ("
    + _add(
        "queue_hidden",
        "hidden",
        "n",
        f"SELECT :project, :queue, c.hidden, {q.SHARD}, sum(c.n) FROM"
        f" (SELECT hidden, -count(*) AS n FROM picked WHERE hidden <> {CLAIMED} GROUP BY hidden"
        f" UNION ALL SELECT {CLAIMED}, count(*) FROM picked WHERE hidden <> {CLAIMED}) AS c"
        " WHERE c.hidden > 0 GROUP BY 3 HAVING sum(c.n) <> 0 ORDER BY 3",
    )
    + "), recorded AS (INSERT INTO claims (id, project, queue, ttl, grace, created_at,"
    " expires_at) SELECT :claim_id, :project, :queue, :ttl, :grace, :created_at, :expires"
    " WHERE EXISTS (SELECT 1 FROM picked) ON CONFLICT (id) DO NOTHING),"
    f" bumped AS ({BUMP_COUNTERS})"
    " SELECT * FROM picked ORDER BY seq"
)


def _counted(delete: str) -> str:
    """`delete` (a DELETE of messages of `:queue` returning each row's `source`, `hidden`
    and `id`) with the counts it changes, in one statement; the ids deleted come back."""
    return (
        f"WITH gone AS ({delete}),"
        " depths AS ("
        + _add(
            "queue_depths",
            "source",
            "n",
            f"SELECT :project, :queue, source, {q.SHARD}, -count(*) FROM gone"
            " GROUP BY 3 ORDER BY 3",
        )
        + "), shown AS ("
        + _add(
            "queue_hidden",
            "hidden",
            "n",
            f"SELECT :project, :queue, hidden, {q.SHARD}, -count(*) FROM gone WHERE hidden > 0"
            " GROUP BY 3 ORDER BY 3",
        )
        + ") SELECT id FROM gone"
    )


DELETE_MESSAGES = _counted(q.DELETE_MESSAGES + ", id")
DELETE_UNFINISHED = _counted(q.DELETE_UNFINISHED + ", id")
DELETE_HELD = _counted(q.DELETE_HELD)
# The statements that take the pending counter bumps with them.
_CARRY_BUMPS = frozenset({CLAIM_NEXT})


class ComposedStatements(SQLTransaction):
    """`SQLTransaction` with the hot requests' steps in one statement each (module docstring);
    what each returns and changes is the same."""

    def __init__(self, cursor: Any, dialect: Any, *, begun: bool = False) -> None:
        # The hot statements through libpq (`prepared`); the calls of a group share one.
        libpq = cursor if isinstance(cursor, PreparedCursor) else PreparedCursor(cursor)
        super().__init__(libpq, dialect)
        self._libpq = libpq
        # Counter bumps not yet written: (project, queue, name) -> amount.
        self._bumps: dict[tuple[str, str, str], int] = {}
        # The session is in autocommit: the transaction sends its BEGIN just before its first
        # statement (`_begin`) and its COMMIT after what is left to write (`commit`). One of
        # a group (`backend.PostgresStore.run_together`) may start inside an open one.
        self.begun = begun
        # Whether it sent a statement that writes: one of a group that fails before it did
        # leaves the group's transaction as good as it found it (`group.py`).
        self.wrote = False
        self._connection: psycopg.Connection[Any] = cursor.connection
        # The queue rows read so far in this database transaction, by (project, name); None
        # for a queue that does not exist. The calls of a group share them (`group.py`).
        self.queue_rows: dict[tuple[str, str], Any] = {}

    # The transaction's frame

    def commit(self) -> None:
        """Write what is still pending and commit; a transaction that sent nothing has
        nothing to commit."""
        if not self.begun:
            return
        if self._bumps:  # the COMMIT goes behind the last writes, in one round trip
            self._libpq.behind = b"COMMIT"
            self._write_bumps()
            if self._libpq.behind is None:
                return
        self._libpq.behind = None
        self._libpq.command(b"COMMIT")

    def carry(self, bumps: dict[tuple[str, str, str], int]) -> None:
        """Take over counter bumps not yet written by an earlier transaction of the same
        database transaction (a call of a group before this one)."""
        for key, amount in bumps.items():
            self._bumps[key] = self._bumps.get(key, 0) + amount

    def carried(self) -> dict[tuple[str, str, str], int]:
        """The counter bumps not yet written, handed on (to the group's next call or its
        COMMIT) rather than written now."""
        bumps, self._bumps = self._bumps, {}
        return bumps

    def abandon(self) -> None:
        """Roll back what was sent (`abandon`)."""
        abandon(self._connection)

    def _queue_row(self, project: str, name: str, lock: bool) -> Any:
        """A queue's row read once a transaction: read again only to lock it. A read
        without a lock sees what committed before some moment of the transaction; for the
        calls of a group, which run at the same time, the first call's moment serves all."""
        key = (project, name)
        if lock or key not in self.queue_rows:
            self.queue_rows[key] = super()._queue_row(project, name, lock)
        return self.queue_rows[key]

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        if self.queue_rows and changes_queues(sql):
            self.queue_rows.clear()
        if sql in _CARRY_BUMPS:
            params = {**(params or {}), **self._take_bumps()}
        elif self._bumps and reads_counters(sql):  # it sees them written, as if at once
            self._write_bumps()
        self._begin()
        if not self.wrote:
            self.wrote = writes(sql)
        return super().run(sql, params)

    def run_many(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if self.queue_rows and changes_queues(sql):
            self.queue_rows.clear()
        if self._bumps and reads_counters(sql):
            self._write_bumps()
        if rows:
            self._begin()
            self.wrote = True
        super().run_many(sql, rows)

    def _begin(self) -> None:
        """The transaction's BEGIN, ahead of its first statement in one round trip (libpq's
        pipeline: psycopg's cost more Python than the round trip it saved; docs/benchmarks.md,
        "The server's CPU on PostgreSQL")."""
        if not self.begun:
            self.begun = True
            self._libpq.ahead = b"BEGIN"

    # Counters: written with the next statement, or just before the COMMIT

    def bump_counter(self, project: str, queue: str, name: str, amount: int) -> None:
        key = (project, queue, name)
        self._bumps[key] = self._bumps.get(key, 0) + amount

    def _take_bumps(self) -> dict[str, str]:
        bumps = [
            {"project": p, "queue": qn, "name": n, "amount": amount}
            for (p, qn, n), amount in self._bumps.items()
        ]
        self._bumps = {}
        return {"bumps": json_text(bumps)}

    def _write_bumps(self) -> None:
        # Never the transaction's first statement: the engine bumps a counter after a write.
        SQLTransaction.run(self, BUMP_COUNTERS, self._take_bumps())

    # Messages

    def insert_messages(self, project: str, messages: Sequence[Message]) -> list[Message]:
        queues = {m.queue for m in messages}
        if len(queues) != 1:  # none, or copies to several queues: one step each
            return super().insert_messages(project, messages)
        rows = [message_params(project, m) for m in messages]
        params = {"project": project, "queue": queues.pop(), **_rows(rows, _SENT)}
        seq_of = {r["id"]: int(r["seq"]) for r in self.all(INSERT_SENT, params)}
        for r in rows:
            self._note_place(r)
        return [with_seq(m, seq_of[m.id]) for m in messages]

    def move_messages(self, project: str, messages: Sequence[Message]) -> None:
        queues = {m.queue for m in messages}
        if len(queues) != 1:  # none, or to several queues: one step each
            super().move_messages(project, messages)
            return
        before = self.places_before(project, [m.id for m in messages])
        rows = [message_params(project, m) for m in messages]
        depths: Counter[tuple[str, str]] = Counter()
        hidden: Counter[tuple[str, int]] = Counter()
        for r in rows:
            if r["id"] in before:
                depths[(r["queue"], r["dl_source"] or "")] += 1
                hidden[(r["queue"], r["hidden"])] += 1
        for queue, source, cls in before.values():
            depths[(queue, source)] -= 1
            hidden[(queue, cls)] -= 1
        changed = [{"queue": k[0], "source": k[1], "n": n} for k, n in depths.items() if n]
        shown = [{"queue": k[0], "hidden": k[1], "n": n} for k, n in hidden.items() if n and k[1]]
        params = {"project": project, "queue": queues.pop(),
                  **_rows(rows, _MOVED), "depths": json_text(changed),
                  "shown": json_text(shown)}  # fmt: skip
        seq_of = {r["id"]: int(r["seq"]) for r in self.all(MOVE_TO_ONE_QUEUE, params)}
        for r in rows:
            r["seq"] = seq_of[r["id"]]
            self._note_place(r)

    def claim_next(
        self, claim: ClaimRecord, *, now: float, limit: int, live_until: float
    ) -> list[Message]:
        params = {"project": claim.project, "queue": claim.queue, "now": now, "limit": limit,
                  "claim_id": claim.id, "expires": claim.expires_at, "live_until": live_until,
                  "ttl": claim.ttl, "grace": claim.grace,
                  "created_at": claim.created_at}  # fmt: skip
        found = self._messages(CLAIM_NEXT, params)  # their places as picked, now claimed:
        for m in found:
            queue, source, _ = self._places[m.id]
            self._places[m.id] = (queue, source, CLAIMED)
        return found

    def delete_messages(self, project: str, queue: str, ids: Sequence[str]) -> int:
        return len(self._deleted(DELETE_MESSAGES, {"project": project, "queue": queue}, ids))

    def delete_unfinished(self, project: str, queue: str, ids: Sequence[str]) -> int:
        params = {"project": project, "queue": queue, "done": DEFAULT_DONE_AT}
        return len(self._deleted(DELETE_UNFINISHED, params, ids))

    def delete_held(
        self, project: str, queue: str, ids: Sequence[str], claim_id: str, now: float, live: bool
    ) -> list[str]:
        params = {"project": project, "queue": queue, "claim": claim_id, "now": now,
                  "lapsed": not live, "done": DEFAULT_DONE_AT}  # fmt: skip
        return self._deleted(DELETE_HELD, params, ids)

    def _deleted(self, sql: str, params: dict[str, Any], ids: Sequence[str]) -> list[str]:
        rows = self.all(sql, {**params, "ids": list(ids)})
        for i in ids:
            self._places.pop(i, None)
        return [str(r["id"]) for r in rows]


# A statement that changes rows names one of these (a row lock, `FOR UPDATE`, does not: it
# ends with the transaction, whichever way).
_WRITING = re.compile(
    r"\b(INSERT|DELETE|MERGE|TRUNCATE|CREATE|DROP|ALTER)\b|(?<!FOR )(?<!KEY )\bUPDATE\b",
    re.IGNORECASE,
)


# A statement that reads or changes the counter rows (a table of that name) must see the
# bumps made before it written; no other statement can tell whether they are.
_COUNTERS = re.compile(r"\bcounters\b", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def reads_counters(sql: str) -> bool:
    """Whether `sql` names the counters' table."""
    return _COUNTERS.search(sql) is not None


# A statement that writes the queues' table (their settings, their subscriptions' count).
_QUEUES = re.compile(r"\bqueues\b", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def changes_queues(sql: str) -> bool:
    """Whether `sql` may change a queue's row: a queue row read before it is read again."""
    return writes(sql) and _QUEUES.search(sql) is not None


@functools.lru_cache(maxsize=1024)
def writes(sql: str) -> bool:
    """Whether `sql` may change rows; a read taken for a write costs only a retry."""
    return _WRITING.search(sql) is not None


def abandon(connection: psycopg.Connection[Any]) -> None:
    """Roll back what a transaction on `connection` sent; the error that ended it is the
    caller's to raise (a connection that broke under it is discarded by the pool)."""
    status = connection.info.transaction_status
    if connection.closed or status == TransactionStatus.IDLE:
        return
    if status == TransactionStatus.ACTIVE:
        connection.close()  # interrupted mid-statement, cannot roll back: the pool replaces it
        return
    with contextlib.suppress(psycopg.Error):
        connection.rollback()
