"""Messages: send, peek, get, delete with claim rules, pop, attributes."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import Attribute, ListQuery, NewMessage, QueueSettings
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send


def test_send_assigns_ids_and_increasing_sequence_numbers(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    first = send(engine, "orders", "a", "b")
    second = send(engine, "orders", "c")
    seqs = [m.seq for m in first + second]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    assert len({m.id for m in first + second}) == 3


def test_typed_attributes_round_trip(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    attributes = {
        "tenant": Attribute("String", "acme"),
        "amount": Attribute("Number", "12.5"),
        "blob": Attribute("Binary", "AAE="),
    }
    (sent,) = engine.send(P, "orders", messages=[NewMessage(body=b"x", attributes=attributes)])
    assert engine.get_message(P, "orders", message_id=sent.id).attributes == attributes


@pytest.mark.parametrize(
    ("attributes", "error"),
    [
        ({"DLQ.sourceQueue": Attribute("String", "x")}, errors.ReservedAttribute),
        ({"dlq.anything": Attribute("String", "x")}, errors.ReservedAttribute),
        ({"n": Attribute("Date", "today")}, errors.InvalidInput),
    ],
)
def test_bad_attributes_are_refused(
    engine: Engine, attributes: dict[str, Attribute], error: type[Exception]
) -> None:
    engine.create_queue(P, "orders")
    with pytest.raises(error):
        engine.send(P, "orders", messages=[NewMessage(body=b"x", attributes=attributes)])
    assert engine.stats(P, "orders").total == 0


def test_too_large_and_bad_ttl_are_refused_whole_batch(engine: Engine) -> None:
    engine.create_queue(
        P, "orders", settings=QueueSettings(max_message_size=10, max_ttl=100, default_ttl=50)
    )
    with pytest.raises(errors.MessageTooLarge):
        send(engine, "orders", "ok", "x" * 11)
    with pytest.raises(errors.InvalidInput):
        send(engine, "orders", "ok", ttl=101)
    assert engine.stats(P, "orders").total == 0


def test_peek_does_not_consume_and_hides_claimed_unless_asked(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "a", "b")
    assert len(engine.list_messages(P, "orders", query=ListQuery(limit=10))) == 2
    engine.claim(P, "orders", limit=1)
    visible = engine.list_messages(P, "orders", query=ListQuery(limit=10))
    everything = engine.list_messages(P, "orders", query=ListQuery(limit=10, include_claimed=True))
    assert [m.body for m in visible] == [b"b"]
    assert [m.body for m in everything] == [b"a", b"b"]


def test_listing_pages_by_sequence(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    sent = send(engine, "orders", *[str(i) for i in range(5)])
    page = engine.list_messages(P, "orders", query=ListQuery(limit=2))
    rest = engine.list_messages(P, "orders", query=ListQuery(after_seq=page[-1].seq, limit=10))
    assert [m.id for m in page + rest] == [m.id for m in sent]


def test_get_by_ids_leaves_out_missing(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    sent = send(engine, "orders", "a", "b")
    got = engine.get_messages(P, "orders", ids=[sent[1].id, "nope"])
    assert [m.id for m in got] == [sent[1].id]
    with pytest.raises(errors.MessageNotFound):
        engine.get_message(P, "orders", message_id="nope")


def test_delete_is_refused_while_claimed_without_the_claim(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    (m,) = send(engine, "orders", "a")
    claim = engine.claim(P, "orders", limit=1)
    with pytest.raises(errors.MessageClaimed):
        engine.delete_message(P, "orders", message_id=m.id)
    with pytest.raises(errors.ClaimMismatch):
        engine.delete_message(P, "orders", message_id=m.id, claim_id="wrong")
    assert engine.delete_message(P, "orders", message_id=m.id, claim_id=claim.id)
    assert engine.stats(P, "orders").acknowledged == 1
    with pytest.raises(errors.MessageNotFound):
        engine.get_message(P, "orders", message_id=m.id)


def test_a_stale_claim_is_refused_strictly_and_ignored_otherwise(
    engine: Engine, clock: ManualClock
) -> None:
    engine.create_queue(P, "orders")
    (m,) = send(engine, "orders", "a")
    old = engine.claim(P, "orders", limit=1, ttl=10)
    clock.advance(11)
    engine.claim(P, "orders", limit=1, ttl=100)
    with pytest.raises(errors.ClaimMismatch):
        engine.delete_message(P, "orders", message_id=m.id, claim_id=old.id)
    assert (
        engine.delete_message(P, "orders", message_id=m.id, claim_id=old.id, strict=False) is False
    )
    assert engine.stats(P, "orders").claimed == 1


def test_pop_takes_and_deletes_oldest(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "a", "b", "c")
    assert [m.body for m in engine.pop(P, "orders", limit=2)] == [b"a", b"b"]
    assert engine.stats(P, "orders").total == 1


def test_delay_hides_until_due(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "orders")
    send(engine, "orders", "later", delay=30)
    assert engine.claim(P, "orders", limit=1).messages == ()
    assert engine.stats(P, "orders").delayed == 1
    clock.advance(30)
    assert [m.body for m in engine.claim(P, "orders", limit=1).messages] == [b"later"]


def test_delete_held_acknowledges_a_batch_in_one_go(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    a, b, c = send(engine, "orders", "a", "b", "c")
    claim = engine.claim(P, "orders", limit=2)  # a and b
    results = engine.delete_held(
        P,
        "orders",
        held=[(a.id, claim.id), (b.id, "stale"), (c.id, claim.id), ("gone", claim.id)],
        strict=False,
    )
    assert results[0] is True
    assert results[1] is False  # someone else's claim: left alone
    assert results[2] is False  # not claimed by this claim
    assert isinstance(results[3], errors.MessageNotFound)
    assert engine.stats(P, "orders").acknowledged == 1
    assert [m.id for m in engine.get_messages(P, "orders", ids=[a.id, b.id, c.id])] == [b.id, c.id]
