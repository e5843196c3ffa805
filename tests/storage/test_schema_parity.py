"""Both dialects' migrations build the same schema: tables, columns, primary keys, indexes.

Only the numbering of messages is stored differently, by design: one counter row on SQLite
(transactions are serial), one sequence on PostgreSQL (not a table, so not compared).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from deadletter.storage.postgres.backend import PostgresStore
from deadletter.storage.sqlite.backend import SQLiteStore
from tests.services import postgres_schema

NUMBERING = {"message_sequence", "queue_sequences"}
BOOKKEEPING = {"schema_version"}
TYPES = {
    "text": "text",
    "integer": "integer",
    "bigint": "integer",
    "boolean": "integer",  # SQLite stores booleans as 0 and 1
    "real": "real",
    "double precision": "real",
    "blob": "bytes",
    "bytea": "bytes",
}


@dataclass(frozen=True)
class Index:
    table: str
    columns: tuple[str, ...]
    unique: bool
    partial: bool


@dataclass(frozen=True)
class Schema:
    columns: dict[str, dict[str, str]]  # table -> column -> loose type
    primary_keys: dict[str, tuple[str, ...]]
    indexes: dict[str, Index]  # by name; those that back primary keys are left out


def sqlite_schema(path: str) -> Schema:
    conn = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0] not in NUMBERING | BOOKKEEPING
        ]
        columns: dict[str, dict[str, str]] = {}
        keys: dict[str, tuple[str, ...]] = {}
        indexes: dict[str, Index] = {}
        for table in tables:
            info = conn.execute(f"PRAGMA table_info({table})").fetchall()
            columns[table] = {r[1]: TYPES[r[2].lower()] for r in info}
            keys[table] = tuple(r[1] for r in sorted(info, key=lambda r: r[5]) if r[5])
            for _, name, unique, origin, partial in conn.execute(f"PRAGMA index_list({table})"):
                if origin != "pk":
                    cols = tuple(r[2] for r in conn.execute(f"PRAGMA index_info({name})"))
                    indexes[name] = Index(table, cols, bool(unique), bool(partial))
        return Schema(columns, keys, indexes)
    finally:
        conn.close()


def postgres_schema_of(url: str) -> Schema:
    with psycopg.connect(url) as conn:
        columns: dict[str, dict[str, str]] = {}
        for table, column, type_ in conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        ):
            if table not in NUMBERING | BOOKKEEPING:
                columns.setdefault(table, {})[column] = TYPES[type_]
        keys: dict[str, tuple[str, ...]] = {}
        indexes: dict[str, Index] = {}
        for table, name, cols, unique, primary, partial in conn.execute(
            "SELECT t.relname, i.relname,"
            " ARRAY(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(n, o)"
            "   JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.n ORDER BY k.o),"
            " x.indisunique, x.indisprimary, x.indpred IS NOT NULL"
            " FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid"
            " JOIN pg_class i ON i.oid = x.indexrelid"
            " WHERE t.relnamespace = current_schema()::regnamespace"
        ):
            if table in NUMBERING | BOOKKEEPING:
                continue
            if primary:
                keys[table] = tuple(cols)
            else:
                indexes[name] = Index(table, tuple(cols), unique, partial)
        for table in columns:
            keys.setdefault(table, ())
        return Schema(columns, keys, indexes)


def differences(a: Schema, b: Schema) -> list[str]:
    """What one schema has that the other lacks or has otherwise, in words."""
    found = []
    for what in ("columns", "primary_keys", "indexes"):
        mine, theirs = getattr(a, what), getattr(b, what)
        for name in sorted(mine.keys() | theirs.keys()):
            if mine.get(name) != theirs.get(name):
                found.append(f"{what} {name}: {mine.get(name)} != {theirs.get(name)}")
    return found


@pytest.fixture
def sqlite_path(tmp_path: Path) -> str:
    path = str(tmp_path / "parity.db")
    SQLiteStore(path).close()
    return path


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with postgres_schema() as url:
        PostgresStore(url, pool_size=1).close()
        yield url


@pytest.mark.postgres
def test_both_dialects_migrate_to_the_same_schema(sqlite_path: str, postgres_url: str) -> None:
    sqlite, postgres = sqlite_schema(sqlite_path), postgres_schema_of(postgres_url)
    assert sqlite.columns, "no tables read from SQLite"
    assert differences(sqlite, postgres) == []


@pytest.mark.postgres
def test_an_index_on_one_dialect_only_is_a_difference(sqlite_path: str, postgres_url: str) -> None:
    # Given a migration that adds an index on SQLite and forgets PostgreSQL
    conn = sqlite3.connect(sqlite_path)
    conn.execute("CREATE INDEX messages_client ON messages (client_id)")
    conn.close()
    # Then the comparison names it
    found = differences(sqlite_schema(sqlite_path), postgres_schema_of(postgres_url))
    assert found == [
        "indexes messages_client: Index(table='messages', columns=('client_id',),"
        " unique=False, partial=False) != None"
    ]
