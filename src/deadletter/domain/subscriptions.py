"""Zaqar subscriptions: webhooks notified of each message, and the notifications owed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Subscriptions (Zaqar's notifications): a subscription lives `ttl` seconds from its creation
# or its last change of ttl; Zaqar refuses less than a minute and defaults to an hour.
MIN_SUBSCRIPTION_TTL = 60
DEFAULT_SUBSCRIPTION_TTL = 3600
MAX_SUBSCRIBER_LENGTH = 2048


@dataclass(frozen=True)
class Subscription:
    """A webhook that every message sent to `queue` after its creation is POSTed to.

    `confirmed` is kept as Zaqar keeps it (false until confirmed). Unless the server requires
    confirmation (`serve --subscription-confirmation required`, Zaqar's
    `require_confirmation`), webhooks are notified whether confirmed or not."""

    id: str
    project: str
    queue: str
    subscriber: str
    ttl: int
    options: dict[str, Any]
    created_at: float
    expires_at: float
    confirmed: bool = False


@dataclass(frozen=True)
class Delivery:
    """One notification owed to one subscriber, a row until delivered or given up, so that a
    restart resumes it. It carries what the notification says (the message's body and ttl), as
    the message itself may be consumed long before the subscriber answers; and the subscriber
    and options as they were when the message was sent.

    A delivery with no `message_id` is a subscription's confirmation request: its `body` is
    the whole document to POST (Zaqar's `SubscriptionConfirmation`), not a message."""

    id: str
    project: str
    queue: str
    subscription_id: str
    subscriber: str
    options: dict[str, Any]
    message_id: str
    body: bytes
    ttl: int
    enqueued_at: float
    due_at: float
    attempts: int = 0
    last_error: str | None = None

    @property
    def is_confirmation_request(self) -> bool:
        return not self.message_id
