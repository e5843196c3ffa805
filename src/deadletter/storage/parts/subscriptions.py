"""Subscriptions and the notifications owed to them."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from deadletter.domain.subscriptions import Delivery, Subscription


class Subscriptions(abc.ABC):
    """Subscriptions and the notifications owed to them."""

    @abc.abstractmethod
    def insert_subscription(self, subscription: Subscription) -> None:
        """When (project, queue, subscriber) is taken the transaction fails with Conflict."""

    @abc.abstractmethod
    def get_subscription(
        self, project: str, queue: str, subscription_id: str, lock: bool = False
    ) -> Subscription | None: ...

    @abc.abstractmethod
    def subscription_by_subscriber(
        self, project: str, queue: str, subscriber: str
    ) -> Subscription | None: ...

    @abc.abstractmethod
    def list_subscriptions(
        self, project: str, queue: str, now: float, after: str | None, limit: int | None
    ) -> list[Subscription]:
        """Unexpired subscriptions by id, after `after`; all of them with `limit` None."""

    @abc.abstractmethod
    def update_subscription(self, subscription: Subscription) -> None: ...

    @abc.abstractmethod
    def delete_subscriptions(self, project: str, queue: str, ids: Sequence[str]) -> int:
        """Delete subscriptions and cancel the notifications still owed to them."""

    @abc.abstractmethod
    def count_subscriptions(self, project: str, queue: str) -> tuple[int, int]:
        """(the project's, the queue's) subscriptions, expired ones not yet swept included.
        Concurrent counts of one project wait for one another until each transaction ends, so
        a count followed by an insert is exact."""

    @abc.abstractmethod
    def delete_expired_subscriptions(self, now: float) -> int:
        """Expired subscriptions go; what was owed to them while they lived is still sent."""

    @abc.abstractmethod
    def insert_deliveries(self, deliveries: Sequence[Delivery]) -> None: ...

    @abc.abstractmethod
    def due_deliveries(
        self,
        now: float,
        limit: int,
        busy: Sequence[str],
        lease_until: float,
        project: str | None = None,
    ) -> list[Delivery]:
        """Due notifications (of `project` only, if given), oldest first, none of the
        subscriptions in `busy`, each leased until `lease_until` (another taker skips it until
        then: were this process to die with it in flight, it is sent again then)."""

    @abc.abstractmethod
    def delivery_projects(self) -> list[str]:
        """The projects owed any notification (due or not), by name."""

    @abc.abstractmethod
    def get_delivery(self, delivery_id: str) -> Delivery | None:
        """Locked against other transactions until this one ends."""

    @abc.abstractmethod
    def update_delivery(self, delivery: Delivery) -> None:
        """Store `due_at`, `attempts` and `last_error`."""

    @abc.abstractmethod
    def delete_delivery(self, delivery_id: str) -> None: ...

    @abc.abstractmethod
    def pending_deliveries(self, project: str, queue: str) -> list[Delivery]: ...
