"""The notifications a send (or an event, such as a pattern alert) owes the live
subscriptions of its queue, stored in the send's own transaction."""

from __future__ import annotations

from collections.abc import Sequence

from deadletter.domain.model import Message
from deadletter.domain.subscriptions import Delivery
from deadletter.engine.ids import new_id
from deadletter.storage.base import Transaction


def fan_out(
    tx: Transaction,
    project: str,
    queue: str,
    *,
    messages: Sequence[Message],
    now: float,
    confirmed_only: bool = False,
) -> int:
    """Store the notifications `messages`, just sent to `queue`, owe its live subscriptions
    (only the confirmed ones where the server requires confirmation); returns how many."""
    subscribed = tx.list_subscriptions(project, queue, now, None, None)
    if confirmed_only:
        subscribed = [s for s in subscribed if s.confirmed]
    if not subscribed:
        return 0
    deliveries = [
        Delivery(
            id=new_id(),
            project=project,
            queue=queue,
            subscription_id=s.id,
            subscriber=s.subscriber,
            options=s.options,
            message_id=m.id,
            body=m.body,
            ttl=m.ttl(),
            enqueued_at=m.enqueued_at,
            due_at=now,
        )
        for m in messages
        for s in subscribed
    ]
    tx.insert_deliveries(deliveries)
    return len(deliveries)


def fan_out_events(
    tx: Transaction,
    project: str,
    queue: str,
    *,
    bodies: Sequence[bytes],
    now: float,
    ttl: int,
    confirmed_only: bool = False,
) -> int:
    """Store notifications of events on `queue` that are not messages (a pattern alert), each
    a JSON body, for its live subscriptions, as `fan_out` does for messages; returns how many.
    Their message id is `event-...`: they are not confirmation requests, and a notification
    given up names it as its original."""
    if not bodies:
        return 0
    subscribed = tx.list_subscriptions(project, queue, now, None, None)
    if confirmed_only:
        subscribed = [s for s in subscribed if s.confirmed]
    deliveries = [
        Delivery(
            id=new_id(), project=project, queue=queue, subscription_id=s.id,
            subscriber=s.subscriber, options=s.options, message_id=f"event-{new_id()}",
            body=body, ttl=ttl, enqueued_at=now, due_at=now,
        )
        for body in bodies
        for s in subscribed
    ]  # fmt: skip
    if deliveries:
        tx.insert_deliveries(deliveries)
    return len(deliveries)
