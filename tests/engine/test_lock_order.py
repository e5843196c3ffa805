"""A write that takes several messages by id on PostgreSQL locks them in `seq` order, as a
claim and the locked reads do, whatever order the ids come in or an index finds them: two
writes on the same messages never each hold one that the other waits for (a deadlock, which
PostgreSQL breaks only after a second). SQLite needs no such test: its writers are serial.

Each write is given two claimed messages whose ids sort the other way round from their
`seq`, while another transaction holds the later one. The write must then wait for it
holding the earlier one already: it took them in `seq` order. Its store finds a few ids by
walking the primary key, as PostgreSQL does once the table's statistics are known and a
bitmap of the table's pages is not worth building; a plain DELETE then locks in id order.
A consumer tag's writes lock the tag's states of the messages, in the same order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import quote

import psycopg
import pytest

from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.engine.helpers import P, with_dlq
from tests.services import postgres_schema

pytestmark = pytest.mark.postgres

# Enough 1 KiB messages that PostgreSQL finds a few of them by index, in id order, rather
# than by reading the whole table in the order it was written.
DEPTH = 400

Write = Callable[[Engine, list[str], str], object]
# A consumer tag's writes lock the tag's states of the messages, not the messages.
TAG = "billing"
WRITES = [
    pytest.param(lambda e, ids, _: e.delete_messages(P, "q", ids=ids), None, id="delete-by-ids"),
    pytest.param(
        lambda e, ids, claim: e.delete_held(P, "q", held=[(i, claim) for i in ids]),
        None,
        id="delete-under-a-claim",
    ),
    pytest.param(
        lambda e, ids, claim: e.delete_held(
            P, "q", held=[*((i, claim) for i in ids), (ids[0], "0" * 24)]
        ),
        None,
        id="delete-under-several-claims",
    ),
    pytest.param(
        lambda e, ids, claim: e.dead_letter(P, "q", held=[(i, claim) for i in ids]),
        None,
        id="dead-letter-by-the-consumer",
    ),
    pytest.param(
        lambda e, ids, claim: e.delete_held(P, "q", held=[(i, claim) for i in ids], tag=TAG),
        TAG,
        id="tag-delete",
    ),
    pytest.param(
        lambda e, ids, claim: e.change_visibilities(
            P, "q", changes=[(i, claim, 60, TAG) for i in ids]
        ),
        TAG,
        id="tag-visibility-batch",
    ),
    pytest.param(
        lambda e, ids, claim: e.dead_letter(P, "q", held=[(i, claim) for i in ids], tag=TAG),
        TAG,
        id="tag-dead-letter-by-the-consumer",
    ),
]
LOCK_MESSAGE = "SELECT 1 FROM messages WHERE id = %s FOR UPDATE"
LOCK_TAG_STATE = f"SELECT 1 FROM tag_states WHERE message_id = %s AND tag = '{TAG}' FOR UPDATE"


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_schema() as url:
        yield url


@pytest.mark.parametrize(("write", "tag"), WRITES)
def test_a_write_of_several_messages_locks_them_in_seq_order(
    url: str, write: Write, tag: str | None
) -> None:
    store = open_store(url + quote(" -cenable_bitmapscan=off"))
    lock = LOCK_MESSAGE if tag is None else LOCK_TAG_STATE
    try:
        engine = Engine(store)
        with_dlq(engine, "q", "dlq")
        if tag is not None:
            engine.create_tag(P, "q", name=tag)
        engine.send(P, "q", messages=[NewMessage(body=b"x" * 1024) for _ in range(DEPTH)])
        claim = engine.claim(P, "q", limit=10, ttl=600, tag=tag)
        while engine.claim(P, "q", limit=20, ttl=600, tag=tag).messages:
            pass  # all claimed: the claim's index narrows a delete no better than its ids
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE messages")
        # Given two claimed messages whose ids sort the other way round from their seq
        earlier, later = crosswise([m.id for m in claim.messages], url)
        with psycopg.connect(url) as holder:
            # and another transaction that holds the later one
            holder.execute(lock, (later,))
            failures: list[BaseException] = []

            def run() -> None:
                try:
                    write(engine, [later, earlier], claim.id)
                except BaseException as exc:
                    failures.append(exc)

            writing = threading.Thread(target=run)
            writing.start()
            try:
                # When the write waits for it
                wait_until_blocked_by(holder, url)
                # I expect the write to hold the earlier one already
                with (
                    psycopg.connect(url, autocommit=True) as probe,
                    pytest.raises(psycopg.errors.LockNotAvailable),
                ):
                    probe.execute(lock + " NOWAIT", (earlier,))
            finally:
                holder.rollback()
                writing.join(30)
        # and, once the other transaction is gone, to write both
        assert failures == []
        if tag is None:
            assert engine.get_messages(P, "q", ids=[earlier, later]) == []
    finally:
        store.close()


def crosswise(in_seq_order: list[str], url: str) -> tuple[str, str]:
    """Two ids of `in_seq_order`, in that order, that PostgreSQL's index (its collation)
    sorts the other way round."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT id FROM messages WHERE id = ANY(%s) ORDER BY id", (in_seq_order,)
        )
        rank = {row[0]: i for i, row in enumerate(rows)}
    for i, earlier in enumerate(in_seq_order):
        for later in in_seq_order[i + 1 :]:
            if rank[later] < rank[earlier]:
                return earlier, later
    raise AssertionError("the ids sort in seq order: no pair to test with")


def wait_until_blocked_by(holder: psycopg.Connection, url: str) -> None:
    """Return once some session waits for a lock that `holder` holds."""
    blocking = (
        "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid)))"
    )
    deadline = time.monotonic() + 30
    with psycopg.connect(url, autocommit=True) as conn:
        while not conn.execute(blocking, (holder.info.backend_pid,)).fetchone()[0]:  # type: ignore[index]
            assert time.monotonic() < deadline, "the write never waited for the held message"
            time.sleep(0.01)
