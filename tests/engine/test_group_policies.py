"""Dead-letter policies per consumer group and per reason: a tag's own max claims, retry
backoff and DLQ; a queue's dead letters routed by reason; the no-chain rules over every
route; deleting a routed DLQ; redriving home from such a DLQ."""

from __future__ import annotations

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.domain.model import DeadLetterFilter, QueueSettings
from deadletter.domain.policies import (
    DeadLetterPolicy,
    DeadLetterRoute,
    GroupPolicy,
    RetryPolicy,
)
from deadletter.domain.provenance import Reason
from deadletter.domain.redrive import TaskStatus
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send, set_tag_policy, with_dlq


def redrive_all(engine: Engine, dlq: str, where: DeadLetterFilter | None = None) -> None:
    task = engine.start_redrive(P, dlq, where=where)
    while engine.redrive_step(task.id, 100).status is TaskStatus.RUNNING:
        pass


def fail(engine: Engine, times: int, tag: str | None = None) -> None:
    for _ in range(times):
        claim = engine.claim(P, "orders", limit=10, ttl=30, tag=tag)
        engine.release_claim(P, "orders", claim_id=claim.id, tag=tag)


def routed(engine: Engine, routes: dict[str, str], max_claims: int = 3) -> None:
    """orders, dead-lettering to orders-dlq after `max_claims`, its `routes` by reason."""
    for name in ("orders-dlq", *sorted(set(routes.values()))):
        if engine.find_queue(P, name) is None:
            engine.create_queue(P, name)
    engine.create_queue(
        P,
        "orders",
        settings=QueueSettings(
            dead_letter=DeadLetterPolicy("orders-dlq", max_claims, on_expiry=True),
            dead_letter_routes={r: DeadLetterRoute(q) for r, q in routes.items()},
        ),
    )


def test_a_tag_with_its_own_max_claims_and_dlq_dead_letters_there_alone(
    engine: Engine,
) -> None:
    # Given a queue that dead-letters after 5 claims, and a tag billing that does after 2,
    # to a DLQ of its own
    with_dlq(engine, max_claims=5)
    engine.create_queue(P, "billing-dlq")
    engine.create_tag(
        P,
        "orders",
        name="billing",
        policy=GroupPolicy(max_claims=2, dead_letter_queue="billing-dlq"),
    )
    engine.create_tag(P, "orders", name="shipping")
    (sent,) = send(engine, "orders", "order-1")
    # when billing fails it twice, its next claim dead-letters it to billing-dlq
    fail(engine, 2, tag="billing")
    assert engine.claim(P, "orders", limit=10, tag="billing").messages == ()
    (dead,) = engine.list_dead_letters(P, "billing-dlq")
    assert dead.provenance is not None
    assert (dead.provenance.source_queue, dead.provenance.source_tag) == ("orders", "billing")
    assert (dead.provenance.reason, dead.provenance.claim_count) == (Reason.MAX_CLAIMS, 2)
    assert engine.list_dead_letters(P, "orders-dlq") == []
    # while shipping, under the queue's policy, still has it after 4 failures,
    fail(engine, 4, tag="shipping")
    assert [m.id for m in engine.claim(P, "orders", limit=10, tag="shipping").messages] == [sent.id]
    # and the DLQ lists billing as one of its sources.
    assert [q.name for q in engine.dead_letter_sources(P, "billing-dlq")] == ["orders"]
    # A redrive from the tag's DLQ sends it home to billing alone.
    redrive_all(engine, "billing-dlq")
    again = engine.claim(P, "orders", limit=10, tag="billing").messages
    assert [(m.body, m.claim_count) for m in again] == [(b"order-1", 1)]


def test_a_tag_with_only_its_max_claims_uses_the_queues_dlq(engine: Engine) -> None:
    with_dlq(engine, max_claims=5)
    engine.create_tag(P, "orders", name="billing", policy=GroupPolicy(max_claims=1))
    info = engine.get_tag(P, "orders", name="billing")
    assert info.effective == DeadLetterPolicy("orders-dlq", 1)
    send(engine, "orders", "order-1")
    fail(engine, 1, tag="billing")
    assert engine.claim(P, "orders", limit=10, tag="billing").messages == ()
    (dead,) = engine.list_dead_letters(P, "orders-dlq")
    assert dead.provenance is not None and dead.provenance.source_tag == "billing"
    # The default group's budget is the queue's: one failure is not the last.
    fail(engine, 1)
    assert len(engine.claim(P, "orders", limit=10).messages) == 1


