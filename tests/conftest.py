"""Shared fixtures: every backend runs the same tests through the `store_url` fixture.

Stores are migrated once per test process and handed to each test clean (tests/support/stores.py,
tests/README.md): a copied SQLite file, or a pooled PostgreSQL schema wiped after each test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store
from tests.services import IN_CI
from tests.support.stores import PostgresSchemas, SQLiteTemplate

# Examples are judged by what they find, never by how long they took: a busy machine must not
# fail a test. In CI the examples are the same every run (a failure there reproduces as is);
# on a developer's machine they vary, so repeated runs explore more.
settings.register_profile(
    "deadletter",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("deadletter-ci", settings.get_profile("deadletter"), derandomize=True)
settings.load_profile("deadletter-ci" if IN_CI else "deadletter")

# Each family's time limit (pytest-timeout), for a test that sets none of its own: the limit
# catches a hang, and is set far above what the family takes on a loaded machine.
SLOW_TIMEOUT = 600  # `slow`: stateful models, concurrency, processes (up to ~100 s loaded)

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))
        # One Spark session per worker process: the tests that share it run on one worker.
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> SQLiteTemplate:
    return SQLiteTemplate(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def postgres_schemas() -> Iterator[PostgresSchemas]:
    schemas = PostgresSchemas()
    yield schemas
    schemas.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`store_url` on both backends; on SQLite alone for a test marked `one_store`."""
    if "store_url" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        if "store_url" in mark.args[0]:
            return  # the test names its backends itself
    one = metafunc.definition.get_closest_marker("one_store") is not None
    metafunc.parametrize("store_url", BACKENDS[:1] if one else BACKENDS, indirect=True)


@pytest.fixture
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
