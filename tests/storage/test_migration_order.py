"""The migration runner, per dialect: it applies the files above the database's newest version,
and refuses to start on a file numbered below that version which the database never applied
(applying only what is above would skip it silently). A gap in the numbers is fine: each
dialect numbers its own files (SQLite alone has 0003, PostgreSQL alone 0008)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from deadletter.storage.migrations import MigrationRefused, migration_scripts, pending
from deadletter.storage.postgres.backend import PostgresStore
from deadletter.storage.sqlite.backend import SQLiteStore
from tests.services import postgres_schema

DIALECTS = {"sqlite": "deadletter.storage.sqlite", "postgres": "deadletter.storage.postgres"}


@pytest.mark.parametrize("package", DIALECTS.values(), ids=list(DIALECTS))
def test_each_file_below_the_newest_that_was_never_applied_is_refused(package: str) -> None:
    scripts = migration_scripts(package)
    versions = [version for version, _ in scripts]
    assert pending(scripts, set(versions)) == []  # a database migrated to the end
    for missed in versions[:-1]:
        with pytest.raises(MigrationRefused, match=f"migration {missed:04d} is numbered below"):
            pending(scripts, set(versions) - {missed})


def test_a_gap_in_the_numbers_is_fine() -> None:
    scripts = [(1, "one"), (2, "two"), (4, "four")]
    assert pending(scripts, set()) == scripts
    assert pending(scripts, {1, 2}) == [(4, "four")]
    # a version recorded that has no file here (another dialect's number) refuses nothing
    assert pending(scripts, {1, 2, 3}) == [(4, "four")]
    assert pending(scripts, {1, 2, 4}) == []


def _forget(run: Callable[[str], object]) -> None:
    """A database that never applied 0005 although it has applied the ones after it."""
    run("DELETE FROM schema_version WHERE version = 5")


def test_a_sqlite_store_that_never_applied_a_migration_below_its_newest_does_not_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deadletter.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        _forget(conn.execute)
    conn.close()
    with pytest.raises(MigrationRefused, match="migration 0005 is numbered below"):
        SQLiteStore(path)
    with sqlite3.connect(path) as conn:  # and nothing was applied or recorded
        assert 5 not in {v for (v,) in conn.execute("SELECT version FROM schema_version")}
    conn.close()


@pytest.mark.postgres
def test_a_postgres_store_that_never_applied_a_migration_below_its_newest_does_not_open() -> None:
    with postgres_schema() as url:
        PostgresStore(url, pool_size=1).close()
        with psycopg.connect(url, autocommit=True) as conn:
            _forget(conn.execute)
        with pytest.raises(MigrationRefused, match="migration 0005 is numbered below"):
            PostgresStore(url, pool_size=1)
        with psycopg.connect(url) as conn:
            assert 5 not in {v for (v,) in conn.execute("SELECT version FROM schema_version")}
