"""Notifications sent to webhooks: the shape, retries with backoff, dead-lettering, fairness
and durability, on every store, against a real HTTP receiver."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.provenance import Reason
from deadletter.engine.deliveries import Deliveries, DeliverySettings
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from deadletter.engine.subscriptions import RetryPolicy
from tests.engine.helpers import P, send, with_dlq
from tests.support.receivers import WAIT, allow_local, receiving

# Two retries: the first 1 s after a failure, the second 2 s after the next (ManualClock).
SETTINGS = DeliverySettings(retry=RetryPolicy(retries=2, backoff=1.0), timeout=WAIT, tick=0.01)


@pytest.fixture
def runner(engine: Engine) -> Iterator[Deliveries]:
    deliveries = Deliveries(engine, allow_local(engine), SETTINGS)
    yield deliveries
    deliveries.stop()


def round_(runner: Deliveries) -> int:
    """One round, waiting for every POST it started to be answered and recorded."""
    started = runner.run_once()
    assert runner.drain(WAIT)
    return started


def test_a_sent_message_is_posted_to_the_subscriber_as_zaqar_does(
    engine: Engine, runner: Deliveries
) -> None:
    engine.create_queue(P, "q")
    with receiving() as hook:
        engine.subscriptions.create(
            P, "q", subscriber=hook.url, ttl=600, options={"post_headers": {"X-Token": "t"}}
        )
        send(engine, "q", '{"order": 7}', ttl=300)
        assert round_(runner) == 1
        ((headers, body),) = hook.posts
    assert body == {"body": {"order": 7}, "ttl": 300, "queue_name": "q",
                    "Message_Type": "Notification"}  # fmt: skip
    assert headers["content-type"] == "application/json" and headers["x-token"] == "t"
    assert engine.subscriptions.pending(P, "q") == []


def test_a_failing_subscriber_is_retried_with_backoff_then_dead_lettered(
    engine: Engine, clock: ManualClock, runner: Deliveries
) -> None:
    # Given a queue with a DLQ and a subscriber that answers 500
    with_dlq(engine, "q", "q-dlq")
    with receiving(status=500) as hook:
        engine.subscriptions.create(P, "q", subscriber=hook.url, ttl=600, options={})
        (m,) = send(engine, "q", '"hello"')
        # the first attempt fails; the retry waits its backoff
        assert round_(runner) == 1
        (owed,) = engine.subscriptions.pending(P, "q")
        assert (owed.attempts, owed.last_error, owed.due_at) == (1, "HTTP 500", clock.now() + 1)
        assert round_(runner) == 0
        clock.advance(1)
        assert round_(runner) == 1
        assert engine.subscriptions.pending(P, "q")[0].due_at == clock.now() + 2
        clock.advance(2)
        assert round_(runner) == 1
        assert len(hook.posts) == 3
    # out of retries: the notification is in the DLQ, and owed no more
    assert engine.subscriptions.pending(P, "q") == []
    (dead,) = engine.list_dead_letters(P, "q-dlq")
    p = dead.provenance
    assert p is not None and dead.body == b'"hello"'
    assert (p.reason, p.source_queue, p.original_message_id) == (Reason.DELIVERY_FAILED, "q", m.id)
    assert hook.url in (p.description or "") and p.error == "HTTP 500"
    assert engine.stats(P, "q").dead_lettered == {"delivery_failed": 1}
    assert engine.get_message(P, "q", message_id=m.id).id == m.id  # the message itself stays queued


def test_a_refusing_subscriber_is_dead_lettered_without_retries(
    engine: Engine, runner: Deliveries
) -> None:
    with_dlq(engine, "q", "q-dlq")
    with receiving(status=404) as hook:
        engine.subscriptions.create(P, "q", subscriber=hook.url, ttl=600, options={})
        send(engine, "q", "x")
        round_(runner)
    assert len(hook.posts) == 1
    (dead,) = engine.list_dead_letters(P, "q-dlq")
    assert dead.provenance is not None and dead.provenance.error == "HTTP 404"


def test_without_a_dlq_a_failed_notification_is_counted(
    engine: Engine, clock: ManualClock, runner: Deliveries
) -> None:
    engine.create_queue(P, "q")
    engine.subscriptions.create(P, "q", subscriber="http://127.0.0.1:9/closed", ttl=600, options={})
    send(engine, "q", "x")
    for _ in range(3):
        round_(runner)
        clock.advance(10)
    assert engine.subscriptions.pending(P, "q") == []
    assert engine.stats(P, "q").dropped == {"delivery_failed": 1}


def test_a_refused_connection_is_recorded_as_its_class(engine: Engine, runner: Deliveries) -> None:
    engine.create_queue(P, "q")
    engine.subscriptions.create(P, "q", subscriber="http://127.0.0.1:9/closed", ttl=600, options={})
    send(engine, "q", "x")
    round_(runner)
    (owed,) = engine.subscriptions.pending(P, "q")
    assert owed.last_error == "refused"


def test_a_slow_subscriber_does_not_delay_another(engine: Engine) -> None:
    # Given one subscriber that holds every answer until released, and a prompt one,
    engine.create_queue(P, "q")
    gate = threading.Event()
    runner = Deliveries(engine, allow_local(engine), SETTINGS)
    with receiving(gate=gate) as slow, receiving() as prompt:
        engine.subscriptions.create(P, "q", subscriber=slow.url, ttl=600, options={})
        engine.subscriptions.create(P, "q", subscriber=prompt.url, ttl=600, options={})
        runner.start()
        try:
            # when three messages are sent,
            send(engine, "q", "1", "2", "3")
            # the prompt subscriber gets all three while the slow one still holds its first
            assert prompt.wait_for(3)
            assert not gate.is_set()
            assert len(slow.posts) <= SETTINGS.per_subscriber
            gate.set()
            assert slow.wait_for(3)
            assert runner.drain(WAIT)
        finally:
            runner.stop()
    assert sorted(b["body"] for b in prompt.bodies) == [1, 2, 3]


def test_what_is_owed_survives_a_restart(
    engine: Engine, clock: ManualClock, runner: Deliveries
) -> None:
    engine.create_queue(P, "q")
    with receiving() as hook:
        engine.subscriptions.create(P, "q", subscriber=hook.url, ttl=600, options={})
        send(engine, "q", "x")
        # a process takes the notification and dies before sending it:
        assert len(engine.subscriptions.take(10, busy=[], lease=40)) == 1
        # another process leaves it alone while it is leased, then sends it
        restarted = Deliveries(Engine(engine.store, clock), allow_local(engine), SETTINGS)
        try:
            assert round_(restarted) == 0
            clock.advance(40)
            assert round_(restarted) == 1
        finally:
            restarted.stop()
        assert hook.wait_for(1)
    assert engine.subscriptions.pending(P, "q") == []


class Due(EngineListener):
    def __init__(self) -> None:
        self.due: list[tuple[str, int]] = []

    def notifications_due(self, project: str, queue: str, count: int) -> None:
        self.due.append((queue, count))


def test_only_a_send_that_stores_notifications_wakes_the_sender(
    engine: Engine, runner: Deliveries
) -> None:
    # Given a queue without subscriptions and one with two, and the sender not running
    engine.create_queue(P, "quiet")
    engine.create_queue(P, "watched")
    due = Due()
    engine.add_listener(due)
    with receiving() as hook:
        engine.subscriptions.create(P, "watched", subscriber=hook.url, ttl=600, options={})
        engine.subscriptions.create(P, "watched", subscriber=hook.url + "/2", ttl=600, options={})
        # When messages go to the quiet queue, nothing is announced and the sender sleeps on
        # (a round would take the store's write path for nothing)
        send(engine, "quiet", "a", "b")
        assert due.due == []
        assert not runner._wake.is_set()
        # and when three go to the watched one, its six notifications wake the sender
        send(engine, "watched", "a", "b", "c")
        assert due.due == [("watched", 6)]
        assert runner._wake.is_set()
