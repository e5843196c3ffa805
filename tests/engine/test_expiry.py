"""Expiry: never returned once expired; dropped and counted, or dead-lettered when asked."""

from __future__ import annotations

from deadletter.clock import ManualClock
from deadletter.domain.model import ListQuery
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send, with_dlq


def test_expired_messages_are_never_returned_even_before_a_sweep(
    engine: Engine, clock: ManualClock
) -> None:
    engine.create_queue(P, "orders")
    (m,) = send(engine, "orders", "short", ttl=10)
    clock.advance(10)
    assert engine.claim(P, "orders", limit=10).messages == ()
    assert engine.list_messages(P, "orders", query=ListQuery(limit=10, include_claimed=True)) == []
    assert engine.get_messages(P, "orders", ids=[m.id]) == []
    assert engine.pop(P, "orders", limit=10) == []
    assert engine.stats(P, "orders").total == 0


def test_sweep_drops_and_counts(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "short", ttl=10)
    send(engine, "orders", "long", ttl=100)
    clock.advance(10)
    assert engine.sweep_expired() == 1
    assert engine.stats(P, "orders").expired_dropped == 1
    assert [m.body for m in engine.claim(P, "orders", limit=10).messages] == [b"long"]


def test_dead_letter_on_expiry_moves_eligible_messages(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, on_expiry=True)
    send(engine, "orders", "eligible", ttl=10)
    send(engine, "orders", "not eligible", ttl=10, dead_letter_eligible=False)
    clock.advance(10)
    engine.sweep_expired()
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.body == b"eligible"
    assert dead.provenance is not None and dead.provenance.reason is Reason.EXPIRED
    # Its old expiry has passed: it lives on in the DLQ with the DLQ's default TTL.
    assert dead.expires_at > clock.now()
    stats = engine.stats(P, "orders")
    assert stats.dead_lettered == {"expired": 1}
    assert stats.expired_dropped == 1


def test_without_on_expiry_expired_messages_are_dropped(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine)
    send(engine, "orders", "m", ttl=10)
    clock.advance(10)
    engine.sweep_expired()
    assert engine.stats(P, "orders-dlq").total == 0
    assert engine.stats(P, "orders").expired_dropped == 1


def test_delayed_consumption_through_expiry(engine: Engine, clock: ManualClock) -> None:
    """Seed 003: queue B whose TTL is the delay and whose DLQ is A delivers to A later."""
    with_dlq(engine, "b", "a", on_expiry=True)
    send(engine, "b", "in an hour", ttl=3600)
    clock.advance(3599)
    engine.sweep_expired()
    assert engine.claim(P, "a", limit=1).messages == ()
    clock.advance(1)
    engine.sweep_expired()
    assert [m.body for m in engine.claim(P, "a", limit=1).messages] == [b"in an hour"]
