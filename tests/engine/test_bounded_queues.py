"""Bounded queues (RabbitMQ's x-max-length, x-max-length-bytes, x-overflow): a queue holds at
most its bound, counting every message in it; drop-head pushes the oldest out to the DLQ with
reason `maxlen` (or drops and counts them), the reject policies refuse the send, and
reject-publish-dlx dead-letters what it refused. Exact however many producers race."""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter, ListQuery, NewMessage, Overflow, QueueSettings
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.provenance import Reason
from deadletter.engine.engine import Engine
from deadletter.storage import open_store
from tests.engine.helpers import P, send

DLQ = "orders-dlq"


def bounded(
    engine: Engine,
    name: str = "orders",
    dlq: bool = True,
    overflow: Overflow = Overflow.DROP_HEAD,
    **bounds: int,
) -> None:
    policy = None
    if dlq:
        engine.create_queue(P, DLQ)
        policy = DeadLetterPolicy(target=DLQ, max_claims=5)
    engine.create_queue(
        P,
        name,
        settings=QueueSettings(dead_letter=policy, overflow=overflow, **bounds),  # type: ignore[arg-type]
    )


def bodies(engine: Engine, queue: str) -> list[str]:
    claim = engine.claim(P, queue, limit=1000)
    return [m.body.decode() for m in claim.messages]


def dead(engine: Engine) -> list[tuple[str, Reason | None]]:
    return [
        (m.body.decode(), m.provenance.reason if m.provenance else None)
        for m in engine.list_dead_letters(P, DLQ)
    ]


def test_drop_head_dead_letters_the_oldest_with_reason_maxlen(engine: Engine) -> None:
    # Given a queue of at most 3 messages with a DLQ
    bounded(engine, max_messages=3)
    # When a fourth and a fifth message are sent
    send(engine, "orders", "a", "b", "c")
    send(engine, "orders", "d")
    send(engine, "orders", "e")
    # The two oldest are in the DLQ, dead-lettered for maxlen, and the queue holds 3
    assert dead(engine) == [("a", Reason.MAXLEN), ("b", Reason.MAXLEN)]
    stats = engine.stats(P, "orders")
    assert stats.total == 3 and stats.dead_lettered == {"maxlen": 2}
    assert bodies(engine, "orders") == ["c", "d", "e"]


def test_drop_head_counts_claimed_and_delayed_messages(engine: Engine) -> None:
    bounded(engine, max_messages=2)
    send(engine, "orders", "claimed")
    engine.claim(P, "orders", limit=1)
    send(engine, "orders", "delayed", delay=60)
    # The queue is full though nothing in it is visible: the claimed one, oldest, goes.
    send(engine, "orders", "new")
    assert dead(engine) == [("claimed", Reason.MAXLEN)]
    assert engine.stats(P, "orders").total == 2


def test_drop_head_without_a_dlq_drops_and_counts(engine: Engine) -> None:
    bounded(engine, dlq=False, max_messages=1)
    send(engine, "orders", "a")
    send(engine, "orders", "b", "c")
    stats = engine.stats(P, "orders")
    assert stats.total == 1 and stats.dropped == {"maxlen": 2}
    assert bodies(engine, "orders") == ["c"]


def test_drop_head_drops_a_message_not_eligible_for_the_dlq(engine: Engine) -> None:
    bounded(engine, max_messages=1)
    engine.send(P, "orders", messages=[NewMessage(body=b"kept-out", dead_letter_eligible=False)])
    send(engine, "orders", "b")
    assert dead(engine) == []
    assert engine.stats(P, "orders").dropped == {"maxlen": 1}


