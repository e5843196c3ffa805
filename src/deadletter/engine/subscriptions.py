"""Subscriptions to a queue, and the notifications owed to them until delivered or given up.

A message sent to a queue owes one notification to each live subscription, written in the
send's own transaction (`fan_out`): a message is never stored without the notifications it
owes, and a notification outlives a restart. A notification that keeps failing is
dead-lettered (reason `delivery_failed`) into the queue's DLQ, or, where the queue has no
active DLQ, counted in the queue's `dropped.delivery_failed` counter and logged, never lost
silently.
"""

from __future__ import annotations

import bisect
import json
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from deadletter.auth.signed_urls import SignedUrl
from deadletter.clock import Clock
from deadletter.domain import errors, routing
from deadletter.domain.limits import SUBSCRIPTIONS_PER_PROJECT, SUBSCRIPTIONS_PER_QUEUE
from deadletter.domain.model import MAX_DESCRIPTION, MAX_ERROR_DETAILS, Message
from deadletter.domain.provenance import Reason
from deadletter.domain.subscriptions import (
    MAX_SUBSCRIBER_LENGTH,
    MIN_SUBSCRIPTION_TTL,
    Delivery,
    Subscription,
)
from deadletter.engine import counters, transitions
from deadletter.engine.destinations import (
    DestinationRefused,
    Destinations,
    DestinationUnresolved,
)
from deadletter.engine.ids import new_id
from deadletter.engine.lookups import require_queue
from deadletter.engine.notifier import check_options
from deadletter.engine.transactions import Pending
from deadletter.storage.base import Transaction

T = TypeVar("T")


def check_room(tx: Transaction, project: str, queue: str) -> None:
    """LimitExceeded when the queue or its project holds as many subscriptions as it may: one
    post fans out to every subscription of its queue, and every project's notifications share
    one sender, so a bound here bounds what one project can put before another's."""
    in_project, in_queue = tx.count_subscriptions(project, queue)
    if in_queue >= SUBSCRIPTIONS_PER_QUEUE:
        raise errors.LimitExceeded(
            f"queue {queue!r} already has {SUBSCRIPTIONS_PER_QUEUE} subscriptions, the most one"
            " queue may have; delete one first"
        )
    if in_project >= SUBSCRIPTIONS_PER_PROJECT:
        raise errors.LimitExceeded(
            f"project {project!r} already has {SUBSCRIPTIONS_PER_PROJECT} subscriptions, the"
            " most one project may have; delete one first"
        )


class Run(Protocol):
    """The engine's runner: `work` in one transaction (`transactions.Runner.run`)."""

    def __call__(self, work: Callable[[Transaction, Pending], T], /) -> T: ...


log = logging.getLogger(__name__)

SCHEMES = ("http", "https")
# Far enough for any clock: a larger ttl would overflow the times stores and answers hold.
MAX_SUBSCRIPTION_TTL = 100 * 365 * 86_400


@dataclass(frozen=True)
class RetryPolicy:
    """How often a failed notification is tried again: `retries` more times, the first after
    `backoff` seconds, each wait twice the one before."""

    retries: int = 3
    backoff: float = 1.0

    def delay(self, failures: int) -> float:
        return self.backoff * 2.0 ** (failures - 1)


def check_subscriber(subscriber: str) -> str:
    """Only webhooks are delivered: Zaqar's mailto (and its trust+ schemes) would need a mail
    server and a confirmation flow this server does not have, so they are refused here."""
    if len(subscriber) > MAX_SUBSCRIBER_LENGTH or "\x00" in subscriber:
        raise errors.InvalidInput(
            f"subscriber must be a URL of at most {MAX_SUBSCRIBER_LENGTH} characters"
        )
    parts = urlsplit(subscriber)
    if parts.scheme.lower() not in SCHEMES or not parts.hostname:
        raise errors.InvalidInput(
            "subscriber must be an http:// or https:// webhook URL with a host; other kinds"
            " of subscriber (mailto:, trust+http:) are not supported"
        )
    return subscriber


def check_destination(destinations: Destinations, subscriber: str) -> None:
    """InvalidInput where the subscriber's host resolves to an address webhooks may not reach.
    A host that does not resolve now is accepted (DNS may be down, or the name not published
    yet): the sender checks again before every POST, and records "dns" until it resolves."""
    try:
        destinations.check(subscriber)
    except DestinationUnresolved:
        pass
    except DestinationRefused as exc:
        # The kind of address only: the address itself would tell the caller what a name
        # resolves to inside the server's network.
        raise errors.InvalidInput(
            f"subscriber resolves to a {exc.kind} address, which webhooks may not reach"
            " (the server's operator may allow a network with --webhook-allow)"
        ) from None


