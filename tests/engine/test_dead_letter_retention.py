"""How long a dead letter stays in its DLQ (`transitions.dead_letter_expiry`), and that its
expiry is never silent: counted on the DLQ, told to the listeners, logged."""

from __future__ import annotations

import logging

import pytest

from deadletter.clock import ManualClock
from deadletter.domain.model import MAX_TTL, NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.engine.engine import Engine
from deadletter.engine.events import EngineListener
from tests.engine.helpers import P
from tests.engine.helpers import fail as fail_once

HOUR = 3600


def queues(engine: Engine, dlq: QueueSettings, source: QueueSettings | None = None) -> None:
    """ "orders-dlq" with `dlq`'s settings, the DLQ of "orders" after one delivery."""
    engine.create_queue(P, "orders-dlq", settings=dlq)
    policy = DeadLetterPolicy(target="orders-dlq", max_claims=1)
    engine.create_queue(
        P, "orders", settings=(source or QueueSettings()).with_changes(dead_letter=policy)
    )


def dead_letter_all(engine: Engine, queue: str) -> None:
    """Every message of `queue` claimed and given back once, then claimed again: moved."""
    fail_once(engine, queue, 1)
    assert engine.claim(P, queue, limit=1000).messages == ()


class Told(EngineListener):
    def __init__(self) -> None:
        self.expired: list[tuple[str, str, list[str], int]] = []

    def dead_letters_expired(self, project: str, dlq: str, sources: list[str], count: int) -> None:
        self.expired.append((project, dlq, sources, count))


def test_a_dead_letter_is_kept_for_the_dlqs_maximum_ttl_from_its_enqueue_time(
    engine: Engine, clock: ManualClock
) -> None:
    # Given a source with an hour's TTL whose DLQ has a day's maximum TTL
    queues(engine, QueueSettings(max_ttl=24 * HOUR), QueueSettings(default_ttl=HOUR))
    (sent,) = engine.send(P, "orders", messages=[NewMessage(body=b"x")])
    clock.advance(60)
    # when it is dead-lettered a minute later
    dead_letter_all(engine, "orders")
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    # I expect it to stay a day from when it was sent
    assert dead.expires_at == sent.enqueued_at + 24 * HOUR


def test_a_dlq_that_ignores_ttls_keeps_dead_letters_for_the_longest_ttl(
    engine: Engine, clock: ManualClock
) -> None:
    queues(engine, QueueSettings(max_ttl=HOUR, respect_ttl=False))
    (sent,) = engine.send(P, "orders", messages=[NewMessage(body=b"x")])
    dead_letter_all(engine, "orders")
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.expires_at == sent.enqueued_at + MAX_TTL


def test_an_expired_dead_letter_is_counted_told_and_logged(
    engine: Engine, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    told = Told()
    engine.add_listener(told)
    # Given two dead letters of "orders" in a DLQ that keeps messages an hour, and a message
    # sent to the DLQ itself
    queues(engine, QueueSettings(max_ttl=HOUR, default_ttl=HOUR))
    engine.send(P, "orders", messages=[NewMessage(body=b"a"), NewMessage(body=b"b")])
    engine.send(P, "orders-dlq", messages=[NewMessage(body=b"not a dead letter")])
    dead_letter_all(engine, "orders")
    assert engine.stats(P, "orders-dlq").total == 3
    # when the hour has passed
    clock.advance(HOUR + 1)
    with caplog.at_level(logging.WARNING, logger="deadletter.engine.expiry"):
        engine.sweep_expired()
    # I expect all three dropped, the two dead letters counted as such, told and logged
    stats = engine.stats(P, "orders-dlq")
    assert (stats.total, stats.expired_dropped, stats.dead_letters_expired) == (0, 3, 2)
    assert told.expired == [(P, "orders-dlq", ["orders"], 2)]
    (record,) = [r for r in caplog.records if r.name == "deadletter.engine.expiry"]
    assert record.levelno == logging.WARNING
    assert "2 dead letter(s) of orders-dlq expired" in record.getMessage()