def test_a_tag_with_its_own_dlq_on_a_queue_without_a_policy(engine: Engine) -> None:
    engine.create_queue(P, "orders")
    engine.create_queue(P, "billing-dlq")
    engine.create_tag(P, "orders", name="billing")
    with pytest.raises(errors.InvalidInput, match="max claim count and a dead-letter queue"):
        set_tag_policy(engine, "orders", "billing", GroupPolicy(dead_letter_queue="billing-dlq"))
    set_tag_policy(
        engine,
        "orders",
        "billing",
        GroupPolicy(max_claims=1, dead_letter_queue="billing-dlq"),
    )
    send(engine, "orders", "order-1")
    claim = engine.claim(P, "orders", limit=10, tag="billing")
    (m,) = claim.messages
    # A consumer of the tag may dead-letter what it holds; the queue's own consumers may not.
    engine.dead_letter(P, "orders", held=[(m.id, claim.id)], tag="billing")
    assert [d.body for d in engine.list_dead_letters(P, "billing-dlq")] == [b"order-1"]
    default = engine.claim(P, "orders", limit=10)
    with pytest.raises(errors.NoActiveDeadLetterPolicy):
        engine.dead_letter(P, "orders", held=[(default.messages[0].id, default.id)])
    # An empty policy gives the tag the queue's again: none.
    set_tag_policy(engine, "orders", "billing", GroupPolicy())
    assert engine.get_tag(P, "orders", name="billing").policy is None
    assert engine.get_queue(P, "orders").settings.tag_policies == {}


def test_a_tags_retry_backoff_is_its_own(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "orders", settings=QueueSettings(retry_policy=RetryPolicy(1, 1)))
    engine.create_tag(
        P, "orders", name="slow", policy=GroupPolicy(retry_policy=RetryPolicy(60, 60))
    )
    engine.create_tag(P, "orders", name="fast")
    send(engine, "orders", "order-1")
    for tag in ("slow", "fast"):
        claim = engine.claim(P, "orders", limit=10, tag=tag)
        engine.release_claim(P, "orders", claim_id=claim.id, tag=tag)
    clock.advance(2)
    assert len(engine.claim(P, "orders", limit=10, tag="fast").messages) == 1
    assert engine.claim(P, "orders", limit=10, tag="slow").messages == ()
    clock.advance(60)
    assert len(engine.claim(P, "orders", limit=10, tag="slow").messages) == 1


