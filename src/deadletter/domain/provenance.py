"""Why and from where a dead letter came: the reason it died, what its consumer said went
wrong, and the deaths its history records."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class Reason(enum.StrEnum):
    """Why a message was dead-lettered."""

    MAX_CLAIMS = "max_claims"
    EXPIRED = "expired"
    REJECTED = "rejected"
    DELIVERY_FAILED = "delivery_failed"
    # Over a bounded queue's limit (RabbitMQ's `maxlen`): the oldest pushed out by drop-head,
    # or a send refused by reject-publish-dlx.
    MAXLEN = "maxlen"


@dataclass(frozen=True)
class ErrorDetails:
    """What a consumer says went wrong when it dead-letters a message, in the separate fields
    of Kafka Connect's error context (exception class, message, stack trace). One text error
    is a message alone."""

    message: str | None = None
    error_class: str | None = None
    stack: str | None = None

    @property
    def text(self) -> str | None:
        """The one-text form, as `Provenance.error` has always read: the message, else the
        class, so that a reader of the text sees something whenever the consumer said
        anything."""
        return self.message if self.message is not None else self.error_class


def death_counts(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A message's deaths per (queue, reason), as RabbitMQ's `x-death` counts them: how many,
    the first and the last time; the most recent first. Derived from the history's
    `dead_lettered` events, which record each one, so nothing more is stored."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for e in history:
        if e.get("event") != "dead_lettered":
            continue
        key = (e["queue"], e["reason"])
        seen = found.get(key)
        if seen is None:
            found[key] = {"queue": key[0], "reason": key[1], "count": 1,
                          "first_at": e["at"], "last_at": e["at"]}  # fmt: skip
        else:
            seen["count"] += 1
            seen["last_at"] = e["at"]
    return sorted(found.values(), key=lambda d: d["last_at"], reverse=True)


@dataclass(frozen=True)
class Provenance:
    """Why and from where a message in a DLQ came."""

    source_queue: str
    reason: Reason
    dead_lettered_at: float
    claim_count: int
    original_message_id: str
    original_enqueued_at: float
    description: str | None = None
    error: str | None = None
    # The consumer tag of the source queue that gave the message up (None: the queue's own
    # consumers, or the queue as a whole when it expired).
    source_tag: str | None = None
    # Given as fields (`ErrorDetails`); `error` then holds their text form.
    error_class: str | None = None
    error_stack: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_queue": self.source_queue,
            # Only on a tag's dead letters, so that others read as they always have.
            **({"source_tag": self.source_tag} if self.source_tag is not None else {}),
            "reason": self.reason.value,
            "dead_lettered_at": self.dead_lettered_at,
            "claim_count": self.claim_count,
            "original_message_id": self.original_message_id,
            "original_enqueued_at": self.original_enqueued_at,
            "description": self.description,
            "error": self.error,
            # Only where the consumer gave them, so that others read as they always have.
            **({"error_class": self.error_class} if self.error_class is not None else {}),
            **({"error_stack": self.error_stack} if self.error_stack is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Provenance:
        return cls(
            source_queue=data["source_queue"],
            reason=Reason(data["reason"]),
            dead_lettered_at=data["dead_lettered_at"],
            claim_count=data["claim_count"],
            original_message_id=data["original_message_id"],
            original_enqueued_at=data["original_enqueued_at"],
            description=data.get("description"),
            error=data.get("error"),
            source_tag=data.get("source_tag"),
            error_class=data.get("error_class"),
            error_stack=data.get("error_stack"),
        )