def check_ttl(ttl: int) -> int:
    if not MIN_SUBSCRIPTION_TTL <= ttl <= MAX_SUBSCRIPTION_TTL:
        raise errors.InvalidInput(
            f"the ttl of a subscription must be between {MIN_SUBSCRIPTION_TTL} and"
            f" {MAX_SUBSCRIPTION_TTL} seconds, not {ttl}"
        )
    return ttl


# Signs one path for the given methods (the Authority's `sign`), where credentials exist.
Signer = Callable[[str, str, list[str]], SignedUrl]


def confirm_path(queue: str, subscription_id: str) -> str:
    return f"/v2/queues/{queue}/subscriptions/{subscription_id}/confirm"


def confirmation_request(s: Subscription, signer: Signer | None) -> dict[str, Any]:
    """Zaqar's `SubscriptionConfirmation` document: what the subscriber PUTs to confirm (or,
    with `UnsubscribeBody`, to refuse), and the signed-URL headers that let it do so without a
    credential of its own (none where the server runs without credentials)."""
    path = confirm_path(s.queue, s.id)
    doc: dict[str, Any] = {
        "Message_Type": "SubscriptionConfirmation",
        "Message": f"You have chosen to subscribe to the queue: {s.queue}",
        "queue_name": s.queue,
        "X-Project-ID": s.project,
        "SubscribeURL": [path],
        "SubscribeBody": {"confirmed": True},
        "UnsubscribeBody": {"confirmed": False},
        "URL-Methods": "PUT",
        "URL-Paths": path,
    }
    if signer is not None:
        signed = signer(s.project, path, ["PUT"])
        doc["URL-Signature"] = signed.signature
        doc["URL-Expires"] = signed.expires
    return doc


def give_up(tx: Transaction, pending: Pending, d: Delivery, failures: int, now: float) -> None:
    """A notification failed for good: into the queue's DLQ as a new message (the original may
    still be in the queue, or consumed), its provenance naming the original message."""
    description = (
        f"notification to {d.subscriber} failed after {failures} attempt(s)"
        f" (subscription {d.subscription_id})"
    )[:MAX_DESCRIPTION]
    error = (d.last_error or "unknown error")[:MAX_ERROR_DETAILS]
    source = tx.get_queue(d.project, d.queue)
    policy = routing.policy_for(source.settings, None, Reason.DELIVERY_FAILED) if source else None
    dlq = tx.get_queue(d.project, policy.target) if policy and policy.active else None
    project, queue = d.project, d.queue
    if source is None or dlq is None:
        tx.bump_counter(project, queue, counters.dropped(Reason.DELIVERY_FAILED), 1)
        reason = Reason.DELIVERY_FAILED.value
        pending.calls.append(lambda lst: lst.dropped(project, queue, reason, 1))
        log.warning(
            "notification dropped: the queue has no active dead-letter queue",
            extra={"project": project, "queue": queue, "subscriber": d.subscriber,
                   "message_id": d.message_id, "error": error},
        )  # fmt: skip
        return
    notification = Message(
        id=new_id(),
        queue=queue,
        seq=0,
        body=d.body,
        attributes={},
        enqueued_at=now,
        expires_at=now + dlq.settings.default_ttl,
        visible_at=now,
        claim_id=None,
        claim_expires_at=None,
        claim_count=0,
        first_claimed_at=None,
        client_id=None,
        dead_letter_eligible=True,
    )
    moved = transitions.dead_lettered(
        notification,
        source=source,
        dlq=dlq,
        reason=Reason.DELIVERY_FAILED,
        now=now,
        description=description,
        error=error,
    )
    assert moved.provenance is not None
    provenance = replace(
        moved.provenance, original_message_id=d.message_id, original_enqueued_at=d.enqueued_at
    )
    tx.insert_messages(project, [replace(moved, provenance=provenance)])
    tx.bump_counter(project, queue, counters.dead_lettered(Reason.DELIVERY_FAILED), 1)
    pending.available.add((project, dlq.name))
    pending.calls.append(
        lambda lst: lst.dead_lettered(project, queue, dlq.name, Reason.DELIVERY_FAILED.value, 1)
    )


