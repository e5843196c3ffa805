"""What differs between the SQL stores' dialects: how a statement of queries.py is spelled,
and how messages are numbered."""

from __future__ import annotations

import abc
import functools
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from deadletter.domain.errors import DeadletterError
from deadletter.domain.model import Message
from deadletter.storage.sql import queries as q


class Statements(Protocol):
    """What a dialect's numbering and clean-up need of a transaction (`SQLTransaction`)."""

    def run(self, sql: str, params: Mapping[str, Any] | None = None) -> int: ...

    def one(self, sql: str, params: Mapping[str, Any]) -> Any: ...

    def all(self, sql: str, params: Mapping[str, Any]) -> list[Any]: ...


# Takes some of a row's columns, in a given order (`Dialect.reader`).
Reader = Callable[[Any], tuple[Any, ...]]


@functools.lru_cache(maxsize=256)
def positional_reader(columns: tuple[str, ...], names: tuple[str, ...]) -> Reader:
    """`names` taken by their places among a result's `columns`, once per kind of result."""
    place = {column: i for i, column in enumerate(columns)}
    return operator.itemgetter(*(place[name] for name in names))


_encode_json = msgspec.json.Encoder().encode


def json_text(value: Any) -> str:
    """`value` as the JSON text a statement's parameter carries (SQLite's `json_each`,
    PostgreSQL's `json_to_recordset`): msgspec's encoder, a seventh of the `json` module's
    time for a send's ten rows; text, since SQLite would take bytes for its binary JSON."""
    return _encode_json(value).decode()


PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
ID_LIST = re.compile(r"(\w+) = ANY\(:(\w+)\)")


# `(col = :x OR :x IS NULL)`: a filter that a NULL parameter turns off (queries.py).
OPTIONAL_FILTER = re.compile(r":\w+ IS NULL\b")


@dataclass(frozen=True)
class Statement:
    """A statement in the driver's own spelling; `lists` names the parameters that are lists,
    `optional_filters` says whether parameters turn some of its filters off."""

    text: str
    lists: frozenset[str]
    optional_filters: bool = False


class Dialect(abc.ABC):
    # The base class of the driver's errors, which `domain_error` translates.
    driver_error: type[Exception]
    # Whether a writing transaction holds the whole database (nothing it reads changes under it).
    serial = False

    def __init__(self) -> None:
        self._compiled: dict[str, Statement] = {}

    @contextmanager
    def translated_errors(self) -> Iterator[None]:
        """Around a whole transaction: the driver's errors leave it in domain words, raised
        `from` the driver's error."""
        try:
            yield
        except self.driver_error as exc:
            raise self.domain_error(exc) from exc

    @abc.abstractmethod
    def domain_error(self, exc: Exception) -> DeadletterError:
        """What a driver error means: QueueAlreadyExists, TransactionConflict (run the work
        again) or StorageError."""

    def compile(self, sql: str) -> Statement:
        """`sql` as this driver takes it; compiled once per text."""
        statement = self._compiled.get(sql)
        if statement is None:
            lists = frozenset(m.group(2) for m in ID_LIST.finditer(sql))
            optional = OPTIONAL_FILTER.search(sql) is not None
            statement = self._compiled[sql] = Statement(self._spell(sql), lists, optional)
        return statement

    @abc.abstractmethod
    def _spell(self, sql: str) -> str:
        """Rewrite the constructs listed in queries.py's docstring and the parameter style."""

    def execute(self, cursor: Any, statement: Statement, params: Mapping[str, Any]) -> None:
        """Run `statement` on the driver's `cursor`."""
        cursor.execute(statement.text, self.bind(statement, params))

    def bind(self, statement: Statement, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Parameters as the driver takes them (by name on both drivers)."""
        return params

    def reader(self, cursor: Any, names: tuple[str, ...]) -> Reader:
        """What takes the columns `names`, in that order, from a row of `cursor`'s last result:
        here by name, as the driver's rows are read. (The cursor, not its `description`:
        psycopg builds a description's column objects only when asked, one per column.)"""
        return operator.itemgetter(*names)

    def read_rows(self, cursor: Any, names: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """The rows of `cursor`'s last result as tuples of the columns `names`, in order."""
        read = self.reader(cursor, names)
        return [read(row) for row in cursor.fetchall()]

    @abc.abstractmethod
    def numbered(self, tx: Statements, project: str, messages: Sequence[Message]) -> list[Message]:
        """`messages` with new sequence numbers, in input order, in commit order per queue."""

    @abc.abstractmethod
    def redrive_in_place(
        self, tx: Statements, project: str, ids: Sequence[str], params: Mapping[str, Any]
    ) -> None:
        """Number the messages `ids` (in this order) as new ones of `params["queue"]` and
        rewrite them as `Transaction.redrive_messages` says, in one statement."""

    def forget_queue(self, tx: Statements, project: str, name: str) -> None:  # noqa: B027
        """Delete what the numbering keeps for a deleted queue."""

    def wipe(self, tx: Statements) -> None:
        for table in q.TABLES:
            tx.run(f"DELETE FROM {table}")
