"""Shared fixtures: every backend runs the same tests through the `store_url` fixture.

Stores are migrated once per test process and handed to each test clean (tests/support/stores.py,
tests/README.md): a copied SQLite file, or a pooled PostgreSQL schema wiped after each test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store
from tests.support.stores import PostgresSchemas, SQLiteTemplate

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> SQLiteTemplate:
    return SQLiteTemplate(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def postgres_schemas() -> Iterator[PostgresSchemas]:
    schemas = PostgresSchemas()
    yield schemas
    schemas.close()


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database URL of an empty, migrated store of each backend, private to the test."""
    if request.param == "sqlite":
        template: SQLiteTemplate = request.getfixturevalue("sqlite_template")
        yield template.copy_to(tmp_path / "deadletter.db")
    else:
        schemas: PostgresSchemas = request.getfixturevalue("postgres_schemas")
        with schemas.clean() as url:
            yield url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = open_store(store_url)
    yield s
    s.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def engine(store: Store, clock: ManualClock) -> Engine:
    return Engine(store, clock)