class Subscriptions:
    """The engine's subscription operations (`Engine.subscriptions`), each one transaction.

    With `require_confirmation` (Zaqar's option of that name), a new subscription is sent a
    confirmation request and notified of messages only once confirmed (`confirm`)."""

    def __init__(self, run: Run, clock: Clock) -> None:
        self._run = run
        self.clock = clock
        self.require_confirmation = False
        self.signer: Signer | None = None
        # Where webhooks may go; the server sets the operator's allow-list.
        self.destinations = Destinations()

    def _ask_confirmation(self, tx: Transaction, s: Subscription, now: float) -> None:
        """A durable notification of its own, so a restart still sends it."""
        doc = confirmation_request(s, self.signer)
        tx.insert_deliveries(
            [
                Delivery(
                    id=new_id(), project=s.project, queue=s.queue, subscription_id=s.id,
                    subscriber=s.subscriber, options=s.options, message_id="",
                    body=json.dumps(doc).encode(), ttl=s.ttl, enqueued_at=now, due_at=now,
                )
            ]
        )  # fmt: skip

    def check_new(self, subscriber: str, *, ttl: int, options: dict[str, Any]) -> None:
        """InvalidInput for a subscription that `create` would refuse, before anything is
        written (a face that creates the queue first asks this first)."""
        check_subscriber(subscriber)
        check_ttl(ttl)
        check_options(options)
        check_destination(self.destinations, subscriber)

    def create(
        self, project: str, queue: str, *, subscriber: str, ttl: int, options: dict[str, Any]
    ) -> tuple[Subscription, bool]:
        """The subscription and whether it is new. As in Zaqar, subscribing a subscriber
        again while its subscription is unconfirmed answers that subscription (Zaqar would
        send the confirmation again); a confirmed one is a Conflict."""
        self.check_new(subscriber, ttl=ttl, options=options)

        def work(tx: Transaction, _: Pending) -> tuple[Subscription, bool]:
            require_queue(tx, project, queue, lock=True)  # serialises subscribers of a queue
            now = self.clock.now()
            old = tx.subscription_by_subscriber(project, queue, subscriber)
            if old is not None and old.expires_at > now:
                if old.confirmed:
                    raise errors.Conflict(
                        f"{subscriber} is already subscribed to {queue!r}: subscriptions are"
                        " unique by project, queue and subscriber"
                    )
                if self.require_confirmation:
                    self._ask_confirmation(tx, old, now)
                return old, False
            if old is not None:
                tx.delete_subscriptions(project, queue, [old.id])
            check_room(tx, project, queue)
            new = Subscription(
                id=new_id(),
                project=project,
                queue=queue,
                subscriber=subscriber,
                ttl=ttl,
                options=dict(options),
                created_at=now,
                expires_at=now + ttl,
            )
            tx.insert_subscription(new)
            if self.require_confirmation:
                self._ask_confirmation(tx, new, now)
            return new, True

        return self._run(work)

    def get(self, project: str, queue: str, *, subscription_id: str) -> Subscription:
        def work(tx: Transaction, _: Pending) -> Subscription:
            found = tx.get_subscription(project, queue, subscription_id)
            if found is None or found.expires_at <= self.clock.now():
                raise errors.NotFound(f"subscription {subscription_id!r} does not exist")
            return found

        return self._run(work)

    def list_page(
        self, project: str, queue: str, *, after: str | None = None, limit: int = 10
    ) -> list[Subscription]:
        return self._run(
            lambda tx, _: tx.list_subscriptions(project, queue, self.clock.now(), after, limit)
        )

    def update(
        self,
        project: str,
        queue: str,
        *,
        subscription_id: str,
        subscriber: str | None = None,
        ttl: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> Subscription:
        """Change what is given; a new ttl counts from now, as in Zaqar."""
        if subscriber is not None:
            check_subscriber(subscriber)
        if ttl is not None:
            check_ttl(ttl)
        if options is not None:
            check_options(options)
        if subscriber is not None:
            check_destination(self.destinations, subscriber)

        def work(tx: Transaction, _: Pending) -> Subscription:
            require_queue(tx, project, queue, lock=True)
            now = self.clock.now()
            old = tx.get_subscription(project, queue, subscription_id, lock=True)
            if old is None or old.expires_at <= now:
                raise errors.NotFound(f"subscription {subscription_id!r} does not exist")
            if subscriber is not None and subscriber != old.subscriber:
                taken = tx.subscription_by_subscriber(project, queue, subscriber)
                if taken is not None and taken.expires_at > now:
                    raise errors.Conflict(f"{subscriber} is already subscribed to {queue!r}")
                if taken is not None:
                    tx.delete_subscriptions(project, queue, [taken.id])
            new = replace(
                old,
                subscriber=old.subscriber if subscriber is None else subscriber,
                options=old.options if options is None else dict(options),
                ttl=old.ttl if ttl is None else ttl,
                expires_at=old.expires_at if ttl is None else now + ttl,
            )
            tx.update_subscription(new)
            return new

        return self._run(work)

    def confirm(self, project: str, queue: str, *, subscription_id: str, confirmed: bool) -> None:
        """Zaqar's `PUT .../confirm`: a subscriber confirms (or, with false, withdraws) its
        subscription; only where confirmation is required does it change what is notified."""

        def work(tx: Transaction, _: Pending) -> None:
            found = tx.get_subscription(project, queue, subscription_id, lock=True)
            if found is None or found.expires_at <= self.clock.now():
                raise errors.NotFound(f"subscription {subscription_id!r} does not exist")
            if found.confirmed != confirmed:
                tx.update_subscription(replace(found, confirmed=confirmed))

        self._run(work)

    def delete(self, project: str, queue: str, *, subscription_id: str) -> bool:
        """Unsubscribe; what is still owed to the subscription is cancelled with it."""
        gone = self._run(lambda tx, _: tx.delete_subscriptions(project, queue, [subscription_id]))
        return gone > 0

    def purge(self, project: str, queue: str) -> int:
        def work(tx: Transaction, _: Pending) -> int:
            ids = [s.id for s in tx.list_subscriptions(project, queue, 0.0, None, None)]
            return tx.delete_subscriptions(project, queue, ids) if ids else 0

        return self._run(work)

    def sweep(self) -> int:
        return self._run(lambda tx, _: tx.delete_expired_subscriptions(self.clock.now()))

    # The notifications owed (deadletter.engine.deliveries sends them)

    def take(
        self,
        limit: int,
        *,
        busy: Sequence[str],
        lease: float,
        after: str | None = None,
        skip: Collection[str] = (),
    ) -> list[Delivery]:
        """Due notifications, leased for `lease` seconds, shared between the projects owed
        any: each gets an equal share of `limit` in turn, starting with the first project
        after `after` (the caller's round-robin cursor), and a share one project leaves goes
        to the others; none of the projects in `skip` (those the caller has enough of in
        flight). So one project's backlog, however old, cannot hold another's back."""
        now = self.clock.now()

        def work(tx: Transaction, _: Pending) -> list[Delivery]:
            projects = [p for p in tx.delivery_projects() if p not in skip]
            start = bisect.bisect_right(projects, after) if after is not None else 0
            wanting = projects[start:] + projects[:start]
            taken: list[Delivery] = []
            while wanting and len(taken) < limit:
                share = max(1, (limit - len(taken)) // len(wanting))
                more = []
                for project in wanting:
                    room = min(share, limit - len(taken))
                    if room <= 0:
                        break
                    got = tx.due_deliveries(now, room, busy, now + lease, project=project)
                    taken += got
                    if len(got) == room:
                        more.append(project)
                wanting = more
            return taken

        return self._run(work)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        """Give back taken notifications unsent: due now, their attempts unchanged."""

        def work(tx: Transaction, _: Pending) -> None:
            now = self.clock.now()
            for d in deliveries:
                tx.update_delivery(replace(d, due_at=now))

        self._run(work)

    def delivered(self, delivery_id: str) -> None:
        self._run(lambda tx, _: tx.delete_delivery(delivery_id))

    def failed(self, delivery_id: str, *, error: str, final: bool, policy: RetryPolicy) -> str:
        """Record a failed attempt: the notification is tried again after its backoff, or, out
        of retries (or `final`), given up. Returns "retrying", "given_up" or "gone" (deleted
        meanwhile with its subscription or queue)."""

        def work(tx: Transaction, pending: Pending) -> str:
            d = tx.get_delivery(delivery_id)
            if d is None:
                return "gone"
            now = self.clock.now()
            failures = d.attempts + 1
            d = replace(d, attempts=failures, last_error=error)
            if not final and failures <= policy.retries:
                tx.update_delivery(replace(d, due_at=now + policy.delay(failures)))
                return "retrying"
            tx.delete_delivery(d.id)
            if d.is_confirmation_request:
                # Not a message: nothing to dead-letter; the subscription stays unconfirmed.
                log.warning(
                    "confirmation request not delivered; the subscription stays unconfirmed",
                    extra={"project": d.project, "queue": d.queue, "subscriber": d.subscriber,
                           "subscription_id": d.subscription_id, "error": error},
                )  # fmt: skip
            else:
                give_up(tx, pending, d, failures, now)
            return "given_up"

        return self._run(work)

    def pending(self, project: str, queue: str) -> list[Delivery]:
        return self._run(lambda tx, _: tx.pending_deliveries(project, queue))
