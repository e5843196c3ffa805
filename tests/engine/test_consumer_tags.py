"""Consumer tags: every tag receives every message, with deliveries and dead letters of its own."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import (
    SOURCE_QUEUE_ATTRIBUTE,
    SOURCE_TAG_ATTRIBUTE,
    Attribute,
    DeadLetterFilter,
    QueueSettings,
)
from deadletter.domain.provenance import Reason
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send, with_dlq


def redrive_all(engine: Engine, dlq: str, where: DeadLetterFilter | None = None) -> None:
    task = engine.start_redrive(P, dlq, where=where)
    while engine.redrive_step(task.id, 100).status is TaskStatus.RUNNING:
        pass


def bodies(claim_messages: tuple[object, ...]) -> list[bytes]:
    return [m.body for m in claim_messages]  # type: ignore[attr-defined]


def test_poison_for_one_tag_is_dead_lettered_for_it_delivered_to_another_redriven_to_it_only(
    engine: Engine, clock: ManualClock
) -> None:
    # Given a queue with a redrive policy of 2 claims and two tags, billing and shipping,
    with_dlq(engine, max_claims=2)
    engine.create_tag(P, "orders", name="billing")
    engine.create_tag(P, "orders", name="shipping")
    (sent,) = send(engine, "orders", "order-1")
    # when billing fails the message twice,
    for _ in range(2):
        claim = engine.claim(P, "orders", limit=10, ttl=30, tag="billing")
        assert bodies(claim.messages) == [b"order-1"]
        engine.release_claim(P, "orders", claim_id=claim.id, tag="billing")
    # the next billing claim dead-letters it for billing, which never receives it again,
    assert engine.claim(P, "orders", limit=10, tag="billing").messages == ()
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.attributes[SOURCE_QUEUE_ATTRIBUTE] == Attribute("String", "orders")
    assert dead.attributes[SOURCE_TAG_ATTRIBUTE] == Attribute("String", "billing")
    p = dead.provenance
    assert p is not None
    assert (p.source_queue, p.source_tag, p.reason) == ("orders", "billing", Reason.MAX_CLAIMS)
    assert (p.original_message_id, p.claim_count) == (sent.id, 2)
    assert p.dead_lettered_at == clock.now()
    clock.advance(60)
    assert engine.claim(P, "orders", limit=10, tag="billing").messages == ()
    # while shipping still receives it, with a delivery count of its own,
    shipping = engine.claim(P, "orders", limit=10, tag="shipping")
    assert [(m.id, m.claim_count) for m in shipping.messages] == [(sent.id, 1)]
    engine.delete_message(
        P, "orders", message_id=sent.id, claim_id=shipping.messages[0].claim_id, tag="shipping"
    )
    # and so do the queue's untagged consumers.
    default = engine.claim(P, "orders", limit=10)
    assert [(m.id, m.claim_count) for m in default.messages] == [(sent.id, 1)]
    engine.delete_message(P, "orders", message_id=sent.id, claim_id=default.id)
    # Every group is done with it: it has left the queue.
    assert engine.get_messages(P, "orders", ids=[sent.id]) == []
    # A redrive of the dead letter delivers it again to billing only.
    redrive_all(engine, "orders-dlq", DeadLetterFilter(source_tag="billing"))
    again = engine.claim(P, "orders", limit=10, tag="billing")
    assert bodies(again.messages) == [b"order-1"]
    assert again.messages[0].claim_count == 1
    assert engine.claim(P, "orders", limit=10, tag="shipping").messages == ()
    assert engine.claim(P, "orders", limit=10).messages == ()
    # Once billing acknowledges it, it is gone.
    (m,) = again.messages
    engine.delete_message(P, "orders", message_id=m.id, claim_id=again.id, tag="billing")
    assert engine.get_messages(P, "orders", ids=[m.id]) == []
    assert engine.stats(P, "orders").total == 0


def test_a_tag_created_later_never_sees_older_messages(engine: Engine) -> None:
    engine.create_queue(P, "q")
    send(engine, "q", "before")
    engine.create_tag(P, "q", name="late")
    send(engine, "q", "after")
    assert bodies(engine.claim(P, "q", limit=10, tag="late").messages) == [b"after"]
    assert bodies(engine.claim(P, "q", limit=10).messages) == [b"before", b"after"]


def test_a_tag_with_a_start_time_sees_messages_enqueued_since(
    engine: Engine, clock: ManualClock
) -> None:
    engine.create_queue(P, "q")
    send(engine, "q", "old")
    clock.advance(10)
    start = clock.now()
    send(engine, "q", "recent")
    engine.create_tag(P, "q", name="replay", start_at=start)
    assert bodies(engine.claim(P, "q", limit=10, tag="replay").messages) == [b"recent"]


def test_a_message_stays_until_every_group_acknowledged_it(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.create_tag(P, "q", name="a")
    (m,) = send(engine, "q", "x")
    claim = engine.claim(P, "q", limit=10)
    engine.delete_message(P, "q", message_id=m.id, claim_id=claim.id)
    # The untagged consumers are done: they no longer see it, the tag still does.
    assert engine.claim(P, "q", limit=10).messages == ()
    assert engine.stats(P, "q").total == 0
    assert engine.get_tag(P, "q", name="a").counts.ready == 1
    tagged = engine.claim(P, "q", limit=10, tag="a")
    assert [x.id for x in tagged.messages] == [m.id]
    info = engine.get_tag(P, "q", name="a")
    assert (info.counts.ready, info.counts.claimed) == (0, 1)
    engine.delete_message(P, "q", message_id=m.id, claim_id=tagged.id, tag="a")
    assert engine.get_messages(P, "q", ids=[m.id]) == []
    assert engine.get_tag(P, "q", name="a").counts.acknowledged == 1


def test_a_tag_acknowledges_a_message_it_never_claimed(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.create_tag(P, "q", name="a")
    (m,) = send(engine, "q", "x")
    # Without a claim, as an unclaimed message is deleted
    assert engine.delete_message(P, "q", message_id=m.id, claim_id=None, tag="a") is True
    assert engine.claim(P, "q", limit=10, tag="a").messages == ()
    assert engine.get_tag(P, "q", name="a").counts.acknowledged == 1


def test_deleting_a_tag_releases_what_only_it_still_needed(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.create_tag(P, "q", name="a")
    (m,) = send(engine, "q", "x")
    claim = engine.claim(P, "q", limit=10)
    engine.delete_message(P, "q", message_id=m.id, claim_id=claim.id)
    assert engine.get_messages(P, "q", ids=[m.id]) != []
    engine.delete_tag(P, "q", name="a")
    assert engine.get_messages(P, "q", ids=[m.id]) == []
    assert engine.get_queue(P, "q").settings.consumer_tags == ()
    with pytest.raises(errors.TagNotFound):
        engine.claim(P, "q", limit=10, tag="a")


def test_a_consumer_of_a_tag_dead_letters_for_the_tag_only(engine: Engine) -> None:
    with_dlq(engine, max_claims=5)
    engine.create_tag(P, "orders", name="a")
    engine.create_tag(P, "orders", name="b")
    (m,) = send(engine, "orders", "x")
    claim = engine.claim(P, "orders", limit=10, tag="a")
    (copy,) = engine.dead_letter(
        P, "orders", held=[(m.id, claim.id)], description="bad for a", tag="a"
    )
    assert copy.id != m.id
    assert copy.provenance is not None and copy.provenance.source_tag == "a"
    assert copy.provenance.reason is Reason.REJECTED
    assert engine.claim(P, "orders", limit=10, tag="a").messages == ()
    assert [x.id for x in engine.claim(P, "orders", limit=10, tag="b").messages] == [m.id]
    assert engine.get_tag(P, "orders", name="a").counts.dead_lettered == 1
    # The DLQ can be browsed by source tag.
    assert engine.list_dead_letters(P, "orders-dlq", where=DeadLetterFilter(source_tag="b")) == []
    assert (
        len(engine.list_dead_letters(P, "orders-dlq", where=DeadLetterFilter(source_tag="a"))) == 1
    )


def test_the_untagged_consumers_dead_letter_a_copy_and_tags_keep_the_message(
    engine: Engine,
) -> None:
    with_dlq(engine, max_claims=5)
    engine.create_tag(P, "orders", name="a")
    (m,) = send(engine, "orders", "x")
    claim = engine.claim(P, "orders", limit=10)
    (copy,) = engine.dead_letter(P, "orders", held=[(m.id, claim.id)])
    assert copy.provenance is not None and copy.provenance.source_tag is None
    assert copy.provenance.original_message_id == m.id
    assert engine.claim(P, "orders", limit=10).messages == ()
    assert [x.id for x in engine.claim(P, "orders", limit=10, tag="a").messages] == [m.id]


def test_a_tag_with_a_filter_receives_only_matching_messages(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.create_tag(P, "q", name="eu", filter_attribute="region", filter_value="eu")
    send(engine, "q", "us-1", attributes={"region": Attribute("String", "us")})
    send(engine, "q", "eu-1", attributes={"region": Attribute("String", "eu")})
    send(engine, "q", "none")
    assert bodies(engine.claim(P, "q", limit=10, tag="eu").messages) == [b"eu-1"]
    assert engine.claim(P, "q", limit=10, tag="eu").messages == ()


def test_a_tag_claim_lapses_and_the_tag_receives_it_again(
    engine: Engine, clock: ManualClock
) -> None:
    engine.create_queue(P, "q")
    engine.create_tag(P, "q", name="a")
    (m,) = send(engine, "q", "x")
    first = engine.claim(P, "q", limit=10, ttl=30, tag="a")
    assert engine.claim(P, "q", limit=10, tag="a").messages == ()
    clock.advance(31)
    second = engine.claim(P, "q", limit=10, tag="a")
    assert [(x.id, x.claim_count) for x in second.messages] == [(m.id, 2)]
    with pytest.raises(errors.ClaimMismatch):
        engine.delete_message(P, "q", message_id=m.id, claim_id=first.id, tag="a")
    # A nack with a delay, and a visibility change, are the tag's own.
    engine.release_message(P, "q", message_id=m.id, claim_id=second.id, delay=20, tag="a")
    assert engine.claim(P, "q", limit=10, tag="a").messages == ()
    clock.advance(21)
    third = engine.claim(P, "q", limit=10, tag="a")
    renewed = engine.renew_claim(P, "q", claim_id=third.id, ttl=100, tag="a")
    assert [x.id for x in renewed.messages] == [m.id]
    assert [x.id for x in engine.get_claim(P, "q", claim_id=third.id, tag="a").messages] == [m.id]
    # The untagged consumers' delivery state is untouched by all of it.
    assert [x.claim_count for x in engine.claim(P, "q", limit=10).messages] == [1]


def test_tag_names_are_checked_and_unique(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.create_tag(P, "q", name="a")
    with pytest.raises(errors.TagAlreadyExists):
        engine.create_tag(P, "q", name="a")
    with pytest.raises(errors.InvalidInput):
        engine.create_tag(P, "q", name="no spaces")
    with pytest.raises(errors.QueueNotFound):
        engine.create_tag(P, "missing", name="a")
    # Settings changed by a face keep the tags.
    engine.change_settings(P, "q", change=lambda q: q.settings.with_changes(consumer_tags=()))
    assert engine.get_queue(P, "q").settings.consumer_tags == ("a",)
    assert [i.tag.name for i in engine.list_tags(P, "q")] == ["a"]


def test_expiry_ends_a_message_for_every_group(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "q")
    engine.create_tag(P, "q", name="a")
    send(engine, "q", "x", ttl=60)
    engine.claim(P, "q", limit=10, tag="a")
    clock.advance(61)
    engine.sweep_expired()
    assert engine.claim(P, "q", limit=10, tag="a").messages == ()
    assert engine.get_tag(P, "q", name="a").counts.claimed == 0


@pytest.mark.parametrize("tag", [None, "billing"])
def test_a_lapsed_last_claim_is_dead_lettered_by_the_sweep_in_every_group(
    engine: Engine, clock: ManualClock, tag: str | None
) -> None:
    # Given a queue with a tag, whose policy allows one claim,
    with_dlq(engine, max_claims=1)
    engine.create_tag(P, "orders", name="billing")
    (sent,) = send(engine, "orders", "order-1")
    # when a group's one claim lapses unacknowledged,
    engine.claim(P, "orders", limit=10, ttl=30, tag=tag)
    clock.advance(31)
    # the sweep moves it to the DLQ for that group, with no claim of the group to find it,
    engine.sweep_expired()
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.provenance is not None
    assert (dead.provenance.original_message_id, dead.provenance.source_tag) == (sent.id, tag)
    assert (dead.provenance.reason, dead.provenance.dead_lettered_at) == (
        Reason.MAX_CLAIMS,
        clock.now(),
    )
    # and the other group still receives the message.
    other = "billing" if tag is None else None
    assert [m.id for m in engine.claim(P, "orders", limit=10, tag=other).messages] == [sent.id]


@pytest.mark.parametrize("tag", [None, "billing"])
def test_a_claim_keeps_its_message_alive_for_every_group(
    engine: Engine, clock: ManualClock, tag: str | None
) -> None:
    # Given a message that expires in 60 seconds on a queue with a tag,
    engine.create_queue(P, "orders")
    engine.create_tag(P, "orders", name="billing")
    (sent,) = send(engine, "orders", "order-1", ttl=60)
    # when one group claims it for 100 seconds, with 20 seconds of grace,
    engine.claim(P, "orders", limit=10, ttl=100, grace=20, tag=tag)
    # it lives until the claim and its grace end, and the sweep leaves it to every group,
    assert engine.get_message(P, "orders", message_id=sent.id).expires_at == clock.now() + 120
    clock.advance(110)
    engine.sweep_expired()
    other = "billing" if tag is None else None
    assert [m.id for m in engine.claim(P, "orders", limit=10, tag=other).messages] == [sent.id]
    # and ends with them.
    clock.advance(200)
    engine.sweep_expired()
    assert engine.get_messages(P, "orders", ids=[sent.id]) == []


def test_a_fifo_queue_refuses_tags_and_says_why(engine: Engine) -> None:
    engine.create_queue(P, "q.fifo", settings=QueueSettings(fifo=True))
    with pytest.raises(errors.InvalidInput, match="FIFO queue of its own"):
        engine.create_tag(P, "q.fifo", name="a")
    assert engine.list_tags(P, "q.fifo") == []
