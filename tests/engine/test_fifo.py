"""FIFO queues in the engine, on every store: order within a group, a group held while any of
its messages is in flight, deduplication within the interval, and the dead-letter rules."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import DEDUPLICATION_INTERVAL, NewMessage, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.engine import fifo
from deadletter.engine.engine import Engine
from tests.engine.helpers import P

FIFO = QueueSettings(fifo=True, claim_ttl=30)


def _send(engine: Engine, queue: str, group: str, *bodies: str, dedup: bool = True) -> list[str]:
    news = [
        NewMessage(body=b.encode(), group_id=group, deduplication_id=b if dedup else None)
        for b in bodies
    ]
    return [m.id for m in engine.send(P, queue, messages=news)]


def _bodies(engine: Engine, queue: str, limit: int) -> list[str]:
    return [m.body.decode() for m in engine.claim(P, queue, limit=limit).messages]


def test_order_within_a_group_is_kept_across_many_sends_and_receives(engine: Engine) -> None:
    engine.create_queue(P, "q.fifo", settings=FIFO)
    for start in range(0, 60, 7):
        _send(engine, "q.fifo", "g", *(f"m{i:03}" for i in range(start, min(start + 7, 60))))
    received: list[str] = []
    while True:
        claim = engine.claim(P, "q.fifo", limit=4)
        if not claim.messages:
            break
        received += [m.body.decode() for m in claim.messages]
        for m in claim.messages:
            engine.delete_message(P, "q.fifo", message_id=m.id, claim_id=claim.id)
    assert received == [f"m{i:03}" for i in range(60)]


def test_a_group_waits_while_a_message_is_in_flight(engine: Engine, clock: ManualClock) -> None:
    # Given a group of three messages, the first received
    engine.create_queue(P, "q.fifo", settings=FIFO)
    _send(engine, "q.fifo", "g", "a", "b", "c")
    first = engine.claim(P, "q.fifo", limit=1)
    assert [m.body for m in first.messages] == [b"a"]
    # Then nothing of the group is handed out until it is deleted
    assert _bodies(engine, "q.fifo", 10) == []
    engine.delete_message(P, "q.fifo", message_id=first.messages[0].id, claim_id=first.id)
    second = engine.claim(P, "q.fifo", limit=1)
    assert [m.body for m in second.messages] == [b"b"]
    # and when a message's visibility lapses, it comes back before the rest of its group
    clock.advance(31)
    assert _bodies(engine, "q.fifo", 10) == ["b", "c"]


def test_a_group_waits_until_every_message_of_a_receive_is_done(engine: Engine) -> None:
    engine.create_queue(P, "q.fifo", settings=FIFO)
    _send(engine, "q.fifo", "g", "a", "b", "c")
    claim = engine.claim(P, "q.fifo", limit=2)
    a, b = claim.messages
    # Giving the first back while the second is in flight keeps the group blocked.
    engine.change_visibility(P, "q.fifo", message_id=a.id, claim_id=claim.id, timeout=0)
    assert _bodies(engine, "q.fifo", 10) == []
    engine.delete_message(P, "q.fifo", message_id=b.id, claim_id=claim.id)
    assert _bodies(engine, "q.fifo", 10) == ["a", "c"]


def test_two_groups_are_served_side_by_side(engine: Engine) -> None:
    engine.create_queue(P, "q.fifo", settings=FIFO)
    for i in range(3):
        _send(engine, "q.fifo", "red", f"r{i}")
        _send(engine, "q.fifo", "blue", f"b{i}")
    red = engine.claim(P, "q.fifo", limit=1)
    assert [m.body for m in red.messages] == [b"r0"]
    # With red in flight, a second consumer gets the blue group in order.
    assert _bodies(engine, "q.fifo", 10) == ["b0", "b1", "b2"]


def test_a_duplicate_within_the_interval_is_not_enqueued(
    engine: Engine, clock: ManualClock
) -> None:
    engine.create_queue(P, "q.fifo", settings=FIFO)
    (original,) = _send(engine, "q.fifo", "g", "a")
    (again,) = engine.send(
        P, "q.fifo", messages=[NewMessage(b"other", group_id="g", deduplication_id="a")]
    )
    assert again.id == original
    assert engine.stats(P, "q.fifo").total == 1
    # Deleted or not, the id is remembered for the interval, and forgotten after.
    clock.advance(DEDUPLICATION_INTERVAL - 1)
    assert _send(engine, "q.fifo", "g", "a") == [original]
    clock.advance(1)
    (fresh,) = _send(engine, "q.fifo", "g", "a")
    assert fresh != original
    assert engine.stats(P, "q.fifo").total == 2


def test_content_based_deduplication_uses_the_body(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(
        P, "q.fifo", settings=QueueSettings(fifo=True, content_based_deduplication=True)
    )
    first = engine.send(P, "q.fifo", messages=[NewMessage(b"same", group_id="g")])
    # A repeat in the same batch and a later one both answer with the first message.
    again = engine.send(
        P, "q.fifo", messages=[NewMessage(b"same", group_id="h"), NewMessage(b"new", group_id="g")]
    )
    assert again[0].id == first[0].id
    assert again[0].seq == first[0].seq
    assert again[1].id != first[0].id
    assert engine.stats(P, "q.fifo").total == 2
    clock.advance(DEDUPLICATION_INTERVAL)
    assert (
        engine.send(P, "q.fifo", messages=[NewMessage(b"same", group_id="g")])[0].id != first[0].id
    )


def test_deduplication_per_message_group(engine: Engine) -> None:
    settings = QueueSettings(fifo=True, deduplication_scope="messageGroup")
    engine.create_queue(P, "q.fifo", settings=settings)
    a = _send(engine, "q.fifo", "g1", "x")
    b = _send(engine, "q.fifo", "g2", "x")
    assert a != b
    assert _send(engine, "q.fifo", "g1", "x") == a


def test_sequence_numbers_grow_with_each_send(engine: Engine) -> None:
    engine.create_queue(P, "q.fifo", settings=FIFO)
    sent = engine.send(P, "q.fifo", messages=[NewMessage(b"1", group_id="g", deduplication_id="1")])
    later = engine.send(
        P, "q.fifo", messages=[NewMessage(b"2", group_id="h", deduplication_id="2")]
    )
    numbers = [fifo.sequence_number(m) for m in sent + later]
    assert all(len(n) == 20 for n in numbers)
    assert int(numbers[0]) < int(numbers[1])


@pytest.mark.parametrize(
    ("new", "settings"),
    [
        (NewMessage(b"x", deduplication_id="d"), FIFO),  # no group
        (NewMessage(b"x", group_id="g"), FIFO),  # no dedup id, no content-based dedup
        (NewMessage(b"x", group_id="g", deduplication_id="d", delay=5), FIFO),
        (NewMessage(b"x", group_id="g", deduplication_id="has space"), FIFO),
        (NewMessage(b"x", group_id="g" * 129, deduplication_id="d"), FIFO),
        (NewMessage(b"x", deduplication_id="d"), QueueSettings()),  # standard queue
    ],
)
def test_sends_fifo_queues_refuse(engine: Engine, new: NewMessage, settings: QueueSettings) -> None:
    name = "q.fifo" if settings.fifo else "q"
    engine.create_queue(P, name, settings=settings)
    with pytest.raises(errors.InvalidInput):
        engine.send(P, name, messages=[new])
    assert engine.stats(P, name).total == 0


@pytest.mark.parametrize(
    "settings",
    [
        QueueSettings(content_based_deduplication=True),
        QueueSettings(deduplication_scope="messageGroup"),
        QueueSettings(fifo=True, throughput_limit="perMessageGroupId"),
        QueueSettings(fifo=True, deduplication_scope="group"),
        QueueSettings(fifo=True, throughput_limit="fast"),
    ],
)
def test_fifo_settings_are_checked(engine: Engine, settings: QueueSettings) -> None:
    with pytest.raises(errors.InvalidInput):
        engine.create_queue(P, "q", settings=settings)


def test_high_throughput_and_fixed_type(engine: Engine) -> None:
    high = QueueSettings(
        fifo=True, deduplication_scope="messageGroup", throughput_limit="perMessageGroupId"
    )
    engine.create_queue(P, "q.fifo", settings=high)
    with pytest.raises(errors.InvalidInput):
        engine.update_queue(P, "q.fifo", settings=QueueSettings())


def test_a_dlq_is_of_its_source_type(engine: Engine) -> None:
    engine.create_queue(P, "dlq")
    engine.create_queue(P, "dlq.fifo", settings=FIFO)
    to_standard = DeadLetterPolicy(target="dlq", max_claims=1)
    to_fifo = DeadLetterPolicy(target="dlq.fifo", max_claims=1)
    with pytest.raises(errors.DeadLetterPolicyError):
        engine.create_queue(P, "q.fifo", settings=FIFO.with_changes(dead_letter=to_standard))
    with pytest.raises(errors.DeadLetterPolicyError):
        engine.create_queue(P, "q", settings=QueueSettings(dead_letter=to_fifo))
    engine.create_queue(P, "q.fifo", settings=FIFO.with_changes(dead_letter=to_fifo))
    engine.create_queue(P, "q", settings=QueueSettings(dead_letter=to_standard))


def test_dead_lettering_and_redrive_keep_group_order(engine: Engine, clock: ManualClock) -> None:
    # Given a FIFO queue whose messages may be received once
    engine.create_queue(P, "dlq.fifo", settings=FIFO)
    policy = DeadLetterPolicy(target="dlq.fifo", max_claims=1)
    engine.create_queue(P, "q.fifo", settings=FIFO.with_changes(dead_letter=policy))
    engine.create_queue(P, "back.fifo", settings=FIFO)
    bodies = [f"m{i}" for i in range(6)]
    _send(engine, "q.fifo", "g", *bodies)
    # When each is received and left to lapse, in twos, the next receive moves them
    while True:
        claim = engine.claim(P, "q.fifo", limit=2)
        if not claim.messages:
            break
        clock.advance(31)
    engine.claim(P, "q.fifo", limit=10)
    # Then the DLQ holds them in their order, group id kept
    dead = engine.list_dead_letters(P, "dlq.fifo")
    assert [m.body.decode() for m in dead] == bodies
    assert {m.group_id for m in dead} == {"g"}
    # and a redrive to another FIFO queue keeps the order too
    task = engine.start_redrive(P, "dlq.fifo", destination="back.fifo")
    engine.redrive_step(task.id, 4)
    engine.redrive_step(task.id, 4)
    assert _bodies(engine, "back.fifo", 10) == bodies


def test_a_redrive_between_fifo_and_standard_is_refused(engine: Engine) -> None:
    engine.create_queue(P, "dlq.fifo", settings=FIFO)
    engine.create_queue(
        P, "q.fifo", settings=FIFO.with_changes(dead_letter=DeadLetterPolicy("dlq.fifo", 1))
    )
    engine.create_queue(P, "standard")
    with pytest.raises(errors.InvalidInput):
        engine.start_redrive(P, "dlq.fifo", destination="standard")


def test_pop_takes_a_group_in_order(engine: Engine) -> None:
    engine.create_queue(P, "q.fifo", settings=FIFO)
    _send(engine, "q.fifo", "g", "a", "b")
    held = engine.claim(P, "q.fifo", limit=1)
    assert engine.pop(P, "q.fifo", limit=10) == []
    engine.delete_message(P, "q.fifo", message_id=held.messages[0].id, claim_id=held.id)
    assert [m.body for m in engine.pop(P, "q.fifo", limit=10)] == [b"b"]
