"""A bounded DLQ holds dead letters to its bound as a bounded queue holds sends (RabbitMQ
applies x-max-length to dead-lettered arrivals too): drop-head pushes its oldest dead letters
out, dropped and counted with reason `maxlen` (a DLQ has no DLQ of its own); reject-publish
refuses the arrivals, which stay in their source queue, claimable, counted as `dlq_full`."""

from __future__ import annotations

import contextlib
import threading

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import NewMessage, Overflow, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.redrive import SkipReason
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.engine.helpers import P, send

DLQ = "orders-dlq"
REJECTS = [Overflow.REJECT_PUBLISH, Overflow.REJECT_PUBLISH_DLX]


def bounded_dlq(
    engine: Engine,
    overflow: Overflow = Overflow.DROP_HEAD,
    max_claims: int = 1,
    on_expiry: bool = False,
    source: QueueSettings | None = None,
    **bounds: int,
) -> None:
    """A queue `orders` whose DLQ holds at most `bounds`."""
    engine.create_queue(P, DLQ, settings=QueueSettings(overflow=overflow, **bounds))  # type: ignore[arg-type]
    policy = DeadLetterPolicy(target=DLQ, max_claims=max_claims, on_expiry=on_expiry)
    settings = source or QueueSettings()
    engine.create_queue(P, "orders", settings=settings.with_changes(dead_letter=policy))


def in_dlq(engine: Engine) -> list[str]:
    return [m.body.decode() for m in engine.list_dead_letters(P, DLQ)]


def spend(engine: Engine, n: int) -> None:
    """Claim `n` messages once and give them back: with max_claims 1 they are spent."""
    claim = engine.claim(P, "orders", limit=n)
    engine.release_claim(P, "orders", claim_id=claim.id)


# drop-head: the DLQ's oldest dead letters make room


def test_drop_head_dlq_drops_its_oldest_for_a_max_claims_move(engine: Engine) -> None:
    # Given a DLQ of at most 2 messages, under drop-head
    bounded_dlq(engine, max_messages=2)
    send(engine, "orders", "a", "b", "c", "d")
    # When four messages are delivered past their limit
    spend(engine, 4)
    # The DLQ holds the two newest dead letters; the two oldest were dropped and counted
    assert in_dlq(engine) == ["c", "d"]
    dlq = engine.stats(P, DLQ)
    assert dlq.total == 2 and dlq.dropped == {"maxlen": 2}
    assert engine.stats(P, "orders").dead_lettered == {"max_claims": 4}


def test_drop_head_dlq_drops_its_oldest_for_a_rejection(engine: Engine) -> None:
    bounded_dlq(engine, max_messages=1, max_claims=5)
    send(engine, "orders", "a", "b")
    claim = engine.claim(P, "orders", limit=2)
    for m in claim.messages:
        engine.dead_letter(P, "orders", held=[(m.id, claim.id)])
    assert in_dlq(engine) == ["b"]
    assert engine.stats(P, DLQ).dropped == {"maxlen": 1}


def test_drop_head_dlq_by_bytes_for_expiry(engine: Engine, clock: ManualClock) -> None:
    bounded_dlq(engine, max_bytes=6, on_expiry=True)
    send(engine, "orders", "aaaa", "bbbb", ttl=60)
    clock.advance(61)
    engine.sweep_expired()
    assert in_dlq(engine) == ["bbbb"]
    assert engine.stats(P, DLQ).dropped == {"maxlen": 1}


def test_drop_head_dlq_for_a_drop_head_source(engine: Engine) -> None:
    # Given a drop-head queue of 1 whose drop-head DLQ holds 1
    bounded_dlq(
        engine, max_messages=1, source=QueueSettings(max_messages=1, overflow=Overflow.DROP_HEAD)
    )
    # When three messages are sent one by one, two are pushed out of the queue, and the
    # first of those out of the DLQ
    for body in ["a", "b", "c"]:
        send(engine, "orders", body)
    assert in_dlq(engine) == ["b"]
    assert engine.stats(P, DLQ).dropped == {"maxlen": 1}
    assert engine.stats(P, "orders").dead_lettered == {"maxlen": 2}


def test_drop_head_dlq_for_a_reject_publish_dlx_source(engine: Engine) -> None:
    bounded_dlq(
        engine,
        max_messages=1,
        source=QueueSettings(max_messages=1, overflow=Overflow.REJECT_PUBLISH_DLX),
    )
    send(engine, "orders", "kept")
    for body in ["a", "b"]:
        with pytest.raises(errors.QueueFull):
            send(engine, "orders", body)
    assert in_dlq(engine) == ["b"]
    assert engine.stats(P, DLQ).dropped == {"maxlen": 1}


