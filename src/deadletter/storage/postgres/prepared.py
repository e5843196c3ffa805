"""Statements run through libpq's own prepared statements, under the executor's cursor.

psycopg's `Cursor.execute` costs the server about 30 µs of Python a statement besides the
round trip (the query's conversion, its prepare manager, a row maker and a result object per
run), and a hot request sends four or five. `PreparedCursor` does what the executor needs of
it with psycopg's parts that are written in C: the parameters dumped by psycopg's
`Transformer`, the statement sent with `PGconn.send_query_prepared` and waited for as psycopg
waits (so a signal or a lost connection ends the wait as it would), the rows loaded by the
same `Transformer` into dicts. Rows come in binary, where psycopg's cursor asks for text: a
claim's bodies were spelled in hex by PostgreSQL and parsed back here, its floats in digits
(a claim's ten rows loaded in 4.6 µs instead of 21.5). Otherwise PostgreSQL receives what
psycopg sent: the same parameters, types and formats, a statement prepared once it has run
`PREPARE_AFTER` times on the connection (planned with its values until then), and a
statement with optional filters never prepared (`PostgresDialect.execute`).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import generators
from psycopg.adapt import PyFormat, Transformer
from psycopg.pq import ExecStatus, Format

from deadletter.storage.sql.dialect import positional_reader

# Runs of one statement on a connection before it is prepared there (psycopg's own
# `prepare_threshold`), and how many a connection prepares at most (its `prepared_max`): a
# statement run rarely is planned with its values each time, as psycopg would plan it.
PREPARE_AFTER = 5
PREPARED_MAX = 100
BINARY = Format.BINARY
_OK = (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK, ExecStatus.EMPTY_QUERY)
# A parameter in psycopg's spelling (`%(name)s`, `%(name)b` in binary), or a percent sign
# it doubled.
_NAMED = re.compile(r"%\((\w+)\)([sb])|%%")
_FORMATS = {"s": PyFormat.AUTO, "b": PyFormat.BINARY}


@dataclass(frozen=True)
class Positional:
    """A statement in libpq's spelling (`$1`, `$2`...) and the names of its parameters."""

    text: bytes
    names: tuple[str, ...]
    formats: tuple[PyFormat, ...]


def positional(text: str) -> Positional:
    """`text` (psycopg's spelling, `%(name)s`, or `%(name)b` in binary) as libpq takes it; a
    name used twice is one parameter."""
    names: list[str] = []
    formats: list[PyFormat] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        if name not in names:
            names.append(name)
            formats.append(_FORMATS[match.group(2)])
        return f"${names.index(name) + 1}"

    spelled = _NAMED.sub(number, text)
    return Positional(spelled.encode(), tuple(names), tuple(formats))


@dataclass
class _Session:
    """What one connection has prepared: a name by statement and parameter types, how many
    times each other statement has run, and the column names of each prepared one."""

    encoding: str
    prepared: dict[tuple[bytes, tuple[int, ...] | None], bytes] = field(default_factory=dict)
    runs: dict[tuple[bytes, tuple[int, ...] | None], int] = field(default_factory=dict)
    columns: dict[bytes, tuple[str, ...]] = field(default_factory=dict)


_sessions: weakref.WeakKeyDictionary[psycopg.Connection[Any], _Session] = (
    weakref.WeakKeyDictionary()
)


def _session_of(connection: psycopg.Connection[Any]) -> _Session:
    session = _sessions.get(connection)
    if session is None:
        # psycopg prepares nothing of its own here: after a rollback it deallocates every
        # statement of the session if it had prepared any (statements it still runs, in a
        # pipeline or many at once, are planned with their values). What it prepared before
        # (a migration's) is deallocated first, by a statement it sees.
        connection.execute("DEALLOCATE ALL")
        connection.prepare_threshold = None
        session = _sessions[connection] = _Session(connection.info.encoding)
    return session