def test_dead_letters_are_routed_by_reason(engine: Engine, clock: ManualClock) -> None:
    # Given orders, whose expired dead letters go to orders-expired and whose rejected ones
    # to orders-rejects, the others to orders-dlq
    routed(engine, {"expired": "orders-expired", "rejected": "orders-rejects"}, max_claims=1)
    engine.create_tag(P, "orders", name="billing")
    engine.create_queue(P, "billing-dlq")
    engine.create_tag(
        P, "orders", name="audit", policy=GroupPolicy(dead_letter_queue="billing-dlq")
    )
    send(engine, "orders", "rejected", "poison")
    send(engine, "orders", "expiring", ttl=60)
    # a rejection by the default group or a tag without a DLQ of its own takes the route,
    for tag in (None, "billing"):
        claim = engine.claim(P, "orders", limit=10, tag=tag)
        first = next(m for m in claim.messages if m.body == b"rejected")
        engine.dead_letter(P, "orders", held=[(first.id, claim.id)], tag=tag)
    # a tag with its own DLQ keeps every dead letter it gives up there,
    claim = engine.claim(P, "orders", limit=10, tag="audit")
    first = next(m for m in claim.messages if m.body == b"rejected")
    engine.dead_letter(P, "orders", held=[(first.id, claim.id)], tag="audit")
    # max claims goes to the queue's DLQ,
    clock.advance(31)
    engine.claim(P, "orders", limit=10, tag=None)
    # and an expired message to its route.
    clock.advance(3600)
    engine.sweep_expired()

    def found(dlq: str) -> list[tuple[bytes, str | None, Reason]]:
        return sorted(
            (
                (m.body, m.provenance.source_tag, m.provenance.reason)
                for m in engine.list_dead_letters(P, dlq)
                if m.provenance is not None
            ),
            key=lambda d: (d[0], d[1] or ""),
        )

    assert found("orders-rejects") == [
        (b"rejected", None, Reason.REJECTED),
        (b"rejected", "billing", Reason.REJECTED),
    ]
    assert found("billing-dlq") == [(b"rejected", "audit", Reason.REJECTED)]
    assert found("orders-dlq") == [
        (b"expiring", None, Reason.MAX_CLAIMS),
        (b"poison", None, Reason.MAX_CLAIMS),
    ]
    assert found("orders-expired") == [
        (b"expiring", None, Reason.EXPIRED),
        (b"poison", None, Reason.EXPIRED),
    ]
    # Each routed DLQ lists orders as its source, and a redrive sends its dead letters home.
    for dlq in ("orders-expired", "orders-rejects"):
        assert [q.name for q in engine.dead_letter_sources(P, dlq)] == ["orders"]
    redrive_all(engine, "orders-rejects")
    assert engine.list_dead_letters(P, "orders-rejects") == []
    billing = engine.claim(P, "orders", limit=10, tag="billing").messages
    assert b"rejected" in [m.body for m in billing]


def test_an_expired_message_takes_the_expired_route(engine: Engine, clock: ManualClock) -> None:
    routed(engine, {"expired": "orders-expired"})
    send(engine, "orders", "late", ttl=60)
    clock.advance(61)
    engine.sweep_expired()
    (dead,) = engine.list_dead_letters(P, "orders-expired")
    assert dead.provenance is not None and dead.provenance.reason is Reason.EXPIRED
    assert engine.list_dead_letters(P, "orders-dlq") == []


def test_deleting_a_routed_dlq_needs_force_and_turns_its_route_inactive(
    engine: Engine,
) -> None:
    routed(engine, {"rejected": "orders-rejects"})
    engine.create_queue(P, "billing-dlq")
    engine.create_tag(
        P, "orders", name="billing", policy=GroupPolicy(dead_letter_queue="billing-dlq")
    )
    for dlq in ("orders-rejects", "billing-dlq"):
        with pytest.raises(errors.DeadLetterQueueInUse, match="'orders'"):
            engine.delete_queue(P, dlq)
        engine.delete_queue(P, dlq, force=True)
    s = engine.get_queue(P, "orders").settings
    assert s.dead_letter_routes == {"rejected": DeadLetterRoute("orders-rejects", active=False)}
    assert s.tag_policies["billing"].active is False
    assert engine.get_tag(P, "orders", name="billing").effective is not None
    # A rejection now has nowhere to go: refused, as on a queue whose DLQ was deleted,
    send(engine, "orders", "order-1")
    for tag in (None, "billing"):
        claim = engine.claim(P, "orders", limit=10, tag=tag)
        with pytest.raises(errors.NoActiveDeadLetterPolicy):
            engine.dead_letter(P, "orders", held=[(claim.messages[0].id, claim.id)], tag=tag)
        engine.release_claim(P, "orders", claim_id=claim.id, tag=tag)
    # and the tag delivers without a limit; max claims still go to the queue's DLQ.
    fail(engine, 5, tag="billing")
    assert len(engine.claim(P, "orders", limit=10, tag="billing").messages) == 1
    # Settings that still name a missing queue are refused, as a policy's would be;
    engine.create_queue(P, "orders-rejects")
    with pytest.raises(errors.DeadLetterTargetMissing, match="its tag 'billing'"):
        engine.change_settings(P, "orders", change=lambda q: q.settings)
    # with the queues back, setting them again makes them active.
    engine.create_queue(P, "billing-dlq")
    engine.change_settings(P, "orders", change=lambda q: q.settings)
    s = engine.get_queue(P, "orders").settings
    assert s.dead_letter_routes["rejected"].active and s.tag_policies["billing"].active


