"""A message's transitions as pure functions: no store, no clock, just states in and out."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from deadletter.domain import errors
from deadletter.domain.model import (
    SOURCE_QUEUE_ATTRIBUTE,
    Attribute,
    Message,
    NewMessage,
    Queue,
    QueueSettings,
)
from deadletter.domain.policies import DeadLetterPolicy
from deadletter.domain.provenance import Reason
from deadletter.engine import transitions

NOW = 1_000.0


def queue(name: str, **settings: object) -> Queue:
    return Queue("p", name, QueueSettings(**settings), 0.0, 0.0)  # type: ignore[arg-type]


SOURCE = queue("orders", dead_letter=DeadLetterPolicy(target="orders-dlq", max_claims=3))
DLQ = queue("orders-dlq", default_ttl=7200)


def message(**fields: Any) -> Message:
    new = NewMessage(body=b"x", attributes={"tenant": Attribute("String", "acme")})
    m = transitions.enqueued(
        new,
        message_id="m1",
        queue="orders",
        now=NOW - 100,
        ttl=600,
        delay=0,
        eligible=True,
        client_id=None,
    )
    return replace(m, **fields)


def test_a_sent_message_is_visible_after_its_delay_and_lives_its_ttl() -> None:
    m = transitions.enqueued(
        NewMessage(body=b"x"),
        message_id="m1",
        queue="orders",
        now=NOW,
        ttl=60,
        delay=5,
        eligible=False,
        client_id="c",
    )
    assert (m.visible_at, m.expires_at, m.claim_count) == (NOW + 5, NOW + 60, 0)
    assert (m.client_id, m.dead_letter_eligible) == ("c", False)


def test_a_claim_counts_a_delivery_and_keeps_the_message_alive_past_its_grace() -> None:
    m = transitions.claimed(message(), claim_id="c1", now=NOW, expires=NOW + 30, grace=1000)
    assert (m.claim_id, m.claim_expires_at, m.visible_at) == ("c1", NOW + 30, NOW + 30)
    assert m.claim_count == 1 and m.first_claimed_at == NOW
    assert m.expires_at == NOW + 30 + 1000
    again = transitions.claimed(
        transitions.unclaimed(m, NOW + 40), claim_id="c2", now=NOW + 40, expires=NOW + 70, grace=0
    )
    assert again.claim_count == 2 and again.first_claimed_at == NOW  # the first stays


def test_released_messages_keep_their_delivery_count() -> None:
    held = transitions.claimed(message(), claim_id="c1", now=NOW, expires=NOW + 30, grace=0)
    back = transitions.unclaimed(held, NOW, delay=10)
    assert (back.claim_id, back.claim_expires_at, back.visible_at) == (None, None, NOW + 10)
    assert back.claim_count == 1
    assert transitions.visibility_changed(held, NOW, 0) == transitions.unclaimed(held, NOW)


def test_poisoned_only_under_an_active_policy_at_its_count() -> None:
    policy = DeadLetterPolicy(target="dlq", max_claims=2)
    assert not transitions.poisoned(message(claim_count=1), policy)
    assert transitions.poisoned(message(claim_count=2), policy)
    assert not transitions.poisoned(message(claim_count=5), None)
    inactive = DeadLetterPolicy(target="dlq", max_claims=2, active=False)
    assert not transitions.poisoned(message(claim_count=5), inactive)


def test_a_dead_letter_carries_its_provenance_and_one_more_history_event() -> None:
    held = transitions.claimed(
        message(claim_count=2), claim_id="c1", now=NOW, expires=NOW + 30, grace=0
    )
    dead = transitions.dead_lettered(
        held,
        source=SOURCE,
        dlq=DLQ,
        reason=Reason.REJECTED,
        now=NOW,
        description="bad",
        error="trace",
    )
    assert (dead.id, dead.queue, dead.claim_id, dead.visible_at) == ("m1", "orders-dlq", None, NOW)
    assert dead.attributes[SOURCE_QUEUE_ATTRIBUTE] == Attribute("String", "orders")
    assert dead.provenance is not None
    assert (dead.provenance.source_queue, dead.provenance.reason) == ("orders", Reason.REJECTED)
    assert (dead.provenance.claim_count, dead.provenance.original_message_id) == (3, "m1")
    assert (dead.provenance.description, dead.provenance.error) == ("bad", "trace")
    assert [e["event"] for e in dead.history] == ["dead_lettered"]
    # No policy TTL: the DLQ's retention, counted from the message's enqueue time (its clock
    # kept, its length the DLQ's), never the source's shorter expiry.
    assert dead.expires_at == held.enqueued_at + DLQ.settings.max_ttl
    assert dead.expires_at > held.expires_at


def test_an_expired_dead_letter_gets_the_dlq_retention_and_a_policy_ttl_wins() -> None:
    # Its time in the source spent, an expired message's retention counts from the move.
    dead = transitions.dead_lettered(
        message(), source=SOURCE, dlq=DLQ, reason=Reason.EXPIRED, now=NOW
    )
    assert dead.expires_at == NOW + DLQ.settings.max_ttl
    policy = DeadLetterPolicy(target="orders-dlq", max_claims=3, message_ttl=120)
    source = queue("orders", dead_letter=policy)
    assert transitions.dead_lettered(
        message(), source=source, dlq=DLQ, reason=Reason.MAX_CLAIMS, now=NOW
    ).expires_at == (NOW + 120)


def test_a_redriven_message_starts_afresh_but_keeps_its_history() -> None:
    dead = transitions.dead_lettered(
        message(claim_count=3), source=SOURCE, dlq=DLQ, reason=Reason.MAX_CLAIMS, now=NOW
    )
    back = transitions.redriven(
        dead, message_id="m2", destination=SOURCE, dlq="orders-dlq", task_id="t1", now=NOW + 10
    )
    assert (back.id, back.queue, back.claim_count, back.provenance) == ("m2", "orders", 0, None)
    assert back.expires_at == NOW + 10 + SOURCE.settings.default_ttl
    assert back.attributes == {"tenant": Attribute("String", "acme")}
    assert [e["event"] for e in back.history] == ["dead_lettered", "redriven"]
    assert back.history[-1]["task_id"] == "t1"


def test_expiry_dead_letters_only_eligible_messages_of_a_queue_that_asks() -> None:
    eligible, opted_out = message(), message(id="m2", dead_letter_eligible=False)
    asks = queue("orders", dead_letter=DeadLetterPolicy("dlq", 3, on_expiry=True))
    assert transitions.expiry_dead_letters(asks, [eligible, opted_out]) == (
        [eligible],
        [opted_out],
        [],
    )
    assert transitions.expiry_dead_letters(SOURCE, [eligible]) == ([], [], [eligible])
    assert transitions.expiry_dead_letters(None, [eligible]) == ([], [], [eligible])


def test_may_delete_by_claim() -> None:
    held = transitions.claimed(message(), claim_id="c1", now=NOW, expires=NOW + 30, grace=0)
    assert transitions.may_delete(held, "m1", "c1", NOW, strict=True) is True
    assert isinstance(
        transitions.may_delete(held, "m1", None, NOW, strict=True), errors.MessageClaimed
    )
    assert isinstance(
        transitions.may_delete(held, "m1", "c2", NOW, strict=True), errors.ClaimMismatch
    )
    assert transitions.may_delete(held, "m1", "c2", NOW, strict=False) is False
    assert isinstance(transitions.may_delete(None, "m1", "c1", NOW, True), errors.MessageNotFound)


def test_a_claim_changes_only_the_claim_fields_and_keeps_every_other() -> None:
    # Given a message with every field set to something of its own
    m = message(
        seq=7,
        claim_count=2,
        first_claimed_at=NOW - 50,
        client_id="c",
        history=({"event": "redriven"},),
        dead_letter_due_at=NOW - 1,
        group_id="g",
        deduplication_id="d",
        ready_at=NOW - 90,
        only_tag="billing",
    )
    # When it is claimed
    held = transitions.claimed(m, claim_id="k", now=NOW, expires=NOW + 30, grace=60)
    # I expect the claim's fields changed, and every other field, whichever, as it was
    changed = {
        "claim_id": "k",
        "claim_expires_at": NOW + 30,
        "visible_at": NOW + 30,
        "claim_count": 3,
        "expires_at": NOW + 500,
    }
    assert {f: getattr(held, f) for f in changed} == changed
    assert replace(held, **{f: getattr(m, f) for f in changed}) == m
