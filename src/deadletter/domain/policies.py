"""A queue's policies: where its failed messages go (its DLQ), how long a message given back
waits (its retry backoff), and, for a DLQ, which sources may use it."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class RedrivePermission(enum.StrEnum):
    ALLOW_ALL = "allowAll"
    DENY_ALL = "denyAll"
    BY_QUEUE = "byQueue"


@dataclass(frozen=True)
class DeadLetterPolicy:
    """Where a source queue's failed messages go. `active` turns false when the DLQ is deleted."""

    target: str
    max_claims: int
    message_ttl: int | None = None
    on_expiry: bool = False
    active: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "max_claims": self.max_claims,
            "message_ttl": self.message_ttl,
            "on_expiry": self.on_expiry,
            "active": self.active,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeadLetterPolicy:
        return cls(
            target=data["target"],
            max_claims=int(data["max_claims"]),
            message_ttl=data.get("message_ttl"),
            on_expiry=bool(data.get("on_expiry", False)),
            active=bool(data.get("active", True)),
        )


@dataclass(frozen=True)
class DeadLetterRoute:
    """Where a queue's dead letters of one reason go instead of its DLQ (RabbitMQ's
    dead-letter routing keys). `active` turns false when that queue is deleted: the reason
    then dead-letters nothing, as a policy whose DLQ is deleted."""

    target: str
    active: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "active": self.active}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeadLetterRoute:
        return cls(data["target"], bool(data.get("active", True)))


@dataclass(frozen=True)
class GroupPolicy:
    """A consumer tag's own dead-letter policy and retry backoff (a Pub/Sub subscription's
    deadLetterPolicy and retryPolicy); each field left unset takes the queue's. `active`
    turns false when the tag's own DLQ is deleted."""

    max_claims: int | None = None
    dead_letter_queue: str | None = None
    retry_policy: RetryPolicy | None = None
    active: bool = True

    @property
    def empty(self) -> bool:
        return (
            self.max_claims is None
            and self.dead_letter_queue is None
            and (self.retry_policy is None)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_claims": self.max_claims,
            "dead_letter_queue": self.dead_letter_queue,
            "retry_policy": self.retry_policy.to_dict() if self.retry_policy else None,
            "active": self.active,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupPolicy:
        retry = data.get("retry_policy")
        return cls(
            max_claims=data.get("max_claims"),
            dead_letter_queue=data.get("dead_letter_queue"),
            retry_policy=RetryPolicy.from_dict(retry) if retry else None,
            active=bool(data.get("active", True)),
        )


@dataclass(frozen=True)
class RetryPolicy:
    """How long a message given back without a delay of its own stays hidden (Pub/Sub's
    retryPolicy): `minimum_backoff * 2^(deliveries - 1)` seconds, at most `maximum_backoff`.
    No jitter, so that the delay a consumer sees is the one the policy states."""

    minimum_backoff: int
    maximum_backoff: int

    def backoff(self, deliveries: int) -> int:
        """The delay after the message's `deliveries`-th delivery."""
        if self.minimum_backoff == 0:
            return 0
        # Past 2^10 the minimum (at least 1 s) is beyond MAX_BACKOFF: stop doubling there.
        doubled = self.minimum_backoff << min(max(deliveries - 1, 0), 10)
        return min(self.maximum_backoff, doubled)

    def to_dict(self) -> dict[str, Any]:
        return {"minimum_backoff": self.minimum_backoff, "maximum_backoff": self.maximum_backoff}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetryPolicy:
        return cls(int(data["minimum_backoff"]), int(data["maximum_backoff"]))


@dataclass(frozen=True)
class RedriveAllow:
    """A DLQ's say over which source queues may use it."""

    permission: RedrivePermission = RedrivePermission.ALLOW_ALL
    sources: tuple[str, ...] = ()

    def admits(self, source: str) -> bool:
        if self.permission is RedrivePermission.ALLOW_ALL:
            return True
        if self.permission is RedrivePermission.DENY_ALL:
            return False
        return source in self.sources

    def to_dict(self) -> dict[str, Any]:
        return {"permission": self.permission.value, "sources": list(self.sources)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RedriveAllow:
        return cls(RedrivePermission(data["permission"]), tuple(data.get("sources", ())))
