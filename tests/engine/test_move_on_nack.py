"""A message at its delivery limit leaves for the DLQ as soon as that is known: when its
consumer gives it back (a nack, a released claim, visibility 0), or within one sweep after its
last claim lapses, not on some later claim."""

from __future__ import annotations

from deadletter.clock import ManualClock
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send, with_dlq


def test_a_nack_at_the_limit_moves_the_message_at_once(engine: Engine) -> None:
    with_dlq(engine, max_claims=2)
    (m,) = send(engine, "orders", "poison")
    first = engine.claim(P, "orders", limit=1)
    engine.release_message(P, "orders", message_id=m.id, claim_id=first.id)
    assert engine.stats(P, "orders").free == 1  # one attempt left: back in the queue
    second = engine.claim(P, "orders", limit=1)
    moved = engine.release_message(P, "orders", message_id=m.id, claim_id=second.id, delay=30)
    assert moved.queue == "orders-dlq"
    assert engine.stats(P, "orders").total == 0
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.provenance is not None and dead.provenance.reason is Reason.MAX_CLAIMS


def test_releasing_a_claim_and_visibility_zero_move_at_the_limit(engine: Engine) -> None:
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "a", "b")
    claim = engine.claim(P, "orders", limit=1)
    assert engine.release_claim(P, "orders", claim_id=claim.id) == 1
    claim = engine.claim(P, "orders", limit=1)
    (b,) = claim.messages
    engine.change_visibility(P, "orders", message_id=b.id, claim_id=claim.id, timeout=0)
    stats = engine.stats(P, "orders")
    assert (stats.total, stats.dead_lettered) == (0, {"max_claims": 2})
    assert engine.stats(P, "orders-dlq").free == 2


def test_a_lapsed_last_claim_moves_within_one_sweep(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "poison", "healthy")
    engine.claim(P, "orders", limit=2, ttl=30)
    clock.advance(31)
    engine.sweep_expired()
    assert engine.stats(P, "orders-dlq").total == 2
    assert engine.stats(P, "orders").total == 0


def test_a_lapsed_claim_below_the_limit_stays(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, max_claims=2)
    send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1, ttl=30)
    engine.renew_claim(P, "orders", claim_id=claim.id, ttl=60)
    clock.advance(31)
    engine.sweep_expired()
    assert engine.stats(P, "orders").claimed == 1  # renewed: still held
    clock.advance(30)
    engine.sweep_expired()
    assert engine.stats(P, "orders").free == 1  # one attempt left
    assert engine.stats(P, "orders-dlq").total == 0


def test_a_renewed_last_claim_does_not_move_early(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1, ttl=30)
    engine.renew_claim(P, "orders", claim_id=claim.id, ttl=120)
    clock.advance(31)
    engine.sweep_expired()
    assert engine.stats(P, "orders").claimed == 1
    clock.advance(90)
    engine.sweep_expired()
    assert engine.stats(P, "orders-dlq").total == 1


def test_a_lapsed_last_claim_stays_when_the_policy_is_removed(
    engine: Engine, clock: ManualClock
) -> None:
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "m")
    engine.claim(P, "orders", limit=1, ttl=30)
    engine.change_settings(P, "orders", change=lambda q: q.settings.with_changes(dead_letter=None))
    clock.advance(31)
    engine.sweep_expired()
    assert engine.stats(P, "orders").free == 1
    assert engine.stats(P, "orders-dlq").total == 0
