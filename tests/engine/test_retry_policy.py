"""A queue's retry policy (Pub/Sub's retryPolicy): a message given back without a delay of its
own stays hidden `minimum * 2^(deliveries - 1)` seconds, at most `maximum`; a consumer's own
delay still wins."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import MAX_BACKOFF, ListQuery, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy, RetryPolicy
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send


def with_retry(engine: Engine, minimum: int, maximum: int) -> None:
    engine.create_queue(
        P, "orders", settings=QueueSettings(retry_policy=RetryPolicy(minimum, maximum))
    )


def hidden_for(engine: Engine, clock: ManualClock, message_id: str) -> float:
    """Seconds until the message is visible again, as its state and the stats show it."""
    assert engine.stats(P, "orders").delayed == 1
    return engine.get_message(P, "orders", message_id=message_id).visible_at - clock.now()


def test_nacks_back_off_exponentially_up_to_the_maximum(engine: Engine, clock: ManualClock) -> None:
    # Given a queue retrying after 2 s, doubling, at most 10 s
    with_retry(engine, 2, 10)
    (m,) = send(engine, "orders", "poison")
    delays = []
    for _ in range(5):
        claim = engine.claim(P, "orders", limit=1)
        assert [c.id for c in claim.messages] == [m.id]
        # When the consumer gives the message back without a delay
        engine.release_message(P, "orders", message_id=m.id, claim_id=claim.id)
        delay = hidden_for(engine, clock, m.id)
        delays.append(delay)
        # It is not delivered a moment before its backoff ends, and is at its end
        clock.advance(delay - 0.5)
        assert engine.claim(P, "orders", limit=1).messages == ()
        clock.advance(0.5)
    # I expect the delays to double from the minimum and stop at the maximum
    assert delays == [2, 4, 8, 10, 10]


def test_release_and_visibility_zero_take_the_backoff(engine: Engine, clock: ManualClock) -> None:
    with_retry(engine, 5, 600)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1)
    assert engine.release_claim(P, "orders", claim_id=claim.id) == 1
    assert hidden_for(engine, clock, m.id) == 5
    clock.advance(5)
    claim = engine.claim(P, "orders", limit=1)
    engine.change_visibility(P, "orders", message_id=m.id, claim_id=claim.id, timeout=0)
    assert hidden_for(engine, clock, m.id) == 10


def test_a_consumers_own_delay_wins(engine: Engine, clock: ManualClock) -> None:
    with_retry(engine, 60, 600)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1)
    engine.release_message(P, "orders", message_id=m.id, claim_id=claim.id, delay=0)
    assert engine.stats(P, "orders").free == 1
    claim = engine.claim(P, "orders", limit=1)
    engine.release_message(P, "orders", message_id=m.id, claim_id=claim.id, delay=7)
    assert hidden_for(engine, clock, m.id) == 7


def test_a_queue_without_a_policy_gives_back_at_once(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1)
    engine.release_message(P, "orders", message_id=m.id, claim_id=claim.id)
    assert engine.stats(P, "orders").free == 1


def test_a_consumer_tag_backs_off_by_its_queues_policy(engine: Engine, clock: ManualClock) -> None:
    with_retry(engine, 3, 600)
    engine.create_tag(P, "orders", name="audit")
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1, tag="audit")
    engine.release_message(P, "orders", message_id=m.id, claim_id=claim.id, tag="audit")
    clock.advance(2.5)
    assert engine.claim(P, "orders", limit=1, tag="audit").messages == ()
    clock.advance(0.5)
    assert [c.id for c in engine.claim(P, "orders", limit=1, tag="audit").messages] == [m.id]


@pytest.mark.parametrize(
    ("minimum", "maximum"), [(-1, 10), (0, MAX_BACKOFF + 1), (11, 10), (MAX_BACKOFF + 1, 0)]
)
def test_a_policy_out_of_range_is_refused(engine: Engine, minimum: int, maximum: int) -> None:
    with pytest.raises(errors.InvalidInput):
        with_retry(engine, minimum, maximum)
    assert engine.find_queue(P, "orders") is None


@given(
    st.integers(0, MAX_BACKOFF).flatmap(
        lambda low: st.tuples(st.just(low), st.integers(low, MAX_BACKOFF))
    ),
    st.integers(1, 10_000),
)
def test_the_backoff_doubles_and_is_capped(bounds: tuple[int, int], deliveries: int) -> None:
    policy = RetryPolicy(*bounds)
    delay = policy.backoff(deliveries)
    assert delay == min(bounds[1], bounds[0] * 2 ** (deliveries - 1))
    assert delay <= policy.backoff(deliveries + 1) <= bounds[1]


def lapsed_for(engine: Engine, clock: ManualClock, message_id: str) -> float:
    """Seconds until a message whose claim has just lapsed is visible again, as its state and
    the stats show it: delayed, no longer claimed."""
    stats = engine.stats(P, "orders")
    assert (stats.claimed, stats.delayed, stats.free) == (0, 1, 0)
    m = engine.get_message(P, "orders", message_id=message_id)
    assert not m.is_claimed(clock.now())
    return m.visible_at - clock.now()


def test_lapsed_claims_back_off_exponentially_up_to_the_maximum(
    engine: Engine, clock: ManualClock
) -> None:
    # Given a queue retrying after 2 s, doubling, at most 10 s
    with_retry(engine, 2, 10)
    (m,) = send(engine, "orders", "poison")
    delays = []
    for _ in range(5):
        claim = engine.claim(P, "orders", limit=1, ttl=30)
        assert [c.id for c in claim.messages] == [m.id]
        assert engine.stats(P, "orders").claimed == 1
        # When the consumer neither deletes nor gives back the message and its claim lapses
        clock.advance(30)
        delay = lapsed_for(engine, clock, m.id)
        delays.append(delay)
        # It is not delivered a moment before its backoff ends, and is at its end
        clock.advance(delay - 0.5)
        assert engine.claim(P, "orders", limit=1).messages == ()
        clock.advance(0.5)
        assert engine.stats(P, "orders").free == 1
    # I expect the delays to double from the minimum and stop at the maximum, as a nack's do
    assert delays == [2, 4, 8, 10, 10]


def test_a_renewed_or_moved_claim_backs_off_from_its_new_end(
    engine: Engine, clock: ManualClock
) -> None:
    with_retry(engine, 5, 600)
    (m,) = send(engine, "orders", "m")
    claim = engine.claim(P, "orders", limit=1, ttl=30)
    engine.renew_claim(P, "orders", claim_id=claim.id, ttl=60)
    clock.advance(60)
    assert lapsed_for(engine, clock, m.id) == 5
    clock.advance(5)
    # An SQS visibility timeout changed to 40 s lapses 40 s later, then backs off 10 s
    claim = engine.claim(P, "orders", limit=1, ttl=30)
    engine.change_visibility(P, "orders", message_id=m.id, claim_id=claim.id, timeout=40)
    clock.advance(40)
    assert lapsed_for(engine, clock, m.id) == 10


def test_a_lapsed_tag_claim_backs_off(engine: Engine, clock: ManualClock) -> None:
    with_retry(engine, 3, 600)
    engine.create_tag(P, "orders", name="audit")
    (m,) = send(engine, "orders", "m")
    engine.claim(P, "orders", limit=1, ttl=30, tag="audit")
    clock.advance(32.5)
    assert engine.claim(P, "orders", limit=1, tag="audit").messages == ()
    clock.advance(0.5)
    assert [c.id for c in engine.claim(P, "orders", limit=1, tag="audit").messages] == [m.id]


def test_a_lapsed_last_delivery_is_dead_lettered_at_the_lapse(
    engine: Engine, clock: ManualClock
) -> None:
    # Given a queue that dead-letters at the second delivery and backs off a minute
    engine.create_queue(P, "orders-dlq")
    engine.create_queue(
        P,
        "orders",
        settings=QueueSettings(
            dead_letter=DeadLetterPolicy("orders-dlq", max_claims=2),
            retry_policy=RetryPolicy(60, 60),
        ),
    )
    (m,) = send(engine, "orders", "m")
    engine.claim(P, "orders", limit=1, ttl=30)
    clock.advance(30)
    assert lapsed_for(engine, clock, m.id) == 60
    clock.advance(60)
    engine.claim(P, "orders", limit=1, ttl=30)
    # When the last delivery's claim lapses, the sweep moves it then, backoff or not
    clock.advance(30)
    engine.sweep_expired()
    assert engine.stats(P, "orders-dlq").free == 1
    assert engine.get_message(P, "orders-dlq", message_id=m.id).claim_count == 2


def test_a_lapsed_message_serving_its_backoff_is_listed_as_delayed(
    engine: Engine, clock: ManualClock
) -> None:
    with_retry(engine, 60, 60)
    (m,) = send(engine, "orders", "m")
    engine.claim(P, "orders", limit=1, ttl=30)
    clock.advance(30)

    def listed(claimed: bool, delayed: bool) -> list[str]:
        query = ListQuery(include_claimed=claimed, include_delayed=delayed)
        return [x.id for x in engine.list_messages(P, "orders", query=query)]

    assert listed(claimed=False, delayed=False) == []
    assert listed(claimed=True, delayed=False) == []
    assert listed(claimed=False, delayed=True) == [m.id]
