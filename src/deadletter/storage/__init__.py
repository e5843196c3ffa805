"""Storage backends behind one interface; the URL's scheme picks the backend."""

from __future__ import annotations

from deadletter.storage.base import Store


def open_store(url: str) -> Store:
    """`sqlite:///path/to/file.db` (or a bare path) or `postgresql://...`."""
    if url.startswith(("postgresql://", "postgres://")):
        from deadletter.storage.postgres.backend import PostgresStore

        return PostgresStore(url)
    if url.startswith("sqlite:///"):
        url = url[len("sqlite:///") :]
    elif url.startswith("sqlite://"):
        url = url[len("sqlite://") :] or ":memory:"
    from deadletter.storage.sqlite.backend import SQLiteStore

    store: Store = SQLiteStore(url)
    return store
