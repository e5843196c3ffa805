"""Stores migrated once per test process and handed to each test clean.

Building a store runs every migration (18 on PostgreSQL); doing that per test cost most of the
suite's time. Here each process (each xdist worker) migrates once:

- SQLite: a template file is migrated once; a test gets its own byte copy (2-12 ms against
  0.15-0.34 s for a new file), with the private mode a new file gets.
- PostgreSQL: migrated schemas are kept in a pool; a test takes one and, when it ends, the
  schema's rows are deleted and its sequence restarted before the next test takes it. A schema
  that cannot be wiped (a connection the test leaked still holds a lock) is dropped and replaced
  by a newly migrated one, so no test ever sees another's rows.

The migration tests (tests/storage/test_schema_parity.py and the tests that open an empty
schema through `tests.services.postgres_schema`) do not use this module: they still migrate from
nothing, on both dialects.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from deadletter.storage import open_store
from tests.services import POSTGRES_URL, missing, postgres_available

# A leaked transaction is the only thing a wipe can wait for; better a new schema than a hang.
WIPE_LOCK_TIMEOUT = "5s"


def schema_url(schema: str) -> str:
    """The database URL whose sessions work in `schema`."""
    sep = "&" if "?" in POSTGRES_URL else "?"
    return f"{POSTGRES_URL}{sep}options={quote(f'-csearch_path={schema}')}"


class SQLiteTemplate:
    """One migrated SQLite file of this process, copied for each test."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "template.db"
        open_store(f"sqlite:///{self.path}").close()  # closing checkpoints the WAL into the file

    def copy_to(self, path: Path) -> str:
        shutil.copyfile(self.path, path)
        path.chmod(0o600)  # as `SQLiteStore` creates a new file
        return f"sqlite:///{path}"


class PostgresSchemas:
    """Migrated schemas of this process: taken by one test at a time, wiped when given back."""

    def __init__(self) -> None:
        self._free: list[str] = []
        self._made: list[str] = []
        self._tables: list[str] | None = None
        self._sequences: list[str] = []

    @contextmanager
    def clean(self) -> Iterator[str]:
        """The URL of a migrated schema with no rows, private to the caller until it leaves."""
        reason = postgres_available()
        if reason:
            missing(reason)
        schema = self._free.pop() if self._free else self._new()
        try:
            yield schema_url(schema)
        finally:
            if self._wipe(schema):
                self._free.append(schema)
            else:
                self._drop(schema)

    def close(self) -> None:
        for schema in self._made:
            self._drop(schema)
        self._made.clear()
        self._free.clear()

    def _new(self) -> str:
        import psycopg

        schema = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        self._made.append(schema)
        open_store(schema_url(schema)).close()
        if self._tables is None:
            self._tables, self._sequences = self._objects(schema)
        return schema

    @staticmethod
    def _objects(schema: str) -> tuple[list[str], list[str]]:
        """The tables a wipe empties (all but the migrations' own) and the sequences it
        restarts: read from the first migrated schema, so a new migration needs no change."""
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename",
                (schema,),
            ).fetchall()
            sequences = conn.execute(
                "SELECT sequencename FROM pg_sequences WHERE schemaname = %s", (schema,)
            ).fetchall()
        return [t for (t,) in tables if t != "schema_version"], [s for (s,) in sequences]

    def _wipe(self, schema: str) -> bool:
        import psycopg

        try:
            with psycopg.connect(POSTGRES_URL, autocommit=True) as conn, conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{WIPE_LOCK_TIMEOUT}'")
                for table in self._tables or ():
                    conn.execute(f'DELETE FROM "{schema}"."{table}"')
                for sequence in self._sequences:
                    conn.execute(f'ALTER SEQUENCE "{schema}"."{sequence}" RESTART')
            return True
        except psycopg.Error:
            return False

    def _drop(self, schema: str) -> None:
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        if schema in self._made:
            self._made.remove(schema)