# reject-publish: the dead letter stays in its source queue, never lost


@pytest.mark.parametrize("overflow", REJECTS)
def test_a_full_dlq_leaves_a_spent_message_in_its_queue(engine: Engine, overflow: Overflow) -> None:
    # Given a DLQ of at most 1 message that refuses more
    bounded_dlq(engine, overflow, max_messages=1)
    send(engine, "orders", "a", "b")
    # When both are given back past their limit
    spend(engine, 2)
    # The first is dead-lettered, the second stays in its queue, counted as refused
    assert in_dlq(engine) == ["a"]
    stats = engine.stats(P, "orders")
    assert stats.total == 1 and stats.dlq_full == {"max_claims": 1}
    assert stats.dead_lettered == {"max_claims": 1}
    # and is still delivered, tried again at each claim and give-back
    claim = engine.claim(P, "orders", limit=10)
    assert [m.body for m in claim.messages] == [b"b"]
    assert engine.stats(P, "orders").dlq_full == {"max_claims": 2}
    engine.release_claim(P, "orders", claim_id=claim.id)
    assert engine.stats(P, "orders").dlq_full == {"max_claims": 3}
    # Once the DLQ has room, it goes there
    engine.purge(P, DLQ, force=True)
    assert engine.claim(P, "orders", limit=10).messages == ()
    assert in_dlq(engine) == ["b"]


def test_a_full_dlq_takes_dead_letters_in_order(engine: Engine) -> None:
    # Given a DLQ with room for 5 more bytes, when a 6-byte and then a 1-byte dead letter
    # come, the first does not fit, and the second waits behind it: their order holds
    bounded_dlq(engine, Overflow.REJECT_PUBLISH, max_bytes=5)
    send(engine, "orders", "aaaaaa", "b")
    spend(engine, 2)
    assert in_dlq(engine) == []
    assert engine.stats(P, "orders").dlq_full == {"max_claims": 2}


def test_a_full_dlq_delivers_a_poisoned_message_at_claim(engine: Engine) -> None:
    # Given a message claimed as often as allowed, its claim lapsed
    bounded_dlq(engine, Overflow.REJECT_PUBLISH, max_messages=1, max_claims=1)
    send(engine, "orders", "x")
    send(engine, DLQ, "filler")
    engine.claim(P, "orders", limit=1, ttl=0)
    # When it is claimed again, the full DLQ refuses it: it is delivered instead
    claim = engine.claim(P, "orders", limit=10)
    assert [m.body for m in claim.messages] == [b"x"]
    assert engine.stats(P, "orders").dlq_full == {"max_claims": 1}
    assert in_dlq(engine) == ["filler"]


@pytest.mark.parametrize("overflow", REJECTS)
def test_a_full_dlq_refuses_a_rejection_and_the_consumer_keeps_it(
    engine: Engine, overflow: Overflow
) -> None:
    bounded_dlq(engine, overflow, max_messages=1, max_claims=5)
    send(engine, DLQ, "filler")
    send(engine, "orders", "a")
    claim = engine.claim(P, "orders", limit=1)
    (m,) = claim.messages
    with pytest.raises(errors.DeadLetterQueueFull):
        engine.dead_letter(P, "orders", held=[(m.id, claim.id)])
    with pytest.raises(errors.DeadLetterQueueFull):
        engine.release_message(P, "orders", message_id=m.id, claim_id=claim.id, requeue=False)
    # Still held by its consumer, who may acknowledge it
    assert engine.get_claim(P, "orders", claim_id=claim.id).messages[0].id == m.id
    assert engine.delete_message(P, "orders", message_id=m.id, claim_id=claim.id)
    assert in_dlq(engine) == ["filler"]


def test_a_full_dlq_keeps_an_expired_message_alive(engine: Engine, clock: ManualClock) -> None:
    bounded_dlq(engine, Overflow.REJECT_PUBLISH, max_messages=1, on_expiry=True)
    send(engine, "orders", "a", "b", ttl=60)
    clock.advance(61)
    engine.sweep_expired()
    # "a" went to the DLQ; "b" lives on in its queue, claimable
    assert in_dlq(engine) == ["a"]
    stats = engine.stats(P, "orders")
    assert stats.total == 1 and stats.dlq_full == {"expired": 1}
    assert stats.expired_dropped == 0
    # It is tried again once its new life ends, and goes when there is room
    engine.purge(P, DLQ, force=True)
    clock.advance(120)
    engine.sweep_expired()
    assert in_dlq(engine) == ["b"]
    assert engine.stats(P, "orders").total == 0


