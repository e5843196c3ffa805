"""A request's savepoint keeps its statement journal in memory: no temporary file per write."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage.sql.transaction import SQLTransaction
from deadletter.storage.sqlite.backend import SQLiteStore

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


def _open_files() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue  # the listing's own descriptor, closed meanwhile
    return found


def test_a_large_delete_opens_no_file_while_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(str(tmp_path / "q.db"))
    engine = Engine(store)
    try:
        engine.create_queue("p", "q")
        body = b'"' + b"x" * 8000 + b'"'
        sent = engine.send("p", "q", messages=[NewMessage(body=body, ttl=300) for _ in range(40)])
        before = _open_files()
        during: list[set[str]] = []
        delete = SQLTransaction.delete_unfinished

        def delete_and_look(self: SQLTransaction, *args: Any) -> Any:
            deleted = delete(self, *args)
            during.append(_open_files())  # inside the request's savepoint, before its commit
            return deleted

        monkeypatch.setattr(SQLTransaction, "delete_unfinished", delete_and_look)
        # A delete changes pages that were there before it, which the request's savepoint
        # keeps copies of: far more than SQLite keeps in memory otherwise (64 KiB).
        assert engine.delete_messages("p", "q", ids=[m.id for m in sent]) == 40
        assert during and during[0] - before == set(), "a file was opened for the write"
        assert engine.stats("p", "q").total == 0
    finally:
        store.close()
