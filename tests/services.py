"""Finding the real services the tests need: skip with a reason outside CI, fail inside it."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pytest

POSTGRES_URL = os.environ.get("DEADLETTER_TEST_POSTGRES", "postgresql://127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    """Skip the test, or fail it when running in CI, where every service must be there."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: required)", pytrace=False)
    pytest.skip(reason)


def postgres_available() -> str | None:
    """None when PostgreSQL answers, else why not."""
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL, connect_timeout=3):
            return None
    except Exception as exc:
        return f"PostgreSQL is not reachable at {POSTGRES_URL}: {exc}"


def java_available() -> str | None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed (Spark needs it)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    return None


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A fresh schema for one test; yields a database URL whose search_path is that schema."""
    import psycopg

    reason = postgres_available()
    if reason:
        missing(reason)
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
