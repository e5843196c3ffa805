"""The statements the message routes' operations run on SQLite's writer, counted: what a
consumer's every request costs on the store, kept from growing back (and the same
statements run on PostgreSQL, `storage/sql/queries.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage.sqlite.backend import SQLiteStore

P = "p"
# Every write transaction's frame: BEGIN IMMEDIATE, SAVEPOINT, RELEASE, COMMIT.
FRAME = ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    store = SQLiteStore(str(tmp_path / "counts.db"))
    yield Engine(store)
    store.close()


def statements(engine: Engine) -> list[str]:
    """The statements the writer runs from now on, frame left out, each by its first words."""
    seen: list[str] = []
    store = engine.store
    assert isinstance(store, SQLiteStore)

    def keep(sql: str) -> None:
        words = " ".join(sql.split()[:3])
        if not words.startswith(FRAME):
            seen.append(words)

    store._conn.set_trace_callback(keep)
    return seen


def test_a_delete_by_ids_reads_no_message_on_a_queue_without_consumer_tags(
    engine: Engine,
) -> None:
    # Given ten messages claimed on a queue without consumer tags
    engine.create_queue(P, "q")
    engine.send(P, "q", messages=[NewMessage(body=b"x")] * 10)
    ids = [m.id for m in engine.claim(P, "q", limit=10, ttl=60).messages]
    # When they are deleted by their ids (Zaqar's bulk delete)
    seen = statements(engine)
    assert engine.delete_messages(P, "q", ids=ids) == 10
    # I expect the queue read, one DELETE and the counts, and no SELECT of the messages
    assert seen[0] == "SELECT * FROM"  # the queue
    assert [s for s in seen if "messages" in s or s.startswith("SELECT")] == [
        "SELECT * FROM",
        "DELETE FROM messages",
    ]


def test_a_claim_writes_its_messages_in_one_statement_on_a_plain_queue(engine: Engine) -> None:
    # Given ten messages on a queue without consumer tags or FIFO order
    engine.create_queue(P, "q")
    engine.send(P, "q", messages=[NewMessage(body=b"x")] * 10)
    # When a consumer claims all ten
    seen = statements(engine)
    claimed = engine.claim(P, "q", limit=10, ttl=60).messages
    # I expect the queue read, the ready and hidden heads, one UPDATE for the ten messages
    # (not one per message), the class counts and the claim
    assert len(claimed) == 10
    assert seen == [
        "SELECT * FROM",
        "SELECT * FROM",
        "SELECT * FROM",
        "UPDATE messages SET",
        "INSERT INTO queue_hidden",
        "INSERT INTO claims",
    ]
