"""Claims: oldest first, expiry, renew, release, nack with delay, visibility."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import NewMessage
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send


def test_claims_hand_out_oldest_first_and_never_twice(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "a", "b", "c")
    first = engine.claim(P, "orders", limit=2)
    second = engine.claim(P, "orders", limit=2)
    assert [m.body for m in first.messages] == [b"a", b"b"]
    assert [m.body for m in second.messages] == [b"c"]
    assert all(m.claim_count == 1 for m in first.messages + second.messages)
    stats = engine.stats(P, "orders")
    assert (stats.free, stats.claimed) == (0, 3)


def test_an_expired_claim_makes_messages_visible_again(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "a")
    engine.claim(P, "orders", limit=1, ttl=30)
    clock.advance(29)
    assert engine.claim(P, "orders", limit=1).messages == ()
    clock.advance(1)
    again = engine.claim(P, "orders", limit=1)
    assert [m.claim_count for m in again.messages] == [2]


def test_renew_extends_the_claim(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "a")
    claim = engine.claim(P, "orders", limit=1, ttl=30)
    clock.advance(20)
    engine.renew_claim(P, "orders", claim_id=claim.id, ttl=60)
    clock.advance(50)
    assert engine.claim(P, "orders", limit=1).messages == ()
    assert engine.get_claim(P, "orders", claim_id=claim.id).id == claim.id


def test_release_claim_makes_its_messages_visible(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "a", "b")
    claim = engine.claim(P, "orders", limit=2)
    assert engine.release_claim(P, "orders", claim_id=claim.id) == 2
    assert len(engine.claim(P, "orders", limit=2).messages) == 2
    with pytest.raises(errors.ClaimNotFound):
        engine.get_claim(P, "orders", claim_id=claim.id)


def test_nack_one_message_with_a_delay(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "a", "b")
    claim = engine.claim(P, "orders", limit=2)
    a = claim.messages[0]
    engine.release_message(P, "orders", message_id=a.id, claim_id=claim.id, delay=10)
    assert engine.claim(P, "orders", limit=2).messages == ()  # "a" waits, "b" is still claimed
    clock.advance(10)
    assert [m.body for m in engine.claim(P, "orders", limit=2).messages] == [b"a"]
    with pytest.raises(errors.ClaimMismatch):
        engine.release_message(P, "orders", message_id=a.id, claim_id=claim.id)


def test_change_visibility(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "a")
    claim = engine.claim(P, "orders", limit=1, ttl=300)
    (m,) = claim.messages
    engine.change_visibility(P, "orders", message_id=m.id, claim_id=claim.id, timeout=0)
    assert [x.id for x in engine.claim(P, "orders", limit=1, ttl=5).messages] == [m.id]
    with pytest.raises(errors.ClaimMismatch):
        engine.change_visibility(P, "orders", message_id=m.id, claim_id=claim.id, timeout=10)


def test_claim_limits_are_checked(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    with pytest.raises(errors.InvalidInput):
        engine.claim(P, "orders", limit=0)
    with pytest.raises(errors.QueueNotFound):
        engine.claim(P, "nope", limit=1)


def test_claimed_messages_are_stored_as_the_claim_hands_them_out(
    engine: Engine, clock: ManualClock
) -> None:
    # Given messages sent with a short life, one claimed before and lapsed, one new
    engine.create_queue(P, "orders")
    engine.send(P, "orders", messages=[NewMessage(body=b"a", ttl=70)])
    engine.claim(P, "orders", limit=1, ttl=30)
    clock.advance(30)
    engine.send(P, "orders", messages=[NewMessage(body=b"b", ttl=3600)])
    # When both are claimed together, with a grace that outlives the first one's life
    claim = engine.claim(P, "orders", limit=2, ttl=60, grace=30)
    # I expect the store to hold each exactly as the claim handed it out
    ids = [m.id for m in claim.messages]
    stored = {m.id: m for m in engine.get_messages(P, "orders", ids=ids)}
    assert [stored[i] for i in ids] == list(claim.messages)
    assert [m.claim_count for m in claim.messages] == [2, 1]
    assert claim.messages[0].first_claimed_at < claim.messages[1].first_claimed_at