class PreparedCursor:
    """The executor's cursor on a psycopg connection: `run` sends a statement through libpq
    (module docstring); `execute` and `executemany` go through psycopg's cursor, which also
    serves while the connection is in a pipeline. Rows are dicts, as the pool's row factory
    makes them."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self.connection: psycopg.Connection[Any] = cursor.connection
        self._cursor = cursor
        self._pgconn = cursor.connection.pgconn
        self._session = _session_of(cursor.connection)
        self._tx = Transformer(cursor.connection)
        # The last result's rows as tuples, and their columns' names: dicts are made only for
        # a caller that reads rows by name (`fetchone`, `fetchall`), not for `values_of`.
        self._rows: list[tuple[Any, ...]] = []
        self._columns: tuple[str, ...] = ()
        self._rowcount = -1
        self._from_cursor = False  # whether the last statement went through psycopg's cursor
        # A command (BEGIN, COMMIT) that goes to the server with the next statement, ahead of it
        # or behind it, in one round trip (`run`).
        self.ahead: bytes | None = None
        self.behind: bytes | None = None

    @property
    def direct(self) -> bool:
        """Whether `run` may be used now: not while psycopg has the connection in a pipeline."""
        return not self._pgconn.pipeline_status

    # The psycopg cursor's way

    def execute(self, query: Any, params: Any = None, /, *, prepare: bool | None = None) -> Any:
        self._send_ahead()
        self._from_cursor = True
        return self._cursor.execute(query, params, prepare=prepare)

    def executemany(self, query: Any, params: Iterable[Any], /) -> Any:
        self._send_ahead()
        self._from_cursor = True
        return self._cursor.executemany(query, params)

    def _send_ahead(self) -> None:
        """The command meant to go ahead of a statement that goes through psycopg's cursor,
        alone before it (in psycopg's pipeline, if the connection is in one)."""
        if self.ahead is not None:
            ahead, self.ahead = self.ahead, None
            if self.direct:
                self.command(ahead)
            else:
                self._cursor.execute(ahead)

    # libpq's way

    def run(self, statement: Positional, params: Mapping[str, Any], *, prepare: bool) -> None:
        """Send `statement` with `params` (and the commands `ahead` and `behind`, if set) and
        read its result; prepared on the connection once it has run often enough there, if
        `prepare`."""
        self._from_cursor = False
        tx, pgconn = self._tx, self._pgconn
        values = tx.dump_sequence([params[n] for n in statement.names], statement.formats)
        types, formats = tx.types, tx.formats
        name = self._prepared(statement.text, types) if prepare else None
        ahead, behind, self.ahead, self.behind = self.ahead, self.behind, None, None
        if ahead is None and behind is None:
            self._send(statement.text, name, values, types, formats)
            result = self._result(self.connection.wait(generators.execute(pgconn)))
        else:
            pgconn.enter_pipeline_mode()
            try:
                if ahead is not None:
                    pgconn.send_query_params(ahead, None)
                self._send(statement.text, name, values, types, formats)
                result = self._pipelined(ahead is not None, behind)
            finally:
                self._leave_pipeline()
        self._read(result, name)

    def _prepared(self, text: bytes, types: tuple[int, ...] | None) -> bytes | None:
        """The name `text` is prepared under with these parameter types on this connection,
        preparing it now if it has run often enough; None while it has not."""
        session, key = self._session, (text, types)
        name = session.prepared.get(key)
        if name is None and len(session.prepared) < PREPARED_MAX:
            runs = session.runs[key] = session.runs.get(key, 0) + 1
            if runs >= PREPARE_AFTER:
                name = f"_dl_{len(session.prepared)}".encode()
                self._pgconn.send_prepare(name, text, types)
                self._result(self.connection.wait(generators.execute(self._pgconn)))
                session.prepared[key] = name
                del session.runs[key]
        return name

    def _send(self, text: bytes, name: bytes | None, values: Any, types: Any, formats: Any) -> None:
        if name is None:
            self._pgconn.send_query_params(text, values, types, formats, result_format=BINARY)
        else:
            self._pgconn.send_query_prepared(name, values, formats, result_format=BINARY)

    def _read(self, result: Any, name: bytes | None) -> None:
        """The rows of `result` as dicts, and its row count; a prepared statement's column
        names are read once."""
        self._rowcount = result.command_tuples if result.command_tuples is not None else -1
        if result.status != ExecStatus.TUPLES_OK or not result.ntuples:
            self._rows = []
            return
        columns = self._session.columns.get(name) if name is not None else None
        if columns is None:
            columns = tuple((result.fname(i) or b"").decode() for i in range(result.nfields))
            if name is not None:
                self._session.columns[name] = columns
        self._tx.set_pgresult(result)
        self._rows = self._tx.load_rows(0, result.ntuples, tuple)
        self._columns = columns

    def command(self, sql: bytes) -> None:
        """A statement without parameters or rows (BEGIN, COMMIT), as one simple query."""
        self._from_cursor = False
        self._pgconn.send_query(sql)
        self._result(self.connection.wait(generators.execute(self._pgconn)))
        self._rows, self._rowcount = [], -1

    def _leave_pipeline(self) -> None:
        """Out of libpq's pipeline mode; a connection that cannot leave it (a reply not read:
        the wait was interrupted) is closed, and the pool replaces it."""
        if not self._pgconn.pipeline_status:
            return
        try:
            self._pgconn.exit_pipeline_mode()
        except psycopg.Error:
            self.connection.close()

    def _pipelined(self, ahead: bool, behind: bytes | None) -> Any:
        """The statement's result, sent in a pipeline with a command ahead of it and/or one
        behind it; the first error of the three is raised (after an error the server skips
        what follows until the pipeline's end, so a COMMIT behind a failed statement is not
        run and the transaction stays failed, to be rolled back)."""
        pgconn, wait = self._pgconn, self.connection.wait
        if behind is not None:
            pgconn.send_query_params(behind, None)
        pgconn.pipeline_sync()
        wait(generators.send(pgconn))
        replies = [wait(generators.fetch_many(pgconn)) for _ in range(ahead + 1 + bool(behind))]
        wait(generators.fetch_many(pgconn))  # the pipeline's end
        for reply in replies:
            self._result(reply)
        return replies[ahead][-1]

    def _result(self, results: Sequence[Any]) -> Any:
        result = results[-1]
        if result.status not in _OK:
            raise pg_errors.error_from_result(result, encoding=self._session.encoding)
        return result

    # The rows

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount if self._from_cursor else self._rowcount

    def fetchone(self) -> Any:
        if self._from_cursor:
            return self._cursor.fetchone()
        return dict(zip(self._columns, self._rows.pop(0), strict=True)) if self._rows else None

    def fetchall(self) -> list[Any]:
        if self._from_cursor:
            return self._cursor.fetchall()
        rows, self._rows = self._rows, []
        columns = self._columns
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def values_of(self, names: tuple[str, ...]) -> list[tuple[Any, ...]] | None:
        """The last result's rows as tuples of the columns `names`, in order, without a dict
        a row; None if the last statement went through psycopg's cursor."""
        if self._from_cursor:
            return None
        rows, self._rows = self._rows, []
        if not rows:
            return []
        read = positional_reader(self._columns, names)
        return [read(row) for row in rows]
