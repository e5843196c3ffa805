"""A server opening a new SQLite file while another sets it up waits its turn, not crashes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from deadletter.storage.sqlite import backend


class BusyOnce(sqlite3.Connection):
    """A connection whose first switch to WAL finds the file locked, as when another process
    is switching it at the same moment."""

    locked = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith("PRAGMA journal_mode") and BusyOnce.locked < 2:
            BusyOnce.locked += 1
            raise sqlite3.OperationalError("database is locked")
        return super().execute(sql, *args)


def test_opening_retries_while_the_new_file_is_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real_connect(*args, factory=BusyOnce, **kwargs)

    monkeypatch.setattr(backend.sqlite3, "connect", connect)
    store = backend.SQLiteStore(tmp_path / "new.db")
    try:
        assert BusyOnce.locked == 2
        with store.transaction() as tx:
            assert tx.get_queue("p", "q") is None
    finally:
        store.close()
