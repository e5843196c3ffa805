"""Subscriptions in the engine, on every store: what they are, and what a send owes them."""

from __future__ import annotations

import json

import pytest

from deadletter.clock import ManualClock
from deadletter.domain import errors
from deadletter.engine.engine import Engine
from tests.engine.helpers import P, send

HOOK = "http://hooks.example/a"


def test_subscribe_read_list_change_and_unsubscribe(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "q")
    sub, created = engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={"k": 1})
    assert created and not sub.confirmed
    assert engine.subscriptions.get(P, "q", subscription_id=sub.id) == sub
    other, _ = engine.subscriptions.create(
        P, "q", subscriber="https://hooks.example/b", ttl=600, options={}
    )
    first = engine.subscriptions.list_page(P, "q", after=None, limit=1)
    rest = engine.subscriptions.list_page(P, "q", after=first[0].id, limit=10)
    assert sorted(s.id for s in first + rest) == sorted([sub.id, other.id])
    clock.advance(100)
    changed = engine.subscriptions.update(
        P, "q", subscription_id=sub.id, subscriber=HOOK + "2", ttl=60
    )
    assert (changed.subscriber, changed.ttl, changed.options) == (HOOK + "2", 60, {"k": 1})
    assert changed.expires_at == clock.now() + 60  # a new ttl counts from now
    assert engine.subscriptions.delete(P, "q", subscription_id=sub.id) is True
    assert engine.subscriptions.delete(P, "q", subscription_id=sub.id) is False
    with pytest.raises(errors.NotFound):
        engine.subscriptions.get(P, "q", subscription_id=sub.id)


def test_subscribing_again_while_unconfirmed_answers_the_same_subscription(
    engine: Engine,
) -> None:
    # As in Zaqar, whose client's functional suite relies on it.
    engine.create_queue(P, "q")
    sub, _ = engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    again, created = engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    assert (again.id, created) == (sub.id, False)


def test_a_subscriber_taken_by_another_subscription_is_a_conflict(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    other, _ = engine.subscriptions.create(P, "q", subscriber=HOOK + "/b", ttl=600, options={})
    with pytest.raises(errors.Conflict):
        engine.subscriptions.update(P, "q", subscription_id=other.id, subscriber=HOOK)


@pytest.mark.parametrize(
    "subscriber",
    ["mailto:ops@example.com", "trust+http://hooks.example/", "ftp://x/", "http://", "hooks"],
)
def test_only_http_webhooks_are_accepted(engine: Engine, subscriber: str) -> None:
    engine.create_queue(P, "q")
    with pytest.raises(errors.InvalidInput, match="http"):
        engine.subscriptions.create(P, "q", subscriber=subscriber, ttl=600, options={})


def test_a_ttl_under_a_minute_is_refused(engine: Engine) -> None:
    engine.create_queue(P, "q")
    with pytest.raises(errors.InvalidInput, match="ttl"):
        engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=59, options={})


def test_a_subscription_lives_its_ttl(engine: Engine, clock: ManualClock) -> None:
    engine.create_queue(P, "q")
    sub, _ = engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=60, options={})
    clock.advance(60)
    with pytest.raises(errors.NotFound):
        engine.subscriptions.get(P, "q", subscription_id=sub.id)
    assert engine.subscriptions.list_page(P, "q") == []
    send(engine, "q", "after")
    assert engine.subscriptions.pending(P, "q") == []
    # the sweep removes it, and the subscriber may subscribe anew
    assert engine.subscriptions.sweep() == 1
    fresh, created = engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=60, options={})
    assert created and fresh.id != sub.id


def test_a_send_owes_each_live_subscription_one_notification(engine: Engine) -> None:
    engine.create_queue(P, "q")
    send(engine, "q", "before")
    a, _ = engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    b, _ = engine.subscriptions.create(P, "q", subscriber=HOOK + "/b", ttl=600, options={})
    (m,) = send(engine, "q", "after")
    owed = engine.subscriptions.pending(P, "q")
    assert sorted(d.subscription_id for d in owed) == sorted([a.id, b.id])
    assert {(d.message_id, d.body) for d in owed} == {(m.id, b"after")}


def test_unsubscribing_cancels_what_is_owed(engine: Engine) -> None:
    engine.create_queue(P, "q")
    sub, _ = engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    send(engine, "q", "x")
    engine.subscriptions.delete(P, "q", subscription_id=sub.id)
    assert engine.subscriptions.pending(P, "q") == []


def test_deleting_the_queue_or_purging_its_subscriptions_removes_them(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    send(engine, "q", "x")
    engine.delete_queue(P, "q")
    engine.create_queue(P, "q")
    assert engine.subscriptions.list_page(P, "q") == []
    assert engine.subscriptions.pending(P, "q") == []
    engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    assert engine.subscriptions.purge(P, "q") == 1
    assert engine.subscriptions.list_page(P, "q") == []


def test_where_confirmation_is_required_only_confirmed_subscriptions_are_notified(
    engine: Engine,
) -> None:
    # Given a server that requires confirmation (Zaqar's require_confirmation)
    engine.subscriptions.require_confirmation = True
    engine.create_queue(P, "q")
    sub, _ = engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    # the new subscription is owed a confirmation request, and nothing else
    (request,) = engine.subscriptions.pending(P, "q")
    assert request.is_confirmation_request and request.subscription_id == sub.id
    doc = json.loads(request.body)
    assert doc["Message_Type"] == "SubscriptionConfirmation"
    assert doc["URL-Paths"] == f"/v2/queues/q/subscriptions/{sub.id}/confirm"
    assert doc["SubscribeBody"] == {"confirmed": True}
    engine.subscriptions.delivered(request.id)
    # when a message is sent before it confirms, nothing is owed to it
    send(engine, "q", "before")
    assert engine.subscriptions.pending(P, "q") == []
    # once confirmed, it is notified
    engine.subscriptions.confirm(P, "q", subscription_id=sub.id, confirmed=True)
    assert engine.subscriptions.get(P, "q", subscription_id=sub.id).confirmed
    send(engine, "q", "after")
    (owed,) = engine.subscriptions.pending(P, "q")
    assert owed.message_id and owed.body == b"after"
    engine.subscriptions.delivered(owed.id)
    # and withdrawing the confirmation stops the notifications
    engine.subscriptions.confirm(P, "q", subscription_id=sub.id, confirmed=False)
    send(engine, "q", "withdrawn")
    assert engine.subscriptions.pending(P, "q") == []


def test_without_required_confirmation_nothing_asks_for_it(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.subscriptions.create(P, "q", subscriber=HOOK, ttl=600, options={})
    assert engine.subscriptions.pending(P, "q") == []
    send(engine, "q", "m")
    (owed,) = engine.subscriptions.pending(P, "q")
    assert not owed.is_confirmation_request


def test_confirming_an_unknown_subscription_is_not_found(engine: Engine) -> None:
    engine.create_queue(P, "q")
    with pytest.raises(errors.NotFound):
        engine.subscriptions.confirm(P, "q", subscription_id="nope", confirmed=True)
