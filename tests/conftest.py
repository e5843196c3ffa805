"""Shared fixtures: every backend runs the same tests through the `store_url` fixture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deadletter.clock import ManualClock
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from deadletter.storage.base import Store
from tests.services import postgres_schema

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database URL of an empty store of each backend, private to the test."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'deadletter.db'}"
    else:
        with postgres_schema() as url:
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
