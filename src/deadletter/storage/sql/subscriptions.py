"""Statements of Zaqar subscriptions and the notifications owed to them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from deadletter.domain.subscriptions import Delivery, Subscription
from deadletter.storage.rows import (
    delivery_from,
    delivery_params,
    subscription_from,
    subscription_params,
)
from deadletter.storage.sql import subscription_queries as sq
from deadletter.storage.sql.executor import Executor


class SubscriptionStatements(Executor):
    """Each queue row counts its subscriptions (`queues.subscriptions`), changed in the
    transaction that adds or deletes one; a send, which reads its queue's row anyway, looks
    for live subscriptions only where that count is not zero."""

    # Queues read in this transaction that had no subscriptions when read.
    _unsubscribed: set[tuple[str, str]] | None = None

    def _note_subscriptions(self, project: str, queue: str, count: int) -> None:
        if self._unsubscribed is None:
            self._unsubscribed = set()
        if count:
            self._unsubscribed.discard((project, queue))
        else:
            self._unsubscribed.add((project, queue))

    def _add_subscriptions(self, project: str, queue: str, n: int) -> None:
        self.run(sq.ADD_SUBSCRIPTIONS, {"project": project, "queue": queue, "n": n})
        if self._unsubscribed is not None:
            self._unsubscribed.discard((project, queue))

    # Subscriptions and the notifications owed to them

    def insert_subscription(self, subscription: Subscription) -> None:
        self.run(sq.INSERT_SUBSCRIPTION, subscription_params(subscription))
        self._add_subscriptions(subscription.project, subscription.queue, 1)

    def count_subscriptions(self, project: str, queue: str) -> tuple[int, int]:
        r = self.one(sq.COUNT_SUBSCRIPTIONS, {"project": project, "queue": queue})
        return (int(r["project_n"]), int(r["queue_n"])) if r else (0, 0)

    def get_subscription(
        self, project: str, queue: str, subscription_id: str, lock: bool = False
    ) -> Subscription | None:
        sql = sq.GET_SUBSCRIPTION_LOCKED if lock else sq.GET_SUBSCRIPTION
        r = self.one(sql, {"project": project, "queue": queue, "id": subscription_id})
        return subscription_from(r) if r else None

    def subscription_by_subscriber(
        self, project: str, queue: str, subscriber: str
    ) -> Subscription | None:
        key = {"project": project, "queue": queue, "subscriber": subscriber}
        r = self.one(sq.SUBSCRIPTION_BY_SUBSCRIBER, key)
        return subscription_from(r) if r else None

    def list_subscriptions(
        self, project: str, queue: str, now: float, after: str | None, limit: int | None
    ) -> list[Subscription]:
        key = {"project": project, "queue": queue, "now": now}
        if limit is None:
            if self._unsubscribed is not None and (project, queue) in self._unsubscribed:
                return []  # its row, read in this transaction, counts none
            rows = self.all(sq.LIVE_SUBSCRIPTIONS, key)
        else:
            rows = self.all(sq.LIST_SUBSCRIPTIONS, {**key, "after": after or "", "limit": limit})
        return [subscription_from(r) for r in rows]

    def update_subscription(self, subscription: Subscription) -> None:
        params = subscription_params(subscription)
        self.run(sq.UPDATE_SUBSCRIPTION, {k: params[k] for k in (
            "subscriber", "ttl", "options", "confirmed", "expires_at", "id")})  # fmt: skip

    def delete_subscriptions(self, project: str, queue: str, ids: Sequence[str]) -> int:
        self.run(sq.CANCEL_DELIVERIES, {"ids": list(ids)})
        gone = sum(
            self.run(sq.DELETE_SUBSCRIPTION, {"project": project, "queue": queue, "id": i})
            for i in ids
        )
        if gone:
            self._add_subscriptions(project, queue, -gone)
        return gone

    def delete_expired_subscriptions(self, now: float) -> int:
        gone = Counter(
            (r["project"], r["queue"])
            for r in self.all(sq.DELETE_EXPIRED_SUBSCRIPTIONS, {"now": now})
        )
        for (project, queue), n in sorted(gone.items()):
            self._add_subscriptions(project, queue, -n)
        return gone.total()

    def insert_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        self.run_many(sq.INSERT_DELIVERY, [delivery_params(d) for d in deliveries])

    def due_deliveries(
        self,
        now: float,
        limit: int,
        busy: Sequence[str],
        lease_until: float,
        project: str | None = None,
    ) -> list[Delivery]:
        params = {"now": now, "limit": limit, "busy": list(busy) or None}
        if project is None:
            rows = self.all(sq.DUE_DELIVERIES, params)
        else:
            rows = self.all(sq.DUE_DELIVERIES_OF, {**params, "project": project})
        due = [delivery_from(r) for r in rows]
        leased = [replace(d, due_at=lease_until) for d in due]
        for d in leased:
            self.update_delivery(d)
        return leased

    def delivery_projects(self) -> list[str]:
        return [str(r["project"]) for r in self.all(sq.DELIVERY_PROJECTS, {})]

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        r = self.one(sq.GET_DELIVERY_LOCKED, {"id": delivery_id})
        return delivery_from(r) if r else None

    def update_delivery(self, delivery: Delivery) -> None:
        params = delivery_params(delivery)
        self.run(
            sq.UPDATE_DELIVERY, {k: params[k] for k in ("due_at", "attempts", "last_error", "id")}
        )

    def delete_delivery(self, delivery_id: str) -> None:
        self.run(sq.DELETE_DELIVERY, {"id": delivery_id})

    def pending_deliveries(self, project: str, queue: str) -> list[Delivery]:
        rows = self.all(sq.PENDING_DELIVERIES, {"project": project, "queue": queue})
        return [delivery_from(r) for r in rows]