def test_a_byte_bound_counts_the_bodies(engine: Engine) -> None:
    bounded(engine, max_bytes=10)
    send(engine, "orders", "aaaa", "bbbb")  # 8 bytes
    send(engine, "orders", "cccccc")  # 14: "aaaa" goes, 10 left
    assert dead(engine) == [("aaaa", Reason.MAXLEN)]
    send(engine, "orders", "dddddddddddd")  # 12 bytes alone: everything goes, itself too
    assert [b for b, _ in dead(engine)] == ["aaaa", "bbbb", "cccccc", "dddddddddddd"]
    assert engine.stats(P, "orders").total == 0


def test_reject_publish_refuses_the_whole_send_and_writes_nothing(engine: Engine) -> None:
    bounded(engine, max_messages=3, overflow=Overflow.REJECT_PUBLISH)
    send(engine, "orders", "a", "b")
    with pytest.raises(errors.QueueFull, match="2 of at most 3 messages"):
        send(engine, "orders", "c", "d")
    assert engine.stats(P, "orders").total == 2 and dead(engine) == []
    send(engine, "orders", "c")  # one still fits
    with pytest.raises(errors.QueueFull):
        send(engine, "orders", "d")
    # Once a consumer takes one out, the queue takes one more.
    claim = engine.claim(P, "orders", limit=1)
    engine.delete_message(P, "orders", message_id=claim.messages[0].id, claim_id=claim.id)
    send(engine, "orders", "d")
    assert engine.stats(P, "orders").total == 3


def test_reject_publish_by_bytes(engine: Engine) -> None:
    bounded(engine, max_bytes=5, overflow=Overflow.REJECT_PUBLISH)
    send(engine, "orders", "12345")
    with pytest.raises(errors.QueueFull, match="5 of at most 5 bytes"):
        send(engine, "orders", "6")


def test_reject_publish_dlx_dead_letters_what_it_refuses(engine: Engine) -> None:
    bounded(engine, max_messages=1, overflow=Overflow.REJECT_PUBLISH_DLX)
    send(engine, "orders", "a")
    with pytest.raises(errors.QueueFull):
        send(engine, "orders", "b", "c")
    assert dead(engine) == [("b", Reason.MAXLEN), ("c", Reason.MAXLEN)]
    assert bodies(engine, "orders") == ["a"]
    assert engine.stats(P, "orders").dead_lettered == {"maxlen": 2}
    dlq = engine.list_dead_letters(P, DLQ, where=DeadLetterFilter(reason=Reason.MAXLEN))
    assert {m.provenance.source_queue for m in dlq if m.provenance} == {"orders"}


def test_reject_publish_dlx_without_a_dlq_only_refuses(engine: Engine) -> None:
    bounded(engine, dlq=False, max_messages=1, overflow=Overflow.REJECT_PUBLISH_DLX)
    send(engine, "orders", "a")
    with pytest.raises(errors.QueueFull):
        send(engine, "orders", "b")
    assert engine.stats(P, "orders").total == 1


def test_send_each_takes_what_fits_and_refuses_the_rest(engine: Engine) -> None:
    bounded(engine, max_messages=3, overflow=Overflow.REJECT_PUBLISH_DLX)
    send(engine, "orders", "a")
    news = [NewMessage(body=b.encode()) for b in "bcde"]
    _, outcomes = engine.send_each(P, "orders", prepare=lambda _: news)
    assert [not isinstance(o, errors.QueueFull) for o in outcomes] == [True, True, False, False]
    assert dead(engine) == [("d", Reason.MAXLEN), ("e", Reason.MAXLEN)]
    assert engine.stats(P, "orders").total == 3


def test_an_expired_message_does_not_count(engine: Engine, clock: ManualClock) -> None:
    bounded(engine, max_messages=1, overflow=Overflow.REJECT_PUBLISH)
    send(engine, "orders", "short", ttl=60)
    clock.advance(61)
    send(engine, "orders", "next")


def test_removing_the_bound_unbounds_the_queue(engine: Engine) -> None:
    bounded(engine, max_messages=1, overflow=Overflow.REJECT_PUBLISH)
    send(engine, "orders", "a")
    queue = engine.get_queue(P, "orders")
    engine.update_queue(P, "orders", settings=queue.settings.with_changes(max_messages=None))
    send(engine, "orders", "b", "c")
    assert engine.stats(P, "orders").total == 3


