"""Solace's TTL model per queue: respect-TTL off, on (max-TTL caps), or unset (refuses), a TTL
floor, and the delayed-consumption recipe built from TTL expiry and a DLQ."""

from __future__ import annotations

import time

import pytest

from deadletter.clock import ManualClock, SystemClock
from deadletter.domain import errors
from deadletter.domain.model import MAX_TTL, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from deadletter.engine.worker import Worker
from deadletter.storage.base import Store
from tests.engine.helpers import P, send


def test_without_respect_ttl_a_ttl_above_the_maximum_is_refused(engine: Engine) -> None:
    engine.create_queue(P, "q", settings=QueueSettings(default_ttl=60, max_ttl=60))
    with pytest.raises(errors.InvalidInput, match="message TTL"):
        send(engine, "q", "long", ttl=61)


def test_respect_ttl_caps_a_longer_or_missing_ttl_at_the_maximum(engine: Engine) -> None:
    # Given a queue that respects TTLs with a maximum of 5 s (its default stays 3600),
    engine.create_queue(P, "q", settings=QueueSettings(respect_ttl=True, max_ttl=5))
    # a message asking for 600 s and one asking for nothing both get 5 s; a shorter one its own.
    longer, missing, shorter = (
        send(engine, "q", "a", ttl=600)[0],
        send(engine, "q", "b")[0],
        send(engine, "q", "c", ttl=2)[0],
    )
    assert (longer.ttl(), missing.ttl(), shorter.ttl()) == (5, 5, 2)


def test_without_respect_ttl_messages_stay_for_the_retention_bound(
    engine: Engine, clock: ManualClock
) -> None:
    engine.create_queue(P, "q", settings=QueueSettings(respect_ttl=False))
    (m,) = send(engine, "q", "kept", ttl=60)
    assert m.ttl() == MAX_TTL
    clock.advance(3600)
    engine.sweep_expired()
    assert engine.stats(P, "q").total == 1


def test_ttls_go_down_to_the_queue_floor(engine: Engine) -> None:
    engine.create_queue(P, "free", settings=QueueSettings())
    assert send(engine, "free", "one second", ttl=1)[0].ttl() == 1
    engine.create_queue(P, "floored", settings=QueueSettings(min_ttl=30))
    with pytest.raises(errors.InvalidInput, match="between 30"):
        send(engine, "floored", "too short", ttl=29)
    with pytest.raises(errors.InvalidInput, match="minimum message TTL"):
        engine.create_queue(
            P, "bad", settings=QueueSettings(min_ttl=120, max_ttl=60, default_ttl=60)
        )


def delayed(engine: Engine, delta: int) -> None:
    """Solace's delayed consumption: B respects TTLs with max-TTL delta, B's DLQ is A."""
    engine.create_queue(P, "a")
    policy = DeadLetterPolicy(target="a", max_claims=1000, on_expiry=True)
    engine.create_queue(
        P, "b", settings=QueueSettings(respect_ttl=True, max_ttl=delta, dead_letter=policy)
    )


@pytest.mark.parametrize("delta", [1, 5, 60])
def test_delayed_consumption_arrives_after_delta(
    engine: Engine, clock: ManualClock, delta: int
) -> None:
    # Given the recipe with lag delta, when an eligible message is sent to B,
    delayed(engine, delta)
    send(engine, "b", "later", dead_letter_eligible=True)
    # it is not in A a moment before delta,
    clock.advance(delta - 0.5)
    engine.sweep_expired()
    assert engine.stats(P, "a").total == 0
    # and is there, ready to claim, once delta has passed.
    clock.advance(0.5)
    engine.sweep_expired()
    (m,) = engine.claim(P, "a", limit=10).messages
    assert m.body == b"later" and m.provenance is not None
    assert m.provenance.reason is Reason.EXPIRED and m.provenance.source_queue == "b"


def test_delayed_consumption_drops_messages_not_eligible(
    engine: Engine, clock: ManualClock
) -> None:
    delayed(engine, 5)
    send(engine, "b", "dropped", dead_letter_eligible=False)
    clock.advance(5)
    engine.sweep_expired()
    assert engine.stats(P, "a").total == 0
    assert engine.stats(P, "b").dropped == {"expired": 1}


def test_delayed_consumption_in_real_time_with_the_worker(store: Store) -> None:
    # The one test on the wall clock: the worker's 1 s sweep delivers within delta + 1.5 s.
    engine = Engine(store, SystemClock())
    delayed(engine, 1)
    worker = Worker(engine)
    worker.start()
    try:
        sent = time.time()
        send(engine, "b", "one second later")
        arrived = None
        while arrived is None and time.time() - sent < 10:
            if engine.stats(P, "a").total:
                arrived = time.time()
            time.sleep(0.05)
    finally:
        worker.stop()
    assert arrived is not None
    assert 1 <= arrived - sent <= 1 + 1.5