def test_a_full_dlq_refuses_a_send_that_would_push_out(engine: Engine) -> None:
    # Given a drop-head queue of 1 whose DLQ, full, refuses more
    bounded_dlq(
        engine,
        Overflow.REJECT_PUBLISH,
        max_messages=1,
        source=QueueSettings(max_messages=1, overflow=Overflow.DROP_HEAD),
    )
    send(engine, DLQ, "filler")
    send(engine, "orders", "a")
    # A send that would push "a" out is refused: "a" cannot go anywhere without being lost
    with pytest.raises(errors.DeadLetterQueueFull):
        send(engine, "orders", "b")
    assert [m.body for m in engine.claim(P, "orders", limit=10).messages] == [b"a"]
    assert in_dlq(engine) == ["filler"]


def test_a_full_dlq_counts_what_reject_publish_dlx_refuses(engine: Engine) -> None:
    bounded_dlq(
        engine,
        Overflow.REJECT_PUBLISH,
        max_messages=1,
        source=QueueSettings(max_messages=1, overflow=Overflow.REJECT_PUBLISH_DLX),
    )
    send(engine, DLQ, "filler")
    send(engine, "orders", "a")
    with pytest.raises(errors.QueueFull):
        send(engine, "orders", "b")
    assert in_dlq(engine) == ["filler"]
    assert engine.stats(P, "orders").dlq_full == {"maxlen": 1}


def test_a_message_not_eligible_is_still_dropped(engine: Engine) -> None:
    bounded_dlq(engine, Overflow.REJECT_PUBLISH, max_messages=1)
    engine.send(P, "orders", messages=[NewMessage(body=b"x", dead_letter_eligible=False)])
    send(engine, DLQ, "filler")
    spend(engine, 1)
    stats = engine.stats(P, "orders")
    assert stats.total == 0 and stats.dropped == {"max_claims": 1} and stats.dlq_full == {}


# Exact under concurrency

RACERS = 8
LIMIT = 5


@pytest.mark.parametrize("overflow", [Overflow.DROP_HEAD, Overflow.REJECT_PUBLISH])
def test_racing_rejections_stop_exactly_at_the_dlq_bound(
    store_url: str, overflow: Overflow
) -> None:
    # Two stores on one database stand for two server processes; eight consumers reject at
    # once into a DLQ of 5, while a producer sends to it directly.
    stores = [open_store(store_url), open_store(store_url)]
    try:
        engines = [Engine(s) for s in stores]
        bounded_dlq(engines[0], overflow, max_messages=LIMIT, max_claims=5)
        send(engines[0], "orders", *[str(i) for i in range(RACERS)])
        claims = [engines[0].claim(P, "orders", limit=1) for _ in range(RACERS)]
        start = threading.Barrier(RACERS + 1)
        refused: list[int] = []

        def reject(i: int) -> None:
            (m,) = claims[i].messages
            start.wait()
            try:
                engines[i % 2].dead_letter(P, "orders", held=[(m.id, claims[i].id)])
            except errors.QueueFull:
                refused.append(i)

        def produce() -> None:
            start.wait()
            try:
                send(engines[1], DLQ, "direct")
            except errors.QueueFull:
                refused.append(-1)

        threads = [threading.Thread(target=reject, args=(i,)) for i in range(RACERS)]
        threads.append(threading.Thread(target=produce))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dlq = engines[0].stats(P, DLQ)
        assert dlq.total == LIMIT
        if overflow is Overflow.DROP_HEAD:
            assert refused == []
            assert dlq.dropped == {"maxlen": RACERS + 1 - LIMIT}
        else:
            assert len(refused) == RACERS + 1 - LIMIT
            # Nothing lost: what the DLQ refused is still in its queue
            kept = len([i for i in refused if i >= 0])
            assert engines[0].stats(P, "orders").total == kept
    finally:
        for s in stores:
            s.close()


# Redrive: only what fits goes back; nothing is pushed out


def dead_lettered_into_bounded_source(engine: Engine, overflow: Overflow, **bounds: int) -> None:
    """Five dead letters of `orders`, then the queue bounded and holding one live message."""
    engine.create_queue(P, DLQ)
    policy = DeadLetterPolicy(target=DLQ, max_claims=1)
    engine.create_queue(P, "orders", settings=QueueSettings(dead_letter=policy))
    send(engine, "orders", "d1", "d2", "d3", "d4", "d5")
    spend(engine, 5)
    bounded = QueueSettings(dead_letter=policy, overflow=overflow, **bounds)  # type: ignore[arg-type]
    engine.update_queue(P, "orders", settings=bounded)
    send(engine, "orders", "live")