@pytest.mark.parametrize("bad", [{"max_messages": 0}, {"max_bytes": 0}, {"overflow": "drop"}])
def test_bounds_are_checked(engine: Engine, bad: dict[str, object]) -> None:
    with pytest.raises(errors.InvalidInput):
        engine.create_queue(P, "q", settings=QueueSettings(**bad))  # type: ignore[arg-type]


def test_a_consumer_tag_loses_what_drop_head_pushes_out(engine: Engine) -> None:
    bounded(engine, max_messages=1)
    engine.create_tag(P, "orders", name="billing")
    send(engine, "orders", "a")
    send(engine, "orders", "b")
    assert [m.body for m in engine.claim(P, "orders", limit=10, tag="billing").messages] == [b"b"]
    assert engine.stats(P, "orders").total == 1


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    limit=st.integers(1, 5),
    byte_limit=st.one_of(st.none(), st.integers(1, 20)),
    overflow=st.sampled_from(list(Overflow)),
    sends=st.lists(st.lists(st.integers(1, 8), min_size=1, max_size=4), max_size=8),
)
def test_any_sends_keep_a_queue_within_its_bounds(
    engine: Engine,
    limit: int,
    byte_limit: int | None,
    overflow: Overflow,
    sends: list[list[int]],
) -> None:
    for name in ("orders", DLQ):
        if engine.find_queue(P, name) is not None:
            engine.delete_queue(P, name)
    bounded(engine, max_messages=limit, max_bytes=byte_limit, overflow=overflow)  # type: ignore[arg-type]
    accepted = 0
    for sizes in sends:
        try:
            send(engine, "orders", *("x" * n for n in sizes))
            accepted += len(sizes)
        except errors.QueueFull:
            pass
    everything = ListQuery(limit=1000, include_claimed=True, include_delayed=True)
    held = engine.list_messages(P, "orders", query=everything)
    assert len(held) <= limit
    assert byte_limit is None or sum(len(m.body) for m in held) <= byte_limit
    # Nothing is lost silently: what was taken is held or in the DLQ.
    moved = engine.stats(P, "orders").dead_lettered.get("maxlen", 0)
    if overflow is Overflow.DROP_HEAD:
        assert len(held) + moved == accepted
    else:
        assert len(held) == accepted


PRODUCERS = 8
EACH = 5
LIMIT = 10


@pytest.mark.parametrize("overflow", [Overflow.DROP_HEAD, Overflow.REJECT_PUBLISH])
def test_racing_producers_stop_exactly_at_the_bound(store_url: str, overflow: Overflow) -> None:
    # Two stores on one database stand for two server processes; eight producers race.
    stores = [open_store(store_url), open_store(store_url)]
    try:
        engines = [Engine(s) for s in stores]
        bounded(engines[0], max_messages=LIMIT, overflow=overflow)
        start = threading.Barrier(PRODUCERS)
        sent: list[int] = []

        def produce(i: int) -> None:
            start.wait()
            for j in range(EACH):
                try:
                    send(engines[i % 2], "orders", f"{i}-{j}")
                    sent.append(1)
                except errors.QueueFull:
                    pass

        threads = [threading.Thread(target=produce, args=(i,)) for i in range(PRODUCERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stats = engines[0].stats(P, "orders")
        assert stats.total == LIMIT
        if overflow is Overflow.DROP_HEAD:
            assert len(sent) == PRODUCERS * EACH
            assert stats.dead_lettered == {"maxlen": PRODUCERS * EACH - LIMIT}
            assert engines[0].stats(P, DLQ).total == PRODUCERS * EACH - LIMIT
        else:
            assert len(sent) == LIMIT
            assert stats.dead_lettered == {}
    finally:
        for s in stores:
            s.close()
