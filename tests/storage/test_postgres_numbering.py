"""PostgreSQL numbers messages without a row per queue: concurrent senders to one queue do not
wait for each other, and a listing by marker still never steps over a message that commits
after one numbered later."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from deadletter.domain.model import ListQuery, Message, NewMessage, Queue, QueueSettings
from deadletter.engine import transitions
from deadletter.storage.base import Transaction
from deadletter.storage.postgres.backend import PostgresStore
from tests.services import postgres_schema

pytestmark = pytest.mark.postgres

WAIT = 10.0  # seconds; only reached when the behaviour under test is broken
NOW = 1000.0


@pytest.fixture
def pg() -> Iterator[tuple[PostgresStore, str]]:
    with postgres_schema() as url:
        store = PostgresStore(url)
        with store.transaction() as tx:
            tx.insert_queue(Queue("p", "q", QueueSettings(), created_at=0.0, updated_at=0.0))
        yield store, url
        store.close()


def _message(body: str) -> Message:
    new = NewMessage(body=body.encode())
    return transitions.enqueued(
        new,
        message_id=uuid.uuid4().hex,
        queue="q",
        now=NOW,
        ttl=3600,
        delay=0,
        eligible=True,
        client_id=None,
    )


def _send(tx: Transaction, body: str) -> Message:
    (stored,) = tx.insert_messages("p", [_message(body)])
    return stored


class HeldSend:
    """A transaction in another thread that sends one message and stays open until told."""

    def __init__(self, store: PostgresStore) -> None:
        self.sent: list[Message] = []
        self._store = store
        self._sent, self._finish = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self._store.transaction() as tx:
            self.sent.append(_send(tx, "early"))
            self._sent.set()
            self._finish.wait(WAIT)

    def __enter__(self) -> HeldSend:
        self._thread.start()
        assert self._sent.wait(WAIT)
        return self

    def __exit__(self, *_: object) -> None:
        self._finish.set()
        self._thread.join(WAIT)


def test_a_send_commits_while_another_send_to_the_same_queue_is_in_flight(
    pg: tuple[PostgresStore, str],
) -> None:
    store, _ = pg
    done: list[Message] = []

    def other_send() -> None:
        with store.transaction() as tx:
            done.append(_send(tx, "late"))

    with HeldSend(store):
        thread = threading.Thread(target=other_send, daemon=True)
        thread.start()
        thread.join(WAIT)
        assert len(done) == 1


def test_a_listing_waits_for_a_send_numbered_before_a_committed_one(
    pg: tuple[PostgresStore, str],
) -> None:
    # Given a send numbered first and still open, and one numbered after it and committed
    store, url = pg
    listed: list[list[str]] = []

    def listing() -> None:
        with store.read() as tx:
            found = tx.list_messages("p", "q", NOW, ListQuery(limit=10))
            listed.append([m.id for m in found])

    with HeldSend(store) as held:
        with store.transaction() as tx:
            later = _send(tx, "later")
        assert held.sent[0].seq < later.seq
        # When a listing runs before the first commits
        thread = threading.Thread(target=listing, daemon=True)
        thread.start()
        _wait_until_listing_waits_or_ends(url, thread)
    thread.join(WAIT)
    # I expect it to show both, in number order: a marker after `later` would skip `early`
    assert listed == [[held.sent[0].id, later.id]]


def _wait_until_listing_waits_or_ends(url: str, thread: threading.Thread) -> None:
    """Until the listing waits for a lane (an advisory lock not granted) or has finished."""
    deadline = time.monotonic() + WAIT
    with psycopg.connect(url, autocommit=True) as conn:
        while thread.is_alive() and time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                " AND classid = x'646c'::int::oid"
            ).fetchone()
            if row and row[0]:
                return
            time.sleep(0.01)
