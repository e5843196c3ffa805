"""SQLite's dialect: how each statement is spelled for SQLite, how its rows are read and its
errors named, and how it numbers messages (one counter: transactions are serial)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from deadletter.domain.errors import DeadletterError, QueueAlreadyExists, StoreUnavailable
from deadletter.domain.model import Message
from deadletter.storage.base import StorageError, TransactionConflict
from deadletter.storage.rows import with_seq
from deadletter.storage.sql import queries as q
from deadletter.storage.sql.dialect import (
    ID_LIST,
    Dialect,
    Reader,
    Statement,
    Statements,
    json_text,
    positional_reader,
)

# One counter numbers the messages of every queue: transactions are serial, so numbers are
# handed out in commit order.
RESERVE_SEQS = "UPDATE message_sequence SET value = value + :n RETURNING value"
# A redrive in place (`redrive_in_place`): ids in `:ids` order take the numbers from `:first`;
# a new id is a version-4 UUID spelled from random bytes, as `uuid.uuid4()` spells it. Each
# message is found by its id (without statistics SQLite would rather walk the project).
REDRIVE_IN_PLACE = (
    "UPDATE messages INDEXED BY sqlite_autoindex_messages_1 SET " + q.REDRIVEN_COLUMNS + ","
    " id = lower(substr(b.h, 1, 8) || '-' || substr(b.h, 9, 4) || '-4' || substr(b.h, 14, 3)"
    " || '-' || substr('89ab', 1 + unicode(substr(b.h, 17, 1)) % 4, 1) || substr(b.h, 18, 3)"
    " || '-' || substr(b.h, 21, 12)),"
    " seq = b.seq,"
    " attributes = (SELECT json_group_object(a.key, json(a.value))"
    " FROM json_each(messages.attributes) AS a WHERE upper(a.key) NOT LIKE 'DLQ.%'),"
    " history = json_insert(COALESCE(messages.history, '[]'), '$[#]', json(:event))"
    " FROM (SELECT j.value AS old, :first + j.key AS seq, hex(randomblob(16)) AS h"
    " FROM json_each(:ids) AS j) AS b"
    " WHERE messages.id = b.old AND messages.project = :project"
)
ROW_LOCK = re.compile(r"\s*FOR UPDATE( OF \w+)?( SKIP LOCKED)?")
STARTS_WITH = re.compile(r"starts_with\((\w+), :(\w+)\)")
INDEX_HINT = re.compile(r"/\* indexed by (\w+) \*/")
# What the file or its disk answers when the store cannot do its work now, though nothing is
# wrong with the request (primary result codes): (reason, whether reads may still answer).
UNAVAILABLE = {
    sqlite3.SQLITE_FULL: ("the disk is full", True),
    sqlite3.SQLITE_IOERR: ("the disk failed to read or write", True),
    sqlite3.SQLITE_CANTOPEN: ("the database file cannot be opened", False),
}


class SQLiteDialect(Dialect):
    """sqlite3 takes `:name` parameters itself. Row locks are dropped: a transaction holds
    the database's write lock from its start (BEGIN IMMEDIATE), so whatever it reads is
    locked against every other writer until it commits, `FOR UPDATE` rows included."""

    driver_error = sqlite3.Error
    serial = True

    def _spell(self, sql: str) -> str:
        # One JSON parameter instead of one per id: a list may hold any number of ids.
        sql = ID_LIST.sub(r"\1 IN (SELECT value FROM json_each(:\2))", sql)
        sql = STARTS_WITH.sub(r"substr(\1, 1, length(:\2)) = :\2", sql)
        sql = INDEX_HINT.sub(r"INDEXED BY \1", sql)
        sql = sql.replace(q.SHARD, "0")  # one shard: writers are serial
        sql = sql.replace(" IS NOT DISTINCT FROM ", " IS ")
        return ROW_LOCK.sub("", sql)

    def reader(self, cursor: Any, names: tuple[str, ...]) -> Reader:
        # sqlite3.Row finds a column by name by comparing it with each column's name in turn;
        # by position it is one step. A message row is read by 23 names.
        return positional_reader(tuple(column[0] for column in cursor.description), names)

    def bind(self, statement: Statement, params: Mapping[str, Any]) -> Mapping[str, Any]:
        if not statement.lists:
            return params
        return {
            k: json_text(v) if k in statement.lists and v is not None else v
            for k, v in params.items()
        }

    def domain_error(self, exc: Exception) -> DeadletterError:
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if code in UNAVAILABLE:
            reason, reads_served = UNAVAILABLE[code]
            return StoreUnavailable(reason, reads_served=reads_served)
        if isinstance(exc, sqlite3.IntegrityError):
            if str(exc).startswith("UNIQUE constraint failed: queues."):
                return QueueAlreadyExists()
            return StorageError(f"integrity error: {exc}")
        if isinstance(exc, sqlite3.OperationalError) and (exc.sqlite_errorcode & 0xFF) in (
            sqlite3.SQLITE_BUSY,
            sqlite3.SQLITE_LOCKED,
        ):
            # Another process held the file past busy_timeout: the work can run again.
            return TransactionConflict(f"database is locked: {exc}")
        return StorageError(str(exc))

    def numbered(self, tx: Statements, project: str, messages: Sequence[Message]) -> list[Message]:
        last = int(tx.one(RESERVE_SEQS, {"n": len(messages)})["value"])
        first = last - len(messages) + 1
        return [with_seq(m, first + i) for i, m in enumerate(messages)]

    def redrive_in_place(
        self, tx: Statements, project: str, ids: Sequence[str], params: Mapping[str, Any]
    ) -> None:
        first = int(tx.one(RESERVE_SEQS, {"n": len(ids)})["value"]) - len(ids) + 1
        tx.run(REDRIVE_IN_PLACE, {**params, "ids": json_text(list(ids)), "first": first})


SQLITE = SQLiteDialect()