def test_deleting_the_source_frees_its_routed_dlqs(engine: Engine) -> None:
    routed(engine, {"maxlen": "orders-full"})
    engine.delete_queue(P, "orders")
    engine.delete_queue(P, "orders-full")


def test_routes_need_a_policy_and_name_a_reason(engine: Engine) -> None:
    engine.create_queue(P, "q1")
    with pytest.raises(errors.InvalidInput, match="need the queue's dead-letter policy"):
        engine.create_queue(
            P,
            "orders",
            settings=QueueSettings(dead_letter_routes={"expired": DeadLetterRoute("q1")}),
        )
    with pytest.raises(errors.InvalidInput, match="not a dead-letter reason"):
        engine.create_queue(
            P,
            "orders",
            settings=QueueSettings(
                dead_letter=DeadLetterPolicy("q1", 3),
                dead_letter_routes={"bored": DeadLetterRoute("q1")},
            ),
        )
    assert engine.find_queue(P, "orders") is None


def test_a_tag_policy_out_of_range_or_for_no_tag_is_refused(engine: Engine) -> None:
    with_dlq(engine)
    engine.create_tag(P, "orders", name="billing")
    with pytest.raises(errors.OutOfRange):
        set_tag_policy(engine, "orders", "billing", GroupPolicy(max_claims=0))
    with pytest.raises(errors.InvalidInput, match="minimum backoff"):
        set_tag_policy(engine, "orders", "billing", GroupPolicy(retry_policy=RetryPolicy(10, 5)))
    with pytest.raises(errors.TagNotFound):
        set_tag_policy(engine, "orders", "nobody", GroupPolicy(max_claims=2))
    with pytest.raises(errors.DeadLetterTargetMissing):
        engine.create_tag(
            P, "orders", name="audit", policy=GroupPolicy(dead_letter_queue="missing")
        )
    # Refused as a whole: the tag was not created either.
    assert [t.tag.name for t in engine.list_tags(P, "orders")] == ["billing"]
    engine.delete_tag(P, "orders", name="billing")
    assert engine.get_queue(P, "orders").settings.tag_policies == {}


def test_a_route_or_a_tag_to_the_default_dlq_creates_it(engine: Engine) -> None:
    routed(engine, {})
    engine.change_settings(
        P,
        "orders",
        change=lambda q: q.settings.with_changes(
            dead_letter_routes={"expired": DeadLetterRoute("_dead_msg_queue")}
        ),
    )
    assert engine.find_queue(P, "_dead_msg_queue") is not None
    engine.create_queue(P, "payments")
    engine.delete_queue(P, "_dead_msg_queue", force=True)
    engine.create_tag(P, "payments", name="audit")
    set_tag_policy(
        engine,
        "payments",
        "audit",
        GroupPolicy(max_claims=2, dead_letter_queue="_dead_msg_queue"),
    )
    assert engine.get_tag(P, "payments", name="audit").effective == DeadLetterPolicy(
        "_dead_msg_queue", 2
    )


def test_a_queue_keeps_the_policy_its_tags_take_half_of(engine: Engine) -> None:
    with_dlq(engine)
    engine.create_tag(P, "orders", name="billing", policy=GroupPolicy(max_claims=1))
    with pytest.raises(errors.InvalidInput, match="tag 'billing' needs both"):
        engine.change_settings(
            P, "orders", change=lambda q: q.settings.with_changes(dead_letter=None)
        )
    assert engine.get_queue(P, "orders").settings.dead_letter is not None
    # A tag with both of its own does not need it.
    set_tag_policy(
        engine, "orders", "billing", GroupPolicy(max_claims=1, dead_letter_queue="orders-dlq")
    )
    engine.change_settings(P, "orders", change=lambda q: q.settings.with_changes(dead_letter=None))
    assert engine.get_tag(P, "orders", name="billing").effective == DeadLetterPolicy(
        "orders-dlq", 1
    )
