"""Dead-lettering: by max claims (inside the claim), explicitly, provenance, stats, browsing."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import MAX_TTL, SOURCE_QUEUE_ATTRIBUTE, Attribute, DeadLetterFilter
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, fail, send, with_dlq


def test_n_deliveries_then_moved_on_the_next_claim(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, max_claims=3)
    (sent,) = send(engine, "orders", "poison")
    for attempt in range(1, 4):
        claim = engine.claim(P, "orders", limit=10, ttl=60)
        assert [m.claim_count for m in claim.messages] == [attempt]
        if attempt < 3:
            engine.release_claim(P, "orders", claim_id=claim.id)
    clock.advance(61)  # the last claim lapses, and no sweep runs
    assert engine.claim(P, "orders", limit=10).messages == ()  # the 4th attempt moves it
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.id == sent.id
    assert dead.claim_count == 3
    assert dead.claim_id is None and dead.visible_at <= clock.now()
    assert dead.attributes[SOURCE_QUEUE_ATTRIBUTE] == Attribute("String", "orders")
    p = dead.provenance
    assert p is not None
    assert (p.source_queue, p.reason, p.claim_count) == ("orders", Reason.MAX_CLAIMS, 3)
    assert (p.original_message_id, p.original_enqueued_at) == (sent.id, sent.enqueued_at)
    assert p.dead_lettered_at == clock.now()
    # No DLQ TTL: kept for the DLQ's retention (its maximum TTL), from the original send.
    assert dead.expires_at == sent.enqueued_at + MAX_TTL
    # Visible and claimable in the DLQ at once.
    assert [m.id for m in engine.claim(P, "orders-dlq", limit=1).messages] == [sent.id]


def test_max_one_means_no_redelivery(engine: Engine) -> None:
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "m")
    fail(engine, "orders", 1)
    assert engine.claim(P, "orders", limit=10).messages == ()
    assert engine.stats(P, "orders-dlq").total == 1


def test_a_claim_delivers_the_healthy_and_moves_the_poisoned(engine: Engine) -> None:
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "old")
    fail(engine, "orders", 1)
    send(engine, "orders", "new1", "new2")
    claim = engine.claim(P, "orders", limit=2)
    assert [m.body for m in claim.messages] == [b"new1", b"new2"]
    assert [m.body for m in engine.list_dead_letters(P, "orders-dlq")] == [b"old"]


def test_dlq_message_ttl_replaces_the_expiry(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, max_claims=1, message_ttl=600)
    send(engine, "orders", "m")
    # The move (the give-back at the limit) comes well after the send: the DLQ's TTL counts
    # from the move.
    clock.advance(100)
    moved_at = clock.now()
    fail(engine, "orders", 1)
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.expires_at == moved_at + 600


def test_explicit_dead_letter_with_reason_and_error(engine: Engine) -> None:
    with_dlq(engine)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1)
    engine.dead_letter(
        P,
        "orders",
        held=[(m.id, claim.id)],
        description="customer.id missing",
        error="KeyError: 'id'",
    )
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.provenance is not None
    assert dead.provenance.reason is Reason.REJECTED
    assert dead.provenance.description == "customer.id missing"
    assert dead.provenance.error == "KeyError: 'id'"
    assert engine.stats(P, "orders").dead_lettered == {"rejected": 1}


def test_explicit_dead_letter_is_all_or_nothing_and_needs_the_claim(engine: Engine) -> None:
    with_dlq(engine)
    a, b = send(engine, "orders", "a", "b")
    claim = engine.claim(P, "orders", limit=2)
    with pytest.raises(errors.ClaimMismatch):
        engine.dead_letter(P, "orders", held=[(a.id, claim.id), (b.id, "wrong")], description="bad")
    assert engine.stats(P, "orders-dlq").total == 0
    assert engine.stats(P, "orders").claimed == 2


def test_explicit_dead_letter_needs_an_active_policy_and_not_a_dlq(engine: Engine) -> None:
    engine.create_queue(P, "plain")
    (m,) = send(engine, "plain", "m")
    claim = engine.claim(P, "plain", limit=1)
    with pytest.raises(errors.NoActiveDeadLetterPolicy):
        engine.dead_letter(P, "plain", held=[(m.id, claim.id)], description="bad")
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "x")
    fail(engine, "orders", 1)
    engine.claim(P, "orders", limit=1)
    dlq_claim = engine.claim(P, "orders-dlq", limit=1)
    with pytest.raises(errors.NoActiveDeadLetterPolicy):
        engine.dead_letter(
            P, "orders-dlq", held=[(dlq_claim.messages[0].id, dlq_claim.id)], description="again"
        )


def test_description_and_error_sizes_are_bounded(engine: Engine) -> None:
    with_dlq(engine)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1)
    with pytest.raises(errors.InvalidInput):
        engine.dead_letter(P, "orders", held=[(m.id, claim.id)], description="x" * 4097)
    with pytest.raises(errors.InvalidInput):
        engine.dead_letter(
            P, "orders", held=[(m.id, claim.id)], description="ok", error="e" * 32769
        )


def test_stats_count_by_reason_and_by_source(engine: Engine) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    engine.create_queue(P, "b", settings=engine.get_queue(P, "a").settings)
    for source in ("a", "a", "b"):
        send(engine, source, "m")
    for source in ("a", "b"):
        fail(engine, source, 1)
        engine.claim(P, source, limit=10)
    assert engine.stats(P, "a").dead_lettered == {"max_claims": 2}
    assert engine.stats(P, "dlq").by_source == {"a": 2, "b": 1}
    assert [q.name for q in engine.dead_letter_sources(P, "dlq")] == ["a", "b"]


def test_browse_a_dlq_by_source_reason_and_time(engine: Engine, clock: ManualClock) -> None:
    with_dlq(engine, "a", "dlq", max_claims=1)
    engine.create_queue(P, "b", settings=engine.get_queue(P, "a").settings)
    send(engine, "a", "a-poison")
    fail(engine, "a", 1)
    engine.claim(P, "a", limit=1)
    early = clock.now()
    clock.advance(100)
    (m,) = send(engine, "b", "b-rejected")
    claim = engine.claim(P, "b", limit=1)
    engine.dead_letter(P, "b", held=[(m.id, claim.id)], description="bad")

    def bodies(where: DeadLetterFilter) -> list[bytes]:
        return [x.body for x in engine.list_dead_letters(P, "dlq", where=where)]

    assert bodies(DeadLetterFilter(source_queue="a")) == [b"a-poison"]
    assert bodies(DeadLetterFilter(reason=Reason.REJECTED)) == [b"b-rejected"]
    assert bodies(DeadLetterFilter(until=early + 1)) == [b"a-poison"]
    assert bodies(DeadLetterFilter(since=early + 1)) == [b"b-rejected"]
    # Browsing consumes nothing.
    assert len(engine.list_dead_letters(P, "dlq")) == 2


def test_a_message_not_eligible_is_dropped_and_counted_at_max_claims(engine: Engine) -> None:
    with_dlq(engine, max_claims=1)
    send(engine, "orders", "m", dead_letter_eligible=False)
    fail(engine, "orders", 1)
    engine.claim(P, "orders", limit=1)
    assert engine.stats(P, "orders-dlq").total == 0
    stats = engine.stats(P, "orders")
    assert (stats.total, stats.dropped, stats.dead_lettered) == (0, {"max_claims": 1}, {})
