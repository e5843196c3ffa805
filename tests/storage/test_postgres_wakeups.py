"""PostgreSQL's cross-process wake-ups outlive their connections: when the server ends the
sender's notifier connection and the other process's listener connection, both reconnect, say
so once each way, and a later send is heard again."""

from __future__ import annotations

import json
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
from deadletter.storage.postgres.notifications import CHANNEL, Listener
from tests.services import POSTGRES_URL, postgres_schema
from tests.support.polls import eventually

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


# What a listening process holds (`notifications.HEARING`: class 'ln').
HEARERS = (
    "SELECT a.pid FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid)"
    " WHERE l.locktype = 'advisory' AND l.classid = x'6c6e'::int AND a.application_name LIKE %s"
)


def _listener_of(application: str, conn: psycopg.Connection[tuple[int]]) -> int:
    row = conn.execute(HEARERS, (application,)).fetchone()
    assert row is not None
    return row[0]


def _heard(admin: psycopg.Connection[tuple[int]], project: str, until: str) -> list[str]:
    """The queues of `project` in the notifications `admin` (listening) receives up to
    `until`'s (other tests' share the channel)."""
    queues: list[str] = []
    for note in admin.notifies(timeout=5):
        sent = json.loads(note.payload)
        if len(sent) != 3 or sent[1] != project:  # another's, or a stopping listener's wake-up
            continue
        queue = sent[2]
        queues.append(queue)
        if queues[-1] == until:
            return queues
    raise AssertionError(f"no notification of {until!r}; heard {queues}")


NOTIFIED = (
    "SELECT 1 FROM pg_stat_activity WHERE application_name = %s AND state = 'idle'"
    " AND query LIKE 'SELECT pg_notify%%' AND query_start > %s"
)


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
        heard = other.hear_other_processes()
        assert heard is not None
        heard.result(5)
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
        ready = one.hear_other_processes()
        assert ready is not None
        ready.result(5)
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


def test_a_send_is_notified_only_while_some_process_hears_other_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Listener, "LINGER_SECONDS", 0.1)
    with postgres_schema() as url, psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"LISTEN {CHANNEL}")  # sees every NOTIFY, holds no lock: hears nothing
        name = f"deadletter-test-{uuid.uuid4().hex[:8]}"
        project = name  # apart from other tests' notifications on the shared channel
        sender = PostgresStore(f"{url}&application_name={name}-sender")
        other = PostgresStore(f"{url}&application_name={name}")

        def notify(queue: str) -> None:
            """Have the sender notify `queue`, and wait until its notifier has run the
            statement."""
            (since,) = admin.execute("SELECT clock_timestamp()").fetchone() or (None,)
            sender.notify_messages_available(project, queue)
            eventually(lambda: bool(admin.execute(NOTIFIED, (f"{name}-sender", since)).fetchall()))

        heard: list[str] = []
        other.on_messages_available(lambda _, queue: heard.append(queue))
        try:
            # Given no process that waits for others' sends, a send NOTIFYs no one
            notify("unheard")
            # when one starts to, it listens, and the sends after are NOTIFYed
            ready = other.hear_other_processes()
            assert ready is not None
            ready.result(5)
            assert other.hear_other_processes() is None  # a second waiter: already heard
            sender.notify_messages_available(project, "heard")
            assert _heard(admin, project, until="heard") == ["heard"]
            eventually(lambda: heard == ["heard"])
            # and once nothing waits there for a while, it stops listening, and sends are
            # NOTIFYed to no one again.
            other.stop_hearing_other_processes()
            assert admin.execute(HEARERS, (name,)).fetchall()  # one waiter left
            other.stop_hearing_other_processes()
            eventually(lambda: not admin.execute(HEARERS, (name,)).fetchall())
            notify("unheard again")
            ready = other.hear_other_processes()
            assert ready is not None
            ready.result(5)
            sender.notify_messages_available(project, "heard again")
            assert _heard(admin, project, until="heard again") == ["heard again"]
        finally:
            other.close()
            sender.close()
