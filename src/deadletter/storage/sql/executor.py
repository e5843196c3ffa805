"""Running the statements of `queries` through a driver's cursor in its dialect's spelling:
what every part of `SQLTransaction` builds on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from deadletter.domain.model import Message
from deadletter.storage.rows import message_from
from deadletter.storage.sql.dialect import Dialect
from deadletter.storage.sql.queries import HIDDEN_OF


class Cursor(Protocol):
    """What both drivers' cursors offer (rows readable by column name)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: Mapping[str, Any], /) -> Any: ...

    def executemany(self, sql: str, params: Iterable[Mapping[str, Any]], /) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Executor:
    def __init__(self, cursor: Cursor, dialect: Dialect) -> None:
        self.cur = cursor
        self.d = dialect
        # The class (`hidden`, migration 0013) of each message row this transaction read or
        # wrote, as it is now, so that a write of delivery state knows what it changes.
        self._classes: dict[str, int] = {}

    # Running statements

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Execute one statement; returns the number of rows it changed."""
        statement = self.d.compile(sql)
        self.cur.execute(statement.text, self.d.bind(statement, params or {}))
        return self.cur.rowcount

    def run_many(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            statement = self.d.compile(sql)
            self.cur.executemany(statement.text, [self.d.bind(statement, r) for r in rows])

    def one(self, sql: str, params: Mapping[str, Any]) -> Any:
        self.run(sql, params)
        return self.cur.fetchone()

    def all(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        self.run(sql, params)
        return self.cur.fetchall()

    def _messages(self, sql: str, params: Mapping[str, Any]) -> list[Message]:
        rows = self.all(sql, params)
        if self.d.serial or " FOR UPDATE" in sql:
            return [self._locked_message(r) for r in rows]
        return [message_from(r) for r in rows]

    def _locked_message(self, row: Any) -> Message:
        """A message read with its row locked (or on a store whose writers are serial): no
        other transaction changes it before this one ends, so its class is known."""
        self._classes[row["id"]] = int(row["hidden"])
        return message_from(row)

    def hidden_before(self, project: str, ids: Sequence[str]) -> dict[str, int]:
        """The class of each message of `ids` as it is now, for a write that changes it: as
        this transaction read it locked, else read now, locking the rows."""
        missing = [i for i in ids if i not in self._classes]
        if missing:
            rows = self.all(HIDDEN_OF, {"project": project, "ids": missing})
            self._classes.update((r["id"], int(r["hidden"])) for r in rows)
        return {i: self._classes[i] for i in ids if i in self._classes}