@pytest.mark.parametrize("overflow", list(Overflow))
def test_a_redrive_moves_only_what_fits_its_source(engine: Engine, overflow: Overflow) -> None:
    # Given a source bounded to 3 that holds one live message, and five dead letters
    dead_lettered_into_bounded_source(engine, overflow, max_messages=3)
    # When they are redriven
    task = engine.start_redrive(P, DLQ)
    task = engine.redrive_step(task.id, 100)
    task = engine.redrive_step(task.id, 100)
    # Two go back; the others stay in the DLQ, skipped as queue_full; the live one stays
    assert task.moved == 2 and task.skipped == 3
    assert {r for _, r in task.skipped_messages} == {SkipReason.QUEUE_FULL}
    assert in_dlq(engine) == ["d3", "d4", "d5"]
    claim = engine.claim(P, "orders", limit=10)
    assert [m.body.decode() for m in claim.messages] == ["live", "d1", "d2"]
    stats = engine.stats(P, "orders")
    assert stats.dropped == {} and stats.dead_lettered == {"max_claims": 5}


def test_a_redrive_respects_a_byte_bound(engine: Engine) -> None:
    dead_lettered_into_bounded_source(engine, Overflow.DROP_HEAD, max_bytes=9)  # "live": 4
    task = engine.start_redrive(P, DLQ)
    task = engine.redrive_step(task.id, 100)
    assert task.moved == 2 and in_dlq(engine) == ["d3", "d4", "d5"]


def test_a_redrive_to_a_named_destination_respects_its_bound(engine: Engine) -> None:
    dead_lettered_into_bounded_source(engine, Overflow.REJECT_PUBLISH, max_messages=100)
    engine.create_queue(P, "elsewhere", settings=QueueSettings(max_messages=1))
    task = engine.start_redrive(P, DLQ, destination="elsewhere")
    task = engine.redrive_step(task.id, 100)
    assert task.moved == 1 and task.skipped == 4
    assert engine.stats(P, "elsewhere").total == 1


def test_racing_redrive_and_sends_stop_exactly_at_the_bound(store_url: str) -> None:
    stores = [open_store(store_url), open_store(store_url)]
    try:
        engines = [Engine(s) for s in stores]
        dead_lettered_into_bounded_source(engines[0], Overflow.REJECT_PUBLISH, max_messages=LIMIT)
        task = engines[0].start_redrive(P, DLQ)
        start = threading.Barrier(RACERS + 1)

        def produce() -> None:
            start.wait()
            with contextlib.suppress(errors.QueueFull):
                send(engines[1], "orders", "new")

        def redrive() -> None:
            start.wait()
            engines[0].redrive_step(task.id, 100)

        threads = [threading.Thread(target=produce) for _ in range(RACERS)]
        threads.append(threading.Thread(target=redrive))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert engines[0].stats(P, "orders").total == LIMIT
        moved = engines[0].get_task(P, DLQ, task_id=task.id).moved
        assert engines[0].stats(P, DLQ).total == 5 - moved
    finally:
        for s in stores:
            s.close()


# A bound lowered below what a drop-head queue holds pushes the oldest out at once


def test_lowering_a_bound_pushes_the_oldest_out_at_once(engine: Engine) -> None:
    engine.create_queue(P, DLQ)
    policy = DeadLetterPolicy(target=DLQ, max_claims=5)
    engine.create_queue(P, "orders", settings=QueueSettings(dead_letter=policy))
    send(engine, "orders", "a", "b", "c")
    engine.update_queue(P, "orders", settings=QueueSettings(dead_letter=policy, max_messages=1))
    assert in_dlq(engine) == ["a", "b"]
    assert engine.stats(P, "orders").dead_lettered == {"maxlen": 2}
    # and on the DLQ itself, they are dropped and counted
    engine.update_queue(P, DLQ, settings=QueueSettings(max_messages=1))
    assert in_dlq(engine) == ["b"] and engine.stats(P, DLQ).dropped == {"maxlen": 1}


def test_lowering_a_bound_keeps_what_a_full_dlq_refuses(engine: Engine) -> None:
    bounded_dlq(engine, Overflow.REJECT_PUBLISH, max_messages=1, max_claims=5)
    send(engine, "orders", "a", "b", "c")
    policy = engine.get_queue(P, "orders").settings.dead_letter
    engine.update_queue(P, "orders", settings=QueueSettings(dead_letter=policy, max_messages=1))
    assert in_dlq(engine) == ["a"]
    stats = engine.stats(P, "orders")
    assert stats.total == 2 and stats.dlq_full == {"maxlen": 1}
