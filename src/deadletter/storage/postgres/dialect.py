"""PostgreSQL's dialect: its parameter style, which statements it prepares, how its errors
are named, and how it numbers messages (a sequence, taken in each queue's lane)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from deadletter.domain.errors import DeadletterError, QueueAlreadyExists, StoreUnavailable
from deadletter.domain.model import Message
from deadletter.storage.base import StorageError, TransactionConflict
from deadletter.storage.postgres.composed import LANE
from deadletter.storage.postgres.prepared import Positional, PreparedCursor, positional
from deadletter.storage.rows import with_seq
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.dialect import ID_LIST, PARAMETER, Dialect, Statement, Statements

# Connection failures, the server shutting down or refusing connections, a full disk or memory
# (classes 08, 53, 57 and 58), and statements cancelled by the server: the store cannot do its
# work now, though nothing is wrong with the request.
UNAVAILABLE_CLASSES = ("08", "53", "57", "58")
UNREACHABLE = "the database cannot be reached"
# A queue's lane: advisory lock keys (class, hash of the queue) in a class of their own.
_LANE = LANE
# Numbers for `n` messages of a queue, taken once the queue's lane is held (shared).
RESERVE_SEQS = (
    f"WITH lane AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared{_LANE})"
    " SELECT nextval('message_seq') AS seq FROM lane, generate_series(1, :n)"
)
# A redrive in place (`redrive_in_place`): each id of `:ids` with its number of `:seqs`.
# Attributes and history are JSON text written by json.dumps or by this statement, neither
# of which escapes an ASCII letter: attributes without the text `"dlq.` (any case) hold no
# reserved key and stay as they are, and the event is appended to the history's array as text.
# Parsing both as jsonb for every message took 13% of the statement's time (2,000 messages).
REDRIVE_IN_PLACE = (
    "UPDATE messages AS m SET " + q.REDRIVEN_COLUMNS + ","
    " id = gen_random_uuid()::text, seq = b.seq,"
    " attributes = CASE WHEN m.attributes NOT ILIKE '%\"dlq.%' THEN m.attributes"
    " ELSE COALESCE((SELECT jsonb_object_agg(a.key, a.value)"
    " FROM jsonb_each(m.attributes::jsonb) AS a WHERE upper(a.key) NOT LIKE 'DLQ.%'),"
    " '{}'::jsonb)::text END,"
    " history = CASE WHEN m.history IS NULL OR m.history = '[]' THEN '[' || :event || ']'"
    " ELSE left(m.history, -1) || ',' || :event || ']' END"
    " FROM unnest(:ids::text[], :seqs::bigint[]) AS b(old, seq)"
    " WHERE m.id = b.old AND m.project IS NOT DISTINCT FROM :project"
)


# A parameter read as an array of byte strings (the other lists are the dialects' `ID_LIST`).
BYTEA_ARRAY = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)::bytea\[\]")


class PostgresDialect(Dialect):
    """queries.py is written in PostgreSQL's SQL: only the parameter style changes."""

    driver_error = psycopg.Error

    def __init__(self) -> None:
        super().__init__()
        # Each statement's text as libpq takes it, by its text in psycopg's spelling.
        self._positional: dict[str, Positional] = {}

    def read_rows(self, cursor: Any, names: tuple[str, ...]) -> list[tuple[Any, ...]]:
        # Rows through libpq come as tuples: a message's 25 columns taken by position, no
        # dict made a row (`PreparedCursor.values_of`).
        if isinstance(cursor, PreparedCursor):
            values = cursor.values_of(names)
            if values is not None:
                return values
        return super().read_rows(cursor, names)

    def execute(self, cursor: Any, statement: Statement, params: Mapping[str, Any]) -> None:
        """A statement with optional filters is never prepared, so that PostgreSQL plans it
        with the values each time. psycopg prepares a statement run five times on a
        connection, and PostgreSQL may then plan it once for any values: a plan that cannot
        know which filters are off, and walks a deep queue for a listing (60 ms instead of
        2 ms at 100,000 dead letters). Every other statement stays prepared: a plan per
        execution for all of them cost a third of the claim and delete rate."""
        if isinstance(cursor, PreparedCursor) and cursor.direct:
            wire = self._positional.get(statement.text)
            if wire is None:
                wire = self._positional[statement.text] = positional(statement.text)
            cursor.run(wire, params, prepare=not statement.optional_filters)
            return
        prepare = False if statement.optional_filters else None
        cursor.execute(statement.text, self.bind(statement, params), prepare=prepare)

    def _spell(self, sql: str) -> str:
        # A list goes in binary (psycopg's `%b`, wherever its name appears): in text, psycopg
        # escapes each element in Python (a send's ten bodies 163 µs, ten ids 14 µs; in
        # binary 5 and 4) and PostgreSQL parses them back (`composed._numbered`).
        binary = {*BYTEA_ARRAY.findall(sql), *(m.group(2) for m in ID_LIST.finditer(sql))}

        def spelled(match: re.Match[str]) -> str:
            name = match.group(1)
            return f"%({name})b" if name in binary else f"%({name})s"

        return PARAMETER.sub(spelled, sql.replace("%", "%%"))

    def domain_error(self, exc: Exception) -> DeadletterError:
        if isinstance(exc, PoolTimeout):
            return StoreUnavailable("no database connection became free in time")
        if isinstance(exc, psycopg.OperationalError) and (
            exc.sqlstate is None or exc.sqlstate[:2] in UNAVAILABLE_CLASSES
        ):
            if exc.sqlstate == "53100":
                return StoreUnavailable("the database's disk is full")
            return StoreUnavailable(UNREACHABLE)
        if isinstance(exc, pg_errors.UniqueViolation) and exc.diag.table_name == "queues":
            return QueueAlreadyExists()
        if isinstance(exc, pg_errors.DeadlockDetected | pg_errors.SerializationFailure):
            return TransactionConflict(str(exc))
        return StorageError(str(exc))

    def numbered(self, tx: Statements, project: str, messages: Sequence[Message]) -> list[Message]:
        """Lanes are taken in queue-name order, so that a listing waiting for one lane never
        stands between two senders that take two lanes in opposite orders."""
        by_queue: dict[str, list[int]] = defaultdict(list)
        for i, m in enumerate(messages):
            by_queue[m.queue].append(i)
        out = list(messages)
        for queue in sorted(by_queue):
            positions = by_queue[queue]
            params = {"project": project, "queue": queue, "n": len(positions)}
            seqs = sorted(int(r["seq"]) for r in tx.all(RESERVE_SEQS, params))
            for seq, i in zip(seqs, positions, strict=True):
                out[i] = with_seq(messages[i], seq)
        return out

    def redrive_in_place(
        self, tx: Statements, project: str, ids: Sequence[str], params: Mapping[str, Any]
    ) -> None:
        lane = {"project": project, "queue": params["queue"], "n": len(ids)}
        seqs = sorted(int(r["seq"]) for r in tx.all(RESERVE_SEQS, lane))
        tx.run(REDRIVE_IN_PLACE, {**params, "ids": list(ids), "seqs": seqs})


POSTGRES = PostgresDialect()
