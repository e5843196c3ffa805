"""Running the statements of `queries` through a driver's cursor in its dialect's spelling:
what every part of `SQLTransaction` builds on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from deadletter.domain.model import Message
from deadletter.storage.rows import MESSAGE_COLUMNS, message_from, message_of
from deadletter.storage.sql.dialect import Dialect
from deadletter.storage.sql.queries import PLACES_OF

# Where a message row is: (queue, dead-letter source or '', class).
Place = tuple[str, str, int]
# A message row's columns (id and queue first), then the rest of what its place is read from.
_MESSAGE_AND_PLACE = (*MESSAGE_COLUMNS, "dl_source", "hidden")


def _place_of(queue: str, dl_source: str | None, hidden: Any) -> Place:
    return (queue, dl_source or "", int(hidden))


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
        # Where each message row this transaction read locked or wrote is now: (queue,
        # dead-letter source or '', class of migration 0013), so that a write knows which
        # counts it changes without reading the rows again.
        self._places: dict[str, Place] = {}

    # Running statements

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Execute one statement; returns the number of rows it changed."""
        self.d.execute(self.cur, self.d.compile(sql), params or {})
        return self.cur.rowcount

    def run_many(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            statement = self.d.compile(sql)
            self.cur.executemany(statement.text, [self.d.bind(statement, r) for r in rows])

    def together(self) -> AbstractContextManager[Any]:
        """Statements run inside, whose results nobody reads, go to the database together
        (PostgreSQL's pipeline: one round trip); elsewhere one after the other."""
        return nullcontext()

    def one(self, sql: str, params: Mapping[str, Any]) -> Any:
        self.run(sql, params)
        return self.cur.fetchone()

    def all(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        self.run(sql, params)
        return self.cur.fetchall()

    def _messages(self, sql: str, params: Mapping[str, Any]) -> list[Message]:
        self.run(sql, params)
        rows = self.d.read_rows(self.cur, _MESSAGE_AND_PLACE)
        if self.d.serial or " FOR UPDATE" in sql:
            # Read with their rows locked (or on a store whose writers are serial): no other
            # transaction changes them before this one ends, so where they are is known.
            messages = []
            for values in rows:
                self._places[values[0]] = _place_of(values[1], values[-2], values[-1])
                messages.append(message_of(values))
            return messages
        return [message_of(values) for values in rows]

    def _locked_message(self, row: Any) -> Message:
        """A message read with its row locked (`_messages`), from a row read by name."""
        self._note_place(row)
        return message_from(row)

    def _note_place(self, row: Any) -> None:
        """Note where the row `row` (id, queue, dl_source, hidden), read locked or just
        written, is."""
        self._places[row["id"]] = _place_of(row["queue"], row["dl_source"], row["hidden"])

    def places_before(self, project: str, ids: Sequence[str]) -> dict[str, Place]:
        """Where each message of `ids` is now, for a write that changes it: as this
        transaction read it locked, else read now, locking the rows; those that do not
        exist are left out."""
        missing = [i for i in ids if i not in self._places]
        if missing:
            for r in self.all(PLACES_OF, {"project": project, "ids": missing}):
                self._note_place(r)
        return {i: self._places[i] for i in ids if i in self._places}
