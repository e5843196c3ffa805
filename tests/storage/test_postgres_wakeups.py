"""PostgreSQL's cross-process wake-ups outlive their connections: when the server ends the
sender's notifier connection and the other process's listener connection, both reconnect, say
so once each way, and a later send is heard again."""

from __future__ import annotations

import logging
import threading
import time
import uuid

import psycopg
import pytest

from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from deadletter.storage.postgres import notifications
from deadletter.storage.postgres.backend import PostgresStore
from deadletter.storage.postgres.notifications import CHANNEL
from tests.services import POSTGRES_URL, postgres_schema

pytestmark = pytest.mark.postgres

P, Q = "p", "orders"


def _heard_after_sending(engine: Engine, arrived: threading.Event) -> bool:
    arrived.clear()
    for _ in range(200):
        engine.send(P, Q, messages=[NewMessage(body=b"x")])
        if arrived.wait(0.1):
            return True
    return False


def _notifier_of(application: str, watching: psycopg.Connection[tuple[int]]) -> int:
    """The backend of the notifier opened as `application`: the one whose notifications
    `watching`, listening, received."""
    ours = {
        pid
        for (pid,) in watching.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (application,)
        )
    }
    return next(note.pid for note in watching.notifies(timeout=5) if note.pid in ours)


def _listener_of(application: str, conn: psycopg.Connection[tuple[int]]) -> int:
    row = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND query = %s",
        (application, f"LISTEN {CHANNEL}"),
    ).fetchone()
    assert row is not None
    return row[0]


def test_the_listener_and_the_notifier_reconnect_and_are_heard_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = f"deadletter-test-{uuid.uuid4().hex[:8]}"
    with (
        postgres_schema() as url,
        psycopg.connect(POSTGRES_URL, autocommit=True) as admin,
        caplog.at_level(logging.INFO),
    ):
        admin.execute(f"LISTEN {CHANNEL}")
        sender = PostgresStore(f"{url}&application_name={name}-sender")
        other = PostgresStore(f"{url}&application_name={name}-other")
        arrived = threading.Event()
        other.on_messages_available(lambda project, queue: arrived.set())
        try:
            engine = Engine(sender)
            engine.create_queue(P, Q)
            # Given a process that hears another's sends,
            assert _heard_after_sending(engine, arrived)
            # when the server ends the connections that carry the wake-ups,
            ended = [_notifier_of(f"{name}-sender", admin), _listener_of(f"{name}-other", admin)]
            for pid in ended:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            # I expect a later send to be heard again,
            assert _heard_after_sending(engine, arrived)
        finally:
            other.close()
            sender.close()
    # and each loss and each return to be said once.
    said = [r.getMessage() for r in caplog.records if r.name == notifications.__name__]
    assert sorted(said) == [
        "notification listener lost its connection; reconnecting",
        "notification listener reconnected",
        "notifier lost its connection; reconnecting",
        "notifier reconnected",
    ]


def test_a_process_hears_the_other_processes_sends_and_not_its_own_again() -> None:
    with postgres_schema() as url:
        one, other = PostgresStore(url), PostgresStore(url)
        heard: list[str] = []
        other_heard = threading.Event()

        def hear(project: str, queue: str) -> None:
            heard.append(queue)
            if queue == "from-other":
                other_heard.set()

        one.on_messages_available(hear)
        try:
            # Given a process that listens, and has told itself of its own send already
            one.notify_messages_available(P, "own")
            time.sleep(0.3)  # committed before the other process's, so heard first if heard
            # When another process sends
            other.notify_messages_available(P, "from-other")
            # I expect that send heard, and its own not heard again
            assert other_heard.wait(5)
            assert heard == ["from-other"]
        finally:
            other.close()
            one.close()
